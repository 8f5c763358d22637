"""Bolt: the switch's SRC on a synthetic queue (which packets get one, what it
carries, where it goes), the algorithm's reaction to hand-made SRC records,
and a short virtual-time run in every mode."""
import os
import tomllib

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from taurus.cc_algorithms.algorithm import FlowContext
from taurus.cc_algorithms.bolt import Bolt, BoltParams
from taurus.datapath.devices.switch.setup import add_switch, switch_stats
from taurus.datapath.engine import Engine
from taurus.datapath.wire import frames as F
from taurus.datapath.wire import layers as L
from taurus.datapath.wire import spec as S
from taurus.experiment import schema
from taurus.experiment.runner import run_experiment
from taurus.testing.replay import records, replay

IP1, IP2 = "10.0.0.1", "10.0.0.2"
MSS = 4096
CTX = FlowContext(mss=MSS, line_rate=100e9, max_cwnd=float(1 << 24))


def data(psn, ask=True, size=1000):
    flags = S.F_REQ_SRC if ask else 0
    hdr = F.uet_frame(L.PDSRudReq(psn=psn, spdcid=7, dpdcid=9, flags=flags), L.SESStd(), b"",
                      src_ip=IP1, dst_ip=IP2, entropy=0x1234)
    return bytes(F.uet_frame(L.PDSRudReq(psn=psn, spdcid=7, dpdcid=9, flags=flags), L.SESStd(),
                             bytes(size - len(hdr)), src_ip=IP1, dst_ip=IP2, entropy=0x1234))


@pytest.fixture
def switch():
    """h0 -- s1 -- h1, the egress towards h1 at 1 Gbit/s with SRC at 10 KB."""
    eng = Engine(clock="virtual")
    h0, s0 = eng.add_mem_link("h0", "s1-eth0")
    h1, s1 = eng.add_mem_link("h1", "s1-eth1")
    port = {"rate": 10**9, "buffer": "1MB"}
    add_switch(eng, [s0, s1], {"ports": [port, {**port, "src": {"threshold": "10KB"}}],
                               "routes": {IP1: [s0], IP2: [s1]}})
    yield eng, h0, h1
    eng.close()


def test_switch_sends_src_to_the_sender_once_the_queue_passes_the_threshold(switch):
    eng, h0, h1 = switch
    for k in range(30):                       # all at once: the queue grows 1000 B a packet
        eng.inject(h0, data(k, ask=k % 2 == 0))
    eng.run_for(10**8)
    fwd = [Ether(r) for r in eng.collect(h1)]
    back = [Ether(r) for r in eng.collect(h0)]
    assert len(fwd) == 30
    # asked, and met >= 10 KB queued: the even PSNs from 10 on
    want = [k for k in range(30) if k % 2 == 0 and k * 1000 >= 10_000]
    assert [p[L.PDSControl].psn for p in back] == want
    for p, k in zip(back, want):
        c = p[L.PDSControl]
        assert c.ctl_type == S.CTL_SRC and c.dpdcid == 7
        assert p[IP].src == IP2 and p[IP].dst == IP1 and p[UDP].sport == 0x1234
        r = p[L.BoltSRC]
        assert r.qlen == k * 1000 and r.rate_mbps == 1000 and r.hops == 1
    # the request is cleared on the packets answered (a later hop sends none)
    asked = {p[L.PDSRudReq].psn for p in fwd if int(p[L.PDSRudReq].flags) & S.F_REQ_SRC}
    assert asked == {k for k in range(0, 30, 2)} - set(want)
    assert switch_stats(eng)["s1-eth1"]["src_tx"] == len(want)


def _src(t, qlen, rtt=8_000, rate=100_000_000_000):
    return ("SRC", t, {"qlen": qlen, "link_rate": rate, "rtt": rtt, "psn": 1, "hops": 2})


@pytest.mark.parametrize("mode", ["python", "native"])
def test_src_takes_one_mss_per_interval_the_queue_and_share_set(mode):
    p = BoltParams()                          # cwnd = BDP of 100G x 10 us = 125 KB
    rec = records([("RTT", 1_000, {"rtt": 10_000}),
                   _src(2_000, 100 * MSS),    # share 1, 100 packets queued: 8 us / 100
                   _src(2_050, 100 * MSS),    # 50 ns later: too soon, no cut
                   _src(2_100, 100 * MSS),    # 100 ns on: cut
                   _src(3_000, 0)])           # an empty queue: nothing to drain
    dec, st = replay(Bolt, p, rec, mode, CTX)
    w0 = 100e9 * 10_000 / 8e9
    cw = [float(d["cwnd"]) for d in dec[1:]]
    assert cw[1] == w0 - MSS and cw[2] == w0 - MSS and cw[3] == w0 - 2 * MSS
    assert cw[4] == w0 - 2 * MSS


def test_src_at_one_mss_cuts_by_max_md_and_ack_adds_one_mss_per_rtt():
    p = BoltParams(base_rtt=float(MSS * 8e9 / 100e9))   # a window of one MSS
    rec = records([("RTT", 100, {"rtt": 10_000}),
                   _src(200, 50_000),
                   ("ACK", 11_000, {"bytes": MSS, "packets": 1, "psn": 1}),
                   ("ACK", 12_000, {"bytes": MSS, "packets": 1, "psn": 2})])
    dec, _ = replay(Bolt, p, rec, "python", CTX)
    assert float(dec[2]["cwnd"]) == MSS                  # the window is kept at one MSS ...
    assert float(dec[2]["rate"]) == pytest.approx(MSS / 2 * 8e9 / 10_000)  # ... paced at half
    assert float(dec[3]["rate"]) == 100e9                # back to one MSS: line rate
    assert dec[4]["set"] == 0                            # one increase per RTT


def test_bolt_runs_on_a_queue_with_src_in_every_mode(tmp_path):
    """The demo dumbbell with SRC at its 2 Gbit/s bottleneck, 3 ms: native,
    agent, per-event and the agent uncompiled (jit = false)."""
    demo = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples", "dctcp_dumbbell.toml")
    for mode, jit in (("native", True), ("agent", True), ("per-event", True), ("agent", False)):
        with open(demo, "rb") as f:
            d = tomllib.load(f)
        d["experiment"].update(duration="3ms", warmup="1ms")
        (bott,) = [lk for lk in d["topology"]["links"] if lk["endpoints"] == ["s1", "s2"]]
        bott["src"] = True
        d["cc"].update(algorithm="bolt", mode=mode, jit=jit)
        s = run_experiment(schema.from_dict(d, demo, os.path.dirname(demo)),
                           str(tmp_path / f"{mode}-{jit}"), "virtual")
        assert s["complete"] and not s["error"]
        assert s["ports"]["s1-eth2"]["drops"] == 0
        assert s["throughput_bps"] >= 0.75 * 2e9, (mode, s["throughput_bps"])
        assert s["ports"]["s1-eth2"]["counters"]["src_tx"] > 0
        assert sum(f["events"].get("SRC", 0) for f in s["flows"]) > 0
