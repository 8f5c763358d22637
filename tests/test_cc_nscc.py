"""NSCC on synthetic events (plain-Python handlers; tests/test_cc_replay.py
checks the other modes decide the same): each of the four cases, the
fulfil period, the once-per-base-RTT decrease, quick adapt, EV rotation on
marks and non-last-hop trims (not on last-hop trims), and the CSIG
max(Delay) variant taking its delay from CSIG."""
import numpy as np
import pytest

from taurus.cc_algorithms.algorithm import D_EV, FlowContext
from taurus.cc_algorithms.nscc import Nscc, NsccCsig, NsccParams
from taurus.datapath.ccevents import CSIG_DELAY, EVENT_IDS
from taurus.datapath.ccshm import REC_WIDTH
from taurus.cc_algorithms.runtime import events
from taurus.testing.replay import records, replay

MSS = 4096
CTX = FlowContext(mss=MSS, line_rate=100e9, max_cwnd=float(1 << 30))
BASE = 10_000                      # the flow's least RTT (ns)
TQ = 12_000                        # default target: network_rtt


def target(p):
    """The target queueing delay NSCC derives for a flow (Params.derive)."""
    return p.derive(CTX)["target"]


def run(evs, params=None, cls=Nscc):
    """Replay [(event, t_ns, {field: value})] for one flow: (decisions of
    each record, final state of the flow)."""
    params = params or cls.Params()
    dec, S = replay(cls, params, records(evs), "python", CTX, flows=1)
    return dec[1:], S[0]


def rtt(t, delay):
    return ("RTT", t, {"rtt": BASE + delay, "qdelay": delay, "hops": 2})


def ack(t, marked=False, nbytes=MSS):
    return ("ACK", t, {"bytes": nbytes, "packets": 1, "ecn_bytes": nbytes if marked else 0})


def nack(t, last_hop=0):
    return ("NACK", t, {"nacks": 1, "trimmed": 1, "last_hop": last_hop})


def start():
    """The base RTT sample (delay 0): cwnd at maxwnd = 1.5 BDP of it."""
    return [rtt(100, 0)]


def test_defaults_are_htsims_scaled_to_the_reference():
    p = NsccParams()
    assert (p.gamma, p.min_md_factor, p.delay_alpha, p.qa_x, p.qa_gate) == (0.8, 0.5, 0.0125, 4, 3)
    assert (p.alpha_mss, p.fi_mss, p.eta_mss, p.fi_scale, p.fulfil_mtus) == (4, 5, 0.15, 0.25, 8)
    assert target(p) == p.network_rtt == 12_000
    assert target(NsccParams(trimming=True)) == 9_000
    _, s = run(start() + [ack(200)])
    assert s.maxwnd == pytest.approx(1.5 * BASE * 100e9 / 8e9)
    assert s.cwnd == pytest.approx(s.maxwnd)


def test_fair_increase_when_unmarked_above_target():
    d = TQ + 3_000
    _, s = run(start() + [rtt(1_000, d), ack(1_100)])
    assert (s.n_fair, s.n_prop, s.n_md, s.n_noop) == (1, 0, 0, 0)
    assert s.inc == pytest.approx(5 * MSS * MSS)              # fi x acked, a = 1


def test_proportional_increase_when_unmarked_below_target():
    _, s = run(start() + [rtt(1_000, 4_000), ack(1_100)])
    assert (s.n_prop, s.n_fair, s.n_md, s.n_noop) == (1, 0, 0, 0)
    alpha = 4 * MSS * (TQ / 12_000) / TQ
    assert s.inc == pytest.approx(alpha * MSS * (TQ - 4_000))
    _, s2 = run(start() + [rtt(1_000, 8_000), ack(1_100)])
    assert 0 < s2.inc < s.inc                                  # proportional to target - delay


def test_no_op_when_marked_below_target():
    d, s = run(start() + [ack(200), rtt(1_000, 3_000), ack(1_100, marked=True)])
    assert (s.n_noop, s.n_md, s.n_fair, s.n_prop) == (1, 0, 0, 1)
    assert d[-1]["cwnd"] == d[-3]["cwnd"]                  # d[-2]: the RTT sample decides nothing


def test_multiplicative_decrease_when_marked_above_target_once_per_base_rtt():
    # the average is the sample (the cut is exact); no fulfil period within the test
    p = NsccParams(delay_alpha=1.0, network_rtt=1e6, target_qdelay=TQ)
    d = 2 * TQ
    evs = start() + [ack(200), rtt(20_000, d), ack(20_100, marked=True)]
    dec, s = run(evs, p)
    before, after = dec[1]["cwnd"], dec[-1]["cwnd"]
    assert s.n_md == 1
    assert after == pytest.approx(before * max(1 - 0.8 * (d - TQ) / d, 0.5))
    # more marks within one base RTT: no second cut; after it: one more
    dec2, s2 = run(evs + [rtt(25_000, d), ack(25_100, marked=True),
                          rtt(31_000, d), ack(31_100, marked=True)], p)
    assert s2.n_md == 3
    assert dec2[-3]["cwnd"] == pytest.approx(after)
    assert dec2[-1]["cwnd"] == pytest.approx(after * 0.6)


def test_increases_wait_for_the_fulfil_period():
    """Increases gather in inc and reach cwnd once more than 8 MTUs are
    acknowledged (or network_rtt passed): inc / cwnd, and eta once per
    network_rtt."""
    evs = start() + [ack(150), nack(160), nack(170), nack(180)]   # room below maxwnd
    evs += [rtt(250, 2_000)]
    dec, s = run(evs)
    w0 = dec[-2]["cwnd"]
    assert w0 == pytest.approx(s.maxwnd - 3 * MSS)
    acks = [ack(300 + 100 * i) for i in range(7)]       # 8 MTUs with ack(150): not more than 8
    dec, s = run(evs + acks)
    assert (dec["cwnd"][-7:] == w0).all() and s.inc > 0
    inc = s.inc + 4 * MSS * (TQ - 2_000) / 12_000 * MSS
    dec, s = run(evs + acks + [ack(1_200)])
    assert dec[-1]["cwnd"] == pytest.approx(w0 + inc / w0)
    assert s.inc == 0 and s.received == 0
    dec2, _ = run(evs + acks + [ack(13_000)])           # network_rtt passed too: + eta
    assert dec2[-1]["cwnd"] == pytest.approx(w0 + inc / w0 + 0.15 * MSS)


def test_fast_increase_after_a_window_without_queue():
    p = NsccParams(maxwnd_bdp=3.0)
    evs = [rtt(100, 0), ("RTT", 200, {"rtt": BASE, "qdelay": 0, "hops": 2})]
    dec, s = run(evs + [ack(300 + 10 * i, nbytes=64 * MSS) for i in range(6)], p)
    assert s.n_fast >= 1
    assert s.fast == 1


def test_quick_adapt_on_trim_resets_to_what_arrived():
    evs = start() + [ack(200)]                          # sets the quick-adapt period
    t = 200 + BASE + TQ + 100                           # just after it
    evs += [ack(10_000, nbytes=3 * MSS), nack(t)]
    dec, s = run(evs)
    assert s.n_qa == 1
    assert dec[-1]["cwnd"] == pytest.approx(3 * MSS)   # acknowledged in the period
    assert s.to_ignore > 0 and s.trigger == 0
    # marked ACKs of the window in flight then are ignored: no case runs
    dec, s2 = run(evs + [rtt(t + 100, 2 * TQ), ack(t + 200, marked=True)])
    assert s2.n_md == 0 and dec[-1]["cwnd"] == pytest.approx(3 * MSS)


def test_quick_adapt_on_very_high_delay():
    evs = start() + [ack(200), rtt(30_000, 5 * TQ), ack(30_100)]
    _, s = run(evs)
    assert s.n_qa == 1 and s.cwnd == pytest.approx(MSS * 1)   # only the first ACK arrived in the period


def test_no_quick_adapt_when_enough_arrived():
    evs = start() + [ack(200), ack(300, nbytes=40 * MSS), rtt(30_000, 5 * TQ), ack(30_100)]
    _, s = run(evs)
    assert s.n_qa == 0


def test_nack_takes_bytes_off_the_window():
    evs = start() + [ack(200), nack(500)]                # inside the first quick-adapt period
    dec, s = run(evs)
    assert s.n_qa == 0
    assert dec[-1]["cwnd"] == pytest.approx(dec[-2]["cwnd"] - MSS)
    dec, _ = run(start() + [ack(200), nack(500, last_hop=1)], NsccParams(rccc=True))
    assert dec[-1]["cwnd"] == pytest.approx(dec[-2]["cwnd"])     # RCCC: last hop is the receiver's


def test_ev_rotation_on_marks_and_trims_not_on_clean_acks_or_last_hop_trims():
    p = NsccParams(ev_lb=True)
    evs = start() + [ack(200), rtt(1_000, 3_000), ack(1_100, marked=True)]
    dec, s = run(evs, p)
    assert not dec[1]["set"] & D_EV                     # clean: keep the EV
    assert dec[-1]["set"] & D_EV and dec[-1]["ev_n"] == -1
    dec, s = run(evs + [ack(1_200, marked=True)], p)    # the old path's marks: once per base RTT
    assert not dec[-1]["set"] & D_EV and s.n_rotate == 1
    dec, s = run(evs + [ack(1_100 + BASE, marked=True)], p)
    assert dec[-1]["set"] & D_EV and s.n_rotate == 2
    dec, s = run(start() + [ack(200), nack(30_000, last_hop=1)], p)
    assert not dec[-1]["set"] & D_EV and s.n_rotate == 0
    dec, s = run(start() + [ack(200), nack(30_000, last_hop=0)], p)
    assert dec[-1]["set"] & D_EV and s.n_rotate == 1
    dec, s = run(evs, NsccParams())                     # off by default: a fixed EV
    assert not (dec["set"] & D_EV).any()


def test_csig_variant_takes_the_bottleneck_hops_delay():
    """With csig the path's RTT no longer sets the delay: a CSIG max(Delay)
    of a short queue keeps the flow in proportional increase where the
    path delay alone would give a fair increase."""
    csig = ("CSIG", 1_050, {"csig_type": CSIG_DELAY, "value": 2_000, "locator": 7, "fmt": 1})
    evs = start() + [rtt(1_000, TQ + 4_000), csig, ack(1_100)]
    _, s = run(evs, cls=NsccCsig)
    assert NsccCsig.Params().csig and "CSIG" in NsccCsig.bindings(NsccCsig.Params())
    assert "CSIG" not in Nscc.bindings(Nscc.Params())
    assert s.delay == 2_000 and s.n_prop == 1 and s.n_fair == 0
    _, s = run(evs[:-2] + [ack(1_100)])
    assert s.n_fair == 1


def test_ev_spray_sprays_from_the_start_and_moves_blocks_on_marks():
    """ev_spray = n: the first decision sprays over n EVs (htsim's default
    spreads every window over 64 entropies); with ev_lb a mark moves the
    flow to the next block of n, never back to a single EV."""
    p = NsccParams(ev_spray=64)
    rec = np.zeros((1, REC_WIDTH), np.int64)
    r = events(rec)
    r[0].seq, r[0].flow, r[0].event, r[0].count = 0, 0, EVENT_IDS["ACK"], 1
    r[0].t_first = r[0].t_last = 100
    r[0].bytes = MSS
    dec, _ = replay(Nscc, p, rec, "python", CTX, flows=1)
    assert dec[0]["set"] & D_EV and (dec[0]["ev"], dec[0]["ev_n"]) == (0xC000, 64)
    evs = start() + [ack(200), rtt(1_000, 3_000), ack(1_100, marked=True)]
    dec, s = run(evs, p)
    assert not (dec["set"] & D_EV).any()                # without ev_lb the spray stays put
    dec, s = run(evs, NsccParams(ev_spray=64, ev_lb=True))
    assert dec[-1]["set"] & D_EV and (dec[-1]["ev"], dec[-1]["ev_n"]) == (0xC000 + 64, 64)
    assert s.n_rotate == 1
    with pytest.raises(Exception):
        NsccParams(ev_spray=-1).check()
