"""Swift (taurus/cc_algorithms/swift.py): the target grows as the window
shrinks (flow scaling) and with the hops; at most one decrease per RTT;
pacing below one packet; and end to end in virtual time (native), two
flows through one 2 Gbit/s bottleneck: the measured delay settles within
20% of the target and the flows share fairly."""
import functools

import numpy as np
import pytest

from taurus.cc_algorithms.algorithm import D_RATE, FlowContext
from taurus.cc_algorithms.runtime import events
from taurus.cc_algorithms.swift import Swift, SwiftParams, target_delay
from taurus.datapath.ccevents import EVENT_IDS
from taurus.datapath.ccshm import REC_WIDTH
from taurus.testing.replay import replay

import native_dumbbell

MSS = 1024


def test_target_grows_as_the_window_shrinks():
    p = SwiftParams()
    t = [target_delay(p, c, 1) for c in (200.0, 100.0, 50.0, 10.0, 2.0, 1.0, 0.5, 0.1, 0.01)]
    assert all(a <= b for a, b in zip(t, t[1:])), t
    base = p.base_target + p.h_per_hop
    assert t[0] == pytest.approx(base) and t[1] == pytest.approx(base)      # fs_max_cwnd: no scaling
    assert t[-2] == pytest.approx(base + p.fs_range)                        # fs_min_cwnd: the whole range
    assert t[-1] == pytest.approx(base + p.fs_range)                        # clamped below it
    assert t[3] < t[4] < t[5]                                               # strictly between
    assert target_delay(p, 10.0, 3) - target_delay(p, 10.0, 1) == pytest.approx(2 * p.h_per_hop)
    assert target_delay(p, 10.0, -1) == target_delay(p, 10.0, 0)            # hops unknown: none


def _rtt_records(samples):
    """RTT records of flow 0: (time, rtt, hops) each."""
    rec = np.zeros((len(samples), REC_WIDTH), np.int64)
    ev = events(rec)
    for i, (t, rtt, hops) in enumerate(samples):
        r = ev[i]
        r.seq, r.flow, r.event, r.t_first, r.t_last, r.count = i, 0, EVENT_IDS["RTT"], t, t, 1
        r.rtt, r.send_time, r.psn, r.qdelay, r.hops = rtt, t - rtt, i, rtt - 10_000, hops
    return rec


CTX = FlowContext(mss=MSS, line_rate=10e9, max_cwnd=float(1 << 24))


def test_one_decrease_per_rtt_and_the_target_follows_the_window():
    p = SwiftParams()
    # 50 samples 1 us apart, 200 us RTT each: far above the target
    rec = _rtt_records([(1_000_000 + 1000 * i, 200_000, 1) for i in range(50)])
    for mode in ("python", "native"):
        d, s = replay(Swift, p, rec, mode, CTX, flows=1)
        cw = d["cwnd"]                                  # init's, then one per sample
        assert (np.diff(cw) < 0).sum() == 1, mode        # one cut within the RTT, then none
        t0 = target_delay(p, 10.0, 1)
        assert cw[1] == pytest.approx(10 * MSS * max(1 - p.beta * (200_000 - t0) / 200_000,
                                                     1 - p.max_mdf))
    d, s = replay(Swift, p, _rtt_records([(1_000_000 + 300_000 * i, 200_000, 1)
                                          for i in range(4)]), "python", CTX, flows=1)
    assert (np.diff(d["cwnd"]) < 0).all()               # one per RTT apart: each cuts
    # the window shrank, so the target it is judged against grew
    assert s[0].target > target_delay(p, 10.0, 1)


def test_below_one_packet_the_flow_is_paced():
    p = SwiftParams()
    rec = _rtt_records([(1_000_000 + 300_000 * i, 400_000, 1) for i in range(12)])
    d, s = replay(Swift, p, rec, "python", CTX, flows=1)
    assert s[0].cwnd < 1
    last = d[-1]
    assert last["set"] & D_RATE
    assert last["rate"] == pytest.approx(s[0].cwnd * MSS * 8e9 / s[0].srtt, rel=1e-9)
    assert last["cwnd"] == MSS                          # the window stays one packet


@functools.lru_cache(maxsize=None)
def run():
    seen, got, util = native_dumbbell.run(Swift, ("delay", "target"))
    return seen["delay"], seen["target"], got, util


def test_delay_settles_within_20_percent_of_the_target():
    delay, target, got, util = run()
    ratio = delay.mean(axis=0) / target.mean(axis=0)
    print(f"swift: delay {delay.mean(axis=0) / 1e3} us, target {target.mean(axis=0) / 1e3} us, "
          f"ratio {ratio}, util {util:.3f}")
    assert np.all(np.abs(ratio - 1) <= 0.20), ratio
    assert util >= 0.85                 # payload bytes over the link rate: headers excluded


def test_two_flows_share_fairly():
    delay, target, got, util = run()
    a, b = got["h1"], got["h2"]
    print(f"swift: h1 {a} h2 {b} gap {abs(a - b) / ((a + b) / 2):.3f}")
    assert abs(a - b) / ((a + b) / 2) <= 0.10


def test_the_endpoint_window_follows_the_receivers_host_delay():
    """HOST peer_host_delay above endpoint_target shrinks ecwnd while the
    fabric (RTT below its target) grows fcwnd; the window is the smaller."""
    from taurus.datapath.ccevents import HOST_SRC_PEER_DELAY
    p = SwiftParams()
    rec = _rtt_records([(1_000_000 + 300_000 * i, 15_000, 1) for i in range(6)])
    host = np.zeros((1, REC_WIDTH), np.int64)
    h = events(host)[0]
    h.flow, h.event, h.t_first, h.t_last, h.count = 0, EVENT_IDS["HOST"], 900_000, 900_000, 1
    h.source, h.value = HOST_SRC_PEER_DELAY, 100_000
    rec = np.concatenate([host, rec])
    for mode in ("python", "native"):
        d, s = replay(Swift, p, rec, mode, CTX, flows=1)
        assert s[0].edelay == 100_000
        assert s[0].fcwnd > 10 and s[0].ecwnd < 10
        assert s[0].cwnd == s[0].ecwnd
        assert d["cwnd"][-1] == pytest.approx(max(s[0].ecwnd, 1) * MSS)


def _csig_then_rtts(abw_c_ppm, n, rtt=15_000):
    """A CSIG record reflecting min(ABW/C), then n RTT samples below the target."""
    rec = np.zeros((n + 1, REC_WIDTH), np.int64)
    ev = events(rec)
    r = ev[0]
    r.seq, r.flow, r.event, r.t_first, r.t_last, r.count = 0, 0, EVENT_IDS["CSIG"], 1000, 1000, 1
    r.csig_type, r.value, r.fmt = 2, abw_c_ppm, 1
    rec[1:] = _rtt_records([(2000 + 1000 * i, rtt, 1) for i in range(n)])
    for i in range(1, n + 1):
        ev[i].seq = i
    return rec


def test_fru_adds_lambda_fcwnd_abw_c_per_rtt_below_target():
    """CSIG FRU: below target one RTT's samples (fcwnd of them) add
    ai + lam * fcwnd * min(ABW/C); without FRU the reflected CSIG changes
    nothing, and FRU binds CSIG with an abw_c tag."""
    assert "CSIG" in Swift.bindings(SwiftParams(fru=True))
    assert "CSIG" not in Swift.bindings(SwiftParams())
    assert Swift.csig[0] == "abw_c"
    for mode in ("python", "native"):
        got = {}
        for fru in (False, True):
            p = SwiftParams(fru=fru)
            d, s = replay(Swift, p, _csig_then_rtts(600_000, 10), mode, CTX, flows=1)
            got[fru] = d["cwnd"][-1] / MSS                 # after 10 samples from 10 packets
        assert got[False] == pytest.approx(10 + 1, rel=0.01), mode      # AI: ~1 per window
        # per sample (ai + lam * w * 0.6) / w: about 1 + 0.5 * 10 * 0.6 = 4 per window
        assert got[True] == pytest.approx(10 + 1 + 0.5 * 0.6 * 10, rel=0.05), (mode, got)
