"""CSIG and INT on real packets: host NICs and the switch in one wall-clock
engine over AF_XDP sockets on veths between namespaces.  The sender's data
frames carry a CSIG tag and an INT tail, the switch fills them, the
receiver reflects both, and the flow's algorithm sees the bottleneck's
locator and the switch's hop records."""
import os
import time

import numpy as np
import pytest

from taurus.cc_algorithms.algorithm import Algorithm, kernel
from taurus.cc_algorithms.native import NativeTable
from taurus.datapath.devices.nic.setup import add_flow, flow_done, nic_delivered, nic_post
from taurus.datapath.engine import Engine
from taurus.tools import topology as topo
from taurus.tools.fabric import build_netns, netns_nic_host

from conftest import needs_root

pytestmark = [needs_root, pytest.mark.netns]
PREFIX = f"taurus-t{os.getpid()}g-"
G = 10**9


@kernel
def seen_csig(s, p, ev, d):
    s.csig_n += 1
    s.csig_type = ev.csig_type
    if ev.value > s.csig_max:          # an idle path reflects the start value, 0 at no locator
        s.csig_max = ev.value
        s.csig_loc = ev.locator


@kernel
def seen_int(s, p, ev, d):
    s.int_n += 1
    s.nhops = ev.nhops
    s.rate = ev.link_rate
    s.qmax = max(s.qmax, ev.qlen)
    s.tx = max(s.tx, ev.tx_bytes)


class CsigInt(Algorithm):
    """Records the worst CSIG delay (wide tag) with its locator, and the INT
    records of its flow."""
    name = "test-csig-int"
    state = ("csig_n", "csig_max", "csig_loc", "csig_type", "int_n", "nhops", "rate", "qmax",
             "tx")
    binds = ("CSIG", "INT")
    csig = ("delay", "wide")
    on_csig = staticmethod(seen_csig)
    on_int = staticmethod(seen_int)


@pytest.fixture
def fabric():
    t = topo.Topology("sig", prefix=PREFIX)
    t.add_host("h1", ip="10.9.3.1/24")
    t.add_host("h2", ip="10.9.3.2/24")
    t.add_switch("s1", {"csig": True, "int": True})
    t.add_link("h1", "s1", rate=2 * G, delay="20us", buffer="1MB")
    t.add_link("s1", "h2", rate=G, delay="20us", buffer="1MB")
    try:
        yield t.up()
    finally:
        t.down()
        topo.clean(prefix=PREFIX)


def test_csig_and_int_through_the_switch_over_af_xdp(fabric):
    t = fabric
    tab = NativeTable(8)
    alg = tab.add(CsigInt)
    data = np.random.default_rng(9).integers(0, 256, 4 << 20, dtype=np.uint8).tobytes()
    with Engine(clock="wall", max_flows=8, native=tab.native) as eng:
        fab = build_netns(eng, t, port_kind="af_xdp", host_factory=lambda *a: netns_nic_host(
            *a, rx_buf_bytes=8 << 20, rto_min_ns=1_000_000))
        h1, h2 = fab["hosts"]["h1"], fab["hosts"]["h2"]
        f = add_flow(eng, h1, t.mac_of("h2"), t.ip_of("h2"), buf_bytes=len(data),
                     cwnd_bytes=256 << 10)
        tab.start(eng, f, alg)
        nic_post(eng, h1, f, data)
        end = time.monotonic() + 30
        while not flow_done(eng, f) and time.monotonic() < end:
            eng.run_for(20_000_000)
        assert flow_done(eng, f)
        assert nic_delivered(eng, h2, t.ip_of("h1"), f) == data
        s = tab.state(alg)[f].copy()
        sw_port = next(x for x in t.node("s1").ifaces if x.peer_node == "h2").port
    s1 = t.node("s1").index
    print(f"CSIG: {int(s['csig_n'])} events, worst delay {s['csig_max'] / 1e3:.1f} us at "
          f"locator {int(s['csig_loc'])}; INT: {int(s['int_n'])} records, queue up to "
          f"{int(s['qmax'])} B")
    assert s["csig_n"] > 10 and s["csig_type"] == 0             # max delay (ns)
    assert s["csig_loc"] == ((s1 << 6) | sw_port) & 0x7FFF      # s1's port toward h2
    assert s["csig_max"] > 0                                    # 256 KB into 1 Gbit/s queues
    assert s["int_n"] > 10 and s["nhops"] == 1
    assert s["rate"] == G and s["qmax"] > 0
    assert s["tx"] >= len(data)                                 # the port's bytes out
