"""The software switch in virtual time: rates, queueing delay, ECN/RED,
CSIG over three hops for every signal type, INT, trimming, ECMP on the
entropy value, telemetry.  Deterministic: exact virtual clock, seeded RED."""
import math

import numpy as np
import pytest
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from taurus.datapath.devices.switch import state as SS
from taurus.datapath.devices.switch.csig import FRAC_ONE
from taurus.datapath.devices.switch.setup import (add_switch, read_switch_telemetry,
                                                  switch_stats, telemetry)
from taurus.datapath.engine import Engine
from taurus.datapath.ports import memlink
from taurus.datapath.wire import frames as F
from taurus.datapath.wire import layers as L
from taurus.datapath.wire import spec as S
from taurus.tools import topology as topo
from taurus.tools.fabric import build_virtual

IP1, IP2 = "10.0.0.1", "10.0.0.2"


def uet(size, src=IP1, dst=IP2, ev=0x1234, ecn=2, dscp=0, csig=None, int_tail=False, psn=0):
    """A UET data frame of `size` bytes (without any INT trailer)."""
    hdr = F.uet_frame(L.PDSRudReq(psn=psn), L.SESStd(), b"", src_ip=src, dst_ip=dst,
                      entropy=ev, ecn=ecn, dscp=dscp, csig=csig)
    f = F.uet_frame(L.PDSRudReq(psn=psn), L.SESStd(), bytes(max(1, size - len(hdr))),
                    src_ip=src, dst_ip=dst, entropy=ev, ecn=ecn, dscp=dscp, csig=csig)
    raw = bytes(f)
    if int_tail:
        raw += bytes(L.INTTail(nhop=0))
    return raw


def udp(size, src=IP1, dst=IP2, sport=1000):
    """A plain (non-UET) IPv4/UDP frame of exactly `size` bytes."""
    from scapy.layers.inet import UDP
    f = Ether(src=F.DEFAULT_SRC_MAC, dst=F.DEFAULT_DST_MAC) / IP(src=src, dst=dst) / UDP(sport=sport, dport=9)
    return bytes(f / bytes(size - len(f)))


def arrivals(eng, p):
    """Arrival times of the frames waiting at open end p (not yet collected)."""
    return memlink.mem_waiting(eng.E.ports, p)


def ser(nbytes, rate):
    return -(-nbytes * 8 * 10**9 // rate)


def one_switch(port_cfg, nports=2, eng=None):
    """h_k -- s1 with open ends h_k (10.0.0.k+1); returns (eng, hosts, sw ports)."""
    eng = eng or new_engine()
    hosts, sp = [], []
    for k in range(nports):
        h, s = eng.add_mem_link(f"h{k}", f"s1-eth{k}")
        hosts.append(h)
        sp.append(s)
    routes = {f"10.0.0.{k + 1}": [sp[k]] for k in range(nports)}
    add_switch(eng, sp, {"ports": port_cfg, "routes": routes, "telemetry": "100us"})
    return eng, hosts, sp


_ENGINES = []


@pytest.fixture(autouse=True)
def _close_engines():
    yield
    while _ENGINES:
        _ENGINES.pop().close()


def new_engine(**kw):
    eng = Engine(clock="virtual", **kw)
    _ENGINES.append(eng)
    return eng


def ecn_of(raw):
    return Ether(raw)[IP].tos & 3


# ---------------------------------------------------------------- queues

@pytest.mark.parametrize("rate,size", [(10**9, 1000), (2 * 10**9, 64), (2 * 10**9, 1500)])
def test_departure_rate_equals_configured_rate(rate, size):
    eng, (h0, h1), _ = one_switch({"rate": rate, "delay": "10us", "buffer": "4MB"})
    f = udp(size)
    assert len(f) == size
    n = 400
    t0 = eng.now()
    for _ in range(n):
        assert eng.inject(h0, f)
    eng.run_for(10**8)
    arr = arrivals(eng, h1)
    assert len(arr) == n
    gaps = set(np.diff(arr))
    assert gaps == {ser(size, rate)}                  # every frame exactly one frame time apart
    got = (n - 1) * size * 8 * 1e9 / (arr[-1] - arr[0])
    assert abs(got / rate - 1) < 1e-3
    assert arr[0] - t0 == ser(size, rate) + 10_000
    assert switch_stats(eng)["s1-eth1"]["tx"] == n and eng.frames_in_use() == n


def test_queueing_delay_equals_queue_over_rate():
    rate = 10**9
    eng, (h0, h1), _ = one_switch({"rate": rate, "delay": "3us", "buffer": "4MB"})
    f = uet(1000)
    t0 = eng.now()
    for _ in range(100):
        eng.inject(h0, f)
    eng.run_for(10**8)
    for k, a in enumerate(arrivals(eng, h1)):
        queue_ahead = k * 1000
        assert a - t0 == queue_ahead * 8 * 10**9 // rate + ser(1000, rate) + 3000


def test_drop_tail_and_shared_buffer():
    eng, (h0, h1), _ = one_switch({"rate": 10**9, "buffer": 10_000})
    for _ in range(30):
        eng.inject(h0, uet(1000))
    eng.run_for(10**8)
    st = switch_stats(eng)["s1-eth1"]
    # all 30 arrive at the same instant: 10 fit in the port's 10 KB
    assert st["tx"] == 10 and st["drop"] == 20 and len(eng.collect(h1)) == 10
    assert eng.frames_in_use() == 0
    # a shared buffer smaller than the port limit bounds it too
    eng = new_engine()
    a, b = eng.add_mem_link("h0", "s1-eth0")
    c, d = eng.add_mem_link("s1-eth1", "h1")
    add_switch(eng, [b, c], {"ports": {"rate": 10**9}, "buffer": 5000, "routes": {IP2: [c]}})
    for _ in range(30):
        eng.inject(a, uet(1000))
    eng.run_for(10**8)
    assert len(eng.collect(d)) == 5 and switch_stats(eng)["s1-eth1"]["drop"] == 25


def test_high_class_has_strict_priority():
    eng, (h0, h1), _ = one_switch({"rate": 10**9, "buffer": "1MB"})
    for k in range(20):
        eng.inject(h0, uet(1000, psn=k))
    eng.run_for(1000)
    eng.inject(h0, uet(200, dscp=46, psn=99))
    eng.run_for(10**8)
    psns = [Ether(r)[L.PDSRudReq].psn for r in eng.collect(h1)]
    assert psns == [0, 99] + list(range(1, 20))   # overtakes all but the frame on the wire


# ---------------------------------------------------------------- ECN

def test_ecn_step_marking_starts_at_k():
    K = 20_000
    eng, (h0, h1), _ = one_switch({"rate": 10**9, "buffer": "1MB", "ecn": {"k": K}})
    n = 60
    for _ in range(n):
        eng.inject(h0, uet(1000))
    eng.inject(h0, uet(1000, ecn=0))           # not ECN-capable: never marked
    eng.run_for(10**8)
    got = eng.collect(h1)
    marks = [ecn_of(r) for r in got]
    # frame k leaves with (n - k) frames behind it (the non-ECT one included)
    expect = [3 if (n - k) * 1000 > K else 2 for k in range(n)] + [0]
    assert marks[1:] == expect[1:]
    assert marks[1:].count(3) == sum(1 for k in range(1, n) if (n - k) * 1000 > K) == 39
    assert IP(Ether(got[5])[IP].build()).chksum == Ether(got[5])[IP].chksum  # checksum redone


def test_red_marking_probability_within_binomial_bounds():
    kmin, kmax, pmax = 10_000, 50_000, 0.5
    eng, (h0, h1), _ = one_switch({"rate": 10**9, "buffer": "1MB",
                                   "ecn": {"kmin": kmin, "kmax": kmax, "pmax": pmax}})
    n, rounds = 60, 40
    expect_sum = var = 0.0
    marks = 0
    for r in range(rounds):
        for _ in range(n):
            eng.inject(h0, uet(1000))
        eng.run_for(10**7)
        got = [ecn_of(x) for x in eng.collect(h1)]
        assert len(got) == n
        for k in range(1, n):
            q = (n - 1 - k) * 1000
            p = 0.0 if q <= kmin else 1.0 if q > kmax else pmax * (q - kmin) / (kmax - kmin)
            expect_sum += p
            var += p * (1 - p)
            marks += got[k] == 3
    assert abs(marks - expect_sum) < 4 * math.sqrt(var), (marks, expect_sum, var)


# ---------------------------------------------------------------- CSIG, INT

def _three_hops(feat):
    t = topo.Topology("csig3")
    t.add_host("h1", ip=IP1)
    t.add_host("h2", ip=IP2)
    for s in ("s1", "s2", "s3"):
        t.add_switch(s, feat)
    t.add_link("h1", "s1", rate="4Gbit", delay="1us")
    t.add_link("s1", "s2", rate="4Gbit", delay="1us")
    t.add_link("s2", "s3", rate="1Gbit", delay="1us")       # s2's egress: the bottleneck
    t.add_link("s3", "h2", rate="4Gbit", delay="1us")
    eng = new_engine()
    fab = build_virtual(eng, t)
    return eng, t, fab


def _ring(eng, p):
    return (int(eng.E.ports.regs[p, memlink.FIFO]) & 0xFFFF) + 1


def test_link_rings_follow_bandwidth_x_delay_unless_an_end_is_open():
    """build_virtual: a link between two devices gets a ring of twice its
    64-byte frames in flight plus a switch's room (memlink.py); a link to
    an open end, where Python injects and collects, the largest."""
    eng, t, fab = _three_hops({})
    ring = {lk.a + "-" + lk.b: (_ring(eng, fab["ports"][lk.a_iface]),
                                _ring(eng, fab["ports"][lk.b_iface])) for lk in t.links}
    assert ring == {"h1-s1": (memlink.CAP, memlink.CAP), "s1-s2": (32, 32),   # 4G: 9 in flight
                    "s2-s3": (16, 16), "s3-h2": (memlink.CAP, memlink.CAP)}   # 1G: 3


@pytest.mark.parametrize("fmt", ["compact", "wide"])
@pytest.mark.parametrize("ctype", ["abw", "abw_c", "delay", "qdepth"])
def test_csig_carries_bottleneck_value_and_locator(ctype, fmt):
    eng, t, fab = _three_hops({"csig": {"interval": "20us"}})
    sw = eng.E.sw
    tnum = {"abw": 0, "abw_c": 1, "delay": 2, "qdepth": 3}[ctype]
    init = (31 if fmt == "compact" else (1 << 20) - 1) if tnum <= 1 else 0
    tag = L.CSIGCompact(t=tnum, s=init) if fmt == "compact" else L.CSIGWide(t=tnum, s=init)
    f = uet(1000, csig=tag)
    h1, h2 = fab["hosts"]["h1"], fab["hosts"]["h2"]
    # 1.5 Gbit/s offered: s1 and s3 (4 Gbit/s) keep spare capacity, s2 (1 Gbit/s) queues
    eng.add_pktgen(h1, f, rate_pps=1.5e9 / 8000, count=300)
    eng.run_for(10**8)
    got = eng.collect(h2)
    assert len(got) == 300
    bott = fab["ports"]["s2-eth1"]
    loc = sw.pcfg[bott, SS.C_LOC_C if fmt == "compact" else SS.C_LOC_W]
    others = {int(sw.pcfg[fab["ports"][i], SS.C_LOC_C if fmt == "compact" else SS.C_LOC_W])
              for i in ("s1-eth1", "s3-eth1")}
    assert loc not in others
    cls = L.CSIGCompact if fmt == "compact" else L.CSIGWide
    # after some ABW intervals, while s2's queue grows (it drains after ~200)
    tags = [Ether(r)[cls] for r in got[100:190]]
    assert all(x.lm == loc for x in tags), {x.lm for x in tags}
    vals = [x.s for x in tags]
    if ctype == "abw":          # the bottleneck is saturated: ~0 Mbit/s available
        assert max(vals) <= (1 if fmt == "compact" else 60)
    elif ctype == "abw_c":
        assert max(vals) <= (1 if fmt == "compact" else FRAC_ONE // 20)
    elif ctype == "delay":      # queue/rate at s2: grows by 1/2 frame per departure
        assert vals[-1] > vals[0] > 0
        if fmt == "wide":
            q_ns = vals[-1] << 2
            assert 50 * 8000 < q_ns < 300 * 8000
    else:
        assert vals[-1] > vals[0] > 0
    assert switch_stats(eng)["s2-eth1"]["csig_replace"] > 0


def test_int_records_every_hop():
    eng, t, fab = _three_hops({"int": True})
    h1, h2 = fab["hosts"]["h1"], fab["hosts"]["h2"]
    f = uet(1000, int_tail=True)
    for _ in range(50):
        eng.inject(h1, f)
    eng.run_for(10**8)
    got = eng.collect(h2)
    assert len(got) == 50
    for k, raw in enumerate(got):
        assert len(raw) == len(f) + 3 * S.INTHOP_SIZE
        tail = L.INTTail(raw[-4:])
        assert tail.magic == S.INT_MAGIC and tail.nhop == 3
        hops = [L.INTHop(raw[len(f) - 4 + 8 * j: len(f) + 4 + 8 * j]) for j in range(3)]
        assert [h.rate_code for h in hops] == [2, 0, 2]    # closest listed rates: 5G, 1G, 5G
        assert hops[0].ts < hops[1].ts < hops[2].ts
        assert hops[1].qlen * S.INT_QLEN_UNIT >= hops[0].qlen * S.INT_QLEN_UNIT
    last = [L.INTHop(got[40][len(f) - 4 + 8 * j: len(f) + 4 + 8 * j]) for j in range(3)]
    assert last[1].qlen > 0 and last[0].qlen == 0 and last[2].qlen == 0
    assert last[1].tx_bytes * S.INT_TX_UNIT <= 50 * (len(f) + 16)


# ---------------------------------------------------------------- trimming

def test_trimming_cuts_payload_keeps_header_high_class():
    eng, (h0, h1), _ = one_switch({"rate": 10**9, "buffer": "1MB", "trim": "10KB"})
    tag = L.CSIGCompact(t=2, s=0)
    for k in range(40):
        eng.inject(h0, uet(1000, psn=k, csig=tag))
    eng.run_for(10**8)
    got = [Ether(r) for r in eng.collect(h1)]
    assert len(got) == 40
    trimmed = [p for p in got if p[IP].tos >> 2 == 46]
    full = [p for p in got if p[IP].tos >> 2 == 0]
    # all arrive at once: the first ten fit under 10 KB, the rest are trimmed
    assert len(full) == 10 and len(trimmed) == 30
    hdr_len = len(F.uet_frame(L.PDSRudReq(), L.SESStd(), b"", csig=tag))
    for p in trimmed:
        assert len(bytes(p)) == hdr_len
        assert p[IP].len == len(bytes(p[IP])) and p[L.SESStd] is not None
        assert len(p[L.SESStd].payload) == 0                    # payload cut, headers kept
        assert p[L.CSIGCompact].d == 1
        assert IP(bytes(p[IP])).chksum == p[IP].chksum
    # trimmed packets travel in the high class: they overtake the queued full ones
    order = [p[L.PDSRudReq].psn for p in got]
    assert order.index(trimmed[0][L.PDSRudReq].psn) < order.index(full[-1][L.PDSRudReq].psn)
    assert switch_stats(eng)["s1-eth1"]["trim"] == 30


def test_trimmed_packets_are_nacked_and_retransmitted():
    """Two NIC senders at 0.75 Gbit/s each into one 1 Gbit/s port with a 20 KB
    trim threshold: the switch trims, the receiver NACKs the trimmed PSNs,
    the senders retransmit, and both transfers complete intact with nothing
    dropped.  (Paced, because there is no CC here: unpaced 10 Gbit/s senders
    retransmitting at once would flood the high class with trimmed headers
    and starve the data class, the collapse CC exists to prevent.)"""
    from taurus.datapath.devices.nic.setup import (add_flow, flow_done, flow_stats,
                                                   nic_counters, nic_delivered, nic_post)
    from taurus.tools.fabric import nic_host
    t = topo.Topology("trim")
    for h in ("h1", "h2", "h3"):
        t.add_host(h)
    t.add_switch("s1")
    t.add_link("h1", "s1", rate="10Gbit", delay="1us")
    t.add_link("h2", "s1", rate="10Gbit", delay="1us")
    t.add_link("s1", "h3", rate="1Gbit", delay="1us", buffer="1MB",
               features={"trim": "20KB"})
    eng = new_engine(max_flows=8, max_nics=4)
    fab = build_virtual(eng, t, host_factory=nic_host)
    nics = fab["hosts"]
    # NIC-fed ends get a NIC's burst room (memlink.BURST_ROOM), switch-fed ones a switch's
    assert [_ring(eng, fab["ports"][i]) for i in ("s1-eth0", "h1-eth0", "h3-eth0")] == [256, 64, 16]
    rng = np.random.default_rng(7)
    size = 300_000
    data, flows = {}, {}
    for h in ("h1", "h2"):
        data[h] = rng.integers(0, 256, size, np.uint8).tobytes()
        flows[h] = add_flow(eng, nics[h], t.mac_of("h3"), t.ip_of("h3"), buf_bytes=size,
                            rate_bps=750_000_000)
        nic_post(eng, nics[h], flows[h], data[h])
    eng.run_for(20 * 10**6)
    st = switch_stats(eng)["s1-eth2"]
    assert st["trim"] > 0 and st["drop"] == 0
    assert all(c["tx_drop"] == 0 for c in eng.counters().values())   # no ring was full
    rx = nic_counters(eng, nics["h3"])
    assert rx["rx_trimmed"] > 0 and rx["tx_nack"] >= rx["rx_trimmed"]
    for h, f in flows.items():
        fs = flow_stats(eng, f)
        assert flow_done(eng, f), fs
        assert nic_delivered(eng, nics["h3"], t.ip_of(h), f) == data[h]
    trims = sum(flow_stats(eng, f)["trim"] for f in flows.values())
    retx = sum(flow_stats(eng, f)["retx"] for f in flows.values())
    assert trims > 0 and retx >= trims


# ---------------------------------------------------------------- ECMP

def test_ecmp_changing_the_entropy_value_moves_the_flow():
    t = topo.load(topo.builtin("leaf_spine"))
    eng = new_engine()
    fab = build_virtual(eng, t)
    h1, h3 = fab["hosts"]["h1"], fab["hosts"]["h3"]
    up = [fab["ports"][f"leaf1-eth{k}"] for k in (2, 3, 4)]
    sw = eng.E.sw

    def path(ev):
        before = [int(sw.stats[p, SS.T_TX]) for p in up]
        for _ in range(5):
            eng.inject(h1, uet(500, src=t.ip_of("h1"), dst=t.ip_of("h3"), ev=ev))
        eng.run_for(10**7)
        assert len(eng.collect(h3)) == 5
        d = [int(sw.stats[p, SS.T_TX]) - b for p, b in zip(up, before)]
        assert sorted(d) == [0, 0, 5]               # one path per flow, no reordering split
        return d.index(5)

    paths = {ev: path(ev) for ev in range(1000, 1012)}
    assert len(set(paths.values())) == 3            # the EVs spread over all three spines
    assert all(path(ev) == p for ev, p in list(paths.items())[:4])   # stable per EV


# ---------------------------------------------------------------- telemetry

def test_telemetry_time_series_in_shared_memory():
    eng, (h0, h1), sp = one_switch({"rate": 10**9, "buffer": "1MB", "ecn": {"k": 5000}})
    for _ in range(100):
        eng.inject(h0, uet(1000))
    eng.run_for(2 * 10**6)
    rows = telemetry(eng, sp[1])
    assert len(rows) >= 19
    assert max(r["queue_bytes"] for r in rows) > 50_000
    busy = [r["rate_bps"] for r in rows[1:7]]
    assert all(abs(b - 10**9) < 0.15 * 10**9 for b in busy), busy
    assert rows[-1]["marks"] == switch_stats(eng)["s1-eth1"]["ecn_mark"] > 0
    shm = read_switch_telemetry(eng.name)
    assert shm["s1-eth1"]["stats"]["tx"] == 100
    assert shm["s1-eth1"]["series"][-1]["t_ns"] == rows[-1]["t_ns"]
    eng.close()
