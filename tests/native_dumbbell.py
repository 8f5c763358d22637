"""Two flows h1, h2 -> h3 through one switch whose egress to h3 is the
2 Gbit/s bottleneck, each flow under one native algorithm, in virtual time:
what the algorithm tests of delay-based CC (Swift, TIMELY) measure."""
import numpy as np

from taurus.cc_algorithms.native import NativeTable
from taurus.datapath.devices.nic.setup import add_flow, nic_delivered, nic_post
from taurus.datapath.engine import Engine
from taurus.tools.fabric import build_virtual, nic_host
from taurus.tools.topology import Topology

RATE = 2_000_000_000
STEP_NS = 10_000


def dumbbell(buffer: str, rate: int = RATE) -> Topology:
    t = Topology("dumbbell")
    for h in ("h1", "h2", "h3"):
        t.add_host(h)
    t.add_switch("s1")
    access = max(10_000_000_000, rate)          # never the bottleneck
    t.add_link("h1", "s1", rate=access, delay="2us")
    t.add_link("h2", "s1", rate=access, delay="2us")
    t.add_link("s1", "h3", rate=rate, delay="2us", buffer=buffer)
    return t


def run(alg, fields, params=None, duration_ns=20_000_000, warm_ns=5_000_000,
        cwnd_bytes=10 * 1024, buffer="1MB", rate=RATE):
    """Both flows under ``alg`` (with ``params``); every STEP_NS after
    ``warm_ns`` the state ``fields`` of both flows.  Returns ({field:
    array[samples, 2]}, {host: bytes delivered after warm_ns}, payload
    goodput over the bottleneck ``rate``)."""
    t = dumbbell(buffer, rate)
    tab = NativeTable(64)
    a = tab.add(alg)
    eng = Engine(clock="virtual", max_flows=64, max_nics=4, native=tab.native)
    try:
        size = int(duration_ns * rate / 8e9)
        fab = build_virtual(eng, t, host_factory=lambda *x: nic_host(*x, rx_buf_bytes=2 * size))
        nics = fab["hosts"]
        flows = []
        for h in ("h1", "h2"):
            f = add_flow(eng, nics[h], t.mac_of("h3"), t.ip_of("h3"), cwnd_bytes=cwnd_bytes,
                         buf_bytes=size + (1 << 20))
            tab.start(eng, f, a, params)
            nic_post(eng, nics[h], f, np.zeros(size, np.uint8).tobytes())
            flows.append((h, f))
        st = tab.state(a)
        seen, d0 = {k: [] for k in fields}, None
        while eng.now() < duration_ns:
            eng.run_until(eng.now() + STEP_NS, stop_idle=False)
            if eng.now() >= warm_ns:
                if d0 is None:
                    d0 = {h: len(nic_delivered(eng, nics["h3"], t.ip_of(h), f)) for h, f in flows}
                for k in fields:
                    seen[k].append([st[k][f] for _, f in flows])
        got = {h: len(nic_delivered(eng, nics["h3"], t.ip_of(h), f)) - d0[h] for h, f in flows}
        util = sum(got.values()) * 8 / ((eng.now() - warm_ns) / 1e9) / rate
        return {k: np.array(v) for k, v in seen.items()}, got, util
    finally:
        eng.close()
