"""`taurus capture` (a running engine's ports into pcapng, like dpdk-dumpcap)
and `taurus dissect FILE` (UET PDS / SES / CSIG fields of a capture, with the
Scapy layers of datapath/wire/layers.py)."""
import signal
import sys
import time

from .pcap import Capture, CaptureError, _alive, add_capture_options, capture_options, summary_line

POLL_S = 0.001      # idle wait between drains


def add_capture_parsers(sub) -> None:
    c = sub.add_parser("capture")
    c.add_argument("--engine", required=True, metavar="NAME",
                   help="engine name (taurus engine stats lists them)")
    c.add_argument("--port", action="append", default=[], metavar="P",
                   help="port name, or a comma list (repeatable; default every port)")
    c.add_argument("-w", "--write", required=True, metavar="FILE", help="pcapng file")
    c.add_argument("-c", "--count", type=int, default=0, help="stop after COUNT frames")
    c.add_argument("--duration", type=float, default=0.0, metavar="S",
                   help="stop after S seconds (default: ^C, or the engine ends)")
    add_capture_options(c, snaplen_flag="-s")
    c.set_defaults(func=capture_cmd)
    d = sub.add_parser("dissect")
    d.add_argument("file", nargs="?")
    d.add_argument("--install-wireshark", nargs="?", const="", default=None, metavar="DIR",
                   help="copy the Wireshark/tshark Lua plugin to DIR (default: the personal "
                   "plugin folder, ~/.local/lib/wireshark/plugins)")
    d.add_argument("--wireshark-plugin", action="store_true",
                   help="print the plugin's path (for tshark -X lua_script:PATH)")
    d.add_argument("-c", "--count", type=int, default=0, help="only the first N frames")
    d.set_defaults(func=dissect_cmd)


def capture_cmd(a) -> int:
    ports = [p.strip() for spec in a.port for p in spec.split(",") if p.strip()] or None
    try:
        cap = Capture.attach(a.engine, a.write, ports=ports, count=a.count, **capture_options(a))
    except (CaptureError, ValueError, OSError) as e:
        print(f"taurus capture: {e}", file=sys.stderr)
        return 2
    stop = {"why": ""}

    def on_signal(signum, _frame):
        stop["why"] = signal.Signals(signum).name
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    end = time.monotonic() + a.duration if a.duration > 0 else float("inf")
    print(f"taurus capture: {a.engine}: {', '.join(cap.names)} -> {a.write}",
          file=sys.stderr, flush=True)
    last_check = 0.0
    try:
        while not stop["why"] and not cap.done and time.monotonic() < end:
            if cap.drain() == 0:
                time.sleep(POLL_S)
            if time.monotonic() - last_check > 0.1:
                last_check = time.monotonic()
                if not _alive(cap.engine_pid):
                    stop["why"] = "the engine ended"
    finally:
        st = cap.close()
        for s, h in old.items():
            signal.signal(s, h)
    print(f"taurus capture: {summary_line(st)}", file=sys.stderr)
    return 0


# ---- dissect ---------------------------------------------------------------
_BASE_FIELDS = {"Ethernet": ("src", "dst", "type"),
                "IP": ("src", "dst", "tos", "len", "ttl", "chksum"),
                "UDP": ("sport", "dport", "len", "chksum")}


def _fields(layer) -> str:
    names = _BASE_FIELDS.get(layer.name)
    out = []
    for f in layer.fields_desc:
        if names is not None and f.name not in names:
            continue
        v = layer.getfieldval(f.name)
        if v is None:                   # a conditional field that is absent
            continue
        if names is not None and f.name in ("type", "chksum"):
            out.append(f"{f.name}={v:#06x}")
        else:
            out.append(f"{f.name}={f.i2repr(layer, v)}")
    return " ".join(out)


def dissect_lines(path: str, count: int = 0):
    """Lines describing each frame of `path`: time, interface, direction,
    length, then one line per layer."""
    from scapy.utils import PcapReader
    import taurus.datapath.wire.layers  # noqa: F401  (binds the UET / CSIG layers)
    with PcapReader(path) as rd:
        for k, pkt in enumerate(rd):
            if count and k >= count:
                break
            ifname = getattr(pkt, "sniffed_on", None) or "?"
            d = {1: "in", 2: "out"}.get(getattr(pkt, "direction", None), "")
            wl = getattr(pkt, "wirelen", None) or len(pkt)
            yield f"#{k + 1} {pkt.time:.9f} {ifname} {d} {len(pkt)}/{wl} B".replace("  ", " ")
            layer = pkt
            while layer is not None and layer.name != "NoPayload":
                if layer.name in ("Raw", "Padding"):
                    yield f"  {layer.name} {len(layer.load)} B"
                    break
                yield f"  {layer.name}: {_fields(layer)}"
                layer = layer.payload if layer.payload else None


def dissect_cmd(a) -> int:
    if a.install_wireshark is not None or a.wireshark_plugin:
        from . import wireshark
        if a.wireshark_plugin:
            print(wireshark.PLUGIN)
        if a.install_wireshark is not None:
            print(f"taurus dissect: installed {wireshark.install(a.install_wireshark)}")
        return 0
    if not a.file:
        print("taurus dissect: a capture file, --install-wireshark or --wireshark-plugin",
              file=sys.stderr)
        return 2
    try:
        for line in dissect_lines(a.file, a.count):
            print(line)
    except FileNotFoundError:
        print(f"taurus dissect: no file {a.file}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Exception as e:           # scapy: not a capture file
        print(f"taurus dissect: {a.file}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0
