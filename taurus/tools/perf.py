"""`taurus perf`: an iperf3-like test of the Taurus transport between hosts of
a running topology (`taurus topo up two_hosts`).

    taurus perf -s --topo two_hosts            # the engine + receiving sink
    taurus perf -c h2 --topo two_hosts -t 10 -P 4 [-C dctcp [--cc-mode agent]] [-J]

Process model (docs/DESIGN.md): `perf -s` is the one engine process; it opens an
AF_XDP port (steering only Taurus traffic, so the kernel keeps ping and TCP)
on every host's interface, inside that host's namespace, puts a host NIC on
each, serves the topology's switches (their ports and features: ECN, INT,
CSIG, ...), and drains every receive connection (the sink, through the same
app interface, between run chunks).  `perf -c` is an app in its own
process: it reaches the engine over shared memory (taurus.transport.client),
opens P connections from its host (--from, default another host) to HOST
and keeps their send rings full with -l byte messages for -t seconds (or
-n bytes), written in place (Conn.send_buffer: zero-copy).  --rpc SIZE:
closed loop over duplex connections: one SIZE request outstanding per
stream, which `perf -s` answers with the same bytes on the reverse flow;
the RPC latency is post -> the whole answer received.

Congestion control (perf_cc.py): -C NAME (any registered sender algorithm
or module:Class), --cc-mode native|agent|per-event (default agent),
--cc-param KEY=VALUE, --cc-config FILE (an experiment file's [cc] table),
--receiver-cc NAME (a receiver algorithm, e.g. rccc).
Each stream opens with a header message (HEADER + JSON: its direction and
CC); perf -s sets the flow's mode from it (nic/setup.py set_flow_mode, or
NativeTable.start for native: the engine holds every built-in algorithm,
and those named by `perf -s -C` / `--receiver-cc`), and the client waits
for that before it fills the rings.  For the agent modes the client starts
one agent process per sending NIC and stops it on exit, error or ^C.
With a receiver algorithm the client first opens a setup connection (its
header: dir "setup"); perf -s starts the algorithm natively on each
receiving NIC (NativeTable.start_receiver, as `taurus run` does, with its
initial credit) and answers on the reverse flow; then every stream of the
test is a credit flow (connect credit=True: it sends within the credit
that NIC's algorithm grants).  Agent messages are counted per stream: the
records handed to its flow's algorithm (ccshm ``delivered``).

iperf3 options with iperf3's meanings: -R (the server sends), --bidir (both),
-b (target bitrate per stream, app-paced), -O (omit the first seconds from
the totals), -T (title prefix), --logfile, --get-server-output (the
receiving side's view, read from the engine's shared memory), -f (units),
-V.  -J prints iperf3's JSON key tree (README: "taurus perf and iperf3"),
plus Taurus's own under "taurus" keys.
"""
import ipaddress
import json
import os
import platform
import signal
import socket
import struct
import sys
import time

import numpy as np

from taurus.cc_algorithms.params import ConfigError

from .perf_verify import Verifier, pattern
from .pcap import Capture, CaptureError, add_capture_options, capture_options, parse_ports, \
    summary_line

ENGINE_PREFIX = "taurus-perf-"
RTO_MIN_NS = 1_000_000
HOST_RX_FRAMES = 2048   # a host port's AF_XDP fill depth on a small topology
VERSION = "taurus perf 2"
HEADER = b"TAURUS-PERF1"   # + u32 length + JSON: a stream's direction and CC
ECHO = b"TAURUS-ECHO1"     # a stream opening with this message wants each message answered
CC_WAIT_S = 10.0
REV_MARGIN_S = 1.0


def add_perf_parser(sub, cc_table=None) -> None:
    """``cc_table(path) -> CcSpec`` reads an experiment file's [cc] table for
    --cc-config (the experiment layer's parser, wired in by the command line:
    tools sit below experiments)."""
    p = sub.add_parser("perf")
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
    p.add_argument("-J", "--json", action="store_true", help="iperf3's JSON")
    cc = p.add_argument_group("congestion control")
    cc.add_argument("-C", "--congestion", default=None, metavar="NAME",
                    help="sender algorithm: a registered name or module:Class (server: also "
                         "load it for native mode)")
    cc.add_argument("--cc-mode", default=None, choices=["native", "agent", "per-event"],
                    help="where it runs (default agent)")
    cc.add_argument("--cc-param", action="append", default=[], metavar="KEY=VALUE",
                    help="an algorithm parameter (repeatable)")
    cc.add_argument("--cc-config", default=None, metavar="FILE",
                    help="the [cc] table of an experiment file")
    cc.add_argument("--receiver-cc", default=None, metavar="NAME",
                    help="receiver algorithm the receiving NICs run natively, e.g. rccc; the "
                         "test's flows then use credit (server: also load it)")
    ip = p.add_argument_group("iperf3 options")
    ip.add_argument("-R", "--reverse", action="store_true", help="the server sends")
    ip.add_argument("--bidir", action="store_true", help="both directions at once")
    ip.add_argument("-b", "--bitrate", default=None, metavar="N[KMGT]",
                    help="target bitrate per stream, bit/s (0: unlimited)")
    ip.add_argument("-O", "--omit", type=float, default=0.0, metavar="N",
                    help="omit the first N seconds from the totals")
    ip.add_argument("-T", "--title", default=None, help="prefix every output line")
    ip.add_argument("--logfile", default=None, help="send output to this file (appended)")
    ip.add_argument("--get-server-output", action="store_true",
                    help="add the receiving side's results")
    ip.add_argument("-f", "--format", default="a", choices=list("akmgtKMGT"),
                    help="units: k/m/g/t bits, K/M/G/T bytes")
    ip.add_argument("--verify", action="store_true",
                    help="perf -s checks every byte of each forward stream against the "
                         "client's pattern (copied sends, not in place; tools/perf_verify.py)")
    ip.add_argument("-V", "--verbose", dest="perf_verbose", action="store_true",
                    help="more detailed output")
    p.add_argument("--port-kind", default="af_xdp", choices=["auto", "af_xdp", "af_packet"])
    p.add_argument("--duration", type=float, default=0.0, help="server: seconds (0: until ^C)")
    p.add_argument("--xdp-mode", default="auto", choices=["auto", "native", "generic"],
                   help="server: the ports' XDP attach mode (on a veth, native mode copies "
                        "every frame into a page first)")
    p.add_argument("--ack-every", type=int, default=None, metavar="N",
                   help="server: ACK every N data packets (NIC default 4) ...")
    p.add_argument("--ack-delay-us", type=float, default=None, metavar="US",
                   help="... or this long after the first unACKed one (NIC default 2); "
                        "16 and 200 for bulk (README)")
    p.add_argument("--ack-requests", type=int, default=None, metavar="N",
                   help="server: a window-limited flow asks for N ACKs per window (the AR "
                        "flag), so coarse coalescing never stalls it (NIC default 0: off)")
    cap = p.add_argument_group("capture")
    cap.add_argument("--pcap", default=None, metavar="FILE",
                     help="capture the engine's ports into this pcapng file: -s for its "
                          "whole run, -c for the test (attached to the engine)")
    cap.add_argument("--pcap-ports", default=None, metavar="PORTS",
                     help="comma list of engine ports (hosts, switch ports; default all)")
    add_capture_options(cap)
    p.set_defaults(func=main, cc_table=cc_table)


def _engine_name(args, t) -> str:
    return args.name or f"{ENGINE_PREFIX}{t.name}"


def _err(msg: str) -> int:
    print(f"taurus perf: parameter error - {msg}", file=sys.stderr)
    return 2


def parse_bitrate(v) -> int:
    """iperf3's -b: a number with an optional K/M/G/T suffix (x1000), bit/s."""
    if v is None:
        return 0
    s = str(v).strip()
    if "/" in s:
        raise ValueError("burst (-b RATE/N) is not supported")
    mult = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}.get(s[-1:].lower(), 1)
    num = s[:-1] if mult != 1 else s
    try:
        n = float(num)
    except ValueError:
        raise ValueError(f"invalid bitrate {v!r}") from None
    if n < 0:
        raise ValueError(f"invalid bitrate {v!r}")
    return int(n * mult)


def check_options(args) -> str | None:
    """iperf3's combination rules, as its messages say them; None if fine."""
    client_only = [("-R", args.reverse), ("--bidir", args.bidir), ("-b", args.bitrate),
                   ("-O", args.omit), ("-T", args.title), ("--get-server-output",
                                                             args.get_server_output),
                   ("--cc-mode", args.cc_mode), ("--cc-param", args.cc_param),
                   ("--cc-config", args.cc_config), ("--verify", args.verify)]
    if args.server:
        bad = [n for n, v in client_only if v]
        if bad:
            return f"some option you are trying to set is client only ({', '.join(bad)})"
        return None
    if args.reverse and args.bidir:
        return "cannot be both reverse and bidirectional"
    if args.rpc and (args.reverse or args.bidir):
        return "--rpc cannot be combined with -R or --bidir"
    if args.verify and (args.rpc or args.reverse or args.bidir):
        return "--verify checks forward bulk streams: not with --rpc, -R or --bidir"
    if args.rpc and args.bitrate:
        return "--rpc cannot be combined with -b"
    if args.bytes and (args.reverse or args.bidir):
        return "-n with -R or --bidir is not supported (give -t)"
    if args.parallel < 1 or args.parallel > 128:
        return "number of parallel streams too large (maximum = 128)" \
            if args.parallel > 128 else "number of parallel streams must be >= 1"
    if args.omit < 0 or args.omit > 600:
        return "bogus value for --omit"
    if args.interval < 0.1 or args.interval > 60:
        return "invalid report interval (min = 0.1, max = 60 seconds)"
    if args.time <= 0 and not args.bytes:
        return "test duration must be > 0"
    if args.length < 1:
        return "block size must be > 0"
    try:
        parse_bitrate(args.bitrate)
    except ValueError as e:
        return str(e)
    return None


def main(args) -> int:
    from taurus.tools.topo_cli import load_up
    msg = check_options(args)
    if msg:
        return _err(msg)
    # The CC choice is checked before any namespace or engine is touched.
    choice = None
    if args.client:
        from .perf_cc import choose
        try:
            choice = choose(args)
        except ConfigError as e:
            print(f"taurus perf: error - {e}", file=sys.stderr)
            return 2
    elif args.congestion or args.receiver_cc:
        from taurus.cc_algorithms.registry import lookup
        try:
            for name, role in ((args.congestion, "sender"), (args.receiver_cc, "receiver")):
                if name:
                    lookup(name, role=role)
        except ConfigError as e:
            print(f"taurus perf: error - {e}", file=sys.stderr)
            return 2
    t = load_up(args.topo, args.prefix, "perf")
    if t is None:
        return 2
    return serve(args, t) if args.server else client(args, t, choice)


# ---- server: the engine and the sink --------------------------------------
def _line_rate(itf) -> int:
    return int(itf.link.rate or 0)


def native_table(extra=(), max_flows: int = 258):
    """Every built-in algorithm (senders for native mode, receivers for
    --receiver-cc) plus `extra` (names)."""
    from taurus.cc_algorithms.native import NativeTable
    from taurus.cc_algorithms.registry import BUILTINS, lookup
    tab = NativeTable(max_flows)
    ids = {}
    for name in list(BUILTINS) + [x for x in extra if x not in BUILTINS]:
        try:
            ids[name] = tab.add(lookup(name))
        except Exception as e:      # one algorithm that does not build leaves the rest
            if name in extra:
                raise
            print(f"taurus perf: native {name}: {e}", file=sys.stderr, flush=True)
    return tab, ids


def build_engine(t, name: str, port_kind: str = "af_xdp", rx_ring: int = 8 << 20,
                 hosts=None, xdp_mode: str = "auto", native=None, **nic):
    """A wall-clock engine with a host NIC on every host of topology t (or
    on `hosts` only: one engine per host, each in its own process, is a NIC
    per host with its own CPU) and, unless `hosts` is given, the topology's
    switches.  xdp_mode: the ports' XDP attach mode (open_xdp_port);
    native: a NativeTable (its max_flows is the engine's); nic: more
    add_nic settings (ack_every, ...)."""
    from taurus.datapath.devices.nic.setup import DATA_HDR
    from taurus.datapath.engine import Engine
    from taurus.datapath.wire import spec as S
    from taurus.datapath.poolsize import RX_LEND_TOTAL
    from taurus.datapath.poolsize import rx_frames as rx_frames_for
    from taurus.tools.fabric import attach_switches, engine_limits, real_ports
    # RTO floor 1 ms, not the NIC default 50 us: a peer that is a process on
    # a shared CPU may not run for a millisecond or more.
    nic = {"rto_min_ns": RTO_MIN_NS, **nic}
    kw = {"native": native.native, "max_flows": native.max_flows} if native else {}
    # A host port lends HOST_RX_FRAMES from the default pool while few ports
    # share the lend (fewer drops at a stalled engine); on a larger topology
    # the pool is sized by its ports, as the runner's (poolsize.py).
    n_ports = real_ports(t) if hosts is None else len(hosts)
    small = n_ports * HOST_RX_FRAMES <= RX_LEND_TOTAL
    rx = HOST_RX_FRAMES if small else rx_frames_for(n_ports)
    lim = engine_limits(t)
    if small:
        del lim["n_frames"]
    eng = Engine(clock="wall", name=name, chunk_ms=2.0, **{**lim, **kw})
    try:
        eng.reserve_nics(max_flows=256, tx_bytes=256 << 20, rx_bytes=1 << 30)
        if hosts is None and t.switches:
            attach_switches(eng, t, port_kind=port_kind)
        for h in (hosts or t.hosts):
            itf = t.ifaces_of(h)[0]
            port = eng.add_port(h, itf.name, netns=t.ns_of(h), kind=port_kind,
                                xdp=dict(steer="taurus", rx_frames=rx, xdp_mode=xdp_mode))
            eng.add_nic(port, itf.mac, t.ip_of(h), mss=itf.link.mtu + S.ETH_SIZE - DATA_HDR,
                        rx_buf_bytes=rx_ring, name=h, **{"line_rate_bps": _line_rate(itf), **nic})
    except BaseException:
        eng.close()
        raise
    return eng


def _header(d: dict) -> bytes:
    j = json.dumps(d).encode()
    return HEADER + struct.pack(">I", len(j)) + j


def _parse_header(m: bytes) -> dict:
    n, = struct.unpack(">I", m[len(HEADER):len(HEADER) + 4])
    return json.loads(m[len(HEADER) + 4:len(HEADER) + 4 + n])


class Sink:
    """What `perf -s` does with every stream reaching its hosts, between
    engine run chunks.  A stream that opens with HEADER carries its test
    settings: its flow's CC is set from them, and a reverse test's stream
    gets a reverse flow that this side keeps full for the test's time.  A
    stream that opens with ECHO (an RPC client's duplex connection) gets
    each message sent back on a reverse flow, and the engine then ends its
    chunk on every message delivered, so answers go out at once.  Any other
    stream is drained in place.  The reverse halves of duplex connections
    (opening with the client library's HELLO) belong to the app that
    connected: left alone, and their NIC's completion queue is not touched."""

    def __init__(self, eng, hosts, native=None, native_ids=None, topo=None):
        from taurus.transport.client import Endpoint
        self.eng = eng
        self.eps = [Endpoint(eng, h) for h in hosts]
        self.native, self.native_ids = native, native_ids or {}
        self.topo = topo
        self.receiving = {}       # NIC device -> the receiver setup it runs (a dict)
        self.new = []             # not classified yet: their first bytes are not here
        self.bulk = []
        self.echo = []            # (Duplex, answers not sent yet)
        self.senders = []         # reverse tests: Streams this side keeps full
        self.verifying = []       # --verify streams: (Conn, Verifier)
        self.bytes = 0
        self.errors = []

    def _kind(self, c):
        from taurus.transport.client import HELLO
        head = c.stream_head(len(HEADER))
        n = len(head)
        for marker, kind in ((HELLO, "peer"), (ECHO, "echo"), (HEADER, "perf")):
            if head[:len(marker)] == marker:
                return kind
            if n < len(marker) and marker.startswith(head):
                return None       # could still become this marker
        return "bulk"

    def warm(self) -> None:
        """Compile (or load from Numba's cache) what set_cc runs, before
        serving: met first when a stream's header arrives, a compile would
        stop the engine between two run chunks, for seconds on a cold cache,
        while the client waits CC_WAIT_S for the stream's CC or reverse flow."""
        from taurus.datapath.pinned import at_timer_start
        at_timer_start(self.eng.state_addr(), 0, self.eng.now())  # set_flow_mode's; row 0 is no flow
        if self.native is not None:
            self.native.warm(self.eng)

    def set_cc(self, flow: int, cc: dict | None) -> None:
        """Flow `flow` (this engine's flow row) runs cc from now on."""
        if not cc:
            return
        from taurus.datapath.devices.nic.setup import set_flow_mode
        try:
            if cc["mode"] == "native":
                alg = self.native_ids.get(cc["algorithm"])
                if alg is None or self.native is None:
                    raise ConfigError(f"native mode: this server has no algorithm "
                                      f"{cc['algorithm']!r} (start it with perf -s -C NAME)")
                self.native.start(self.eng, flow, alg, cc.get("params") or {})
            else:
                set_flow_mode(self.eng, flow, cc["mode"])
        except (ConfigError, ValueError) as e:
            self.errors.append(f"flow {flow}: {e}")
            print(f"taurus perf: flow {flow}: {e}", file=sys.stderr, flush=True)

    def start_receivers(self, h: dict) -> None:
        """A setup header: the NICs of h["receivers"] (IPs) run receiver
        algorithm cc.receiver natively from now on, as `taurus run` starts
        one (NativeTable.start_receiver with its initial credit).  A NIC that
        already runs the same setup keeps it (its senders stay in its
        table); a different one replaces it only while no sender is active.
        Raises ConfigError or ValueError."""
        from taurus.cc_algorithms.native import pipe_credit
        from taurus.datapath.devices.nic.state import (NR_DEV, NR_IP, NR_LINE, NR_MSS,
                                                       NR_RX_ACTIVE)
        cc = h.get("cc") or {}
        name = cc.get("receiver")
        alg = self.native_ids.get(name)
        if alg is None or self.native is None:
            raise ConfigError(f"this server has no receiver algorithm {name!r} (start it with "
                              f"perf -s --receiver-cc NAME)")
        N = self.eng.E.nic
        want = {k: cc.get(k) for k in ("receiver", "receiver_params", "receiver_idle",
                                       "receiver_init_credit")}
        for ip in h.get("receivers", []):
            ep = next((e for e in self.eps if str(ipaddress.IPv4Address(int(N.nr[e.n, NR_IP])))
                       == ip), None)
            if ep is None:
                raise ValueError(f"no host NIC {ip} in this engine")
            n = ep.n
            dev = int(N.nr[n, NR_DEV])
            if self.receiving.get(dev) == want:
                continue
            if dev in self.receiving and int(N.nr[n, NR_RX_ACTIVE]) > 0:
                raise ValueError(f"{ip} runs receiver {self.receiving[dev]['receiver']} for "
                                 "active senders of another test")
            init = int(cc.get("receiver_init_credit") or 0)
            if not init:
                host = self.topo.host_of_ip(ip) if self.topo is not None else None
                delay = (self.topo.ifaces_of(host)[0].link.delay or 0) if host else 0
                init = pipe_credit(int(N.nr[n, NR_LINE]), delay, int(N.nr[n, NR_MSS]))
            self.native.start_receiver(self.eng, dev, alg, cc.get("receiver_params") or {},
                                       idle_ns=int(cc.get("receiver_idle") or 0), init_credit=init)
            self.receiving[dev] = want
            print(f"taurus perf: {ip} runs receiver {name} (initial credit {init} B)",
                  flush=True)

    def _open(self, c) -> bool:
        """A HEADER stream: False while its header message is not all here."""
        m = c.try_recv()
        if m is None:
            return False
        h = _parse_header(m)
        self.bytes += len(c._buf)         # bulk bytes pulled in with the header
        if h.get("dir") == "setup":
            try:
                self.start_receivers(h)
                reply = {"ok": True}
            except (ConfigError, ValueError) as e:
                self.errors.append(str(e))
                print(f"taurus perf: receiver setup: {e}", file=sys.stderr, flush=True)
                reply = {"error": str(e)}
            c.ep.answer(c).try_send(json.dumps(reply).encode())
            self.bulk.append(c)
            return True
        if h.get("dir") == "rev":
            d = c.ep.answer(c, credit=bool(h.get("credit")))
            self.set_cc(d.tx.flow, h.get("cc"))
            msg = np.random.default_rng(2).integers(0, 256, int(h.get("length", 1 << 17)),
                                                    dtype=np.uint8)
            s = Stream(d.tx, msg, rate=int(h.get("bitrate", 0)))
            # A margin past the client's end: the client starts its clock
            # once every stream is set up, a little after this.
            s.end_ns = time.monotonic_ns() + int((float(h.get("time", 10)) + REV_MARGIN_S) * 1e9)
            self.senders.append(s)
        else:
            self.set_cc(c.peer[1], h.get("cc"))
            if h.get("echo"):
                self._echo(c)
                return True
            if h.get("verify"):
                v = Verifier(int(h.get("length", 1 << 17)))
                self.bytes -= len(c._buf)     # counted again as they are checked
                self.verifying.append((c, v))
                return True
        self.bulk.append(c)
        return True

    def _verify(self) -> None:
        """Check what arrived on each --verify stream; a stream whose CLOSE
        arrived (or whose row a new connection took) is reported, once."""
        left = []
        for c, v in self.verifying:
            ended = c.ended()
            if not c.reused():
                data = c.read_bytes()
                v.feed(data)
                self.bytes += len(data)
            if ended:
                print(v.line(c.peer[0], c.pdc), flush=True)
            else:
                left.append((c, v))
        self.verifying = left

    def finish(self) -> None:
        """The server stops: report the --verify streams still open."""
        for c, v in self.verifying:
            print(v.line(c.peer[0], c.pdc) + " (still open)", flush=True)
        self.verifying = []

    def _echo(self, c) -> None:
        from taurus.datapath.devices.nic.setup import nic_yield_on_message
        self.echo.append((c.ep.answer(c), []))
        nic_yield_on_message(self.eng)

    def __call__(self) -> None:
        from taurus.transport.client import WouldBlock
        for ep in self.eps:
            self.new += ep.accept_ready()
        waiting = []
        for c in self.new:
            kind = self._kind(c)
            if kind is None:
                if not c.ended():                     # else it never becomes one
                    waiting.append(c)
            elif kind == "bulk":
                self.bulk.append(c)
            elif kind == "perf":
                if not self._open(c) and not c.ended():
                    waiting.append(c)
            elif kind == "echo":
                c.try_recv()                          # the ECHO message itself
                self._echo(c)
        self.new = waiting
        left = []
        for c in self.bulk:                   # ended ones are read a last time, then let go
            ended = c.ended()
            if not c.reused():
                self.bytes += c.recv_bytes()
            if not ended:
                left.append(c)
        self.bulk = left
        if self.verifying:
            self._verify()
        now = time.monotonic_ns()
        for s in self.senders:
            s.reap()
            if now < s.end_ns and not s.c.closing():
                s.fill(0)
        for s in self.senders:
            if now >= s.end_ns or s.c.closing():
                s.c.close()    # freed, with the client's PDC, once its data is ACKed
        self.senders = [s for s in self.senders if now < s.end_ns and not s.c.closing()]
        left = []
        for d, backlog in self.echo:
            ended = d.rx.ended()
            while not d.rx.reused() and (m := d.rx.try_recv()) is not None:
                self.bytes += len(m)
                backlog.append(m)
            while backlog:
                try:
                    d.try_send(backlog[0])
                except WouldBlock:                    # the next chunk sends it
                    break
                backlog.pop(0)
            if ended and not backlog:                 # all answered: our half closes too
                d.tx.close()
            else:
                left.append((d, backlog))
        self.echo = left


def serve(args, t) -> int:
    name = _engine_name(args, t)
    nic = {}
    if args.ack_every is not None:
        nic["ack_every"] = args.ack_every
    if args.ack_delay_us is not None:
        nic["ack_delay_ns"] = round(args.ack_delay_us * 1000)
    if args.ack_requests is not None:
        nic["ack_requests"] = args.ack_requests
    tab, ids = native_table([x for x in (args.congestion, args.receiver_cc) if x])
    eng = build_engine(t, name, args.port_kind, xdp_mode=args.xdp_mode, native=tab, **nic)
    with eng:
        cap = None
        if args.pcap:
            try:
                cap = Capture.in_process(eng, args.pcap, ports=parse_ports(args.pcap_ports),
                                         **capture_options(args))
            except (CaptureError, OSError) as e:
                print(f"taurus perf: error - {e}", file=sys.stderr)
                return 2
        sink = Sink(eng, t.hosts, tab, ids, topo=t)
        sink.warm()
        eng.on_chunk.append(sink)
        print(f"taurus perf: engine {name} serving {', '.join(t.hosts)}; ^C to stop",
              flush=True)
        if args.duration > 0:
            eng.run_for(int(args.duration * 1e9))
        else:
            eng.run_forever()
        sink.finish()
        print(f"taurus perf: received {sink.bytes} bytes", flush=True)
        if cap is not None:
            print(f"taurus perf: {summary_line(cap.close())}", flush=True)
    return 0


# ---- client -------------------------------------------------------------
def _pct(v, q):
    return int(np.percentile(v, q)) if len(v) else 0


def _resolve(t, host):
    if host in t.hosts:
        return host
    return t.host_of_ip(host)


class Stream:
    """One sending connection.  Bulk: keep its rings full (at most `rate`
    bit/s when given, iperf3's -b: paced by the app); a message's latency is
    post -> fully ACKed.  RPC (a duplex connection the server echoes on):
    one request outstanding; its latency is post -> the whole answer
    received."""

    def __init__(self, conn, msg, duplex=None, rate: int = 0, copy: bool = False):
        self.c, self.msg, self.d = conn, msg, duplex
        self.rate, self.copy = rate, copy     # copy: every message written (--verify)
        self.head = 0                         # bytes of the test header before the data
        self.t0 = time.monotonic_ns()
        self.posted_at = {}          # msg id -> post time
        self.asked = None            # RPC: post time of the request awaiting its answer
        self.lat = []                # latencies, ns
        self.end_ns = None

    def fill(self, limit: int) -> None:
        """Post messages while the rings take them (RPC: one outstanding)."""
        from taurus.transport.client import WouldBlock
        c = self.c
        cap = None
        if self.rate:
            cap = self.rate * (time.monotonic_ns() - self.t0) // 8_000_000_000 + len(self.msg)
        while not limit or c.posted < limit:
            if self.d is not None and self.asked is not None:
                return
            if cap is not None and c.posted + len(self.msg) > cap:
                return
            try:
                mid = (c.try_send(self.msg) if self.d is not None or self.copy
                       else self._send_in_place())
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
        # poll interval, ~60 us): what the app experiences.
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


def _rx_pdc(N, snd_nic: int, rcv_nic: int, flow: int) -> int:
    """The receive PDC row of `flow` (sent by NIC slot snd_nic) at NIC slot
    rcv_nic, or 0 while none."""
    from taurus.datapath.devices.nic.state import M_NRP, NR_IP, RP_NIC, RP_PEER_IP, RP_PEER_PDC
    me = int(N.nr[snd_nic, NR_IP])
    for r in range(1, int(N.meta[M_NRP]) + 1):
        if (N.rp[r, RP_NIC] == rcv_nic + 1 and N.rp[r, RP_PEER_IP] == me
                and N.rp[r, RP_PEER_PDC] == flow):
            return r
    return 0


class Leg:
    """One stream of the test as both ends see it: its sending flow (a
    flow row of the engine) and its receive PDC, read from shared memory.
    `sender`: this client sends on it (iperf3's "sender": true)."""

    def __init__(self, N, cc, flow: int, snd: int, rcv: int, sender: bool, stream=None,
                 duplex=None):
        self.N, self.cc, self.flow, self.snd, self.rcv = N, cc, flow, snd, rcv
        self.sender, self.stream, self.duplex = sender, stream, duplex
        self.pdc = 0
        self.rx = None                       # the client's receiving Conn (reverse legs)
        self.last = self.sample()
        self.base = self.last                # at the end of -O
        self.maxes = {"cwnd": 0, "rtt": 0}
        self.rtt_min, self.rtt_sum, self.rtt_n = 0, 0, 0

    def delivered(self) -> int:
        from taurus.datapath.devices.nic.state import RP_DELIV
        if not self.pdc:
            self.pdc = _rx_pdc(self.N, self.snd, self.rcv, self.flow)
        return int(self.N.rp[self.pdc, RP_DELIV]) if self.pdc else 0

    def sample(self) -> dict:
        from taurus.datapath.ccshm import FL_CC_ACTIVE, FL_NATIVE
        from taurus.datapath.devices.nic.state import (CX_CREDIT, CX_CWND, CX_RATE,
                                                       FL_ACKED_OFF, FL_RTTVAR, FL_RWND,
                                                       FL_SRTT, SG_ECN, SG_ECN_BYTES, SG_RETX)
        N, cc, f = self.N, self.cc, self.flow
        active = cc is not None and int(cc.flags[f]) & (FL_CC_ACTIVE | FL_NATIVE)
        cwnd = int(cc.cwnd[f]) if active and cc.cwnd[f] else int(N.ctx[f, CX_CWND])
        rate = int(cc.rate[f]) if active and cc.rate[f] else int(N.ctx[f, CX_RATE])
        return {"acked": int(N.fl[f, FL_ACKED_OFF]), "delivered": self.delivered(),
                "retx": int(N.sig[f, SG_RETX]), "ecn_bytes": int(N.sig[f, SG_ECN_BYTES]),
                "ecn_acks": int(N.sig[f, SG_ECN]), "cwnd": cwnd, "rate": rate,
                "srtt": int(N.fl[f, FL_SRTT]), "rttvar": int(N.fl[f, FL_RTTVAR]),
                "rwnd": int(N.fl[f, FL_RWND]), "credit": int(N.ctx[f, CX_CREDIT]),
                # records handed to the flow's algorithm: its agent messages
                # (ring) or native calls (report.py, ccshm delivered)
                "messages": int(cc.delivered[f].sum()) if cc is not None else 0,
                "decisions": int(cc.version[f]) if cc is not None else 0}


def _cpu_of(pid) -> tuple[float, float]:
    """(user, system) CPU seconds of process pid (0, 0 if unknown)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        hz = os.sysconf("SC_CLK_TCK")
        return int(parts[11]) / hz, int(parts[12]) / hz
    except (OSError, ValueError, IndexError):
        return 0.0, 0.0


def _engine_pid(name: str) -> int:
    """The process that holds the engine's NIC segment open (perf -s)."""
    target = f"/dev/shm/{name}-nic"
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/maps") as f:
                if any(line.rstrip().endswith(target) for line in f):
                    return int(d)
        except OSError:
            continue
    return 0


class Out:
    """Where the output goes (stdout or --logfile), with -T's prefix."""

    def __init__(self, args):
        self.f = open(args.logfile, "a") if args.logfile else sys.stdout
        self.title = args.title

    def line(self, s: str = "") -> None:
        for ln in s.split("\n"):
            self.f.write(f"{self.title}:  {ln}\n" if self.title else ln + "\n")
        self.f.flush()

    def raw(self, s: str) -> None:
        self.f.write(s + "\n")
        self.f.flush()

    def close(self) -> None:
        if self.f is not sys.stdout:
            self.f.close()


def _unit(value: float, fmt: str, per_sec: bool) -> str:
    """iperf3's unit_snprintf: k/m/g/t bits (x1000), K/M/G/T bytes (x1024);
    'a'/'A' adaptive."""
    if fmt in "kmgt" or (fmt == "a" and per_sec):
        v, base, names = value * (8 if not per_sec else 1), 1000.0, "Kbits Mbits Gbits Tbits"
        unit = "bits"
    else:
        v, base, names = value / (8 if per_sec else 1), 1024.0, "KBytes MBytes GBytes TBytes"
        unit = "Bytes"
    names = names.split()
    if fmt.lower() in "kmgt" and fmt != "a":
        k = "kmgt".index(fmt.lower())
        v /= base ** (k + 1)
        label = names[k]
    else:
        label, k = unit, -1
        while v >= base and k < 3:
            v /= base
            k += 1
            label = names[k]
    num = f"{v:4.2f}" if v < 9.995 else f"{v:4.1f}" if v < 99.95 else f"{v:4.0f}"
    return f"{num} {label}{'/sec' if per_sec else ''}"


def client(args, t, choice) -> int:
    from taurus.datapath.watchdog import EXIT_ENGINE_GONE, exit_now
    out = Out(args)
    cap = None
    try:
        if args.pcap:
            try:
                cap = AttachedCapture(_engine_name(args, t), args)
            except (CaptureError, OSError) as e:
                print(f"taurus perf: error - {e}", file=sys.stderr)
                return 2
        rc = _client(args, t, choice, out)
    except FileNotFoundError as e:
        print(f"taurus perf: error - engine {_engine_name(args, t)} is not running "
              f"({e.filename or e}); start taurus perf -s --topo {args.topo}", file=sys.stderr)
        return 1
    finally:
        out.close()
        if cap is not None:
            print(f"taurus perf: {summary_line(cap.close())}", file=sys.stderr)
    if rc == EXIT_ENGINE_GONE:
        exit_now(rc)            # its agents are stopped: leave within the second
    return rc


class AttachedCapture:
    """perf -c --pcap: capture the engine's ports from this process, drained
    by a thread while the test runs."""

    def __init__(self, engine: str, args):
        import threading
        self.cap = Capture.attach(engine, args.pcap, ports=parse_ports(args.pcap_ports),
                                  **capture_options(args))
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._drain, name="pcap", daemon=True)
        self._t.start()

    def _drain(self) -> None:
        while not self._stop.is_set() and not self.cap.done:
            if self.cap.drain() == 0:
                self._stop.wait(0.001)

    def close(self) -> dict:
        time.sleep(0.05)      # the last ACKs of the test reach the wire
        self._stop.set()
        self._t.join()
        return self.cap.close()


def _client(args, t, choice, out) -> int:
    from taurus.datapath.ccshm import CcShm
    from taurus.datapath.devices.nic.state import NR_MSS
    from taurus.datapath.watchdog import EXIT_ENGINE_GONE
    from taurus.transport.client import Endpoint, EngineGone
    from .perf_cc import AGENT_MODES, AgentProc
    dst = _resolve(t, args.client)
    src = args.src or next(h for h in t.hosts if h != dst)
    name = _engine_name(args, t)
    ep = Endpoint(name, src)
    peer_ep = Endpoint(name, dst)       # read-only use: NIC slot and delivered counters
    cc = CcShm.attach(name + "-cc")
    N = ep.N
    fwd = not args.reverse
    rev = args.reverse or args.bidir
    rate = parse_bitrate(args.bitrate)
    size = args.rpc or args.length
    total_s = args.time + args.omit
    msg = pattern(size)
    agents = []
    stop = {"now": False}

    def on_signal(*_a):
        stop["now"] = True
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    cpu0, wall0 = os.times(), time.monotonic()
    epid = _engine_pid(name)
    rcpu0 = _cpu_of(epid)
    try:
        if choice is not None and choice.mode in AGENT_MODES:
            slots = ([ep.n] if fwd else []) + ([peer_ep.n] if rev else [])
            for slot in slots:
                host = src if slot == ep.n else dst
                agents.append(AgentProc(name, slot, choice, int(N.nr[slot, NR_MSS]),
                                        _line_rate(t.ifaces_of(host)[0])))
            for a in agents:
                a.wait_ready(cc)
        hdr = {"cc": choice.header() if choice else None, "length": size,
               "time": total_s, "bitrate": rate, "verify": bool(args.verify)}
        # A receiver algorithm runs on each receiving NIC before any stream
        # opens, so that every stream is a credit flow it grants.
        credit = bool(choice and choice.receiver)
        rx_slots = ([peer_ep.n] if fwd else []) + ([ep.n] if rev else []) if credit else []
        if credit:
            _setup_receivers(ep, t.ip_of(dst), hdr,
                             [t.ip_of(dst)] * fwd + [t.ip_of(src)] * rev)
        legs = _open_legs(args, ep, peer_ep, cc, t.ip_of(dst), hdr, msg, rate, credit)
        _settle(legs, ep, cc, choice, time.monotonic() + CC_WAIT_S)
        if not args.json:
            _print_start(args, out, t, src, dst, legs, choice)
        grants0 = _grants(N, rx_slots)
        res = _run(args, legs, stop, out, ep.check)
        res["grants"] = _grants(N, rx_slots) - grants0
        _close_reverse(legs, ep.check)
    except EngineGone as e:
        print(f"taurus perf: {e}; exiting", file=sys.stderr)
        return EXIT_ENGINE_GONE
    except (RuntimeError, TimeoutError, ConnectionError) as e:
        print(f"taurus perf: error - {e}", file=sys.stderr)
        return 1
    finally:
        for a in agents:
            a.stop()
        for s, h in old.items():
            signal.signal(s, h)
    cpu = _cpu_use(cpu0, os.times(), rcpu0, _cpu_of(epid), time.monotonic() - wall0)
    doc = _result(args, t, src, dst, legs, res, choice, cpu, [a.pid for a in agents])
    if args.json:
        out.raw(json.dumps(doc, indent=2))
    else:
        _print_end(args, out, doc, legs)
    return 1 if res["stopped"] and not res["intervals"] else 0


def _open_legs(args, ep, peer_ep, cc, dst_ip: str, hdr: dict, msg, rate, credit: bool) -> list:
    """The test's connections, each a Leg: -P forward streams (or RPC
    duplexes), and -P reverse ones (-R, --bidir) whose server flow HELLO
    names."""
    N = ep.N
    fwd, rev = not args.reverse, args.reverse or args.bidir
    legs = []
    for _ in range(args.parallel if fwd else 0):
        if args.rpc:
            d = ep.connect(dst_ip, duplex=True, credit=credit)
            d.send(_header(dict(hdr, dir="fwd", echo=True)))   # answer every message
            s = Stream(d.tx, msg, d)
        else:
            c = ep.connect(dst_ip, credit=credit)
            head = _header(dict(hdr, dir="fwd"))
            c.send(head)
            s = Stream(c, msg, rate=rate, copy=bool(hdr.get("verify")))
            s.head = len(head)
        legs.append(Leg(N, cc, s.c.flow, ep.n, peer_ep.n, True, stream=s))
    for _ in range(args.parallel if rev else 0):
        d = ep.connect(dst_ip, duplex=True)
        d.send(_header(dict(hdr, dir="rev", credit=credit)))
        legs.append(Leg(N, cc, 0, peer_ep.n, ep.n, False, duplex=d))
    # Reverse legs: the server's flow (HELLO names ours), then its PDC here.
    for leg in legs:
        if leg.duplex is not None and not leg.sender:
            leg.rx = ep._reverse_of(leg.duplex.peer, leg.duplex.tx.flow, CC_WAIT_S)
            leg.flow, leg.pdc = leg.rx.peer[1], leg.rx.pdc
    return legs


def _settle(legs, ep, cc, choice, t_end: float) -> None:
    """Wait for perf -s to put each sending flow under its CC before
    filling, then count from a quiet point: each header we sent delivered
    and ACKed."""
    if choice is not None:
        from taurus.datapath.ccshm import FL_CC_ACTIVE, FL_NATIVE
        for leg in legs:
            while not int(cc.flags[leg.flow]) & (FL_CC_ACTIVE | FL_NATIVE):
                if time.monotonic() > t_end:
                    raise RuntimeError(f"perf -s did not set flow {leg.flow}'s CC "
                                       f"({choice.mode} {choice.algorithm}; see its output)")
                ep.check()
                time.sleep(1e-3)
    t_end = time.monotonic() + CC_WAIT_S
    while time.monotonic() < t_end and not all(
            (x := leg.sample())["acked"] == x["delivered"] > 0 for leg in legs if leg.sender):
        ep.check()
        time.sleep(1e-3)
    for leg in legs:
        leg.last = leg.base = leg.sample()


def _close_reverse(legs, check, timeout_s: float = 1.0) -> None:
    """Ask perf -s to close each reverse stream (REQ_CLOSE) and read what
    it still had in flight until its flow is closed (bounded): otherwise the
    server's flow and our PDC would stay open, their window full, for as
    long as perf -s runs."""
    from taurus.datapath.devices.nic.state import FL_STATE, FS_ACTIVE
    rx = [leg for leg in legs if leg.rx is not None]
    for leg in rx:
        leg.rx.close()
    t_end = time.monotonic() + timeout_s
    while rx and time.monotonic() < t_end:
        check()
        for leg in rx:
            leg.rx.recv_bytes()
        rx = [leg for leg in rx if int(leg.N.fl[leg.flow, FL_STATE]) == FS_ACTIVE]
        time.sleep(1e-3)


def _cpu_use(cpu0, cpu1, rcpu0, rcpu1, wall: float) -> dict:
    """CPU use in % of the run's wall time, here and in the engine (remote)."""
    wall = max(1e-9, wall)
    return {"host_total": 100 * ((cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)) / wall,
            "host_user": 100 * (cpu1.user - cpu0.user) / wall,
            "host_system": 100 * (cpu1.system - cpu0.system) / wall,
            "remote_total": 100 * ((rcpu1[0] - rcpu0[0]) + (rcpu1[1] - rcpu0[1])) / wall,
            "remote_user": 100 * (rcpu1[0] - rcpu0[0]) / wall,
            "remote_system": 100 * (rcpu1[1] - rcpu0[1]) / wall}


def _setup_receivers(ep, dst_ip: str, hdr: dict, receivers: list) -> None:
    """Ask perf -s to start the test's receiver algorithm on the NICs of
    `receivers` (IPs): a setup header on a duplex connection, answered
    on its reverse flow once done (or with the error)."""
    d = ep.connect(dst_ip, duplex=True)
    d.send(_header(dict(hdr, dir="setup", receivers=receivers)))
    try:
        reply = json.loads(d.recv(timeout=CC_WAIT_S))
    except TimeoutError:
        raise RuntimeError("perf -s did not answer the receiver setup (see its output)") from None
    if "error" in reply:
        raise RuntimeError(f"perf -s: receiver {hdr['cc']['receiver']}: {reply['error']}")


def _grants(N, slots) -> int:
    """Grants the receiver algorithms of NIC slots `slots` made so far."""
    from taurus.datapath.devices.nic.state import C_RX_GRANT
    return sum(int(N.ncnt[n, C_RX_GRANT]) for n in slots)


def _run(args, legs, stop, out, check=lambda: None) -> dict:
    """The measurement; `check` raises EngineGone when the engine is gone."""
    streams = [leg.stream for leg in legs if leg.stream is not None]
    per_stream_limit = -(-args.bytes // args.parallel) if args.bytes else 0
    t0 = time.monotonic_ns()
    for s in streams:
        s.t0 = t0
    omit_ns = int(args.omit * 1e9)
    end_ns = t0 + omit_ns + int(args.time * 1e9) if not args.bytes else None
    ivl_ns = int(args.interval * 1e9)
    intervals, last_t = [], t0
    next_ivl = t0 + (min(ivl_ns, omit_ns) if omit_ns else ivl_ns)
    omitted = bool(omit_ns)
    t_start = t0                          # totals count from here (the end of -O)
    while not stop["now"]:
        now = time.monotonic_ns()
        check()
        for s in streams:
            s.reap()
            if end_ns is None or now < end_ns:
                s.fill(per_stream_limit)
        for leg in legs:
            if leg.rx is not None:
                leg.rx.recv_bytes()
        done = (end_ns is not None and now >= end_ns) or (
            args.bytes and all(s.c.acked() >= min(per_stream_limit, s.c.posted)
                               and s.c.posted >= per_stream_limit for s in streams))
        if now >= next_ivl or done:
            iv = _interval(legs, last_t - t_start, now - t_start, omitted, bool(args.bidir))
            intervals.append(iv)
            if not args.json:
                _print_interval(args, out, iv, legs)
            last_t = now
            if omitted and now - t0 >= omit_ns:
                omitted = False
                t_start, last_t = now, now
                for leg in legs:
                    leg.base = dict(leg.last)
                    leg.maxes = {"cwnd": 0, "rtt": 0}
                    leg.rtt_min = leg.rtt_sum = leg.rtt_n = 0
                if end_ns is not None:
                    end_ns = now + int(args.time * 1e9)
            next_ivl = now + ivl_ns
        if done:
            break
        time.sleep(50e-6)
    # let what is in flight land (bounded), then count
    t_end = time.monotonic_ns()
    for _ in range(200):
        if all(s.c.acked() >= s.c.posted for s in streams) and all(
                leg.delivered() >= leg.sample()["acked"] for leg in legs):
            break
        check()
        time.sleep(1e-3)
        for s in streams:
            s.reap()
        for leg in legs:
            if leg.rx is not None:
                leg.rx.recv_bytes()
    final = {id(leg): leg.sample() for leg in legs}
    return {"intervals": intervals, "t_start": t_start, "t_end": t_end, "t0": t0,
            "final": final, "stopped": stop["now"]}


def _interval(legs, a_ns, b_ns, omitted, bidir):
    """One interval: per stream what iperf3 reports (bytes by this side:
    ACKed when it sends, delivered when it receives) plus the CC state."""
    secs = max(1e-9, (b_ns - a_ns) / 1e9)
    rows = []
    for leg in legs:
        now = leg.sample()
        was, leg.last = leg.last, now
        b = (now["acked"] - was["acked"]) if leg.sender else (now["delivered"] - was["delivered"])
        rtt_us = now["srtt"] // 1000
        leg.maxes["cwnd"] = max(leg.maxes["cwnd"], now["cwnd"])
        leg.maxes["rtt"] = max(leg.maxes["rtt"], rtt_us)
        if rtt_us:
            leg.rtt_min = min(leg.rtt_min, rtt_us) if leg.rtt_min else rtt_us
            leg.rtt_sum += rtt_us
            leg.rtt_n += 1
        row = {"socket": leg.flow, "start": a_ns / 1e9, "end": b_ns / 1e9, "seconds": secs,
               "bytes": b, "bits_per_second": b * 8 / secs}
        if leg.sender:
            row.update(retransmits=now["retx"] - was["retx"], snd_cwnd=now["cwnd"],
                       snd_wnd=now["rwnd"], rtt=rtt_us, rttvar=now["rttvar"] // 1000,
                       pmtu=0)
        row.update(omitted=omitted, sender=leg.sender)
        row["taurus"] = {"cwnd": now["cwnd"], "pacing_rate": now["rate"], "srtt_us": rtt_us,
                         "retransmits": now["retx"] - was["retx"],
                         "ecn_bytes": now["ecn_bytes"] - was["ecn_bytes"],
                         "ecn_acks": now["ecn_acks"] - was["ecn_acks"],
                         "agent_messages": now["messages"] - was["messages"],
                         "agent_decisions": now["decisions"] - was["decisions"],
                         "credit": now["credit"], "sender": leg.sender}
        rows.append(row)
    out = {"streams": rows}

    def total(rs, sender):
        tot = sum(r["bytes"] for r in rs)
        d = {"start": a_ns / 1e9, "end": b_ns / 1e9, "seconds": secs, "bytes": tot,
             "bits_per_second": tot * 8 / secs}
        if sender:
            d["retransmits"] = sum(r["retransmits"] for r in rs)
        d.update(omitted=omitted, sender=sender)
        d["taurus"] = {"agent_messages": sum(r["taurus"]["agent_messages"] for r in rs),
                       "agent_decisions": sum(r["taurus"]["agent_decisions"] for r in rs),
                       "ecn_bytes": sum(r["taurus"]["ecn_bytes"] for r in rs)}
        return d
    mine = [r for r, leg in zip(rows, legs) if leg.sender]
    theirs = [r for r, leg in zip(rows, legs) if not leg.sender]
    if bidir:
        out["sum"] = total(mine, True)
        out["sum_bidir_reverse"] = total(theirs, False)
    else:
        out["sum"] = total(mine or theirs, bool(mine))
    return out


def _leg_end(leg, final, secs, rtts=True):
    """end.streams[] entry of one leg: sender and receiver views."""
    b = leg.base
    sent = final["acked"] - b["acked"]
    recv = final["delivered"] - b["delivered"]
    snd = {"socket": leg.flow, "start": 0, "end": secs, "seconds": secs, "bytes": sent,
           "bits_per_second": sent * 8 / secs, "retransmits": final["retx"] - b["retx"],
           "max_snd_cwnd": leg.maxes["cwnd"], "max_snd_wnd": final["rwnd"],
           "max_rtt": leg.maxes["rtt"], "min_rtt": leg.rtt_min,
           "mean_rtt": leg.rtt_sum // leg.rtt_n if leg.rtt_n else 0, "sender": leg.sender,
           "taurus": {"ecn_bytes": final["ecn_bytes"] - b["ecn_bytes"],
                      "ecn_acks": final["ecn_acks"] - b["ecn_acks"],
                      "agent_messages": final["messages"] - b["messages"],
                      "agent_decisions": final["decisions"] - b["decisions"],
                      "cwnd": final["cwnd"], "pacing_rate": final["rate"],
                      "credit": final["credit"]}}
    rcv = {"socket": leg.flow, "start": 0, "end": secs, "seconds": secs, "bytes": recv,
           "bits_per_second": recv * 8 / secs, "sender": leg.sender}
    return {"sender": snd, "receiver": rcv}


def _sums(ends, secs):
    s = sum(e["sender"]["bytes"] for e in ends)
    r = sum(e["receiver"]["bytes"] for e in ends)
    sender = ends[0]["sender"]["sender"] if ends else True
    return ({"start": 0, "end": secs, "seconds": secs, "bytes": s,
             "bits_per_second": s * 8 / secs,
             "retransmits": sum(e["sender"]["retransmits"] for e in ends), "sender": sender},
            {"start": 0, "end": secs, "seconds": secs, "bytes": r,
             "bits_per_second": r * 8 / secs, "sender": sender})


def _verify_end(legs, res) -> list[dict]:
    """Payload ACKed per forward stream: perf -s verified at least these."""
    return [{"socket": leg.flow, "acked_bytes": res["final"][id(leg)]["acked"] - leg.stream.head}
            for leg in legs if leg.sender]


def _result(args, t, src, dst, legs, res, choice, cpu, agent_pids):
    secs = max(1e-9, (res["t_end"] - res["t_start"]) / 1e9)
    ends = [_leg_end(leg, res["final"][id(leg)], secs) for leg in legs]
    lat = np.array([x for leg in legs if leg.stream for x in leg.stream.lat], np.int64) // 1000
    rtts = np.array([r["rtt"] for iv in res["intervals"] for r in iv["streams"] if "rtt" in r],
                    np.int64)
    ts = time.time() - (time.monotonic_ns() - res["t0"]) / 1e9
    mine = [e for e, leg in zip(ends, legs) if leg.sender]
    theirs = [e for e, leg in zip(ends, legs) if not leg.sender]
    end = {"streams": ends}
    if args.bidir:
        end["sum_sent"], end["sum_received"] = _sums(mine, secs)
        end["sum_sent_bidir_reverse"], end["sum_received_bidir_reverse"] = _sums(theirs, secs)
    else:
        end["sum_sent"], end["sum_received"] = _sums(mine or theirs, secs)
    name = choice.name if choice else "static"
    end["cpu_utilization_percent"] = cpu
    end["sender_tcp_congestion"] = name
    # the receiving side's algorithm: its receiver algorithm when it runs one
    end["receiver_tcp_congestion"] = (choice.receiver_name if choice and choice.receiver
                                      else name)
    end["taurus"] = {
        "agent_messages": sum(e["sender"]["taurus"]["agent_messages"] for e in ends),
        "rtt_us": {"p50": _pct(rtts, 50), "p99": _pct(rtts, 99),
                   "min": int(rtts.min()) if len(rtts) else 0},
        "msg_completion_us": {"n": int(len(lat)), "p50": _pct(lat, 50), "p90": _pct(lat, 90),
                              "p99": _pct(lat, 99), "p999": _pct(lat, 99.9)}}
    if args.verify:
        end["taurus"]["verify"] = _verify_end(legs, res)
    if choice is not None and choice.receiver:
        end["taurus"]["receiver"] = {"algorithm": choice.receiver_name,
                                     "grants": res["grants"]}
    connected = [{"socket": leg.flow, "local_host": t.ip_of(src),
                  "local_port": leg.flow if leg.sender else leg.pdc, "remote_host": t.ip_of(dst),
                  "remote_port": leg.pdc if leg.sender else leg.flow} for leg in legs]
    itf = t.ifaces_of(src)[0]
    doc = {
        "start": {"connected": connected, "version": VERSION,
                  "system_info": " ".join(platform.uname()[:4]) + " " + platform.machine(),
                  "timestamp": {"time": time.strftime("%a, %d %b %Y %H:%M:%S GMT",
                                                      time.gmtime(ts)),
                                "timesecs": int(ts)},
                  "connecting_to": {"host": t.ip_of(dst), "port": 0},
                  "cookie": f"{socket.gethostname()}-{os.getpid()}-{int(ts)}",
                  "tcp_mss_default": _mss(legs[0]) if legs else 0,
                  "target_bitrate": parse_bitrate(args.bitrate),
                  "sock_bufsize": 0,
                  "sndbuf_actual": int(legs[0].stream.c.ring_bytes)
                  if legs and legs[0].stream else 0,
                  "rcvbuf_actual": _rcvbuf(legs[0]) if legs else 0,
                  "test_start": {"protocol": "TCP", "num_streams": args.parallel,
                                 "blksize": args.rpc or args.length, "omit": args.omit,
                                 "duration": 0 if args.bytes else args.time,
                                 "bytes": args.bytes, "blocks": 0,
                                 "reverse": int(bool(args.reverse)), "tos": 0,
                                 "target_bitrate": parse_bitrate(args.bitrate),
                                 "bidir": int(bool(args.bidir))},
                  "taurus": {"protocol": "UET-RUD", "rpc": bool(args.rpc),
                             "engine": _engine_name(args, t), "topology": t.name,
                             "client_host": src, "server_host": dst, "pmtu": itf.link.mtu,
                             "cc": ({"algorithm": choice.algorithm, "name": choice.name,
                                     "mode": choice.mode, "params": choice.params,
                                     "receiver": choice.receiver,
                                     "receiver_params": choice.receiver_params}
                                    if choice else None),
                             "agent_pids": agent_pids}},
        "intervals": res["intervals"],
        "end": end,
    }
    for iv in doc["intervals"]:
        for r in iv["streams"]:
            if "pmtu" in r:
                r["pmtu"] = itf.link.mtu
    if args.title:
        doc["title"] = args.title
    if args.get_server_output:
        doc["server_output_json"] = _server_view(doc, legs)
    return doc


def _mss(leg) -> int:
    from taurus.datapath.devices.nic.state import NR_MSS
    return int(leg.N.nr[leg.snd, NR_MSS])


def _rcvbuf(leg) -> int:
    from taurus.datapath.devices.nic.state import NR_RXCAP
    return int(leg.N.nr[leg.rcv, NR_RXCAP])


def _server_view(doc, legs) -> dict:
    """--get-server-output: the server's own results, as iperf3's server
    would write them.  perf -s keeps no per-test log; the receiving side's
    counters are in the engine's shared memory, so they are read there."""
    e = doc["end"]
    ivs = []
    for iv in doc["intervals"]:
        rows = [{k: r[k] for k in ("socket", "start", "end", "seconds", "bytes",
                                   "bits_per_second", "omitted")} | {"sender": not r["sender"]}
                for r in iv["streams"]]
        ivs.append({"streams": rows, "sum": dict(iv["sum"], sender=not iv["sum"]["sender"])})
    return {"start": {"connected": [dict(c, local_host=c["remote_host"],
                                         remote_host=c["local_host"],
                                         local_port=c["remote_port"],
                                         remote_port=c["local_port"])
                                    for c in doc["start"]["connected"]],
                      "version": doc["start"]["version"],
                      "system_info": doc["start"]["system_info"]},
            "intervals": ivs,
            "end": {"streams": [{"receiver": s["receiver"]} for s in e["streams"]],
                    "sum_received": e["sum_received"],
                    "cpu_utilization_percent": {
                        "host_total": e["cpu_utilization_percent"]["remote_total"],
                        "host_user": e["cpu_utilization_percent"]["remote_user"],
                        "host_system": e["cpu_utilization_percent"]["remote_system"]}}}


# ---- human output (iperf3's layout, with CC columns) ---------------------------
def _print_start(args, out, t, src, dst, legs, choice):
    if args.perf_verbose:
        out.line(f"{VERSION}\n{' '.join(platform.uname()[:4])}\n"
                 f"Time: {time.strftime('%a, %d %b %Y %H:%M:%S GMT', time.gmtime())}")
    out.line(f"Connecting to host {t.ip_of(dst)} ({dst}), engine {_engine_name(args, t)}")
    if args.reverse:
        out.line(f"Reverse mode, remote host {t.ip_of(dst)} is sending")
    for leg in legs:
        out.line(f"[{leg.flow:3d}] local {t.ip_of(src)} flow {leg.flow} connected to "
                 f"{t.ip_of(dst)}{'' if leg.sender else ' (reverse)'}")
    if args.perf_verbose:
        out.line(f"Starting Test: protocol: TCP (Taurus UET-RUD), {args.parallel} streams, "
                 f"{args.rpc or args.length} byte blocks, omitting {args.omit:g} seconds, "
                 f"{args.time:g} second test, tos 0, congestion "
                 f"{choice.name + ' (' + choice.mode + ')' if choice else 'static'}")
    out.line("[ ID] Interval           Transfer     Bitrate         Retr  Cwnd        "
             "Pacing          sRTT    ECN        Msgs   Dec")


def _row(args, label, r, tt, sender: bool, tail: str = "") -> str:
    s = (f"[{label}] {r['start']:6.2f}-{r['end']:-6.2f}  sec  "
         f"{_unit(r['bytes'], 'A' if args.format == 'a' else args.format.upper(), False):>12}  "
         f"{_unit(r['bits_per_second'], args.format, True):>16}")
    if sender and tt is not None:
        s += (f" {r.get('retransmits', tt.get('retransmits', 0)):5d}  "
              f"{_unit(tt['cwnd'], 'A', False):>10}  "
              f"{_unit(tt['pacing_rate'], 'a', True) if tt['pacing_rate'] else 'unpaced':>15}  "
              f"{tt['srtt_us']:5d}us  {_unit(tt['ecn_bytes'], 'A', False):>10}  "
              f"{tt.get('agent_messages', ''):>5} {tt['agent_decisions']:5d}")
    return s + tail


def _tag(args, sender: bool) -> str:
    """iperf3's --bidir role tag: this side transmits (TX-C) or receives (RX-C)."""
    return ("][TX-C" if sender else "][RX-C") if args.bidir else ""


def _print_interval(args, out, iv, legs):
    om = "  (omitted)"
    for r, leg in zip(iv["streams"], legs):
        # The CC columns for every stream: a reverse stream's are the
        # server's flow's, which this side reads from shared memory too.
        out.line(_row(args, f"{r['socket']:3d}{_tag(args, leg.sender)}", r, r["taurus"],
                      True, om if r["omitted"] else ""))
    if len(legs) > 1:
        for key in ("sum", "sum_bidir_reverse"):
            if key in iv:
                s = iv[key]
                tt = dict(s["taurus"], cwnd=0, pacing_rate=0, srtt_us=0) if s["sender"] else None
                line = _row(args, f"SUM{_tag(args, s['sender'])}", s, None, False,
                            om if s["omitted"] else "")
                if tt is not None:
                    line += (f" {s.get('retransmits', 0):5d}  "
                             f"{'':>10}  {'':>15}  {'':>7}  "
                             f"{_unit(tt['ecn_bytes'], 'A', False):>10}  "
                             f"{tt['agent_messages']:>5} {tt['agent_decisions']:5d}")
                out.line(line)


def _print_end(args, out, doc, legs):
    e = doc["end"]
    out.line("- - - - - - - - - - - - - - - - - - - - - - - - -")
    out.line("[ ID] Interval           Transfer     Bitrate         Retr")
    for s in e["streams"]:
        snd, rcv = s["sender"], s["receiver"]
        tag = _tag(args, snd["sender"])
        out.line(_row(args, f"{snd['socket']:3d}{tag}", snd, None, False) +
                 f" {snd['retransmits']:5d}             sender")
        out.line(_row(args, f"{rcv['socket']:3d}{tag}", rcv, None, False) +
                 "                   receiver")
    if len(legs) > 1 or args.bidir:
        for a, b in (("sum_sent", "sum_received"),
                     ("sum_sent_bidir_reverse", "sum_received_bidir_reverse")):
            if a in e:
                tag = _tag(args, e[a]["sender"])
                out.line(_row(args, f"SUM{tag}", e[a], None, False) +
                         f" {e[a]['retransmits']:5d}             sender")
                out.line(_row(args, f"SUM{tag}", e[b], None, False) +
                         "                   receiver")
    tt = e["taurus"]
    if args.rpc:
        m = tt["msg_completion_us"]
        out.line(f"RPC latency us p50/p99/p999 {m['p50']}/{m['p99']}/{m['p999']} "
                 f"({m['n']} RPCs)")
    else:
        m = tt["msg_completion_us"]
        out.line(f"RTT us p50/p99 {tt['rtt_us']['p50']}/{tt['rtt_us']['p99']}  message "
                 f"completion us p50/p99/p999 {m['p50']}/{m['p99']}/{m['p999']} "
                 f"({m['n']} messages)")
    cc = doc["start"]["taurus"]["cc"]
    if cc:
        out.line(f"congestion control: {cc['name']} ({cc['mode']}), agent messages "
                 f"{tt['agent_messages']}, decisions "
                 f"{sum(s['sender']['taurus']['agent_decisions'] for s in e['streams'])}")
    if "receiver" in tt:
        credit = sum(s["sender"]["taurus"]["credit"] for s in e["streams"])
        out.line(f"receiver algorithm: {tt['receiver']['algorithm']} (native), grants "
                 f"{tt['receiver']['grants']}, credit granted {_unit(credit, 'A', False)}")
    for v in tt.get("verify", []):
        out.line(f"verify: flow {v['socket']}: {v['acked_bytes']} payload bytes ACKed "
                 "(perf -s checked each byte it received: its 'verified' line)")
    if args.perf_verbose:
        c = e["cpu_utilization_percent"]
        out.line(f"CPU Utilization: local/sender {c['host_total']:.1f}% "
                 f"({c['host_user']:.1f}%u/{c['host_system']:.1f}%s), remote/receiver "
                 f"{c['remote_total']:.1f}% ({c['remote_user']:.1f}%u/"
                 f"{c['remote_system']:.1f}%s)")
        out.line(f"snd_tcp_congestion {e['sender_tcp_congestion']}")
        out.line(f"rcv_tcp_congestion {e['receiver_tcp_congestion']}")
    if args.get_server_output:
        so = doc["server_output_json"]
        out.line("\nServer output:")
        for iv in so["intervals"]:
            for r in iv["streams"]:
                out.line(_row(args, f"{r['socket']:3d}", r, None, False))
    out.line("\ntaurus perf Done.")
