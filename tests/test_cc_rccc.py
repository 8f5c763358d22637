"""RCCC (the receiver role): per time slice the receiver's link divided among
its active senders, by backlog, as cumulative credit; the grants follow
joins, leaves and backlogs -- on synthetic events (plain Python) and end to
end in a receiving NIC (native, virtual time, memory link)."""
from types import SimpleNamespace

import numpy as np

from taurus.cc_algorithms import rccc
from taurus.cc_algorithms.algorithm import state_dtype
from taurus.cc_algorithms.native import NativeTable
from taurus.cc_algorithms.rccc import Rccc, RcccParams
from taurus.datapath.devices.nic.setup import (DATA_HDR, add_flow, add_nic, flow_stats,
                                               nic_delivered, nic_post)
from taurus.datapath.engine import Engine

MSS = 1024
SLICE_BYTES = 10e9 * 1e-6 / 8 * MSS / (MSS + DATA_HDR)       # 10 Gbit/s, 1 us, payload


# ---- synthetic events, the handlers as plain Python -------------------------------

def _receiver(rate=10e9):
    s = np.zeros(1, state_dtype(Rccc)).view(np.recarray)[0]     # the record handlers get
    p = SimpleNamespace(**vars(RcccParams(rate=rate)), mss=MSS, line_rate=100e9)
    rccc.rccc_init(s, p, None)
    return s, p


def _ev(flow, t, **kw):
    return SimpleNamespace(**{"flow": flow, "t_first": t, "t_last": t, "bytes": 0, "backlog": 0,
                              "reason": 1, **kw})


def _call(h, s, p, ev):
    d = SimpleNamespace(credit=0.0, set=0)
    h(s, p, ev, d)
    return d.credit


def test_hdr_bytes_default_is_the_nics_data_header():
    assert RcccParams().hdr_bytes == DATA_HDR


def test_a_slice_is_divided_equally_then_follows_joins_and_leaves():
    s, p = _receiver()
    big = 1 << 30
    c1 = _call(rccc.rccc_on_join, s, p, _ev(1, 1000, backlog=big))
    assert c1 == SLICE_BYTES                         # pipe-cleaning: one slice of line rate
    _call(rccc.rccc_on_join, s, p, _ev(2, 1000, backlog=big))
    g1 = _call(rccc.rccc_on_timer, s, p, _ev(1, 11_000))          # 10 slices, 2 senders
    g2 = _call(rccc.rccc_on_timer, s, p, _ev(2, 11_000))
    assert np.isclose(g1 - c1, 5 * SLICE_BYTES) and np.isclose(g2 - c1, 5 * SLICE_BYTES)
    _call(rccc.rccc_on_join, s, p, _ev(3, 11_000, backlog=big))   # a third joins
    a = [_call(rccc.rccc_on_timer, s, p, _ev(r, 41_000)) for r in (1, 2, 3)]
    assert np.allclose(np.diff([a[0] - g1, a[1] - g2, a[2] - c1]), 0)
    assert np.isclose(a[0] - g1, 10 * SLICE_BYTES)                # 30 slices, a third each
    _call(rccc.rccc_on_leave, s, p, _ev(3, 41_000, reason=0))     # it leaves: halves again
    b = [_call(rccc.rccc_on_timer, s, p, _ev(r, 61_000)) for r in (1, 2)]
    assert np.isclose(b[0] - a[0], 10 * SLICE_BYTES) and np.isclose(b[1] - a[1], 10 * SLICE_BYTES)
    assert s.n == 2 and s.granted[3] == 0 and s.unused == 0


def test_a_small_backlog_gets_its_backlog_and_the_rest_is_redistributed():
    s, p = _receiver()
    big = 1 << 30
    for r in (1, 2, 3):
        _call(rccc.rccc_on_join, s, p, _ev(r, 0, backlog=big))
    # sender 3 has only 2 slices' worth left beyond the credit it holds
    small = 2 * SLICE_BYTES + s.granted[3]
    _call(rccc.rccc_on_data, s, p, _ev(3, 0, bytes=0, backlog=small))
    before = s.granted[1:4].copy()
    _call(rccc.rccc_on_timer, s, p, _ev(1, 30_000))               # 30 slices
    got = s.granted[1:4] - before
    assert np.isclose(got[2], 2 * SLICE_BYTES)                    # its backlog, no more
    assert np.allclose(got[:2], 14 * SLICE_BYTES)                 # the rest, halved
    assert np.isclose(got.sum(), 30 * SLICE_BYTES)                # the link, exactly
    # nobody wants anything: the slices go unused, no credit is made up
    for r in (1, 2, 3):
        _call(rccc.rccc_on_data, s, p, _ev(r, 30_000, backlog=0))
    g = s.granted.copy()
    _call(rccc.rccc_on_timer, s, p, _ev(1, 40_000))
    assert (s.granted == g).all() and np.isclose(s.unused, 10 * SLICE_BYTES)


# ---- end to end: grants gate the senders in a receiving NIC ------------------------

MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"
IP1, IP2 = "10.0.0.1", "10.0.0.2"


def test_grants_divide_the_receivers_link_and_follow_joins_leaves_and_backlog():
    """Native RCCC on a 10 Gbit/s receiver: two senders split its payload
    capacity evenly; a third joins: thirds; the third turns into a
    1 Gbit/s trickle (small backlog): it keeps its trickle and the two others
    share the rest; it goes silent and leaves the table."""
    from taurus.datapath.devices.nic.state import FL_SENT_OFF, NR_RX_ACTIVE
    tab = NativeTable(16)
    alg = tab.add(Rccc)
    eng = Engine(clock="virtual", max_flows=16, n_frames=65536, native=tab.native)
    a, b = eng.add_mem_link("h1", "h2", delay_ns=2000, rate_bps=10_000_000_000)
    init = int(SLICE_BYTES)
    d1 = add_nic(eng, a, MAC1, IP1, line_rate_bps=10_000_000_000, mss=MSS, init_credit=init)
    d2 = add_nic(eng, b, MAC2, IP2, line_rate_bps=10_000_000_000, mss=MSS, init_credit=init,
                 rx_buf_bytes=16 << 20)
    cap = 10e9 * MSS / (MSS + DATA_HDR)                  # payload bit/s of the link
    with eng:
        tab.start_receiver(eng, d2, alg, idle_ns=50_000)
        flows = [add_flow(eng, d1, MAC2, IP2, credit=True, init_credit=init,
                          buf_bytes=8 << 20) for _ in range(3)]
        n2 = int(eng.E.devs.regs[d2, 0])
        S = tab.state(alg)[n2]
        N = eng.E.nic
        got = lambda: np.array([len(nic_delivered(eng, d2, IP1, f)) for f in flows])  # noqa: E731

        def rates(T, trickle=False):
            g0 = got()
            for _ in range(T // 10_000):
                if trickle:                              # 1 Gbit/s, posted every 10 us
                    nic_post(eng, d1, flows[2], bytes(1250))
                eng.run_for(10_000)
            return (got() - g0) * 8e9 / T

        for f in flows[:2]:
            nic_post(eng, d1, f, bytes(4 << 20))
        eng.run_for(100_000)
        r = rates(1_000_000)
        assert r[2] == 0 and S["n"] == 2
        assert np.allclose(r[:2], cap / 2, rtol=0.05), (r, cap)
        nic_post(eng, d1, flows[2], bytes(1 << 20))      # the third joins
        eng.run_for(100_000)
        r = rates(1_000_000)
        assert S["n"] == 3 and int(N.nr[n2, NR_RX_ACTIVE]) == 3
        assert np.allclose(r, cap / 3, rtol=0.05), (r, cap)
        assert r.sum() >= 0.95 * cap
        while flow_stats(eng, flows[2])["acked"] < flow_stats(eng, flows[2])["posted"]:
            eng.run_for(10_000)                          # its megabyte drains
        rates(100_000, trickle=True)
        r = rates(1_000_000, trickle=True)               # small backlog: its backlog
        assert abs(r[2] - 1e9) < 0.05e9, r
        assert np.allclose(r[:2], (cap - r[2]) / 2, rtol=0.05), (r, cap)
        eng.run_for(200_000)                             # silent: it leaves the table
        assert S["n"] == 2 and int(N.nr[n2, NR_RX_ACTIVE]) == 2
        r = rates(1_000_000)
        assert np.allclose(r[:2], cap / 2, rtol=0.05), (r, cap)
        for f in flows:                                  # the credit gate held
            assert N.fl[f, FL_SENT_OFF] <= flow_stats(eng, f)["credit"]
