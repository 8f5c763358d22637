"""NSCC's CSIG-located load balancing (``csig_lb``) on synthetic events: an
ECN mark moves the flow's EV unless the latest CSIG max(Delay) locator
names a last hop (the locator's top bit, set by host-facing ports of
switches with CSIG ``last_hop``); without csig_lb every mark moves it, and
trims follow the DSCP rule either way."""
from taurus.cc_algorithms.algorithm import D_EV, FlowContext
from taurus.cc_algorithms.nscc import Nscc, NsccParams, lm_last_hop
from taurus.datapath.ccevents import CSIG_DELAY
from taurus.datapath.wire.csig import LM_LAST_HOP_COMPACT, LM_LAST_HOP_WIDE, locator_with_last_hop
from taurus.testing.replay import records, replay

MSS = 4096
CTX = FlowContext(mss=MSS, line_rate=100e9, max_cwnd=float(1 << 30))
BASE = 10_000
LB = NsccParams(ev_lb=True, csig_lb=True)


def run(evs, params):
    dec, S = replay(Nscc, params, records(evs), "python", CTX, flows=1)
    return dec[1:], S[0]


def rtt(t, delay):
    return ("RTT", t, {"rtt": BASE + delay, "qdelay": delay, "hops": 2})


def ack(t, marked=False):
    return ("ACK", t, {"bytes": MSS, "packets": 1, "ecn_bytes": MSS if marked else 0})


def csig(t, locator, fmt=2):
    return ("CSIG", t, {"csig_type": CSIG_DELAY, "value": 5_000, "locator": locator, "fmt": fmt})


def nack(t, last_hop):
    return ("NACK", t, {"nacks": 1, "trimmed": 1, "last_hop": last_hop})


START = [rtt(100, 0), ack(200)]
LAST_W, CORE_W = LM_LAST_HOP_WIDE | (3 << 6) | 1, (2 << 6) | 3      # wide: switch << 6 | port
LAST_C, CORE_C = LM_LAST_HOP_COMPACT | 9, 9


def test_locator_bit_round_trip():
    assert lm_last_hop(2, locator_with_last_hop(CORE_W, "wide", True))
    assert not lm_last_hop(2, locator_with_last_hop(LAST_W, "wide", False))
    assert lm_last_hop(1, LAST_C) and not lm_last_hop(1, CORE_C)
    assert not lm_last_hop(1, LM_LAST_HOP_WIDE)        # the wide bit is beyond a compact LM


def test_marks_located_at_the_last_hop_do_not_move_the_flow():
    for loc, fmt in ((LAST_W, 2), (LAST_C, 1)):
        dec, s = run(START + [csig(1_000, loc, fmt), ack(1_100, marked=True)], LB)
        assert not (dec["set"] & D_EV).any() and s.n_rotate == 0 and s.last_hop


def test_marks_located_in_the_core_move_it():
    for loc, fmt in ((CORE_W, 2), (CORE_C, 1)):
        dec, s = run(START + [csig(1_000, loc, fmt), ack(1_100, marked=True)], LB)
        assert dec[-1]["set"] & D_EV and s.n_rotate == 1 and not s.last_hop


def test_the_latest_locator_decides():
    """An incast that ends (the bottleneck moves to the core) moves the flow
    on the next mark; a clean ACK never does."""
    evs = START + [csig(1_000, LAST_W), ack(1_100, marked=True), ack(1_200),
                   csig(1_300, CORE_W), ack(1_400, marked=True)]
    dec, s = run(evs, LB)
    assert [bool(x & D_EV) for x in dec["set"][-4:]] == [False, False, False, True]
    assert s.n_rotate == 1


def test_without_csig_lb_a_last_hop_mark_moves_the_flow():
    """NSCC's rule today: the ECN bit alone cannot say where the mark was."""
    p = NsccParams(ev_lb=True)
    assert "CSIG" not in Nscc.bindings(p) and "CSIG" in Nscc.bindings(LB)
    dec, s = run(START + [ack(1_100, marked=True)], p)
    assert dec[-1]["set"] & D_EV and s.n_rotate == 1


def test_trims_keep_the_dscp_rule():
    dec, s = run(START + [csig(1_000, CORE_W), nack(30_000, last_hop=1)], LB)
    assert s.n_rotate == 0
    dec, s = run(START + [csig(1_000, LAST_W), nack(30_000, last_hop=0)], LB)
    assert s.n_rotate == 1
