"""`taurus perf`: an iperf-like test of the Taurus transport between hosts of
a running topology (`taurus topo up two_hosts`).

    taurus perf -s --topo two_hosts            # the engine + receiving sink
    taurus perf -c h2 --topo two_hosts -t 10 -P 4 [-n BYTES] [-l MSGSIZE] [--rpc SIZE] [-J]

Process model (docs/DESIGN.md): `perf -s` is the one engine process; it opens an
AF_XDP port (steering only Taurus traffic, so the kernel keeps ping and TCP)
on every host's interface, inside that host's namespace, puts a host NIC on
each, and drains every receive connection (the sink, through the same app
interface, between run chunks).  `perf -c` is an app in its own process:
it reaches the engine over shared memory (taurus.transport.client),
opens P connections from its host (--from, default the other host) to HOST
and keeps their send rings full with -l byte messages for -t seconds (or
-n bytes), written in place (Conn.send_buffer: zero-copy; the bytes go into
each ring on its first pass only).  --rpc SIZE: closed loop over duplex connections: one SIZE
request outstanding per stream, which `perf -s` answers with the same
bytes on the reverse flow (the engine ends its run chunk on each message
delivered so the answer leaves at once); the RPC latency is post -> the
whole answer received.

Reported per interval and in total: throughput (bytes ACKed by the
receiver = delivered in order), smoothed RTT of each stream, message
completion percentiles (post -> its completion seen by the app: includes up
to one ~60 us poll interval).  -J prints JSON shaped like
iperf3's (start / intervals / end with sum_sent / sum_received), plus a
"taurus" section with the percentiles.
"""
import json
import signal
import socket
import sys
import time

import numpy as np

from taurus.tools.topo_cli import load_up

ENGINE_PREFIX = "taurus-perf-"
RTO_MIN_NS = 1_000_000


def add_perf_parser(sub) -> None:
    p = sub.add_parser("perf", help="iperf-like throughput / RPC test over the Taurus transport")
    m = p.add_mutually_exclusive_group(required=True)
    m.add_argument("-s", "--server", action="store_true", help="run the engine and the sink")
    m.add_argument("-c", "--client", metavar="HOST", help="send to HOST (name or IP)")
    p.add_argument("--topo", default="two_hosts", help="topology file or shipped name (up)")
    p.add_argument("--prefix", default="taurus-")
    p.add_argument("--name", default=None, help="engine name (default taurus-perf-<topo>)")
    p.add_argument("--from", dest="src", default=None, help="client host (default: another)")
    p.add_argument("-t", "--time", type=float, default=10.0, help="seconds (default 10)")
    p.add_argument("-n", "--bytes", type=int, default=0, help="bytes per test instead of -t")
    p.add_argument("-P", "--parallel", type=int, default=1, help="streams (default 1)")
    p.add_argument("-l", "--length", type=int, default=128 << 10, help="message size (128 KiB)")
    p.add_argument("--rpc", type=int, default=0, metavar="SIZE",
                   help="closed-loop RPCs of SIZE bytes, one outstanding per stream")
    p.add_argument("-i", "--interval", type=float, default=1.0)
    p.add_argument("-J", "--json", action="store_true", help="iperf3-shaped JSON")
    p.add_argument("--port-kind", default="af_xdp", choices=["auto", "af_xdp", "af_packet"])
    p.add_argument("--duration", type=float, default=0.0, help="server: seconds (0: until ^C)")
    p.add_argument("--xdp-mode", default="auto", choices=["auto", "native", "generic"],
                   help="server: the ports' XDP attach mode (on a veth, native mode copies "
                        "every frame into a page first)")
    p.add_argument("--ack-every", type=int, default=None, metavar="N",
                   help="server: ACK every N data packets (NIC default 4) ...")
    p.add_argument("--ack-delay-us", type=float, default=None, metavar="US",
                   help="... or this long after the first unACKed one (NIC default 2); "
                        "bench/transport.py uses 16 and 200 for bulk")
    p.set_defaults(func=main)


def _engine_name(args, t) -> str:
    return args.name or f"{ENGINE_PREFIX}{t.name}"


def main(args) -> int:
    t = load_up(args.topo, args.prefix, "perf")
    if t is None:
        return 2
    return serve(args, t) if args.server else client(args, t)


# ---- server: the engine and the sink --------------------------------------
def build_engine(t, name: str, port_kind: str = "af_xdp", rx_ring: int = 8 << 20,
                 hosts=None, xdp_mode: str = "auto", **nic):
    """A wall-clock engine with a host NIC on every host of topology t (or
    on `hosts` only: one engine per host, each in its own process, is a NIC
    per host with its own CPU).  xdp_mode: the ports' XDP attach mode
    (open_xdp_port); nic: more add_nic settings (ack_every, ...)."""
    from taurus.datapath.devices.nic.setup import DATA_HDR
    from taurus.datapath.engine import Engine
    from taurus.datapath.wire import spec as S
    # RTO floor 1 ms, not the NIC default 50 us: a peer that is a process on
    # a shared CPU may not run for a millisecond or more.
    nic = {"rto_min_ns": RTO_MIN_NS, **nic}
    eng = Engine(clock="wall", name=name, chunk_ms=2.0)
    try:
        eng.reserve_nics(max_flows=256, tx_bytes=256 << 20, rx_bytes=1 << 30)
        for h in (hosts or t.hosts):
            itf = t.ifaces_of(h)[0]
            port = eng.add_port(h, itf.name, netns=t.ns_of(h), kind=port_kind,
                                xdp=dict(steer="taurus", rx_frames=2048, xdp_mode=xdp_mode))
            eng.add_nic(port, itf.mac, t.ip_of(h), mss=itf.link.mtu + S.ETH_SIZE - DATA_HDR,
                        rx_buf_bytes=rx_ring, name=h, **nic)
    except BaseException:
        eng.close()
        raise
    return eng


ECHO = b"TAURUS-ECHO1"   # a stream opening with this message wants each message answered


class Sink:
    """What `perf -s` does with every stream reaching its hosts, between
    engine run chunks.  A stream that opens with ECHO (an RPC client's
    duplex connection) gets each message sent back on a reverse flow, and the
    engine then ends its chunk on every message delivered, so answers go out
    at once.  Any other stream is drained in place.  The reverse halves of
    duplex connections (opening with the client library's HELLO) belong to
    the app that connected: left alone, and their NIC's completion queue
    is not touched."""

    def __init__(self, eng, hosts):
        from taurus.transport.client import Endpoint
        self.eng = eng
        self.eps = [Endpoint(eng, h) for h in hosts]
        self.new = []             # not classified yet: their first bytes are not here
        self.bulk = []
        self.echo = []            # (Duplex, answers not sent yet)
        self.bytes = 0

    def _kind(self, c):
        from taurus.transport.client import HELLO
        head = c.stream_head(len(ECHO))
        n = len(head)
        for marker, kind in ((HELLO, "peer"), (ECHO, "echo")):
            if head[:len(marker)] == marker:
                return kind
            if n < len(marker) and marker.startswith(head):
                return None       # could still become this marker
        return "bulk"

    def __call__(self) -> None:
        from taurus.datapath.devices.nic.setup import nic_yield_on_message
        from taurus.transport.client import WouldBlock
        for ep in self.eps:
            self.new += ep.accept_ready()
        waiting = []
        for c in self.new:
            kind = self._kind(c)
            if kind is None:
                waiting.append(c)
            elif kind == "bulk":
                self.bulk.append(c)
            elif kind == "echo":
                c.try_recv()                          # the ECHO message itself
                self.echo.append((c.ep.answer(c), []))
                nic_yield_on_message(self.eng)
        self.new = waiting
        for c in self.bulk:
            self.bytes += c.recv_bytes()
        for d, backlog in self.echo:
            while (m := d.rx.try_recv()) is not None:
                self.bytes += len(m)
                backlog.append(m)
            while backlog:
                try:
                    d.try_send(backlog[0])
                except WouldBlock:                    # the next chunk sends it
                    break
                backlog.pop(0)


def serve(args, t) -> int:
    name = _engine_name(args, t)
    nic = {}
    if args.ack_every is not None:
        nic["ack_every"] = args.ack_every
    if args.ack_delay_us is not None:
        nic["ack_delay_ns"] = round(args.ack_delay_us * 1000)
    eng = build_engine(t, name, args.port_kind, xdp_mode=args.xdp_mode, **nic)
    with eng:
        sink = Sink(eng, t.hosts)
        eng.on_chunk.append(sink)
        print(f"taurus perf: engine {name} serving {', '.join(t.hosts)}; ^C to stop",
              flush=True)
        if args.duration > 0:
            eng.run_for(int(args.duration * 1e9))
        else:
            eng.run_forever()
        print(f"taurus perf: received {sink.bytes} bytes", flush=True)
    return 0


# ---- client -------------------------------------------------------------
def _pct(v, q):
    return int(np.percentile(v, q)) if len(v) else 0


def _resolve(t, host):
    if host in t.hosts:
        return host
    return t.host_of_ip(host)


class Stream:
    """One connection of the client.  Bulk: keep its rings full; a
    message's latency is post -> fully ACKed.  RPC (a duplex connection the
    server echoes on): one request outstanding; its latency is post ->
    the whole answer received."""

    def __init__(self, conn, msg, duplex=None):
        self.c, self.msg, self.d = conn, msg, duplex
        self.posted_at = {}          # msg id -> post time
        self.asked = None            # RPC: post time of the request awaiting its answer
        self.lat = []                # latencies, ns
        self.acked0 = 0

    def fill(self, limit: int) -> None:
        """Post messages while the rings take them (RPC: one outstanding)."""
        from taurus.transport.client import WouldBlock
        c = self.c
        while not limit or c.posted < limit:
            if self.d is not None and self.asked is not None:
                return
            try:
                mid = c.try_send(self.msg) if self.d is not None else self._send_in_place()
            except WouldBlock:       # rings full: the engine is behind
                return
            if self.d is not None:
                self.asked = time.monotonic_ns()
            else:
                self.posted_at[mid] = time.monotonic_ns()

    def _send_in_place(self) -> int:
        """Bulk: zero-copy.  The message is written into the send ring on the
        first pass round it only; later messages send what the ring holds
        (the same bytes, rotated where the size does not divide the ring:
        nobody reads a bulk stream's bytes, as with iperf3 -Z)."""
        c, n = self.c, len(self.msg)
        views = c.send_buffer(n)
        if c.posted < c.ring_bytes:
            a = 0
            for v in views:
                v[:] = self.msg[a:a + len(v)]
                a += len(v)
        return c.commit(n)

    def reap(self) -> None:
        # Timed on this process's clock when the event is seen (within a
        # poll interval, ~60 us): what the app experiences.  (The engine's
        # own stamps agree with time.monotonic_ns() to about a microsecond
        # once its clock has resynced, a second into the run: clock.py.)
        seen = time.monotonic_ns()
        done = self.c.completions()
        if self.d is not None:
            if self.asked is not None and self.d.try_recv() is not None:
                self.lat.append(time.monotonic_ns() - self.asked)
                self.asked = None
            return
        for mid, _end, _t in done:
            t0 = self.posted_at.pop(mid, None)
            if t0 is not None:
                self.lat.append(seen - t0)


def _rx_delivered(ep_peer, conn) -> int:
    """Bytes the receiving NIC delivered in order on this connection."""
    from taurus.datapath.devices.nic.state import (M_NRP, RP_DELIV, RP_NIC, RP_PEER_IP,
                                                   RP_PEER_PDC)
    N = ep_peer.N
    me = int(N.nr[conn.ep.n, 3])      # NR_IP of the sending NIC
    for r in range(1, int(N.meta[M_NRP]) + 1):
        if (N.rp[r, RP_NIC] == ep_peer.n + 1 and N.rp[r, RP_PEER_IP] == me
                and N.rp[r, RP_PEER_PDC] == conn.flow):
            return int(N.rp[r, RP_DELIV])
    return 0


def client(args, t) -> int:
    from taurus.transport.client import Endpoint
    dst = _resolve(t, args.client)
    src = args.src or next(h for h in t.hosts if h != dst)
    name = _engine_name(args, t)
    ep = Endpoint(name, src)
    peer_ep = Endpoint(name, dst)       # read-only use: delivered counters
    size = args.rpc or args.length
    msg = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8)
    streams = []
    for _ in range(args.parallel):
        if args.rpc:
            d = ep.connect(t.ip_of(dst), duplex=True)
            d.send(ECHO)                   # asks perf -s to answer every message
            streams.append(Stream(d.tx, msg, d))
        else:
            streams.append(Stream(ep.connect(t.ip_of(dst)), msg))
    per_stream_limit = -(-args.bytes // args.parallel) if args.bytes else 0
    stop = {"now": False}
    old = signal.signal(signal.SIGINT, lambda *a: stop.update(now=True))
    t0 = time.monotonic_ns()
    start_ts = time.time()
    end_ns = t0 + int(args.time * 1e9) if not args.bytes else None
    ivl_ns = int(args.interval * 1e9)
    intervals, next_ivl, last_t = [], t0 + ivl_ns, t0
    try:
        while not stop["now"]:
            now = time.monotonic_ns()
            for s in streams:
                s.reap()
                if end_ns is None or now < end_ns:
                    s.fill(per_stream_limit)
            done = (end_ns is not None and now >= end_ns) or (
                args.bytes and all(s.c.acked() >= min(per_stream_limit, s.c.posted)
                                   and s.c.posted >= per_stream_limit for s in streams))
            if now >= next_ivl or done:
                intervals.append(_interval(streams, last_t - t0, now - t0))
                last_t, next_ivl = now, now + ivl_ns
                if not args.json:
                    print(_line(intervals[-1]), flush=True)
            if done:
                break
            time.sleep(50e-6)
        # let what is in flight land (bounded), then count
        t_end = time.monotonic_ns()
        for _ in range(200):
            if all(s.c.acked() >= s.c.posted for s in streams):
                break
            time.sleep(1e-3)
            for s in streams:
                s.reap()
    finally:
        signal.signal(signal.SIGINT, old)
    res = _result(args, t, src, dst, streams, intervals, t0, t_end, start_ts, peer_ep)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        e = res["end"]
        print(f"[SUM] {e['sum_sent']['seconds']:.2f} s  sent {e['sum_sent']['bytes']} B "
              f"{e['sum_sent']['bits_per_second'] / 1e9:.3f} Gbit/s  received "
              f"{e['sum_received']['bits_per_second'] / 1e9:.3f} Gbit/s  retransmits "
              f"{e['sum_sent']['retransmits']}")
        tt = e["taurus"]
        what = "RPC latency" if args.rpc else "message completion"
        print(f"RTT us p50/p99 {tt['rtt_us']['p50']}/{tt['rtt_us']['p99']}  {what} "
              f"us p50/p99/p999 {tt['msg_completion_us']['p50']}/"
              f"{tt['msg_completion_us']['p99']}/{tt['msg_completion_us']['p999']} "
              f"({tt['msg_completion_us']['n']} {'RPCs' if args.rpc else 'messages'})")
    return 0


def _interval(streams, a_ns, b_ns):
    secs = max(1e-9, (b_ns - a_ns) / 1e9)
    rows = []
    for k, s in enumerate(streams):
        acked = s.c.acked()
        b = acked - s.acked0
        s.acked0 = acked
        rows.append({"socket": s.c.flow, "start": a_ns / 1e9, "end": b_ns / 1e9,
                     "seconds": secs, "bytes": b, "bits_per_second": b * 8 / secs,
                     "rtt": s.c.srtt_ns() // 1000, "omitted": False, "sender": True})
    tot = sum(r["bytes"] for r in rows)
    return {"streams": rows, "sum": {"start": a_ns / 1e9, "end": b_ns / 1e9, "seconds": secs,
                                     "bytes": tot, "bits_per_second": tot * 8 / secs,
                                     "omitted": False, "sender": True}}


def _line(iv):
    s = iv["sum"]
    rtts = [r["rtt"] for r in iv["streams"]]
    return (f"[SUM] {s['start']:6.2f}-{s['end']:6.2f} s  {s['bytes'] / 1e6:9.2f} MB  "
            f"{s['bits_per_second'] / 1e9:7.3f} Gbit/s  srtt us {min(rtts)}..{max(rtts)}")


def _result(args, t, src, dst, streams, intervals, t0, t_end, start_ts, peer_ep):
    from taurus.datapath.devices.nic.state import SG_RETX
    secs = max(1e-9, (t_end - t0) / 1e9)
    sent = sum(s.c.acked() for s in streams)
    recv = sum(_rx_delivered(peer_ep, s.c) for s in streams)
    retx = sum(int(s.c.ep.N.sig[s.c.flow, SG_RETX]) for s in streams)
    lat = np.array([x for s in streams for x in s.lat], np.int64) // 1000
    rtts = np.array([r["rtt"] for iv in intervals for r in iv["streams"]], np.int64)
    ends = []
    for s in streams:
        rcv = _rx_delivered(peer_ep, s.c)
        ends.append({"sender": {"socket": s.c.flow, "start": 0, "end": secs, "seconds": secs,
                                "bytes": s.c.acked(), "bits_per_second": s.c.acked() * 8 / secs,
                                "retransmits": int(s.c.ep.N.sig[s.c.flow, SG_RETX])},
                     "receiver": {"socket": s.c.flow, "start": 0, "end": secs, "seconds": secs,
                                  "bytes": rcv, "bits_per_second": rcv * 8 / secs}})
    return {
        "start": {"connected": [{"socket": s.c.flow, "local_host": t.ip_of(src),
                                 "remote_host": t.ip_of(dst)} for s in streams],
                  "version": "taurus perf 1", "system_info": socket.gethostname(),
                  "timestamp": {"timesecs": int(start_ts),
                                "time": time.strftime("%a, %d %b %Y %H:%M:%S GMT",
                                                      time.gmtime(start_ts))},
                  "test_start": {"protocol": "UET-RUD", "num_streams": len(streams),
                                 "blksize": args.rpc or args.length, "omit": 0,
                                 "duration": 0 if args.bytes else args.time,
                                 "bytes": args.bytes, "rpc": bool(args.rpc)}},
        "intervals": intervals,
        "end": {"streams": ends,
                "sum_sent": {"start": 0, "end": secs, "seconds": secs, "bytes": sent,
                             "bits_per_second": sent * 8 / secs, "retransmits": retx,
                             "sender": True},
                "sum_received": {"start": 0, "end": secs, "seconds": secs, "bytes": recv,
                                 "bits_per_second": recv * 8 / secs, "sender": True},
                "taurus": {"rtt_us": {"p50": _pct(rtts, 50), "p99": _pct(rtts, 99),
                                      "min": int(rtts.min()) if len(rtts) else 0},
                           "msg_completion_us": {"n": int(len(lat)), "p50": _pct(lat, 50),
                                                 "p90": _pct(lat, 90), "p99": _pct(lat, 99),
                                                 "p999": _pct(lat, 99.9)}}},
    }
