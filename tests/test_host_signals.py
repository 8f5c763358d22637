"""The host NICs carry the switches' signals to algorithms, end to end in
virtual time: CSIG tags the senders insert come back as CSIG events with
the bottleneck's value and locator; TCD's UE and CE marks come back apart
(ACK echo, and CNPs from the receiver as notification point); entropy
decisions move a flow between spines; a last-hop trim is NACKed as such."""
import functools

import pytest

from taurus.cc_algorithms.algorithm import Algorithm, kernel, rotate_ev, spray_ev
from taurus.cc_algorithms.native import NativeTable
from taurus.datapath.devices.nic.setup import (add_flow, flow_done, flow_stats, nic_counters,
                                               nic_post)
from taurus.datapath.devices.nic.state import FL_EV
from taurus.datapath.devices.switch.setup import switch_stats
from taurus.datapath.engine import Engine
from taurus.tools import topology as topo
from taurus.tools.fabric import build_virtual, nic_host

G = 10**9


# ---- small test algorithms (native): they only record what reaches them -------
@kernel
def rec_on_csig(s, p, ev, d):
    s.n += 1
    s.typ = ev.csig_type
    s.value = ev.value
    s.loc = ev.locator
    s.fmt = ev.fmt


class CsigAbw(Algorithm):
    """Records the last CSIG reflection of a min-ABW wide tag."""
    name = "test-csig-abw"
    state = ("n", "typ", "value", "loc", "fmt")
    binds = ("CSIG",)
    csig = ("abw", "wide")
    on_csig = staticmethod(rec_on_csig)


class CsigDelay(CsigAbw):
    """The same with a max-delay compact tag."""
    name = "test-csig-delay"
    csig = ("delay", "compact")


@kernel
def rec_on_ecn(s, p, ev, d):
    s.ce += ev.ce_packets
    s.ue += ev.ue_packets
    s.ue_bytes += ev.ue_bytes


@kernel
def rec_on_cnp(s, p, ev, d):
    s.cnp_ce += ev.ce
    s.cnp_ue += ev.ue


@kernel
def rec_on_ack(s, p, ev, d):
    s.ack_ue_bytes += ev.ue_bytes
    s.ack_ce_bytes += ev.ecn_bytes


class Marks(Algorithm):
    """Counts CE and UE echoes and CNPs."""
    name = "test-marks"
    state = ("ce", "ue", "ue_bytes", "cnp_ce", "cnp_ue", "ack_ue_bytes", "ack_ce_bytes")
    binds = ("ECN", "CNP", "ACK")
    on_ecn = staticmethod(rec_on_ecn)
    on_cnp = staticmethod(rec_on_cnp)
    on_ack = staticmethod(rec_on_ack)


@kernel
def rot_on_ack(s, p, ev, d):
    s.acks += 1
    if s.acks % 40 == 0:
        s.rotations += 1
        rotate_ev(d)


class Rotate(Algorithm):
    """A new entropy value every 40 ACKs."""
    name = "test-rotate"
    state = ("acks", "rotations")
    binds = ("ACK",)
    on_ack = staticmethod(rot_on_ack)


@kernel
def spray_init(s, p, d):
    spray_ev(d, 0x2000, 16)


@kernel
def count_on_ack(s, p, ev, d):
    s.acks += 1


class Spray(Algorithm):
    """Sprays its packets over 16 entropy values."""
    name = "test-spray"
    state = ("acks",)
    binds = ("ACK",)
    init = staticmethod(spray_init)
    on_ack = staticmethod(count_on_ack)


@kernel
def nack_on_nack(s, p, ev, d):
    s.nacks += ev.nacks
    s.trimmed += ev.trimmed
    s.last_hop += ev.last_hop


class Nacks(Algorithm):
    name = "test-nacks"
    state = ("nacks", "trimmed", "last_hop")
    binds = ("NACK",)
    on_nack = staticmethod(nack_on_nack)


def _fabric(t, algs, max_flows=16, pfc=False, **nic_opts):
    tab = NativeTable(max_flows)
    ids = {a: tab.add(a) for a in algs}
    eng = Engine(clock="virtual", max_flows=max_flows, max_nics=16, n_frames=65536,
                 native=tab.native)
    fab = build_virtual(eng, t, host_factory=functools.partial(nic_host, pfc=pfc, **nic_opts))
    return eng, tab, ids, fab["hosts"]


def _flow(eng, tab, alg, hosts, t, src, dst, size, **kw):
    f = add_flow(eng, hosts[src], t.mac_of(dst), t.ip_of(dst), buf_bytes=size, **kw)
    if alg is not None:
        tab.start(eng, f, alg)
    nic_post(eng, hosts[src], f, bytes(size))
    return f


# ---- CSIG ------------------------------------------------------------------------
def _chain(rates, features):
    """h1 - s1 - s2 - ... - h2 with these link rates (bit/s), in order."""
    t = topo.Topology("chain")
    t.add_host("h1")
    t.add_host("h2")
    sws = [t.add_switch(f"s{k + 1}", features) for k in range(len(rates) - 1)]
    nodes = ["h1"] + sws + ["h2"]
    for a, b, r in zip(nodes, nodes[1:], rates):
        t.add_link(a, b, rate=r, delay=2000, buffer="1MB")
    return t


def _port(t, sw, toward):
    return next(x for x in t.node(sw).ifaces if x.peer_node == toward).port


def _locator_wide(t, sw, toward):
    return ((t.node(sw).index << 6) | _port(t, sw, toward)) & 0x7FFF


def _locator_compact(t, sw, toward):
    return (t.node(sw).index * 8 + _port(t, sw, toward)) & 0x3F


def test_csig_abw_reports_the_bottleneck_value_and_locator():
    """A 1 Gbit/s flow over hops of 4, 2 and 5 Gbit/s: the least available
    bandwidth is s2's port toward s3 (2 - 1 = 1 Gbit/s)."""
    t = _chain([10 * G, 4 * G, 2 * G, 5 * G], {"csig": True})
    eng, tab, ids, hosts = _fabric(t, [CsigAbw])
    with eng:
        f = _flow(eng, tab, ids[CsigAbw], hosts, t, "h1", "h2", 1_000_000, rate_bps=G)
        eng.run_for(6 * 10**6)
        S = tab.state(ids[CsigAbw])[f]
        assert S["n"] > 100
        assert S["typ"] == 1 and S["fmt"] == 2                 # min ABW (bit/s), wide
        assert S["loc"] == _locator_wide(t, "s2", "s3")
        assert abs(S["value"] - G) < 0.1 * G, S["value"]
        st = flow_stats(eng, f)
        assert st["csig_n"] >= S["n"] and st["retx"] == 0
        eng.run_for(10 * 10**6)
        assert flow_done(eng, f)       # tagged frames (8 bytes less payload) all arrive


def test_csig_delay_reports_the_most_queued_hop():
    """An unpaced flow into a 1 Gbit/s hop behind a 10 Gbit/s one: only s2's
    port toward h2 queues; its queueing delay comes back (compact tag)."""
    t = _chain([10 * G, 10 * G, 1 * G], {"csig": True})
    eng, tab, ids, hosts = _fabric(t, [CsigDelay])
    with eng:
        f = _flow(eng, tab, ids[CsigDelay], hosts, t, "h1", "h2", 300_000, cwnd_bytes=64_000)
        eng.run_for(2 * 10**6)
        S = tab.state(ids[CsigDelay])[f]
        assert S["n"] > 10 and S["typ"] == 0 and S["fmt"] == 1
        assert S["loc"] == _locator_compact(t, "s2", "h2")
        # 64 KB in flight, most of it queued at 1 Gbit/s: tens of microseconds
        assert 10_000 < S["value"] < 600_000, S["value"]


@kernel
def worst_on_csig(s, p, ev, d):
    s.n += 1
    if ev.value > s.worst:
        s.worst = ev.value
        s.loc = ev.locator
    s.seen[int(ev.locator) & 63] += 1


class CsigWorstDelay(Algorithm):
    """Keeps the highest delay reflected and its locator, and which locators
    were reflected at all."""
    name = "test-csig-worst"
    state = ("n", "worst", "loc", ("seen", 64))
    binds = ("CSIG",)
    csig = ("delay", "compact")
    on_csig = staticmethod(worst_on_csig)


def test_csig_delay_finds_the_worse_of_two_congested_hops():
    """Flow A crosses two congested hops: s1's port toward s2, shared with
    C (h4 -> h5), and s2's port toward h2, shared with B, whose larger
    window keeps that queue the longer one.  A's tags name the second."""
    t = topo.Topology("two_queues")
    for h in ("h1", "h2", "h3", "h4", "h5"):
        t.add_host(h)
    t.add_switch("s1", {"csig": True})
    t.add_switch("s2", {"csig": True})
    for a, b, r in (("h1", "s1", 10 * G), ("h4", "s1", 10 * G), ("s1", "s2", G),
                    ("s2", "h2", G), ("h3", "s2", 10 * G), ("s2", "h5", 10 * G)):
        t.add_link(a, b, rate=r, delay=2000, buffer="2MB")
    eng, tab, ids, hosts = _fabric(t, [CsigWorstDelay])
    w = ids[CsigWorstDelay]
    with eng:
        fa = _flow(eng, tab, w, hosts, t, "h1", "h2", 1_000_000, cwnd_bytes=30_000)
        _flow(eng, tab, None, hosts, t, "h3", "h2", 1_000_000, cwnd_bytes=300_000)
        _flow(eng, tab, None, hosts, t, "h4", "h5", 1_000_000, cwnd_bytes=100_000)
        eng.run_for(10 * 10**6)
        S = tab.state(w)[fa]
        assert S["n"] > 20
        q1, q2 = _locator_compact(t, "s1", "s2"), _locator_compact(t, "s2", "h2")
        assert S["seen"][q1] > 0 and S["seen"][q2] > 0      # both hops were the worst at times
        assert S["loc"] == q2
        assert 1_000_000 < S["worst"] < 5_000_000, S["worst"]   # 300 KB at 1 Gbit/s: ~2.4 ms


# ---- TCD: UE and CE apart, CNPs ---------------------------------------------------
def test_tcd_victim_sees_ue_and_culprits_see_ce():
    t = topo.load(topo.builtin("pfc_victim"))
    eng, tab, ids, hosts = _fabric(t, [Marks], pfc=True)
    m = ids[Marks]
    with eng:
        victim = _flow(eng, tab, m, hosts, t, "S0", "R0", 800_000, rate_bps=320_000_000)
        other = _flow(eng, tab, m, hosts, t, "S1", "R1", 2_000_000, rate_bps=800_000_000)
        eng.run_for(2 * 10**6)
        culprits = [_flow(eng, tab, m, hosts, t, f"A{k}", "R1", 1_500_000, rate_bps=2 * G)
                    for k in range(4)]
        t0 = eng.now()
        eng.run_for(20 * 10**6)
        span = eng.now() - t0
        S = tab.state(m)
        st = switch_stats(eng)
        assert st["T0-eth2"]["ue_mark"] > 0 and st["T1-eth2"]["ecn_mark"] > 0
        v = S[victim]
        assert v["ue"] > 0 and v["ue_bytes"] > 0 and v["ack_ue_bytes"] > 0
        assert v["ce"] == 0 and v["ack_ce_bytes"] == 0
        assert v["cnp_ue"] > 0 and v["cnp_ce"] == 0
        assert sum(S[c]["ce"] for c in culprits) > 0
        assert sum(S[c]["cnp_ce"] for c in culprits) > 0
        for c in culprits:     # at most one CNP per 50 us per flow
            assert flow_stats(eng, c)["cnp"] <= (span + 2 * 10**6) // 50_000 + 1
        assert nic_counters(eng, hosts["R1"])["tx_cnp"] > 0
        assert nic_counters(eng, hosts["R0"])["rx_ue"] > 0
        assert S[other]["ce"] + S[other]["ue"] > 0


# ---- entropy values ---------------------------------------------------------------
def _two_spines():
    t = topo.Topology("two_spines")
    t.add_host("h1")
    t.add_host("h2")
    for s in ("leaf1", "leaf2", "spine1", "spine2"):
        t.add_switch(s)
    t.add_link("h1", "leaf1", rate=2 * G, delay=1000)
    t.add_link("h2", "leaf2", rate=2 * G, delay=1000)
    for lf in ("leaf1", "leaf2"):
        for sp in ("spine1", "spine2"):
            t.add_link(lf, sp, rate=2 * G, delay=1000)
    return t


def _spine_bytes(eng):
    st = switch_stats(eng)
    return [sum(v["tx_bytes"] for k, v in st.items() if k.startswith(sp))
            for sp in ("spine1", "spine2")]


@pytest.mark.parametrize("alg", [None, Rotate, Spray])
def test_entropy_decisions_move_a_flow_between_spines(alg):
    t = _two_spines()
    eng, tab, ids, hosts = _fabric(t, [Rotate, Spray])
    with eng:
        f = add_flow(eng, hosts["h1"], t.mac_of("h2"), t.ip_of("h2"), buf_bytes=1_000_000,
                     cwnd_bytes=32_000)
        ev0 = int(eng.E.nic.fl[f, FL_EV])
        if alg is not None:
            tab.start(eng, f, ids[alg])
        nic_post(eng, hosts["h1"], f, bytes(1_000_000))
        eng.run_for(30 * 10**6)
        assert flow_done(eng, f)
        b = _spine_bytes(eng)
        if alg is None:                  # one EV: one path
            assert min(b) == 0 and max(b) > 1_000_000
        else:                            # both spines carry a good share
            assert min(b) > 100_000, b
        if alg is Rotate:
            S = tab.state(ids[Rotate])[f]
            assert S["rotations"] > 10 and int(eng.E.nic.fl[f, FL_EV]) != ev0
            assert int(eng.cc.ev_n[f]) == 0 and int(eng.cc.ev[f]) == int(eng.E.nic.fl[f, FL_EV])


# ---- last-hop trims ---------------------------------------------------------------
@pytest.mark.parametrize("last_hop", [True, False])
def test_trim_at_the_last_hop_is_nacked_as_such(last_hop):
    """Trimming at the port facing the receiver: NACK TRIMMED_LASTHOP, EV_NACK
    last_hop; trimming one hop earlier: TRIMMED only."""
    rates = [10 * G, 1 * G] if last_hop else [10 * G, 1 * G, 10 * G]
    t = topo.Topology("trim")
    t.add_host("h1")
    t.add_host("h2")
    sws = [t.add_switch(f"s{k + 1}") for k in range(len(rates) - 1)]
    nodes = ["h1"] + sws + ["h2"]
    for k, (a, b, r) in enumerate(zip(nodes, nodes[1:], rates)):
        feats = {"trim": "20KB"} if k == 1 else None     # s1's egress toward the next node
        t.add_link(a, b, rate=r, delay=2000, features=feats)
    eng, tab, ids, hosts = _fabric(t, [Nacks])
    with eng:
        f = _flow(eng, tab, ids[Nacks], hosts, t, "h1", "h2", 300_000)
        eng.run_for(50 * 10**6)
        assert flow_done(eng, f)
        S = tab.state(ids[Nacks])[f]
        assert sum(v["trim"] for v in switch_stats(eng).values()) > 0
        assert S["trimmed"] > 0
        assert S["last_hop"] == (S["trimmed"] if last_hop else 0)


# ---- what the NIC puts on the wire, as Scapy reads it ---------------------------
@pytest.mark.parametrize("fmt,layer,size", [("compact", "CSIGCompact", 4),
                                            ("wide", "CSIGWide", 8)])
def test_tagged_data_frames_read_in_scapy(fmt, layer, size):
    """A CSIG flow's frames: the parser's TPID, the tag at its start value,
    the rest shifted by the tag, and the tag's bytes taken off the payload."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from taurus.datapath.devices.nic.setup import add_nic
    from taurus.datapath.wire import layers as L
    from taurus.datapath.wire import spec as S

    cls = type(f"Abw_{fmt}", (CsigAbw,), {"name": f"test-abw-{fmt}", "csig": ("abw", fmt)})
    tab = NativeTable(4)
    a = tab.add(cls)
    eng = Engine(clock="virtual", max_flows=4, native=tab.native)
    h1, h2 = eng.add_mem_link("h1", "h2")
    d1 = add_nic(eng, h1, "02:00:00:00:00:01", "10.0.0.1", mss=1024)
    with eng:
        f = add_flow(eng, d1, "02:00:00:00:00:02", "10.0.0.2")
        tab.start(eng, f, a)
        nic_post(eng, d1, f, bytes(3000))
        eng.run_for(100_000)
        frames = [Ether(x) for x in eng.collect(h2)]
    assert len(frames) == 3
    for x in frames:
        tag = x[getattr(L, layer)]
        assert x.type == (S.CSIG_TPID_COMPACT if fmt == "compact" else S.CSIG_TPID_WIDE)
        assert tag.t == S.CSIG_T_ABW and tag.d == 0 and tag.lm == 0
        assert tag.s == (31 if fmt == "compact" else (1 << 20) - 1)
        assert x[IP].len == len(bytes(x)) - 14 - size and x[UDP].dport == S.UET_UDP_PORT
    assert [len(bytes(x[L.SESStd].payload)) for x in frames] == [1024 - size] * 2 + [
        3000 - 2 * (1024 - size)]


@pytest.mark.parametrize("mode", ["native", "agent"])
def test_spray_decided_in_either_mode_reaches_the_nic(mode, tmp_path):
    """The entropy decision goes through the same columns whether the
    algorithm runs in the engine or in the agent (which decides at its
    first step: 2 Gbit/s links keep most of the flow after it)."""
    from taurus.experiment import schema
    from taurus.experiment.runner import run_experiment
    x = schema.from_dict({
        "experiment": {"name": "ev", "duration": "3ms"},
        "topology": {"name": "t", "defaults": {"rate": "2Gbit", "delay": "1us"},
                     "hosts": [{"name": "h1"}, {"name": "h2"}],
                     "switches": [{"name": n} for n in ("leaf1", "leaf2", "spine1", "spine2")],
                     "links": [{"endpoints": list(e)} for e in (
                         ("h1", "leaf1"), ("h2", "leaf2"), ("leaf1", "spine1"),
                         ("leaf1", "spine2"), ("leaf2", "spine1"), ("leaf2", "spine2"))]},
        "cc": {"algorithm": "test_host_signals:Spray", "mode": mode},
        "traffic": [{"kind": "bulk", "from": ["h1"], "to": "h2", "size": "500KB"}]})
    s = run_experiment(x, str(tmp_path), "virtual")
    assert s["complete"] and not s["error"]
    b = [sum(v["tx_bytes"] for k, v in s["ports"].items() if k.startswith(sp))
         for sp in ("spine1", "spine2")]
    assert min(b) > 50_000, b
