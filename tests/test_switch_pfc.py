"""Lossless class in virtual time: PFC on an 8:1 incast loses nothing (and
drops without it); TCD on the TCD paper's head-of-line victim topology marks the
victim UE at the paused port and the root port CE, while plain ECN marks the
victim CE."""
import pytest
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from taurus.datapath.devices.switch.setup import switch_stats
from taurus.tools import topology as topo
from taurus.tools.fabric import build_virtual, pfc_host

from test_switch_virtual import _close_engines, new_engine, uet  # noqa: F401


def _run(eng, hosts, receivers, dur_ns, step_ns=100_000):
    """Run in steps, collecting what reaches the receivers' open ends."""
    got = {r: [] for r in receivers}
    end = eng.now() + dur_ns
    while eng.now() < end:
        eng.run_until(eng.now() + step_ns, stop_idle=False)   # time passes even when idle
        for r in receivers:
            got[r] += eng.collect(hosts[r])
    return got


def _incast(pfc: bool):
    t = topo.load(topo.builtin("incast"))
    if not pfc:
        t.node("s1").features.pop("pfc")
    eng = new_engine(n_frames=32768)
    fab = build_virtual(eng, t, host_factory=pfc_host)
    hosts = fab["hosts"]
    n = 400
    for k in range(1, 9):
        f = uet(1000, src=t.ip_of(f"h{k}"), dst=t.ip_of("h9"), ev=k)
        eng.add_pktgen(hosts[f"h{k}"], f, rate_pps=10**6, count=n, burst=8)
    got = _run(eng, hosts, ["h9"], 60 * 10**6)
    return eng, len(got["h9"]), switch_stats(eng), 8 * n


def test_pfc_incast_8_to_1_is_lossless():
    eng, received, st, sent = _incast(pfc=True)
    assert received == sent
    assert sum(s["drop"] for s in st.values()) == 0
    assert sum(s["pfc_tx_xoff"] for s in st.values()) > 0      # the senders were paused
    assert sum(s["paused_ns"] for s in st.values()) > 0        # and their NICs honoured it
    assert eng.frames_in_use() == 8 * 1                        # only pktgen templates


def test_incast_without_pfc_drops():
    eng, received, st, sent = _incast(pfc=False)
    assert st["s1-eth8"]["drop"] > 0 and received < sent


def test_pfc_pause_is_renewed_while_congestion_lasts():
    """Two 10 Gbit/s senders into a 50 Mbit/s port: once paused, a sender's
    held bytes take 6.4 ms to drain from X_off to X_on, longer than one PAUSE
    lasts at 10 Gbit/s (3.4 ms).  The switch must renew its PAUSEs, or the
    senders resume into a buffer that cannot hold their backlog."""
    t = topo.Topology("slow_incast")
    for h in ("h1", "h2", "h3"):
        t.add_host(h)
    t.add_switch("s1", {"pfc": {"xoff": "40KB", "xon": "20KB"}})
    t.add_link("h1", "s1", rate="10Gbit", delay="2us")
    t.add_link("h2", "s1", rate="10Gbit", delay="2us")
    t.add_link("h3", "s1", rate="50Mbit", delay="2us", buffer="300KB")
    eng = new_engine()
    hosts = build_virtual(eng, t, host_factory=pfc_host)["hosts"]
    n = 300                                   # 2 x 300 KB: more than the 300 KB buffer
    for k, h in enumerate(("h1", "h2")):
        f = uet(1000, src=t.ip_of(h), dst=t.ip_of("h3"), ev=k + 1)
        eng.add_pktgen(hosts[h], f, rate_pps=1_250_000, count=n, burst=8)
    got = _run(eng, hosts, ["h3"], 120 * 10**6, step_ns=10**6)
    st = switch_stats(eng)
    assert len(got["h3"]) == 2 * n
    assert sum(s["drop"] for s in st.values()) == 0
    xoff = st["s1-eth0"]["pfc_tx_xoff"] + st["s1-eth1"]["pfc_tx_xoff"]
    xon = st["s1-eth0"]["pfc_tx_xon"] + st["s1-eth1"]["pfc_tx_xon"]
    assert xoff >= 2 * xon > 0                 # every pause was renewed at least once


def test_pfc_incast_of_transport_nics_is_lossless():
    """8:1 incast of transport flows, every host NIC behind a MAC that honours
    PFC: nothing is dropped in the fabric and every byte arrives intact."""
    import functools

    import numpy as np

    from taurus.datapath.devices.nic.setup import add_flow, flow_done, nic_delivered, nic_post
    from taurus.tools.fabric import nic_host
    t = topo.load(topo.builtin("incast"))
    eng = new_engine(n_frames=32768, max_flows=16, max_nics=10)
    fab = build_virtual(eng, t, host_factory=functools.partial(nic_host, pfc=True))
    nics, rng, size = fab["hosts"], np.random.default_rng(3), 100_000
    sent = {}
    for k in range(1, 9):
        h = f"h{k}"
        data = rng.integers(0, 256, size, np.uint8).tobytes()
        f = add_flow(eng, nics[h], t.mac_of("h9"), t.ip_of("h9"), buf_bytes=size)
        nic_post(eng, nics[h], f, data)
        sent[h] = (f, data)
    eng.run_for(30 * 10**6)
    st = switch_stats(eng)
    assert st["s1-eth8"]["drop"] == 0 and sum(s["drop"] for s in st.values()) == 0
    assert sum(s["pfc_tx_xoff"] for s in st.values()) > 0
    for h, (f, data) in sent.items():
        assert flow_done(eng, f)
        assert nic_delivered(eng, nics["h9"], t.ip_of(h), f) == data


def _victim(tcd: bool):
    t = topo.load(topo.builtin("pfc_victim"))
    for s in ("T0", "T1"):
        t.node(s).features["pfc"] = dict(t.node(s).features["pfc"], tcd=tcd)
    eng = new_engine(n_frames=65536)
    fab = build_virtual(eng, t, host_factory=pfc_host)
    hosts = fab["hosts"]
    ip = t.ip_of
    # victim S0->R0 and S1->R1 below their 1 Gbit/s links; A0..A3 burst to R1 at 2 Gbit/s
    eng.add_pktgen(hosts["S0"], uet(1000, src=ip("S0"), dst=ip("R0"), ev=1), 40_000, count=800)
    eng.add_pktgen(hosts["S1"], uet(1000, src=ip("S1"), dst=ip("R1"), ev=2), 100_000, count=2000)
    start = eng.now() + 2 * 10**6
    for k in range(4):
        eng.add_pktgen(hosts[f"A{k}"], uet(1000, src=ip(f"A{k}"), dst=ip("R1"), ev=10 + k),
                       250_000, count=1500, start_ns=start)
    got = _run(eng, hosts, ["R0", "R1"], 40 * 10**6)
    ecn = {r: [Ether(x)[IP].tos & 3 for x in got[r]] for r in got}
    return eng, ecn, switch_stats(eng)


def test_tcd_marks_victim_ue_and_root_ce():
    eng, ecn, st = _victim(tcd=True)
    assert len(ecn["R0"]) == 800 and len(ecn["R1"]) == 2000 + 4 * 1500   # lossless
    assert st["T0-eth2"]["pfc_rx"] > 0                 # P0 was paused by T1
    assert ecn["R0"].count(1) > 0                       # victim: undetermined (UE)
    assert ecn["R0"].count(3) == 0                      # ... and never congested
    assert st["T0-eth2"]["ue_mark"] > 0 and st["T0-eth2"]["ecn_mark"] == 0
    assert st["T1-eth2"]["ecn_mark"] > 0                # the root port is congested
    assert ecn["R1"].count(3) > 0


def test_plain_ecn_marks_the_victim_ce():
    eng, ecn, st = _victim(tcd=False)
    assert len(ecn["R0"]) == 800
    assert ecn["R0"].count(3) > 0 and ecn["R0"].count(1) == 0
    assert st["T0-eth2"]["ecn_mark"] > 0 and st["T0-eth2"]["ue_mark"] == 0
