#!/usr/bin/env python3
"""Transport benchmark: goodput of the Taurus transport between two
namespaces over one veth, beside the raw AF_XDP TX ceiling of the same veth
measured in the same run.

    sudo python bench/transport.py            # about 1 minute (+ compiling on a new cache)
    sudo python bench/transport.py --quick
    sudo python bench/transport.py --json out.json

Topology (namespaces taurus-bench-<pid>-tp-*, removed at the end, also on
Ctrl-C):   h1:h1-eth0 ---- h2-eth0:h2, MTU 1500.

- raw        bench/io.py's raw loop: pre-filled 1514-byte frames posted
             straight on h1-eth0's AF_XDP TX ring (no pool, no copy, no
             protocol), kick, reap; rate = frames h2's kernel received.
- transport  one engine process (this one) with an AF_XDP port and a host
             NIC in each namespace; 1 or 8 flows h1 -> h2 carrying 1514-byte
             data frames (MSS 1404), unpaced, no CC; the app (Python, between
             engine chunks) keeps every send ring full and consumes every
             receive ring.  Goodput = payload bytes delivered in order at h2.

Per row: goodput (Gbit/s of payload), data Mpps (frames delivered/s),
Gbit/s of frames on the wire, CPU per Gbit/s of goodput (this process's CPU
seconds, which include the kernel's AF_XDP copy work done in its syscalls,
per goodput Gbit), retransmissions.  The ratio compares frames per second:
the transport's delivered data frames with 8 flows against the raw ceiling.
Last line: `transport/raw ratio: X.XX`.
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

_spec = importlib.util.spec_from_file_location("bench_io", os.path.join(HERE, "io.py"))
bio = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bio)     # helpers only: frames, counters, CPU time, logging

FRAME = 1514
TARGET = 0.70
log = bio.log


class TransportBench:
    def __init__(self, args):
        from taurus.tools.topology import Topology
        self.args = args
        self.prefix = f"taurus-bench-{os.getpid()}-"
        t = Topology("tp", prefix=self.prefix)
        t.add_host("h1", ip="10.78.0.1/24")
        t.add_host("h2", ip="10.78.0.2/24")
        t.add_link("h1", "h2", mtu=1500)
        self.t = t
        self.rows = []

    # -- raw ceiling (bench/io.py's loop)
    def raw(self, secs):
        import numpy as np
        import _rawloops as L
        from taurus.datapath.clock import make_clock
        from taurus.datapath.ports.common import XDP
        from taurus.datapath.ports.table import make_ports
        from taurus.datapath.ports.xdp import open_xdp_port
        t = self.t
        clk = make_clock("wall")
        ports = make_ports([XDP])
        st = np.zeros(L.N_STATS, np.int64)
        stop = np.zeros(1, np.uint64)
        h = open_xdp_port(ports, 0, "h1-eth0", netns=t.ns_of("h1"))
        sink = bio.LinkCounters(t.ns_of("h2"), "h2-eth0")
        try:
            frame = bio.make_frame(FRAME, t.mac_of("h1"), t.mac_of("h2"), t.ip_of("h1"),
                                   t.ip_of("h2"))
            tmpl = np.frombuffer(frame, np.uint8).copy()
            L.xdp_prefill_tx(ports, 0, tmpl, len(tmpl))
            L.xdp_raw_tx(ports, 0, len(tmpl), 32, clk, int(0.1e9), stop, st)   # warm up
            s0, c0 = sink.rx(), bio.cpu_seconds()
            el = bio.timed(lambda ns: L.xdp_raw_tx(ports, 0, len(tmpl), 32, clk, ns, stop, st),
                           secs)
            pkts = sink.rx() - s0
            cpu = bio.cpu_seconds() - c0
        finally:
            sink.close()
            h.close()
        mpps = pkts / el / 1e6
        return {"test": "raw", "flows": 0, "mpps": mpps, "wire_gbps": mpps * FRAME * 8 / 1e3,
                "goodput_gbps": 0.0, "cpu_per_gbps": cpu / el / (mpps * FRAME * 8 / 1e3 or 1),
                "retx": 0}

    # -- the transport
    def transport(self, nflows, secs):
        from taurus.datapath.devices.nic_app import WouldBlock
        from taurus.datapath.devices.nic_setup import (add_flow, nic_counters, nic_post,
                                                       nic_take_delivered)
        from taurus.tools.perf import build_engine
        t = self.t
        eng = build_engine(t, f"{self.prefix}eng", "af_xdp")
        try:
            d1, d2 = 0, 1
            ip1, ip2 = t.ip_of("h1"), t.ip_of("h2")
            flows = [add_flow(eng, d1, t.mac_of("h2"), ip2, buf_bytes=4 << 20)
                     for _ in range(nflows)]
            msg = os.urandom(256 << 10)
            got = {"bytes": 0}

            def app():
                for f in flows:
                    for _ in range(16):
                        try:
                            nic_post(eng, d1, f, msg)
                        except WouldBlock:
                            break
                    got["bytes"] += len(nic_take_delivered(eng, d2, ip1, f))
            eng.on_chunk.append(app)
            eng.run_for(int(0.3e9))                         # warm up, open PDCs
            b0, c0 = got["bytes"], bio.cpu_seconds()
            k0 = nic_counters(eng, d2)["rx_data"]
            r0 = nic_counters(eng, d1)["tx_retx"]
            t0 = time.perf_counter()
            eng.run_for(int(secs * 1e9))
            el = time.perf_counter() - t0
            cpu = bio.cpu_seconds() - c0
            good = (got["bytes"] - b0) * 8 / el / 1e9
            pk = (nic_counters(eng, d2)["rx_data"] - k0) / el / 1e6
            retx = nic_counters(eng, d1)["tx_retx"] - r0
        finally:
            eng.close()
        return {"test": "transport", "flows": nflows, "mpps": pk,
                "wire_gbps": pk * FRAME * 8 / 1e3, "goodput_gbps": good,
                "cpu_per_gbps": cpu / el / good if good else float("nan"), "retx": retx}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 round of 2 s")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds = 1, 2.0
    if os.geteuid() != 0:
        print("bench/transport.py needs root (namespaces, AF_XDP)", file=sys.stderr)
        return 2
    b = TransportBench(args)
    from taurus.tools import netns
    try:
        b.t.up()
        runs = {"raw": [], 1: [], 8: []}
        for r in range(args.rounds):
            for key in ("raw", 1, 8):
                row = b.raw(args.seconds) if key == "raw" else b.transport(key, args.seconds)
                log(f"round {r + 1}: {row}")
                runs[key].append(row)
    finally:
        b.t.down()
        for ns in netns.list_ns(b.prefix):
            netns.remove_ns(ns)
    rows = []
    for key, rs in runs.items():
        med = {k: statistics.median(x[k] for x in rs) for k in
               ("mpps", "wire_gbps", "goodput_gbps", "cpu_per_gbps", "retx")}
        rows.append(dict(rs[0], **med))
    print(f"{'test':10} {'flows':>5} {'Mpps':>7} {'wire Gb/s':>9} {'goodput Gb/s':>12} "
          f"{'CPU s/Gbit':>10} {'retx':>6}")
    for r in rows:
        print(f"{r['test']:10} {r['flows']:5d} {r['mpps']:7.3f} {r['wire_gbps']:9.2f} "
              f"{r['goodput_gbps']:12.2f} {r['cpu_per_gbps']:10.3f} {int(r['retx']):6d}")
    raw = rows[0]["mpps"]
    ratio = rows[2]["mpps"] / raw if raw else 0.0
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "ratio": ratio, "target": TARGET}, f, indent=2)
    print(f"(median of {args.rounds} round(s) of {args.seconds:.0f} s; target >= {TARGET:.2f})")
    print(f"transport/raw ratio: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
