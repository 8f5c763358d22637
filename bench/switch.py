#!/usr/bin/env python3
"""Switch benchmark: forwarding rate of the software switch on real veths,
beside the raw forwarding ceiling measured in the same run on the same
sockets, and the largest bottleneck rate the switch holds within 1 %.

    sudo python bench/switch.py            # about 1 minute after JIT
    sudo python bench/switch.py --quick

Topology (namespaces taurus-bench-<pid>-sw-*, removed at the end):

    gen:gen-eth0 ---- s1-eth0 [s1] s1-eth1 ---- sink-eth0:sink

A forked generator (bench/io.py's raw AF_XDP TX loop) floods gen-eth0.
- fwd  raw: bench/_rawloops.xdp_raw_fwd moves frames s1-eth0 -> s1-eth1
       (one memcpy, no pool, no engine).  switch: the engine with one switch
       device on both ports (routes by IP, unlimited egress rate).  Rate =
       the sink's rx_packets per second; raw and switch take turns, medians.
- rate the switch's egress s1-eth1 limited to R (1500 B frames, offered
       load above R); the largest R whose delivered rate (sink rx_bytes) is
       within 1 % of R.
The last line is `switch/raw ratio: X.XX at 64 B, Y.YY at 1500 B`.
"""
import argparse
import importlib.util
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _bench_io():
    spec = importlib.util.spec_from_file_location("bench_io", os.path.join(HERE, "io.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--duration", type=float, default=1.0, help="seconds per window")
    args = ap.parse_args(argv)
    if args.quick:
        args.duration = 0.5
    rounds = 2 if args.quick else 3
    B = _bench_io()
    import numpy as np
    import _rawloops as L
    from taurus.datapath.devices.switch import state as SS
    from taurus.datapath.devices.switch.setup import add_switch
    from taurus.datapath.engine import Engine
    from taurus.tools.topology import Topology, clean

    prefix = f"taurus-bench-{os.getpid()}-sw-"
    t = Topology("sw", prefix=prefix)
    t.add_host("gen", ip="10.78.0.1/24")
    t.add_host("sink", ip="10.78.0.2/24")
    t.add_switch("s1")
    t.add_link("gen", "s1")
    t.add_link("sink", "s1")
    results, gen, eng, sink = {}, None, None, None
    try:
        t.up()
        eng = Engine(clock="wall", name=f"taurus-bench-{os.getpid()}-sw")
        a = eng.add_port("s1-eth0", "s1-eth0", netns=t.ns_of("s1"), kind="af_xdp")
        b = eng.add_port("s1-eth1", "s1-eth1", netns=t.ns_of("s1"), kind="af_xdp")
        add_switch(eng, [a, b], {"ports": {"buffer": "2MB"},
                                 "routes": {"10.78.0.2": [b], "10.78.0.1": [a]}})
        ports, clk = eng.E.ports, eng.clk
        stop = np.zeros(1, np.uint64)
        st = np.zeros(L.N_STATS, np.int64)
        # The raw forwarder copies into TX frames of its own: the frame pool
        # is the UMEM, so b's stack of them comes from the engine's pool.
        if L.xdp_prefill_tx(ports, eng.E.pool, b, np.zeros(1, np.uint8), 0,
                            L.RAW_TX_FRAMES) < L.RAW_TX_FRAMES:
            raise RuntimeError("the engine's frame pool has no room for the raw forwarder")
        L.xdp_raw_fwd(ports, a, b, 32, clk, 0, stop, st)       # compile before traffic
        sink = B.LinkCounters(t.ns_of("sink"), "sink-eth0")
        dur_ns = int(args.duration * 1e9)

        def window(call, key="rx_packets"):
            eng.run_for(50_000_000)                              # drain, settle
            c0 = int(sink.read()[key])
            t0 = time.monotonic()
            call()
            el = time.monotonic() - t0
            return (int(sink.read()[key]) - c0) / el

        def raw():
            L.xdp_raw_fwd(ports, a, b, 32, clk, dur_ns, stop, st)

        def ours():
            eng.run_for(dur_ns)

        for size in (64, 1500):
            frame = B.make_frame(size, t.mac_of("gen"), B.DST_NOBODY, "10.78.0.1", "10.78.0.2")
            gen = B.Generator(t.ns_of("gen"), "gen-eth0", frame, 32, None, clk)
            t_end = time.monotonic() + 600         # on a cold cache it compiles its loop first
            while gen.sent() == 0 and gen.alive() and time.monotonic() < t_end:
                eng.run_for(50_000_000)
            if gen.sent() == 0:
                raise RuntimeError("the generator sent nothing")
            r, o = [], []
            for k in range(rounds):
                if k % 2 == 0:
                    r.append(window(raw))
                    o.append(window(ours))
                else:
                    o.append(window(ours))
                    r.append(window(raw))
            results[size] = (statistics.median(r), statistics.median(o))
            if size == 1500:
                held = 0
                rows = []
                for gbit in (0.5, 1, 2, 3, 4, 5, 6, 8):
                    rate = int(gbit * 1e9)
                    eng.E.sw.pcfg[b, SS.C_RATE] = rate
                    got = window(ours, "rx_bytes") * 8
                    ok = abs(got / rate - 1) <= 0.01
                    rows.append((gbit, got / 1e9, ok))
                    if ok:
                        held = rate
                    else:
                        break
                eng.E.sw.pcfg[b, SS.C_RATE] = 0
                results["rate"] = (held, rows)
            gen.close()
            gen = None
    finally:
        if gen is not None:
            gen.close()
        if sink is not None:
            sink.close()
        if eng is not None:
            eng.close()
        t.down()
        clean(prefix=prefix)
    print(f"{'size':>6} {'raw Mpps':>9} {'switch Mpps':>12} {'ratio':>6}")
    for size in (64, 1500):
        r, o = results[size]
        print(f"{size:>6} {r / 1e6:9.3f} {o / 1e6:12.3f} {o / r if r else float('nan'):6.2f}")
    held, rows = results["rate"]
    for gbit, got, ok in rows:
        print(f"bottleneck {gbit:4.1f} Gbit/s -> delivered {got:6.3f} Gbit/s {'ok' if ok else 'off by > 1%'}")
    print(f"largest bottleneck rate held within 1%: {held / 1e9:.1f} Gbit/s")
    ratios = [o / r if r else float("nan") for r, o in (results[64], results[1500])]
    print(f"switch/raw ratio: {ratios[0]:.2f} at 64 B, {ratios[1]:.2f} at 1500 B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
