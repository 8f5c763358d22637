"""Capture an engine's ports into a pcapng file (DPDK's dumpcap over pdump).

A ``Capture`` claims an engine's capture segment (datapath/ports/capture.py),
turns capture on for the chosen ports and directions, and drains the ring
into a ``PcapngWriter`` (one interface per port, nanosecond timestamps).
It drains either in the engine's process, between run chunks
(``Capture.in_process``: ``taurus run --pcap``, ``taurus perf -s --pcap``;
lossless, since a half-full ring ends the chunk), or from another process
attached to a running engine's shared memory (``Capture.attach``: ``taurus
capture``, ``taurus perf -c --pcap``; frames the ring cannot hold while
this process is away are counted as dropped).

A frame's time is when its burst was taken from or handed to the port (a
frame sent on a rate-limited memory link behind others reaches the wire
later), on the engine's clock: virtual nanoseconds from 0 (1970 in a
viewer) in virtual time; under the wall clock CLOCK_MONOTONIC, shifted to
the Unix epoch when the capture starts.  One capture per engine at a time.
"""
import os
import time

import numpy as np

from taurus.datapath.ports.capture import (C_CLOCK, C_DROPS, C_HEAD, C_OWNER, C_SLOT_BYTES,
                                           C_SNAPLEN, C_TAIL, C_YIELD, CAP_RX, CAP_TX,
                                           DIR_SHIFT, H_CAPLEN, H_LEN, H_PORT, H_TS,
                                           CaptureShm)

from .pcapng import INBOUND, OUTBOUND, PcapngWriter

DIRECTIONS = {"rx": CAP_RX, "tx": CAP_TX, "both": CAP_RX | CAP_TX}


class CaptureError(Exception):
    """Bad capture request (unknown port, busy engine, ...): a message for the user."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def parse_ports(spec) -> list[str] | None:
    """"a,b" -> ["a", "b"]; None, "" or "all" -> None (every port)."""
    if spec is None or spec in ("", "all"):
        return None
    names = [s.strip() for s in str(spec).split(",") if s.strip()]
    return names or None


class Capture:
    """One capture of an engine's ports into one pcapng file."""

    def __init__(self, seg: CaptureShm, port_names, path: str, ports=None, direction="both",
                 snaplen: int = 0, max_bytes: int = 0, count: int = 0, own_segment=False):
        """ports: port names (None: all); direction: rx, tx or both;
        snaplen: bytes kept of each frame (0: all the engine's buffer holds);
        max_bytes: the file's size cap (0: none); count: stop after this many
        frames (0: no limit)."""
        if direction not in DIRECTIONS:
            raise CaptureError(f"direction must be rx, tx or both, got {direction!r}")
        if snaplen < 0 or max_bytes < 0 or count < 0:
            raise CaptureError("snap length, size cap and count must be >= 0")
        names = list(port_names)
        sel = names if ports is None else list(ports)
        unknown = [p for p in sel if p not in names]
        if unknown:
            raise CaptureError(f"no port {', '.join(unknown)} in the engine (ports: "
                               f"{', '.join(names) or 'none'})")
        self.seg, self.cap = seg, seg.cap
        self._own_segment = own_segment
        ctl = self.cap.ctl
        owner = int(ctl[C_OWNER])
        if owner and owner != os.getpid() and _alive(owner):
            raise CaptureError(f"the engine's ports are being captured by process {owner}")
        width = int(ctl[C_SLOT_BYTES])
        self.snaplen = min(snaplen, width) if snaplen else width
        self.ports = [names.index(p) for p in sel]
        self._ifid = np.zeros(len(self.cap.on), np.int64)   # port -> interface id
        self._ifid[self.ports] = np.arange(len(self.ports))
        self.count = count
        self.writer = PcapngWriter(path, sel, self.snaplen, max_bytes)
        self.virtual = bool(ctl[C_CLOCK])
        self.offset = 0 if self.virtual else time.time_ns() - time.monotonic_ns()
        self.path = path
        self.not_written = 0      # over the size cap or the count
        self.active = True        # capture flags on
        self.writing = True       # frames go to the file (not past the count or the cap)
        self.names = sel
        self._eng = None          # the engine, when it is in this process
        self._engine = None       # its name, when attached
        self.engine_pid = os.getpid()
        ctl[C_OWNER] = os.getpid()
        ctl[C_YIELD] = 0
        ctl[C_SNAPLEN] = self.snaplen
        ctl[C_TAIL] = ctl[C_HEAD]                 # what an earlier capture left is not ours
        self._drops0 = int(ctl[C_DROPS])
        flags = DIRECTIONS[direction]
        for p in self.ports:
            self.cap.on[p] = flags

    # ---- the two ways in -------------------------------------------------
    @classmethod
    def in_process(cls, eng, path: str, **kw) -> "Capture":
        """Capture `eng` (an Engine of this process), drained after every
        run chunk until close()."""
        c = cls(eng.capture, eng.port_names, path, **kw)
        c._eng = eng
        eng.on_chunk.append(c.drain)
        eng.capture.cap.ctl[C_YIELD] = 1      # a half-full ring ends the chunk: drain it
        return c

    @classmethod
    def attach(cls, engine: str, path: str, **kw) -> "Capture":
        """Capture the running engine named `engine` (another process)."""
        from taurus.datapath.engine import attach_stats
        if not engine.startswith("taurus-"):
            engine = "taurus-" + engine
        try:
            st = attach_stats(engine)
            seg = CaptureShm.attach(engine)
        except FileNotFoundError:
            raise CaptureError(f"no running engine {engine} (taurus engine stats lists them)") from None
        try:
            c = cls(seg, list(st["ports"]), path, own_segment=True, **kw)
        except BaseException:
            seg.close()
            raise
        c.engine_pid = st["pid"]
        c._engine = engine
        return c

    # ---- draining --------------------------------------------------------
    def drain(self) -> int:
        """Write what the ring holds; returns the frames written."""
        ctl = self.cap.ctl
        head, tail = int(ctl[C_HEAD]), int(ctl[C_TAIL])
        n = head - tail
        if n <= 0:
            return 0
        slots = self.cap.hdr.shape[0]
        idx = (tail + np.arange(n)) & (slots - 1)
        hdr = self.cap.hdr[idx]                        # copies (fancy indexing)
        m = hdr[:, H_CAPLEN]
        data = self.cap.data[idx, :max(1, int(m.max()))]
        ctl[C_TAIL] = head                             # the slots are free again
        if not self.writing:
            self.not_written += n
            return 0
        w = self.writer
        lim = n if not self.count else min(n, self.count - w.frames)
        tag = hdr[:lim, H_PORT]
        port = tag & ((1 << DIR_SHIFT) - 1)
        d = np.where((tag >> DIR_SHIFT) == CAP_RX, INBOUND, OUTBOUND)
        wrote = w.packets(self._ifid[port], hdr[:lim, H_TS] + self.offset, data[:lim], m[:lim],
                          hdr[:lim, H_LEN], d)
        self.not_written += n - wrote
        if w.full or (self.count and w.frames >= self.count):
            self._finish()
        return wrote

    def _finish(self) -> None:
        """The count or the size cap is reached: nothing more is written."""
        self.writing = False
        self.stop()

    def stop(self) -> None:
        """Turn capture off (the file stays open until close)."""
        if self.active:
            self.active = False
            for p in self.ports:
                self.cap.on[p] = 0

    @property
    def done(self) -> bool:
        """The count or the size cap is reached."""
        return not self.writing

    def dropped(self) -> int:
        """Frames the ring had no room for since this capture began."""
        return int(self.cap.ctl[C_DROPS]) - self._drops0

    def close(self) -> dict:
        """Stop, write what is left, release the engine; returns the figures."""
        eng = self._eng
        if eng is None and self.active:
            self.stop()
            time.sleep(0.01)              # a burst the engine may be copying now
        self.stop()
        self.drain()
        self.writing = False
        stats = {"file": self.path, "frames": self.writer.frames, "bytes": self.writer.bytes,
                 "dropped": self.dropped(), "not_written": self.not_written,
                 "size_cap_reached": self.writer.full, "ports": self._counters(eng)}
        self.writer.close()
        ctl = self.cap.ctl
        if int(ctl[C_OWNER]) == os.getpid():
            ctl[C_YIELD] = 0
            ctl[C_OWNER] = 0
        if eng is not None:
            if self.drain in eng.on_chunk:
                eng.on_chunk.remove(self.drain)
            self._eng = None
        if self._own_segment:
            self.seg.close()
        return stats


    def _counters(self, eng) -> dict:
        """The engine's rx/tx packet counters of the captured ports, now."""
        if eng is not None:
            allc = eng.counters()
        else:
            from taurus.datapath.engine import attach_stats
            try:
                allc = attach_stats(self._engine)["ports"]
            except (FileNotFoundError, ValueError):
                return {}
        return {n: {"rx_pkts": allc[n]["rx_pkts"], "tx_pkts": allc[n]["tx_pkts"]}
                for n in self.names if n in allc}


def summary_line(st: dict) -> str:
    s = f"pcap {st['file']}: {st['frames']} frames, {st['bytes']} bytes"
    if st["dropped"]:
        s += f", {st['dropped']} dropped (capture ring full)"
    if st["not_written"]:
        s += f", {st['not_written']} not written (count or size cap)"
    return s


def add_capture_options(p, snaplen_flag: str = "--snaplen") -> None:
    """The options every capture command shares: snap length, size cap, direction."""
    p.add_argument(snaplen_flag, type=int, default=0, metavar="BYTES", dest="snaplen",
                   help="bytes kept of each frame (default: the whole frame)")
    p.add_argument("--pcap-max-size", default=None, metavar="SIZE",
                   help="stop writing before the file exceeds SIZE (e.g. 10MB)")
    p.add_argument("--pcap-dir", default="both", choices=sorted(DIRECTIONS),
                   help="directions captured at each port (default both)")


def capture_options(args) -> dict:
    """Capture keyword arguments from add_capture_options' options (a
    CaptureError for a bad size)."""
    from taurus.units import parse_size
    try:
        v = args.pcap_max_size
        cap = 0 if not v else int(v) if str(v).isdigit() else parse_size(v)
    except ValueError as e:
        raise CaptureError(f"--pcap-max-size: {e}") from None
    return {"snaplen": args.snaplen, "max_bytes": cap, "direction": args.pcap_dir}
