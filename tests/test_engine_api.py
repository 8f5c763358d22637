"""Devices are added through the Engine's own methods, and device kinds put
their state into the engine only through Engine.install."""
import os
import re

import numpy as np
import pytest

from taurus.datapath.devices.nic.setup import add_flow, ip_int, mac_int, nic_delivered, nic_post
from taurus.datapath.devices.switch.setup import read_switch_telemetry, switch_stats
from taurus.datapath.devices.table import L2FWD, NIC, SWITCH
from taurus.datapath.engine import Engine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"
IP1, IP2 = "10.0.0.1", "10.0.0.2"
G = 1_000_000_000


def test_port_names():
    with Engine(clock="virtual") as eng:
        a, b = eng.add_mem_link("x", "y")
        assert eng.port_names == ("x", "y")
        assert (eng.port_name(a), eng.port_name(b)) == ("x", "y")
        assert eng.port_index("y") == b


def test_add_l2fwd():
    with Engine(clock="virtual") as eng:
        a, b = eng.add_mem_link("h1", "f0", delay_ns=1000)
        c, d = eng.add_mem_link("f1", "h2")
        dev = eng.add_l2fwd(b, c, name="fwd")
        assert eng.E.devs.kind[dev] == L2FWD
        frame = bytes(range(60))
        assert eng.inject(a, frame)
        eng.run_for(100_000)
        assert eng.collect(d) == [frame]


def test_nics_behind_a_switch_through_engine_methods():
    with Engine(clock="virtual") as eng:
        eng.reserve_nics(max_flows=8, tx_bytes=1 << 20, rx_bytes=1 << 20)
        eng.reserve_switches(tel_len=64)
        h1, s0 = eng.add_mem_link("h1-eth0", "s1-eth0", delay_ns=1000)
        s1, h2 = eng.add_mem_link("s1-eth1", "h2-eth0", delay_ns=1000)
        sw = eng.add_switch([s0, s1], {"ports": {"rate": "10Gbit"},
                                       "routes": {IP1: [s0], IP2: [s1]}}, name="s1")
        d1 = eng.add_nic(h1, MAC1, IP1, line_rate_bps=10 * G, name="h1")
        d2 = eng.add_nic(h2, MAC2, IP2, line_rate_bps=10 * G, name="h2")
        assert (eng.E.devs.kind[sw], eng.E.devs.kind[d1], eng.E.devs.kind[d2]) == (SWITCH, NIC, NIC)

        # the Python-side tables of each kind live on the engine
        assert eng.nics.reserved and eng.nics.shm.name_of(0) == "h1"
        assert eng.nics.neigh == {ip_int(IP1): mac_int(MAC1), ip_int(IP2): mac_int(MAC2)}
        assert eng.switches.installed and eng.switches.ports == {s0, s1}
        assert eng.E.nic is eng.nics.shm.state

        data = bytes(range(256)) * 40
        f = add_flow(eng, d1, MAC2, IP2)
        nic_post(eng, d1, f, data)
        eng.run_for(1_000_000)
        assert nic_delivered(eng, d2, IP1, f) == data
        assert set(switch_stats(eng)) == {"s1-eth0", "s1-eth1"}
        assert set(read_switch_telemetry(eng.name)) == {"s1-eth0", "s1-eth1"}

        with pytest.raises(ValueError, match="before the first add_nic"):
            eng.reserve_nics()
        with pytest.raises(ValueError, match="already belongs to a switch"):
            eng.add_switch([s1])


def test_install_replaces_state_and_owns_the_handle():
    closed = []

    class Handle:
        def __init__(self, name):
            self.name = name

        def close(self):
            closed.append(self.name)

    eng = Engine(clock="virtual")
    try:
        sw = eng.E.sw._replace(rng=eng.E.sw.rng.copy())
        eng.install("sw", sw, handle=Handle("late"))
        assert eng.E.sw is sw
        eng.install("nic", eng.E.nic, handle=Handle("last"), first=True)
        # another Numba type would make the cached loop recompile
        bad = sw._replace(stats=sw.stats.astype(np.int32))
        with pytest.raises(AssertionError, match="E.sw"):
            eng.install("sw", bad)
        assert eng.E.sw is sw
    finally:
        eng.close()
    assert closed == ["late", "last"]


def test_only_the_engine_touches_its_private_fields():
    private = re.compile(r"\b(eng|engine)\._")
    found = []
    for dp, _, files in os.walk(os.path.join(ROOT, "taurus")):
        for f in files:
            path = os.path.join(dp, f)
            if not f.endswith(".py") or path.endswith(os.path.join("datapath", "engine.py")):
                continue
            with open(path, encoding="utf-8") as src:
                found += [f"{path}:{k}" for k, line in enumerate(src, 1) if private.search(line)]
    assert found == []


def test_a_nic_with_a_bad_setting_leaves_nothing_registered():
    """Every setting is checked before the NIC is registered: a bad one
    raises and the next NIC takes the device index and slot it would have."""
    from taurus.datapath.devices.nic.setup import NicConfig
    from taurus.datapath.devices.nic.state import DR_SLOT, M_NNIC, NR_MSS
    from taurus.datapath.engine import NDEVS
    with Engine(clock="virtual") as eng:
        a, b = eng.add_mem_link("h1", "h2", delay_ns=1000, rate_bps=10**10)
        for bad, msg in (({"rx_buf_bytes": 100}, "rx_buf_bytes"), ({"mss": 10}, "mss"),
                         ({"last_hop_dscp": 64}, "last_hop_dscp")):
            with pytest.raises(ValueError, match=msg):
                eng.add_nic(a, "02:00:00:00:00:01", "10.0.0.1", **bad)
            assert eng.ctl[NDEVS] == 0 and eng.E.nic.meta[M_NNIC] == 0
        d = eng.add_nic(a, "02:00:00:00:00:01", "10.0.0.1", NicConfig(mss=1500))
        assert d == 0 and eng.E.devs.regs[d, DR_SLOT] == 0 and eng.E.nic.nr[0, NR_MSS] == 1500
