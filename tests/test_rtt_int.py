"""INT, per-packet RTT and the least-squares delay gradient, end to end in
virtual time: host NICs ask for INT and reflect the switches' hop records,
RTT samples come per acknowledged packet with their send time, queueing
delay and hop count, and RTT_LS sums give the queue's growth rate; the
experiment summary counts the records each flow's algorithm got."""
import functools

import numpy as np
import pytest

from taurus.cc_algorithms.algorithm import Algorithm, kernel
from taurus.cc_algorithms.native import NativeTable
from taurus.datapath import ccshm as C
from taurus.datapath.ccevents import LS_SCALE, ls_slope
from taurus.datapath.devices.nic.setup import (add_flow, flow_done, nic_delivered, nic_post,
                                               set_flow_mode)
from taurus.datapath.devices.switch.setup import switch_stats
from taurus.datapath.engine import Engine
from taurus.datapath.wire import spec as S
from taurus.tools import topology as topo
from taurus.tools.fabric import build_virtual, nic_host

MSS = 1024


@kernel
def int_on_int(s, p, ev, d):
    h = ev.hop
    s.n[h] += 1
    s.qmax[h] = max(s.qmax[h], ev.qlen)
    s.tx[h] = max(s.tx[h], ev.tx_bytes)
    s.rate[h] = ev.link_rate
    s.ts[h] = ev.ts
    s.nhops = ev.nhops
    s.psn = ev.psn


class IntProbe(Algorithm):
    """Records what the INT events of its flow say, per hop."""
    name = "test-int"
    state = ("nhops", "psn", ("n", 5), ("qmax", 5), ("tx", 5), ("rate", 5), ("ts", 5))
    binds = ("INT",)
    on_int = staticmethod(int_on_int)


def _chain(rates, buffer="4MB", **nic_opts):
    """h1 -- s1 -- ... -- sk -- h2, INT on every switch; rates[j]: link j's."""
    t = topo.Topology("chain")
    t.add_host("h1")
    t.add_host("h2")
    k = len(rates) - 1
    for j in range(k):
        t.add_switch(f"s{j + 1}", {"int": True})
    ends = ["h1"] + [f"s{j + 1}" for j in range(k)] + ["h2"]
    for j, r in enumerate(rates):
        t.add_link(ends[j], ends[j + 1], rate=r, delay="1us", buffer=buffer)
    return t


def test_int_records_of_every_hop_reach_the_algorithm():
    tab = NativeTable(8)
    alg = tab.add(IntProbe)
    eng = Engine(clock="virtual", max_flows=8, max_nics=4, native=tab.native)
    t = _chain(["10Gbit", "10Gbit", "5Gbit", "10Gbit"])
    fab = build_virtual(eng, t, host_factory=nic_host)
    nics = fab["hosts"]
    data = np.random.default_rng(3).integers(0, 256, 200_000, np.uint8).tobytes()
    with eng:
        f = add_flow(eng, nics["h1"], t.mac_of("h2"), t.ip_of("h2"), buf_bytes=len(data))
        tab.start(eng, f, alg)
        nic_post(eng, nics["h1"], f, data)
        eng.run_for(5 * 10**6)
        assert flow_done(eng, f)
        assert nic_delivered(eng, nics["h2"], t.ip_of("h1"), f) == data
        s = tab.state(alg)[f].copy()
        st = switch_stats(eng)
        egress = [st[f"s{j}-eth1"] for j in (1, 2, 3)]   # toward h2
    assert s["nhops"] == 3
    n = s["n"][:3]
    assert n[0] > 0 and (n == n[0]).all() and s["n"][3] == 0
    assert list(s["rate"][:3]) == [10e9, 5e9, 10e9]
    # the 5 Gbit/s hop queues, the others (nearly) do not: INT adds 8 B a hop
    assert s["qmax"][1] > 20_000 and s["qmax"][0] < 5_000 and s["qmax"][2] < 2_000
    for j in range(3):        # the last record: the port's bytes before the last frame left
        gap = egress[j]["tx_bytes"] - s["tx"][j]
        assert 0 <= gap < MSS + 200 + S.INT_TX_UNIT, (j, gap)
    mod = 1 << 24
    # departures of one packet: a link (1 us) and the wait in s2's queue apart
    assert 1_000 < (s["ts"][1] - s["ts"][0]) % mod < 8e9 * s["qmax"][1] / 5e9 + 5_000
    assert 1_000 < (s["ts"][2] - s["ts"][1]) % mod < 5_000
    assert s["psn"] == (len(data) + MSS - 45) // (MSS - 44) - 1   # INT leaves 44 B a packet
    assert eng.E.rep.delivered[f, C.EV_INT] == int(n.sum())


def _bottleneck(overload):
    """h1 (NIC paced at (1 + overload) Gbit/s) -- s1 -- 1 Gbit/s -- h2."""
    eng = Engine(clock="virtual", max_flows=8, max_nics=4)
    eng.reserve_nics(win=1024)
    t = topo.Topology("bn")
    t.add_host("h1")
    t.add_host("h2")
    t.add_switch("s1")
    t.add_link("h1", "s1", rate="10Gbit", delay="1us")
    t.add_link("s1", "h2", rate="1Gbit", delay="1us", buffer="4MB")
    fab = build_virtual(eng, t, host_factory=functools.partial(nic_host, ack_every=1))
    nics = fab["hosts"]
    f = add_flow(eng, nics["h1"], t.mac_of("h2"), t.ip_of("h2"), buf_bytes=1 << 20,
                 rate_bps=int((1 + overload) * 1e9))
    return eng, t, nics, f


def test_rtt_per_packet_and_least_squares_slope_of_a_filling_queue():
    """A constant 20% overload: the queue's delay grows 0.2 ns per ns of send
    time; one RTT_LS message (2 ms of samples) gives that slope within 5%,
    and every packet gives an RTT record with its send time, its queueing
    delay and one switch hop."""
    overload = 0.2
    eng, t, nics, f = _bottleneck(overload)
    cc = eng.cc
    size = 1_000_000
    with eng:
        set_flow_mode(eng, f, "agent",
                      event_mask=(1 << C.EV_RTT) | (1 << C.EV_RTT_LS))
        cc.period_ns[f, C.CLS_ACCUMULABLE] = 2_000_000
        nic_post(eng, nics["h1"], f, bytes(size))
        eng.run_for(20 * 10**6)
        assert flow_done(eng, f)
        recs = cc.ring.drain()
        delivered = eng.E.rep.delivered[f].copy()
    ls = recs[recs[:, C.EVENT] == C.EV_RTT_LS]
    rtt = recs[recs[:, C.EVENT] == C.EV_RTT]
    npkt = -(-size // MSS)
    v = rtt[:, C.V0:]
    assert sorted(v[:, 2]) == list(range(npkt))          # one sample per packet, by PSN
    assert (v[:, 4] == 1).all()                          # hops: one switch
    # qdelay: above the least RTT so far (at the end, the least of all)
    assert (v[:, 3] >= 0).all() and (v[:, 3] <= v[:, 0] - v[:, 0].min()).all()
    assert v[-1, 3] == v[-1, 0] - v[:, 0].min() > 0
    assert (rtt[:, C.T_FIRST] - v[:, 1] == v[:, 0]).all()   # arrival - send time
    assert len(ls) >= 3 and ls[:, C.V0].sum() == npkt
    for m in ls[1:-1]:                                   # full windows
        n, sx, sy, sxx, sxy, x0 = m[C.V0:C.V0 + 6]
        assert n == m[C.COUNT] and n > 100 and sx > 0 and sxx > 0
        assert ls_slope(n, sx, sy, sxx, sxy) == pytest.approx(overload, rel=0.05)
    # the same slope from the RTT records of that window, in floating point
    m = ls[1]
    sel = (v[:, 1] >= m[C.V0 + 5]) & (rtt[:, C.T_FIRST] >= m[C.T_FIRST]) \
        & (rtt[:, C.T_FIRST] <= m[C.T_LAST])
    ref = np.polyfit(v[sel, 1].astype(float), v[sel, 0].astype(float), 1)[0]
    assert ls_slope(*m[C.V0:C.V0 + 5]) == pytest.approx(ref, rel=1e-3)
    assert m[C.V0 + 3] == pytest.approx(((v[sel, 1] - m[C.V0 + 5]) ** 2).sum() / LS_SCALE,
                                        rel=1e-6)
    assert delivered[C.EV_RTT] == len(rtt) and delivered[C.EV_RTT_LS] == len(ls)
    assert delivered.sum() == len(recs)


def test_a_flow_not_binding_rtt_asks_for_nothing_more():
    """Without RTT or INT bound: no RTT_LS, no INT tail (full MSS packets)."""
    eng, t, nics, f = _bottleneck(0.0)
    with eng:
        set_flow_mode(eng, f, "agent", event_mask=1 << C.EV_ACK)
        nic_post(eng, nics["h1"], f, bytes(100 * MSS))
        eng.run_for(5 * 10**6)
        assert flow_done(eng, f)
        recs = eng.cc.ring.drain()
        st = switch_stats(eng)["s1-eth1"]
    assert set(recs[:, C.EVENT]) == {C.EV_ACK}
    assert st["tx"] == 100 and st["int_append"] == 0


@pytest.mark.parametrize("mode", ["native", "agent"])
def test_summary_counts_the_events_each_algorithm_got(mode, tmp_path):
    from taurus.experiment import schema
    from taurus.experiment.runner import run_experiment
    x = schema.from_dict({
        "experiment": {"name": "ev", "duration": "2ms"},
        "topology": {"name": "t", "hosts": [{"name": "h1"}, {"name": "h2"}],
                     "switches": [{"name": "s1"}],
                     "links": [{"endpoints": ["h1", "s1"]}, {"endpoints": ["s1", "h2"]}]},
        "cc": {"algorithm": "dctcp", "mode": mode},
        "traffic": [{"kind": "bulk", "from": "h1", "to": "h2", "size": "100KB"}]})
    s = run_experiment(x, str(tmp_path), "virtual")
    assert s["complete"] and not s["error"]
    (row,) = s["flows"]
    assert row["done"] and row["events"].get("ACK", 0) > 0, row
    assert set(row["events"]) <= set(C.EVENT_NAMES)


def test_switch_decrements_ttl_and_drops_an_expired_frame():
    """Each switch hop takes one from the TTL (checksum kept valid, as Scapy
    computes it); a frame arriving with TTL 1 is dropped and counted."""
    from scapy.layers.inet import IP
    from scapy.layers.l2 import Ether
    from taurus.datapath.wire import frames as F
    from taurus.datapath.wire import layers as L
    t = topo.Topology("ttl")
    t.add_host("h1")
    t.add_host("h2")
    t.add_switch("s1")
    t.add_switch("s2")
    t.add_link("h1", "s1")
    t.add_link("s1", "s2")
    t.add_link("s2", "h2")
    eng = Engine(clock="virtual", max_flows=4, max_nics=2)
    fab = build_virtual(eng, t)
    h1, h2 = fab["hosts"]["h1"], fab["hosts"]["h2"]
    with eng:
        for ttl in (64, 3, 2, 1):
            f = F.uet_frame(L.PDSRudReq(), L.SESStd(), bytes(100), src_ip=t.ip_of("h1"),
                            dst_ip=t.ip_of("h2"), ttl=ttl)
            eng.inject(h1, bytes(f))
        eng.run_for(10**7)
        got = [Ether(r) for r in eng.collect(h2)]
        st = switch_stats(eng)
    assert [p[IP].ttl for p in got] == [62, 1]
    for p in got:
        q = p[IP].copy()
        del q.chksum
        assert IP(bytes(q)).chksum == p[IP].chksum
    assert st["s1-eth1"]["tx"] == 3 and st["s1-eth0"]["ttl_drop"] == 1
    assert st["s2-eth0"]["ttl_drop"] == 1
