#!/usr/bin/env python3
"""I/O benchmark: what the port layer and the engine's forwarder move, each
beside a raw-I/O ceiling measured in the same run on the same sockets.

    sudo python bench/io.py            # about 2 minutes (+20 s compiling on a new cache)
    sudo python bench/io.py --quick    # about 30 s
    sudo python bench/io.py --json out.json

Topology (namespaces taurus-bench-<pid>-io-*, removed at the end, also on
Ctrl-C):

    gen:gen-eth0 ---- s1-eth0 [s1] s1-eth1 ---- sink-eth0:sink

s1's two interfaces are engine ports A (s1-eth0) and B (s1-eth1), opened
once per port kind with Engine.add_port and joined by the L2 forwarder.
For each port kind (af_xdp, af_packet) and frame size (64 B, 1500 B):

- tx   B sends to the kernel on sink.  Ours: a Numba loop allocating pool
       frames (bytes written once beforehand), port_tx_burst + port_service.
       Raw: a Numba loop posting pre-filled frames straight on B's kernel
       ring (no pool, no copy), kick, reap.  Rate = frames the sink's veth
       received (its rx_packets counter) per second.
- rx   A receives from a generator on gen-eth0 (a forked process, in gen's
       namespace, running the raw AF_XDP TX loop).  Ours: port_rx_burst ->
       mbuf_free.  Raw: read the descriptors / block entries and hand them
       straight back.  Rate = frames the loop got per second; kernel drops
       from the socket's statistics.
- fwd  The same generator; frames cross s1 and reach the kernel on sink.
       Ours: the engine (eng.run_for) with its L2 forwarder.  Raw: a Numba
       loop moving frames from A's RX ring to B's TX ring, one memcpy, no
       pool, no engine.  Rate = the sink's rx_packets per second.

Raw loops use the same burst (32) and one kick per burst like the port
layer, so a ratio is the cost of the software layers, not of batching.
Ours and raw take turns (raw, ours, ours, raw, ...) and each figure is the
median over rounds: this 2-core machine is noisy.  With two or more CPUs
the generator is pinned to one CPU and this process to another.

Gbit/s counts frame bytes (Ethernet header to payload, no FCS, no preamble).
The last line is `forwarder/raw ratio: X.XX` for AF_XDP at 64 B.
"""
import argparse
import json
import logging
import mmap
import multiprocessing as mp
import os
import signal
import statistics
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

KINDS = ("af_xdp", "af_packet")
SIZES = (64, 1500)
TESTS = ("tx", "rx", "fwd")
FWD_TARGET = 0.90        # engine forwarder >= 90% of the raw forwarding ceiling
TX_TARGET_MPPS = 0.8     # AF_XDP port-layer TX at 64 B
NOISY = 0.10             # other processes' CPU use (in CPUs) that makes a window noisy
WARMUP_S = 0.1           # drain what queued while nobody polled, before each window
GEN_CHUNK_NS = 20_000_000
G_STOP, G_SENT, G_KICKS, G_BUSY, G_ERR = range(5)
DST_NOBODY = "02:54:ff:ff:ff:fe"   # a MAC nobody owns: the sink drops early


# ---------------------------------------------------------------- helpers

_T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - _T0:5.1f}s] {msg}", file=sys.stderr, flush=True)


def mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def make_frame(size: int, src_mac: str, dst_mac: str, src_ip: str, dst_ip: str) -> bytes:
    """An Ethernet/IPv4/UDP frame of exactly `size` bytes (no FCS)."""
    if size < 60:
        raise ValueError(f"frame size {size} is below the Ethernet minimum of 60 bytes")
    ip_len = size - 14
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0x5441, 0, 64, 17, 0,
                      bytes(int(x) for x in src_ip.split(".")),
                      bytes(int(x) for x in dst_ip.split(".")))
    s = sum(struct.unpack("!10H", hdr))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    hdr = hdr[:10] + struct.pack("!H", ~s & 0xFFFF) + hdr[12:]
    udp = struct.pack("!HHHH", 4793, 9, ip_len - 20, 0)
    payload = b"taurus-bench".ljust(ip_len - 28, b"\0")
    return mac_bytes(dst_mac) + mac_bytes(src_mac) + b"\x08\x00" + hdr + udp + payload


def timed(call, dur_s: float, chunk_s: float = 0.25) -> float:
    """call(chunk_ns) until dur_s have passed; returns the elapsed seconds.
    Chunks keep Ctrl-C responsive (signals are handled between them)."""
    t0 = time.perf_counter()
    end = t0 + dur_s
    while True:
        left = end - time.perf_counter()
        if left <= 1e-4:
            break
        call(int(min(left, chunk_s) * 1e9))
    return time.perf_counter() - t0


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU time of a process (all its threads) so far."""
    try:
        with open(f"/proc/{pid or 'self'}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return float("nan")


PF_KTHREAD = 0x00200000


def others_cpu_seconds(exclude) -> float:
    """CPU time used so far by every user-space process but `exclude`
    (kernel threads such as ksoftirqd do our packets' work: not counted)."""
    total = 0.0
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in exclude:
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[6]) & PF_KTHREAD:
                continue
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total / _TICK


def cpu_stat() -> list[int]:
    """Machine-wide (user, nice, system, idle, iowait, irq, softirq, steal)
    in clock ticks, from /proc/stat."""
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:9]]


def busy_elsewhere() -> list[str]:
    """Other processes that used much CPU over the last 0.5 s (a benchmark on
    2 cores is only as good as the machine is quiet)."""
    def snap():
        out = {}
        for d in os.listdir("/proc"):
            if d.isdigit() and int(d) != os.getpid():
                out[int(d)] = cpu_seconds(int(d))
        return out
    a = snap()
    time.sleep(0.5)
    b = snap()
    busy = []
    for pid, t in b.items():
        if pid in a and t - a[pid] > 0.1:
            try:
                with open(f"/proc/{pid}/comm") as f:
                    name = f.read().strip()
            except OSError:
                name = "?"
            busy.append(f"{name}[{pid}] {100 * (t - a[pid]) / 0.5:.0f}%")
    return busy


class LinkCounters:
    """Interface counters read over netlink inside a namespace."""

    def __init__(self, ns: str, ifname: str):
        from pyroute2 import IPRoute
        self.ipr = IPRoute(netns=ns)
        self.idx = self.ipr.link_lookup(ifname=ifname)[0]

    def read(self) -> dict:
        return dict(self.ipr.link("get", index=self.idx)[0].get_attr("IFLA_STATS64"))

    def rx(self) -> int:
        return int(self.read()["rx_packets"])

    def close(self) -> None:
        self.ipr.close()


# ---------------------------------------------------------------- generator

def _gen_main(ifname, frame, burst, cpu, clk, ctl, conn, parent):
    """Forked child, inside gen's namespace: raw AF_XDP TX until told to stop
    (or until the parent is gone).  Ctrl-C is the parent's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    import numpy as np
    import _rawloops as L
    from taurus.datapath.ports.common import XDP
    from taurus.datapath.ports.table import make_ports
    from taurus.datapath.mbuf import make_pool
    from taurus.datapath.ports.xdp import open_xdp_port
    h = None
    try:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        ports = make_ports([XDP])
        pool = make_pool(4 * L.RAW_TX_FRAMES)
        h = open_xdp_port(ports, pool, 0, ifname)
        tmpl = np.frombuffer(frame, np.uint8).copy()
        L.xdp_prefill_tx(ports, pool, 0, tmpl, len(tmpl), L.RAW_TX_FRAMES)
        st = np.zeros(L.N_STATS, np.int64)
        stop = ctl[G_STOP:G_STOP + 1]
        conn.send(("ready", f"{h!r}"))
        while ctl[G_STOP] == 0 and os.getppid() == parent:
            L.xdp_raw_tx(ports, 0, len(tmpl), burst, clk, GEN_CHUNK_NS, stop, st)
            ctl[G_SENT] = st[L.S_PKTS]
            ctl[G_KICKS] = st[L.S_KICKS]
            ctl[G_BUSY] = st[L.S_BUSY]
            ctl[G_ERR] = st[L.S_ERR]
    except BaseException as e:  # tell the parent, which is waiting or will ask
        try:
            conn.send(("error", f"{type(e).__name__}: {e}"))
        except OSError:
            pass
    finally:
        if h is not None:
            h.close()   # detaches the XDP program from gen-eth0
        conn.close()


class Generator:
    """The raw AF_XDP TX loop in a forked process on gen's interface."""

    def __init__(self, ns, ifname, frame, burst, cpu, clk):
        import numpy as np
        from taurus.tools.netns import start_in_ns
        self._mm = mmap.mmap(-1, mmap.PAGESIZE)   # shared with the child
        self.ctl = np.frombuffer(self._mm, np.uint64, 8)
        ctx = mp.get_context("fork")
        self._conn, child = ctx.Pipe(duplex=False)
        self.proc = start_in_ns(ns, _gen_main, ifname, frame, burst, cpu, clk, self.ctl,
                                child, os.getpid())
        child.close()
        if not self._conn.poll(60):
            self.close()
            raise RuntimeError(f"generator on {ifname} did not start within 60 s")
        what, info = self._conn.recv()
        if what != "ready":
            self.close()
            raise RuntimeError(f"generator on {ifname}: {info}")
        self.info = info

    def sent(self) -> int:
        return int(self.ctl[G_SENT])

    def alive(self) -> bool:
        return self.proc.is_alive()

    def close(self) -> None:
        self.ctl[G_STOP] = 1
        self.proc.join(5)
        if self.proc.is_alive():
            log(f"generator pid {self.proc.pid} did not stop: killing it")
            self.proc.kill()
            self.proc.join(5)
        try:
            while self._conn.poll(0):
                what, info = self._conn.recv()
                if what == "error":
                    log(f"generator reported: {info}")
        except (EOFError, OSError):
            pass
        self._conn.close()


# ---------------------------------------------------------------- benchmark

class Bench:
    def __init__(self, args):
        import numpy as np
        import _rawloops as L
        from taurus.datapath.clock import make_clock
        from taurus.tools.topology import Topology
        self.np, self.L, self.args = np, L, args
        self.prefix = f"taurus-bench-{os.getpid()}-"
        t = Topology("io", prefix=self.prefix)
        t.add_host("gen", ip="10.77.0.1/24")
        t.add_host("sink", ip="10.77.0.2/24")
        t.add_switch("s1")
        t.add_link("gen", "s1")
        t.add_link("sink", "s1")
        self.topo = t
        self.clk = make_clock("wall")
        self.stop = np.zeros(1, np.uint64)
        self.st = np.zeros(L.N_STATS, np.int64)
        self.rows = []
        self.notes = []
        self.eng = None
        self.gen = None
        self.sink = None
        cpus = sorted(os.sched_getaffinity(0))
        self._affinity = set(cpus)
        if args.no_pin or len(cpus) < 2:
            self.gen_cpu = self.main_cpu = None
        else:
            self.gen_cpu, self.main_cpu = cpus[0], cpus[1]

    # -- setup / teardown
    def compile(self):
        """Compile (or load from the cache) every loop before a port is open."""
        from taurus.datapath.mbuf import make_pool
        from taurus.datapath.ports.table import make_ports
        np, L = self.np, self.L
        ports, pool, clk, stop, st = make_ports([0, 0]), make_pool(64), self.clk, self.stop, self.st
        b = np.zeros(self.args.burst, np.int32)
        t = np.zeros(64, np.uint8)
        L.xdp_raw_tx(ports, 0, 64, 32, clk, 0, stop, st)
        L.xdp_raw_rx(ports, 0, 32, clk, 0, stop, st)
        L.xdp_raw_fwd(ports, 0, 1, 32, clk, 0, stop, st)
        L.pkt_raw_tx(ports, 0, 64, 32, clk, 0, stop, st)
        L.pkt_raw_rx(ports, 0, clk, 0, stop, st)
        L.pkt_raw_fwd(ports, 0, 1, 32, clk, 0, stop, st)
        L.port_tx_loop(ports, pool, 0, 64, b, clk, 0, stop, st)
        L.port_rx_loop(ports, pool, 0, b, clk, 0, stop, st)
        L.port_settle(ports, pool, 0, clk, 0)
        L.xdp_prefill_tx(ports, pool, 0, t, 0, 0)
        L.pkt_prefill_tx(ports, 0, t, 0)
        from taurus.datapath.engine import Engine
        Engine(clock="wall", name=f"{self.prefix}compile").close()   # compiles engine_run

    def up(self):
        self.topo.up()
        self.sink = LinkCounters(self.topo.ns_of("sink"), "sink-eth0")
        if self.main_cpu is not None:
            os.sched_setaffinity(0, {self.main_cpu})

    def close_engine(self):
        if self.eng is not None:
            eng, self.eng = self.eng, None
            eng.close()

    def stop_generator(self):
        if self.gen is not None:
            gen, self.gen = self.gen, None
            gen.close()

    def down(self):
        """Remove everything this run created; returns what is left over."""
        from taurus.tools import netns
        errors = []
        for step in (self.stop_generator, self.close_engine):
            try:
                step()
            except Exception as e:
                errors.append(f"{step.__name__}: {e}")
        if self.sink is not None:
            self.sink.close()
            self.sink = None
        try:
            self.topo.down()
        except Exception as e:
            errors.append(f"topology down: {e}")
        for ns in netns.list_ns(self.prefix):   # belt and braces
            try:
                netns.remove_ns(ns)
            except OSError as e:
                errors.append(f"removing {ns}: {e}")
        for f in os.listdir("/dev/shm"):
            if f.startswith(self.prefix):
                try:
                    os.unlink(os.path.join("/dev/shm", f))
                except OSError:
                    pass
        try:
            os.sched_setaffinity(0, self._affinity)
        except OSError:
            pass
        left = [f"namespace {ns}" for ns in netns.list_ns(self.prefix)]
        left += [f"/dev/shm/{f}" for f in os.listdir("/dev/shm") if f.startswith(self.prefix)]
        return errors, left

    def open_engine(self, kind):
        from taurus.datapath.engine import Engine
        ns = self.topo.ns_of("s1")
        eng = Engine(clock="wall", name=f"{self.prefix}eng-{kind}", burst=self.args.burst)
        self.eng = eng
        self.a = eng.add_port("s1-eth0", "s1-eth0", netns=ns, kind=kind)
        self.b = eng.add_port("s1-eth1", "s1-eth1", netns=ns, kind=kind)
        eng.add_l2fwd(self.a, self.b, name="s1")
        self.ha, self.hb = eng.port_handle(self.a), eng.port_handle(self.b)
        return eng

    # -- measurements
    def settle(self, p, s=0.05):
        E = self.eng.E
        self.L.port_settle(E.ports, E.pool, p, self.clk, int(s * 1e9))

    def rx_drops(self) -> int:
        s = self.ha.stats()
        if self.kind == "af_xdp":
            # A frame dropped for want of a fill buffer counts in rx_dropped
            # and again in rx_fill_ring_empty_descs: take the first only.
            return s.get("rx_dropped", 0) + s.get("rx_ring_full", 0)
        return s.get("drops", 0)

    def window(self, call, measure):
        """Warm up (drain queued frames), then one measured window.
        measure: "sink" (frames the sink received) or "loop" (what the loop
        counted).  Returns a dict of rates over the window."""
        call(int(WARMUP_S * 1e9))
        st = self.st
        st[:] = 0
        s0 = self.sink.rx()
        g0 = self.gen.sent() if self.gen else 0
        d0 = self.rx_drops() if self.gen else 0
        c0 = self.eng.counters()
        gpid = self.gen.proc.pid if self.gen else None
        mine = {os.getpid(), gpid}
        o0 = others_cpu_seconds(mine)
        k0 = cpu_stat()
        u0, v0 = cpu_seconds(), cpu_seconds(gpid) if gpid else 0.0
        el = timed(call, self.args.duration)
        u1, v1 = cpu_seconds(), cpu_seconds(gpid) if gpid else 0.0
        k1 = cpu_stat()
        o1 = others_cpu_seconds(mine)
        s1 = self.sink.rx()
        g1 = self.gen.sent() if self.gen else 0
        d1 = self.rx_drops() if self.gen else 0
        c1 = self.eng.counters()
        got = (s1 - s0) if measure == "sink" else int(st[self.L.S_PKTS])

        def dc(port, key):
            return c1[port][key] - c0[port][key]
        return {"pps": got / el, "secs": el, "offered_pps": (g1 - g0) / el,
                "kernel_drops": d1 - d0, "sink_pps": (s1 - s0) / el,
                "kicks": int(st[self.L.S_KICKS]), "busy": int(st[self.L.S_BUSY]),
                "a_rx": dc("s1-eth0", "rx_pkts"), "b_tx": dc("s1-eth1", "tx_pkts"),
                "b_tx_drop": dc("s1-eth1", "tx_drop"), "a_rx_nobuf": dc("s1-eth0", "rx_nobuf"),
                "b_tx_kicks": dc("s1-eth1", "tx_kicks"),
                "cpu_share": (u1 - u0) / el, "gen_cpu_share": (v1 - v0) / el if gpid else None,
                "others_cpus": (o1 - o0) / el,
                # CPUs' worth of softirq work and of time the hypervisor took
                "softirq_cpus": (k1[6] - k0[6]) / _TICK / el,
                "steal_cpus": (k1[7] - k0[7]) / _TICK / el}

    def pair(self, name, raw_call, ours_call, rounds, measure):
        """Alternate raw and ours (raw, ours, ours, raw, ...); medians."""
        raw, ours = [], []
        for r in range(rounds):
            order = (("raw", raw_call, raw), ("ours", ours_call, ours))
            for _, call, out in (order if r % 2 == 0 else order[::-1]):
                out.append(self.window(call, measure))
        med = {side: statistics.median(x["pps"] for x in res)
               for side, res in (("raw", raw), ("ours", ours))}
        log(f"  {self.kind:9s} {self.size:5d} B {name:3s}: ours "
            + " ".join(f"{x['pps'] / 1e6:.3f}" for x in ours)
            + " | raw " + " ".join(f"{x['pps'] / 1e6:.3f}" for x in raw) + " Mpps")
        row = {"kind": self.kind, "size": self.size, "test": name,
               "pps": med["ours"], "raw_pps": med["raw"],
               "gbps": med["ours"] * self.size * 8 / 1e9,
               "raw_gbps": med["raw"] * self.size * 8 / 1e9,
               "ratio": med["ours"] / med["raw"] if med["raw"] > 0 else float("nan"),
               "offered_pps": statistics.median(x["offered_pps"] for x in raw + ours),
               "kernel_drops_ours": sum(x["kernel_drops"] for x in ours),
               "kernel_drops_raw": sum(x["kernel_drops"] for x in raw),
               "others_cpus_max": max(x["others_cpus"] for x in raw + ours),
               "steal_cpus_max": max(x["steal_cpus"] for x in raw + ours),
               "windows": {"ours": ours, "raw": raw}}
        self.rows.append(row)
        return row

    def run_kind(self, kind):
        np, L, a_ = self.np, self.L, self.args
        self.kind = kind
        eng = self.open_engine(kind)
        E = eng.E
        ports, pool, clk, stop, st = E.ports, E.pool, self.clk, self.stop, self.st
        a, b = self.a, self.b
        bufs = np.zeros(a_.burst, np.int32)
        out = np.zeros(a_.burst, np.int32)
        xdp = kind == "af_xdp"
        t = self.topo
        try:
            for size in a_.sizes:
                self.size = size
                # ---- TX: B -> kernel on sink
                tx = make_frame(size, t.mac_of("s1", 1), DST_NOBODY, "10.77.0.1", "10.77.0.2")
                tmpl = np.frombuffer(tx, np.uint8).copy()
                self.settle(b)
                if xdp:
                    L.xdp_prefill_tx(ports, pool, b, tmpl, size, L.RAW_TX_FRAMES)
                else:
                    L.pkt_prefill_tx(ports, b, tmpl, size)
                pool.data[:, :size] = tmpl
                if xdp:
                    def raw_tx(ns):
                        L.xdp_raw_tx(ports, b, size, a_.burst, clk, ns, stop, st)
                else:
                    def raw_tx(ns):
                        L.pkt_raw_tx(ports, b, size, a_.burst, clk, ns, stop, st)

                def ours_tx(ns):
                    L.port_tx_loop(ports, pool, b, size, bufs, clk, ns, stop, st)
                if "tx" in a_.tests:
                    self.pair("tx", raw_tx, ours_tx, a_.rounds, "sink")
                self.settle(b)
                if "rx" not in a_.tests and "fwd" not in a_.tests:
                    continue
                # ---- RX and forwarder: generator on gen-eth0 -> A
                gf = make_frame(size, t.mac_of("gen"), t.mac_of("s1", 0), "10.77.0.1", "10.77.0.2")
                self.gen = Generator(t.ns_of("gen"), "gen-eth0", gf, a_.burst, self.gen_cpu, clk)
                try:
                    if xdp:
                        def raw_rx(ns):
                            L.xdp_raw_rx(ports, a, a_.burst, clk, ns, stop, st)
                    else:
                        def raw_rx(ns):
                            L.pkt_raw_rx(ports, a, clk, ns, stop, st)

                    def ours_rx(ns):
                        L.port_rx_loop(ports, pool, a, out, clk, ns, stop, st)
                    if "rx" in a_.tests:
                        self.pair("rx", raw_rx, ours_rx, a_.rounds, "loop")
                    if xdp:
                        def raw_fwd(ns):
                            L.xdp_raw_fwd(ports, a, b, a_.burst, clk, ns, stop, st)
                    else:
                        def raw_fwd(ns):
                            L.pkt_raw_fwd(ports, a, b, a_.burst, clk, ns, stop, st)

                    def ours_fwd(ns):
                        eng.run_for(ns)
                    if "fwd" in a_.tests:
                        self.pair("fwd", raw_fwd, ours_fwd, a_.fwd_rounds, "sink")
                    if not self.gen.alive():
                        raise RuntimeError("the generator died during the measurement")
                finally:
                    self.stop_generator()
                # Frames queued at A after the generator stopped.
                ours_rx(int(0.05 * 1e9))
                self.settle(b)
            held = sum(h.frames_held() for h in (self.ha, self.hb) if xdp)
            if eng.frames_in_use() != held:
                self.notes.append(f"{kind}: {eng.frames_in_use() - held} pool frames in use "
                                  "after the run beyond those the ports hold "
                                  "(a leak in the port layer?)")
        finally:
            self.close_engine()


# ---------------------------------------------------------------- report

def report(rows, notes, skipped, out=sys.stdout):
    def p(s=""):
        print(s, file=out)
    p()
    p(f"{'kind':9s} {'size':>6s} {'test':4s} {'pps (M)':>8s} {'Gbit/s':>7s} "
      f"{'raw pps':>8s} {'ratio':>6s}  notes")
    for r in rows:
        note = []
        if r["test"] in ("rx", "fwd"):
            note.append(f"offered {r['offered_pps'] / 1e6:.3f} Mpps")
            if r["kernel_drops_ours"] or r["kernel_drops_raw"]:
                note.append(f"kernel drops ours/raw {r['kernel_drops_ours']}/"
                            f"{r['kernel_drops_raw']}")
        if r["test"] == "fwd":
            drop = sum(w["b_tx_drop"] for w in r["windows"]["ours"])
            if drop:
                note.append(f"engine tx_drop {drop}")
        if r["others_cpus_max"] > NOISY:
            note.append(f"NOISY: others used {r['others_cpus_max']:.0%} CPU")
        if r["steal_cpus_max"] > NOISY:
            note.append(f"NOISY: hypervisor stole {r['steal_cpus_max']:.0%} CPU")
        p(f"{r['kind']:9s} {r['size']:>4d} B {r['test']:4s} {r['pps'] / 1e6:8.3f} "
          f"{r['gbps']:7.2f} {r['raw_pps'] / 1e6:8.3f} {r['ratio']:6.2f}  {'; '.join(note)}")
    for k, why in skipped.items():
        p(f"{k:9s} skipped: {why}")
    if any(max(r["others_cpus_max"], r["steal_cpus_max"]) > NOISY for r in rows):
        notes = notes + ["NOISY rows: during some window other processes (or the hypervisor) "
                         f"took more than {NOISY:.0%} of a CPU; on 2 cores their figures "
                         "are unreliable"]
    for n in notes:
        p(f"note: {n}")
    p()
    targets = []

    def find(kind, size, test):
        for r in rows:
            if (r["kind"], r["size"], r["test"]) == (kind, size, test):
                return r
        return None
    p("targets:")
    for r in rows:
        if r["test"] == "fwd":
            ok = r["ratio"] >= FWD_TARGET
            targets.append({"target": f"forwarder >= {FWD_TARGET:.0%} of raw ({r['kind']}, "
                                      f"{r['size']} B)", "value": r["ratio"], "pass": ok})
    tx = find("af_xdp", 64, "tx")
    if tx is not None:
        targets.append({"target": f"AF_XDP TX >= {TX_TARGET_MPPS} Mpps at 64 B",
                        "value": tx["pps"] / 1e6, "pass": tx["pps"] / 1e6 >= TX_TARGET_MPPS})
    for t in targets:
        p(f"  {'PASS' if t['pass'] else 'MISS'}  {t['target']}: {t['value']:.2f}")
    head = find("af_xdp", 64, "fwd")
    ratio = head["ratio"] if head is not None else float("nan")
    p(f"forwarder/raw ratio: {ratio:.2f}")
    return targets, ratio


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="short windows, one round each (about 30 s)")
    ap.add_argument("--duration", type=float, help="seconds per measured window "
                    "(default 1.5, --quick 0.5)")
    ap.add_argument("--rounds", type=int, help="raw/ours rounds for tx and rx "
                    "(default 2, --quick 1)")
    ap.add_argument("--fwd-rounds", type=int, help="raw/ours rounds for the forwarder "
                    "(default 4, --quick 1)")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help="port kinds, comma-separated (default: %(default)s)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)),
                    help="frame sizes in bytes, comma-separated (default: %(default)s)")
    ap.add_argument("--tests", default=",".join(TESTS),
                    help="tests to run, comma-separated (default: %(default)s)")
    ap.add_argument("--burst", type=int, default=32, help="frames per burst (default 32, "
                    "the engine's)")
    ap.add_argument("--no-pin", action="store_true",
                    help="do not pin the generator and this process to separate CPUs")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers to FILE")
    a = ap.parse_args(argv)
    a.duration = a.duration or (0.5 if a.quick else 1.5)
    a.rounds = a.rounds or (1 if a.quick else 2)
    a.fwd_rounds = a.fwd_rounds or (1 if a.quick else 4)
    a.kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
    for k in a.kinds:
        if k not in KINDS:
            ap.error(f"unknown port kind {k!r} (expected {', '.join(KINDS)})")
    a.tests = [t.strip() for t in a.tests.split(",") if t.strip()]
    for t in a.tests:
        if t not in TESTS:
            ap.error(f"unknown test {t!r} (expected {', '.join(TESTS)})")
    try:
        a.sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes must be integers, got {a.sizes!r}")
    for s in a.sizes:
        if not 60 <= s <= 1514:
            ap.error(f"frame size {s} outside [60, 1514] (veth MTU 1500)")
    if a.duration <= 0 or a.rounds < 1 or a.fwd_rounds < 1 or not 1 <= a.burst <= 256:
        ap.error("--duration must be > 0, rounds >= 1, burst in [1, 256]")
    return a


def main(argv=None) -> int:
    args = parse_args(argv)
    if os.geteuid() != 0:
        print("bench/io.py needs root: it creates network namespaces and opens AF_XDP and "
              "AF_PACKET sockets.  Run it as root (e.g. `sudo python bench/io.py`).",
              file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        import numpy  # noqa: F401
        import taurus  # noqa: F401
    except ImportError as e:
        print(f"bench/io.py: {e}; install the package first (`make deps` or "
              "`pip install -e .`)", file=sys.stderr)
        return 2
    from taurus.datapath.ports.xdp import xdp_available

    main_pid = os.getpid()

    # pyroute2 forks helpers (namespace creation, sockets in a namespace)
    # that run Python with our handlers, and signals them (SIGTERM) when done.
    # An exception raised there would unwind through Topology.up()'s cleanup
    # and ours in the child and delete the parent's namespaces: a child just
    # vanishes.
    def _sig(signum, frame):
        if os.getpid() != main_pid:
            os._exit(128 + signum)
        raise KeyboardInterrupt
    old_term = signal.signal(signal.SIGTERM, _sig)
    signal.signal(signal.SIGINT, _sig)
    t_start = time.monotonic()
    bench = Bench(args)
    skipped = {}
    interrupted = False
    try:
        log("compiling / loading the Numba loops ...")
        t0 = time.monotonic()
        bench.compile()
        log(f"  done in {time.monotonic() - t0:.1f} s")
        ok, why = xdp_available()
        if not ok:
            # The generator is an AF_XDP sender: without AF_XDP nothing runs.
            print(f"bench/io.py: AF_XDP is unavailable ({why}); the generator needs it",
                  file=sys.stderr)
            return 1
        busy = busy_elsewhere()
        if busy:
            bench.notes.append("busy before the start: " + ", ".join(busy)
                               + " (figures will be noisy)")
            log("other busy processes: " + ", ".join(busy))
        bench.up()
        log(f"topology up: namespaces {', '.join(bench.topo.namespaces())}"
            + (f"; generator on CPU {bench.gen_cpu}, this process on CPU {bench.main_cpu}"
               if bench.gen_cpu is not None else ""))
        for kind in args.kinds:
            try:
                bench.run_kind(kind)
            except Exception as e:
                from taurus.datapath.ports.afpacket import PacketPortError
                from taurus.datapath.ports.xdp import XdpUnavailable
                if isinstance(e, (XdpUnavailable, PacketPortError)):
                    skipped[kind] = str(e)
                    log(f"{kind}: skipped ({e})")
                else:
                    raise
    except KeyboardInterrupt:
        if os.getpid() != main_pid:
            os._exit(130)
        interrupted = True
        log("interrupted: cleaning up")
    finally:
        if os.getpid() != main_pid:
            os._exit(1)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        errors, left = bench.down()
        for e in errors:
            log(f"cleanup: {e}")
        if left:
            log(f"cleanup left behind: {', '.join(left)} (`taurus topo clean` removes them)")
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, old_term)
    if interrupted:
        return 130
    log(f"total {time.monotonic() - t_start:.0f} s")
    targets, ratio = report(bench.rows, bench.notes, skipped)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"config": {k: v for k, v in vars(args).items() if k != "json"},
                       "rows": bench.rows, "targets": targets, "skipped": skipped,
                       "notes": bench.notes, "forwarder_raw_ratio": ratio}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
