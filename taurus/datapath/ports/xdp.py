"""Control plane of the AF_XDP port: open a socket on an interface (inside its
namespace), load and attach our XDP steering program, and publish everything
the Numba side (``xdp_ring``) needs in the port's registers.  The socket's
UMEM is the engine's frame pool (``mbuf``): frames are received into and sent
from pool frames, with no copy in user space.  Several ports may register
the same pool (each socket has its own UMEM over the same pages), so a frame
received on one port is sent on another as it is.

    h = open_xdp_port(ports, pool, p, "va", netns="taurus-x", steer="taurus")
    ...  engine loop: port_rx_burst / port_tx_burst / port_service  ...
    h.close()

``close()`` is idempotent; handles still open at interpreter exit are closed
then.  Any failure while opening releases what was acquired and raises
``XdpUnavailable(reason)`` so the engine can fall back to AF_PACKET.
"""
import atexit
import ctypes
import errno as _errno
import glob
import logging
import mmap
import os
import socket
import time

from pyroute2 import netns as _pyr_netns

from ...nsenter import in_ns
from ..mbuf import pool_base, xdp_capacity
from . import xdp_ring as R
from .common import XDP

NS_PREFIX = "taurus-"        # tools/netns.py's: namespaces Taurus made

log = logging.getLogger(__name__)

BPF_OBJ = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bpf", "xdp_redirect.bpf.o")
XSKS_MAP, CFG_MAP = "taurus_xsks", "taurus_cfg"
CFG_MODE, CFG_TPID_A, CFG_TPID_B, CFG_UDP_PORT = range(4)   # taurus_cfg keys
XSKS_MAX = 64                                               # taurus_xsks entries
STEER = {"all": 0, "taurus": 1}
TAURUS_UDP_PORT = 4793
CSIG_TPIDS = (0x88B5, 0x88B6)

# linux/if_xdp.h and linux/if_link.h
XDP_COPY, XDP_ZEROCOPY, XDP_USE_NEED_WAKEUP = 1 << 1, 1 << 2, 1 << 3
XDP_OPTIONS, XDP_OPTIONS_ZEROCOPY = 8, 1
XDP_MAX_TX_SKB_BUDGET = 9          # 6.17+, absent from Debian 12 headers
TX_BATCH_SIZE = 32                 # the kernel's default copy-mode kick budget
XDP_FLAGS_UPDATE_IF_NOEXIST, XDP_FLAGS_SKB_MODE, XDP_FLAGS_DRV_MODE = 1, 2, 4
ATTACH_NATIVE, ATTACH_GENERIC = 1, 2
_MODE_FLAGS = {ATTACH_NATIVE: XDP_FLAGS_DRV_MODE, ATTACH_GENERIC: XDP_FLAGS_SKB_MODE}
_MODE_NAMES = {ATTACH_NATIVE: "native", ATTACH_GENERIC: "generic"}
STAT_NAMES = ("rx_dropped", "rx_invalid_descs", "tx_invalid_descs", "rx_ring_full",
              "rx_fill_ring_empty_descs", "tx_ring_empty_descs")

BUSY_WAIT_S = 1.0                  # how long a busy queue may take to free up

_OPEN = set()   # handles not yet closed (closed at exit)


def prog_ids(pid: int | str = "[0-9]*") -> set[int]:
    """Ids of the BPF programs process pid holds, or (by default) every live
    process: a program or link fd's fdinfo names its program."""
    ids = set()
    for fi in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            with open(fi) as f:
                ids.update(int(x.split()[1]) for x in f if x.startswith("prog_id:"))
        except (OSError, ValueError, IndexError):
            pass
    return ids


class XdpUnavailable(RuntimeError):
    """AF_XDP cannot be used for this port; ``reason`` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _lib():
    from . import _xsk
    return _xsk.ffi, _xsk.lib


def xdp_available() -> tuple[bool, str]:
    """(True, "ok") when the binding and the XDP program are built."""
    try:
        ffi, lib = _lib()
    except ImportError as e:
        return False, f"AF_XDP binding not built ({e}); run `pip install -e .`"
    if not lib.taurus_xsk_available():
        return False, "AF_XDP binding is a stub: " + ffi.string(lib.taurus_xsk_why()).decode()
    if not os.path.exists(BPF_OBJ):
        return False, f"XDP program {BPF_OBJ} missing; run `pip install -e .`"
    return True, "ok"


def _ns_exists(netns) -> bool:
    return netns is None or netns in _pyr_netns.listnetns()


def _err(rc: int) -> str:
    return os.strerror(-rc) if rc < 0 else f"error {rc}"


class XdpPortHandle:
    """One open AF_XDP port.  Attributes: ifname, netns, ifindex, queue, fd,
    zero_copy, attach_mode ("native"/"generic"), prog_id, tx_budget, n_rx
    (the most frames lent to the fill ring), n_tx (the most frames on the TX
    and completion rings), umem (the pool it registered; None once closed)."""

    def __init__(self, ports, pool, p, ifname, netns, queue):
        self.ports, self.p, self.ifname, self.netns, self.queue = ports, p, ifname, netns, queue
        self.pool = pool
        self.ifindex = 0
        self.fd = -1
        self.zero_copy = False
        self.attach_mode = None
        self.prog_id = 0
        self.tx_budget = TX_BATCH_SIZE
        self.n_rx = self.n_tx = 0
        self.umem = None
        self._slot = -1       # C-side socket slot
        self._obj = -1        # C-side BPF object slot
        self._prog_fd = -1
        self._mode = 0        # ATTACH_* when our program is attached
        self._regs = False    # we own ports.regs[p]
        self._pid = os.getpid()
        self.closed = False

    # -- opening ---------------------------------------------------------
    def _open(self, steer, rx_frames, ring_size, zero_copy, xdp_mode, tx_budget):
        _, lib = _lib()
        name = self.ifname.encode()
        where = f"{self.ifname!r} in namespace {self.netns or '(current)'}"
        if not _ns_exists(self.netns):
            raise XdpUnavailable(f"namespace {self.netns!r} does not exist")
        pool = self.pool
        frame_size = pool.data.shape[1]
        if not xdp_capacity(pool):
            raise XdpUnavailable(f"pool frames of {frame_size} B cannot be UMEM chunks "
                                 f"(a power of two from 2048 to {mmap.PAGESIZE})")
        base, size = pool_base(pool), pool.data.shape[0] * frame_size
        bind = XDP_USE_NEED_WAKEUP | {"auto": 0, True: XDP_ZEROCOPY, False: XDP_COPY}[zero_copy]
        with in_ns(self.netns):
            try:
                self.ifindex = socket.if_nametoindex(self.ifname)
            except OSError:
                raise XdpUnavailable(f"no interface {where}") from None
            self.umem = pool     # page-aligned; the kernel pins it at registration
            # A queue whose previous socket just closed stays busy until the
            # kernel's deferred release runs (tens of ms here): retry a while.
            give_up = time.monotonic() + BUSY_WAIT_S
            while True:
                rc = lib.taurus_xsk_open(name, self.queue, base, size, frame_size,
                                         ring_size, ring_size, ring_size, ring_size, bind)
                if rc != -_errno.EBUSY or time.monotonic() > give_up:
                    break
                time.sleep(0.005)
            if rc < 0:
                hint = {-_errno.EPERM: " (needs root / CAP_NET_RAW)",
                        -_errno.EBUSY: " (another AF_XDP socket holds this queue?)"}.get(rc, "")
                raise XdpUnavailable(f"AF_XDP socket on {where} queue {self.queue}: "
                                     f"{_err(rc)}{hint}")
            self._slot = rc
            self.fd = lib.taurus_xsk_fd(self._slot)
            opts = lib.taurus_xsk_getopt_u32(self.fd, XDP_OPTIONS)
            self.zero_copy = opts >= 0 and bool(opts & XDP_OPTIONS_ZEROCOPY)
            budget = max(TX_BATCH_SIZE, min(tx_budget, ring_size))
            rc = lib.taurus_xsk_setopt_u32(self.fd, XDP_MAX_TX_SKB_BUDGET, budget)
            if rc == 0:
                self.tx_budget = budget
            else:
                log.info("%s: XDP_MAX_TX_SKB_BUDGET refused (%s); kicks move %d frames",
                         self.ifname, _err(rc), TX_BATCH_SIZE)
            self._write_regs(lib, base, frame_size, size, min(rx_frames, ring_size), ring_size)
            self._load_program(lib, steer)
            self._attach(lib, xdp_mode, where)

    def _write_regs(self, lib, umem, frame_size, size, n_rx, n_tx):
        ports, p, s = self.ports, self.p, self._slot
        r = ports.regs[p]
        r[:] = 0
        r[R.FD] = self.fd
        r[R.UMEM] = umem
        r[R.UMEM_SIZE] = size
        r[R.FRAME] = frame_size
        r[R.SHIFT] = frame_size.bit_length() - 1
        r[R.CAP] = xdp_capacity(self.pool)
        r[R.TX_MAX] = n_tx
        # ring order in the binding: fill, completion, rx, tx
        for ring, base in enumerate((R.FILL_PROD, R.COMP_PROD, R.RX_PROD, R.TX_PROD)):
            r[base] = lib.taurus_xsk_ring(s, ring, 0)
            r[base + 1] = lib.taurus_xsk_ring(s, ring, 1)
            r[base + 2] = lib.taurus_xsk_ring(s, ring, 2)
            r[base + 3] = lib.taurus_xsk_ring(s, ring, 4)
        r[R.FILL_FLAGS] = lib.taurus_xsk_ring(s, 0, 3)
        r[R.TX_FLAGS] = lib.taurus_xsk_ring(s, 3, 3)

        def u32(addr):
            return ctypes.c_uint32.from_address(int(addr)).value
        r[R.FILL_TAIL] = u32(r[R.FILL_PROD])
        r[R.RX_HEAD] = u32(r[R.RX_CONS])
        r[R.TX_TAIL] = r[R.TX_SEEN] = u32(r[R.TX_PROD])
        r[R.COMP_HEAD] = u32(r[R.COMP_CONS])
        # Copy mode never raises the ring flags: there we kick every time.
        r[R.NEED_WAKEUP] = int(self.zero_copy)
        r[R.ZEROCOPY] = int(self.zero_copy)
        r[R.TX_BUDGET] = self.tx_budget
        r[R.QUEUE] = self.queue
        r[R.IFINDEX] = self.ifindex
        self._regs = True
        got = R.xdp_prime(ports, self.pool, p, n_rx)
        if got < ports.regs[p, R.FILL_TARGET]:
            log.warning("%s: the pool lent %d of %d RX frames", self.ifname, got,
                        ports.regs[p, R.FILL_TARGET])
        self.n_rx, self.n_tx = n_rx, n_tx
        ports.kind[p] = XDP

    def _load_program(self, lib, steer):
        rc = lib.taurus_bpf_open(BPF_OBJ.encode())
        if rc < 0:
            raise XdpUnavailable(f"loading {BPF_OBJ}: {_err(rc)}")
        self._obj = rc
        self._prog_fd = lib.taurus_bpf_prog_fd(self._obj)
        xsks = lib.taurus_bpf_map_fd(self._obj, XSKS_MAP.encode())
        cfg = lib.taurus_bpf_map_fd(self._obj, CFG_MAP.encode())
        if min(self._prog_fd, xsks, cfg) < 0:
            raise XdpUnavailable(f"{BPF_OBJ} lacks its program or maps")
        self.prog_id = int(lib.taurus_prog_id(self._prog_fd))
        for key, val in ((CFG_MODE, STEER[steer]), (CFG_TPID_A, CSIG_TPIDS[0]),
                         (CFG_TPID_B, CSIG_TPIDS[1]), (CFG_UDP_PORT, TAURUS_UDP_PORT)):
            rc = lib.taurus_map_set_u32(cfg, key, val)
            if rc < 0:
                raise XdpUnavailable(f"configuring the XDP program: {_err(rc)}")
        rc = lib.taurus_map_set_u32(xsks, self.queue, self.fd)
        if rc < 0:
            raise XdpUnavailable(f"inserting the socket in the XSKMAP: {_err(rc)}")

    def _attach(self, lib, xdp_mode, where):
        modes = {"auto": (ATTACH_NATIVE, ATTACH_GENERIC), "native": (ATTACH_NATIVE,),
                 "generic": (ATTACH_GENERIC,)}[xdp_mode]
        refused = []
        for mode in modes:
            rc = lib.taurus_xdp_attach(self.ifindex, self._prog_fd,
                                       XDP_FLAGS_UPDATE_IF_NOEXIST | _MODE_FLAGS[mode])
            if rc == 0:
                self._mode = mode
                self.attach_mode = _MODE_NAMES[mode]
                self.ports.regs[self.p, R.ATTACH_MODE] = mode
                if refused:
                    log.info("%s: XDP program attached in generic mode (native refused: %s)",
                             self.ifname, refused[0])
                else:
                    log.info("%s: XDP program attached in %s mode", self.ifname, self.attach_mode)
                return
            if rc in (-_errno.EEXIST, -_errno.EBUSY):
                other = lib.taurus_xdp_query(self.ifindex, 1)
                # An engine SIGKILLed leaves its program attached (the
                # interface holds it, not a file): on a Taurus namespace's
                # interface, one no live process holds is an orphan, and is
                # replaced (in the same mode; the kernel refuses another).
                if (other > 0 and (self.netns or "").startswith(NS_PREFIX)
                        and int(other) not in prog_ids()
                        and lib.taurus_xdp_attach(self.ifindex, self._prog_fd,
                                                  _MODE_FLAGS[mode]) == 0):
                    log.warning("%s: replaced XDP program %d, left by an engine that is gone",
                                where, other)
                    self._mode = mode
                    self.attach_mode = _MODE_NAMES[mode]
                    self.ports.regs[self.p, R.ATTACH_MODE] = mode
                    return
                raise XdpUnavailable(f"{where} already has an XDP program (id {other})")
            refused.append(f"{_MODE_NAMES[mode]}: {_err(rc)}")
        raise XdpUnavailable(f"attaching the XDP program to {where} failed: {'; '.join(refused)}")

    # -- using and closing -------------------------------------------------
    def frames_held(self) -> int:
        """Pool frames this port holds: lent to the fill ring, on the TX or
        completion ring, and on the stack of bench/_rawloops' raw TX loops."""
        if self.closed:
            return 0
        r = self.ports.regs[self.p]
        return int(r[R.LENT] + r[R.TX_OUT] + r[R.TX_FREE])

    def stats(self) -> dict:
        """The kernel's XDP_STATISTICS for this socket."""
        if self.closed:
            return {}
        _, lib = _lib()
        return {n: int(lib.taurus_xsk_stat(self.fd, i)) for i, n in enumerate(STAT_NAMES)}

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        _OPEN.discard(self)
        _, lib = _lib()
        ours = os.getpid() == self._pid
        # A forked child inherits the handle but must not detach the parent's program.
        if self._mode and ours:
            self._detach(lib)
        if self._regs:
            # No more RX once detached: the frames still on the rings go back
            # to the pool.  Then the port is inert: the engine may still call it.
            if ours:
                held = R.xdp_reclaim(self.ports, self.pool, self.p)
                if held:
                    log.warning("%s: %d TX frames were still in the kernel", self.ifname, held)
            self.ports.regs[self.p, :] = 0
            self.ports.regs[self.p, R.FD] = -1
        if self._obj >= 0:
            lib.taurus_bpf_close(self._obj)   # closes the program and map fds
            self._obj = self._prog_fd = -1
        if self._slot >= 0:
            rc = lib.taurus_xsk_close(self._slot)
            if rc < 0:
                log.warning("%s: releasing the UMEM: %s", self.ifname, _err(rc))
            self._slot = self.fd = -1
        self.umem = None

    def _detach(self, lib):
        # A deleted namespace took the interface (and our program) with it;
        # entering it would create it again.
        if not _ns_exists(self.netns):
            return
        try:
            with in_ns(self.netns):
                rc = lib.taurus_xdp_detach(self.ifindex, _MODE_FLAGS[self._mode], self._prog_fd)
        except OSError as e:
            log.warning("%s: detaching the XDP program: %s", self.ifname, e)
            return
        # -ENODEV: interface gone; -EEXIST: the attached program is not ours.
        if rc < 0 and rc not in (-_errno.ENODEV, -_errno.EEXIST):
            log.warning("%s: detaching the XDP program: %s", self.ifname, _err(rc))
        self._mode = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self.closed else f"fd={self.fd} {self.attach_mode} " \
            f"{'zero-copy' if self.zero_copy else 'copy'}"
        return f"<XdpPortHandle {self.netns or ''}:{self.ifname} q{self.queue} {state}>"


def open_xdp_port(ports, pool, p, ifname, *, netns=None, steer="all", rx_frames=1024,
                  ring_size=2048, queue=0, zero_copy="auto", xdp_mode="auto",
                  tx_budget=256) -> XdpPortHandle:
    """Open port p of `ports` as an AF_XDP socket on `ifname` (in `netns`),
    with `pool`'s frames as its UMEM (its chunks must be a power of two from
    2048 B to a page; frames up to ``mbuf.xdp_capacity(pool)`` bytes).

    steer: "all" redirects every frame to the socket; "taurus" only UDP/4793,
    PFC and CSIG-tagged frames (the rest go to the kernel).  rx_frames: the
    most pool frames lent to the fill ring (at most ring_size), i.e. how
    many frames the socket can take while the engine does not poll; fewer
    are lent while the engine keeps up (xdp_ring.fill_adapt).  ring_size: entries of
    each of the four rings; the TX and completion rings bound the frames in
    flight.  zero_copy: "auto" (kernel's choice), True or False.  xdp_mode:
    "auto" (native, else generic), "native" or "generic".  tx_budget: frames
    one kick may send (copy mode).
    """
    if steer not in STEER:
        raise ValueError(f"steer must be one of {sorted(STEER)}, got {steer!r}")
    if zero_copy not in ("auto", True, False):
        raise ValueError(f"zero_copy must be 'auto', True or False, got {zero_copy!r}")
    if xdp_mode not in ("auto", "native", "generic"):
        raise ValueError(f"xdp_mode must be 'auto', 'native' or 'generic', got {xdp_mode!r}")
    if ring_size & (ring_size - 1) or ring_size < 64:
        raise ValueError(f"ring_size must be a power of two >= 64, got {ring_size}")
    if rx_frames < 1:
        raise ValueError(f"rx_frames must be >= 1, got {rx_frames}")
    if not 0 <= queue < XSKS_MAX:
        raise ValueError(f"queue must be in [0, {XSKS_MAX}), got {queue}")
    ok, why = xdp_available()
    if not ok:
        raise XdpUnavailable(why)
    h = XdpPortHandle(ports, pool, p, ifname, netns, queue)
    _OPEN.add(h)
    try:
        h._open(steer, rx_frames, ring_size, zero_copy, xdp_mode, tx_budget)
    except BaseException:
        h.close()
        raise
    return h


@atexit.register
def _close_all():
    for h in list(_OPEN):
        h.close()
