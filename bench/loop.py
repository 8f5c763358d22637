"""How fast the engine's main loop turns on the wall clock, and what that
does to a transport flow's RTT (no root needed: memory links).

    python bench/loop.py [--seconds 0.3] [--max-flows 16384] [--native]

Builds h1 -- s1 -- h2 (10 and 2 Gbit/s, 2 us per link) with host NICs on
memory links, then measures loop iterations/s idle and with one windowed
flow running, and that flow's smoothed RTT beside the configured one.  On
the wall clock every hop costs at least one loop iteration, so the RTT a
flow sees is about (hops x iteration time) + the configured delays: a slow
idle pass shows up directly as RTT, and through the window as goodput.
The window (4 KB) is kept near the path's BDP so that the bottleneck queue
adds at most window/rate (16 us) to the configured delays.  ``--native``:
the flow runs DCTCP compiled into the engine (from that window), so every
ACK and timeout also calls the algorithm.
Last line: `loop: X it/s idle, Y it/s busy, srtt Z us (configured W us)`.
"""
import argparse
import time

from taurus.cc_algorithms.dctcp import Dctcp
from taurus.cc_algorithms.native import NativeTable
from taurus.datapath.devices.nic.setup import add_flow, flow_stats, nic_post
from taurus.datapath.engine import ITERS, Engine
from taurus.tools.fabric import build_virtual, nic_host
from taurus.tools.topology import Topology  # noqa: E402

WINDOW = 4000   # bytes


def rate(eng, seconds):
    i0, w0 = int(eng.ctl[ITERS]), time.perf_counter()
    eng.run_for(int(seconds * 1e9))
    return (int(eng.ctl[ITERS]) - i0) / (time.perf_counter() - w0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=0.3)
    ap.add_argument("--max-flows", type=int, default=16384)
    ap.add_argument("--native", action="store_true", help="the flow under native DCTCP")
    a = ap.parse_args()
    tab = None
    if a.native:
        tab = NativeTable(a.max_flows)
        dctcp = tab.add(Dctcp)
    t = Topology("loop")
    for h in ("h1", "h2"):
        t.add_host(h)
    t.add_switch("s1")
    t.add_link("h1", "s1", rate="10Gbit", delay="2us")
    t.add_link("s1", "h2", rate="2Gbit", delay="2us")
    with Engine(clock="wall", max_flows=a.max_flows, max_nics=4,
                native=tab.native if tab else None) as eng:
        hosts = build_virtual(eng, t, host_factory=nic_host)["hosts"]
        idle = rate(eng, a.seconds)
        f = add_flow(eng, hosts["h1"], t.mac_of("h2"), t.ip_of("h2"), cwnd_bytes=WINDOW)
        if tab:
            tab.start(eng, f, dctcp)
        for _ in range(12):
            nic_post(eng, hosts["h1"], f, bytes(64 << 10))
        busy = rate(eng, a.seconds)
        st = flow_stats(eng, f)
    base = 2 * 2 * 2                      # us: two links, both ways
    queue = WINDOW * 8 / 2e9 * 1e6        # us: at most the window queued at 2 Gbit/s
    print(f"idle loop: {idle:,.0f} it/s ({1e6 / idle:.1f} us per pass)")
    print(f"busy loop: {busy:,.0f} it/s; flow srtt {st['srtt'] / 1e3:.0f} us, "
          f"{st['acked']} bytes acked")
    print(f"(a queue of at most the window adds <= {queue:.0f} us)")
    print(f"loop: {idle:,.0f} it/s idle, {busy:,.0f} it/s busy, srtt {st['srtt'] / 1e3:.0f} us "
          f"(configured {base} us)")


if __name__ == "__main__":
    main()
