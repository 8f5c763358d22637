"""A generated leaf-spine on real namespaces: 2 leaves, 1 spine, 2 hosts per
leaf (7 namespaces, 6 veth pairs), the switches and host NICs in one
wall-clock engine; a transfer from a host on one leaf to a host on the other
crosses leaf, spine and leaf intact, and nothing is left behind."""
import os
import time

import numpy as np
import pytest

from taurus.datapath.devices.nic.setup import add_flow, flow_done, nic_delivered, nic_post
from taurus.datapath.engine import Engine
from taurus.tools import netns, topology as topo
from taurus.tools.fabric import build_netns, netns_nic_host

from conftest import needs_root

pytestmark = [needs_root, pytest.mark.netns]
PREFIX = f"taurus-t{os.getpid()}l-"


def test_leaf_spine_moves_traffic_end_to_end_and_cleans_up():
    t = topo.from_dict({"topology": {"name": "ls", "leaf_spine": {
        "leaves": 2, "spines": 1, "hosts_per_leaf": 2}},
        "defaults": {"rate": "1Gbit", "delay": "10us", "buffer": "400KB"}}, prefix=PREFIX)
    assert (len(t.hosts), len(t.switches), len(t.links)) == (4, 3, 6)
    data = np.random.default_rng(7).integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    src, dst = t.hosts[0], t.hosts[-1]          # on different leaves
    try:
        t.up()
        assert sorted(netns.list_ns(PREFIX)) == sorted(t.namespaces()) and len(t.namespaces()) == 7
        with Engine(clock="wall") as eng:
            fab = build_netns(eng, t, host_factory=lambda *a: netns_nic_host(
                *a, rx_buf_bytes=4 << 20, rto_min_ns=1_000_000))
            assert len(fab["ports"]) == 2 * len(t.links)
            f = add_flow(eng, fab["hosts"][src], t.mac_of(dst), t.ip_of(dst), buf_bytes=2 << 20,
                         cwnd_bytes=256 << 10)
            nic_post(eng, fab["hosts"][src], f, data)
            end = time.monotonic() + 30
            while not flow_done(eng, f) and time.monotonic() < end:
                eng.run_for(20_000_000)
            assert flow_done(eng, f)
            assert nic_delivered(eng, fab["hosts"][dst], t.ip_of(src), f) == data
            spine = [p for p in fab["ports"] if p.startswith("spine1-")]
            c = eng.counters()
            assert sum(c[p]["tx_pkts"] for p in spine) >= len(data) // 1500
    finally:
        t.down()
        topo.clean(prefix=PREFIX)
    assert netns.list_ns(PREFIX) == []
