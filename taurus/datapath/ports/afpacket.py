"""Control plane of the PACKET port: an AF_PACKET socket with a TPACKET_V3 RX
ring and a TX ring, mapped into this process and described in the port's
registers (layout in afpacket_ring.py).

The fallback when AF_XDP is unavailable.  The socket sees every frame on the
interface (promiscuous, ETH_P_ALL) but not its own transmissions, and bypasses
the qdisc on TX, so it behaves like a switch port on the wire.
"""
import ctypes
import errno as _errno
import fcntl
import os
import socket
import struct

from pyroute2.netns import listnetns

from taurus.nsenter import in_ns

from . import afpacket_ring as R
from .common import PACKET

# <linux/if_packet.h>, <linux/if_ether.h>, <linux/sockios.h>
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_RX_RING = 5
PACKET_STATISTICS = 6
PACKET_VERSION = 10
PACKET_TX_RING = 13
PACKET_LOSS = 14
PACKET_QDISC_BYPASS = 20
PACKET_IGNORE_OUTGOING = 23
TPACKET_V3 = 2
ETH_P_ALL = 0x0003
SIOCGIFMTU = 0x8921
SIOCGIFINDEX = 0x8933
SO_SNDBUFFORCE = 32
TPACKET3_HDRLEN = 68  # TPACKET_ALIGN(sizeof(tpacket3_hdr)) + sizeof(sockaddr_ll)
PAGE = os.sysconf("SC_PAGE_SIZE")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


class PacketPortError(OSError):
    """Opening a PACKET port failed; the message names the interface and step."""


def _req3(block_size, block_nr, frame_size, frame_nr, tov=0):
    # struct tpacket_req3: block_size, block_nr, frame_size, frame_nr,
    # retire_blk_tov, sizeof_priv, feature_req_word
    return struct.pack("7I", block_size, block_nr, frame_size, frame_nr, tov, 0, 0)


class PacketPortHandle:
    """An open PACKET port.  close() is idempotent; call it only while no
    engine loop is servicing the port (the ring memory goes away)."""

    def __init__(self, ports, p, ifname, netns):
        self.ports, self.p, self.ifname, self.netns = ports, p, ifname, netns
        self.sock = None
        self.addr = 0
        self.length = 0
        self._stats = {"packets": 0, "drops": 0, "freeze_q_cnt": 0}

    def fileno(self) -> int:
        return self.sock.fileno() if self.sock is not None else -1

    def stats(self) -> dict:
        """Kernel RX statistics since open: packets seen (incl. dropped), drops
        (ring full), times the queue froze.  The kernel resets its copy on each
        read, so they are accumulated here."""
        if self.sock is not None:
            raw = self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 12)
            for k, v in zip(("packets", "drops", "freeze_q_cnt"), struct.unpack("3I", raw)):
                self._stats[k] += v
        return dict(self._stats)

    def close(self) -> None:
        # Registers first, so the Numba side turns into no-ops before the
        # memory it points at disappears.
        regs = self.ports.regs[self.p]
        if self.addr and regs[R.RX_BASE] == self.addr:
            regs[:R.N_PKT_REGS] = 0
            regs[R.FD] = -1
        if self.addr:
            _libc.munmap(self.addr, self.length)
            self.addr = 0
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "open" if self.sock is not None else "closed"
        return f"<PacketPortHandle port {self.p} {self.ifname!r} netns={self.netns} {state}>"


def open_packet_port(ports, p, ifname, *, netns=None, block_size=1 << 20, n_blocks=16,
                     frame_size=2048, tx_frames=2048, block_timeout_ms=1) -> PacketPortHandle:
    """Open interface `ifname` (inside namespace `netns`) as PACKET port p.

    RX ring: n_blocks blocks of block_size bytes; the kernel hands a block
    over when it is full or block_timeout_ms after its first packet.  TX ring:
    slots of frame_size bytes grouped in blocks of block_size, at least
    tx_frames of them (rounded up to whole blocks)."""
    _check_ring(ifname, block_size, n_blocks, frame_size, tx_frames, block_timeout_ms)
    name = ifname.encode()
    where = f"af_packet port on {ifname!r}" + (f" in netns {netns!r}" if netns else "")
    h = PacketPortHandle(ports, p, ifname, netns)
    fpb = block_size // frame_size
    tx_blocks = -(-tx_frames // fpb)
    rx_len = block_size * n_blocks
    tx_len = block_size * tx_blocks
    if netns is not None and netns not in listnetns():
        # in_ns (pyroute2 setns) would silently create a missing namespace.
        raise PacketPortError(_errno.ENOENT, f"{where}: no such network namespace")
    step = "socket"
    try:
        with in_ns(netns):
            # Protocol 0: nothing is queued to the socket until the rings exist
            # and bind() names ETH_P_ALL.
            h.sock = s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            step = "interface lookup"
            ifr = fcntl.ioctl(s, SIOCGIFINDEX, struct.pack("16si12x", name, 0))
            ifindex = struct.unpack("16si12x", ifr)[1]
            ifr = fcntl.ioctl(s, SIOCGIFMTU, struct.pack("16si12x", name, 0))
            mtu = struct.unpack("16si12x", ifr)[1]
            # Version and loss mode must be set before the rings exist (EBUSY).
            step = "PACKET_VERSION=TPACKET_V3"
            s.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V3)
            step = "PACKET_LOSS"  # skip a malformed TX slot instead of stopping at it
            s.setsockopt(SOL_PACKET, PACKET_LOSS, 1)
            step = "PACKET_QDISC_BYPASS"
            s.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, 1)
            step = "PACKET_IGNORE_OUTGOING"
            s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            try:  # let a full TX ring be in flight at once
                s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, tx_len)
            except OSError:
                pass
            step = f"RX ring ({n_blocks} x {block_size} B)"
            s.setsockopt(SOL_PACKET, PACKET_RX_RING,
                         _req3(block_size, n_blocks, frame_size, fpb * n_blocks, block_timeout_ms))
            step = f"TX ring ({tx_blocks} x {block_size} B)"
            s.setsockopt(SOL_PACKET, PACKET_TX_RING,
                         _req3(block_size, tx_blocks, frame_size, fpb * tx_blocks))
            step = "mmap"
            addr = _libc.mmap(None, rx_len + tx_len, 0x3, 0x01, s.fileno(), 0)  # RW, SHARED
            if addr in (None, _MAP_FAILED):
                e = ctypes.get_errno()
                raise OSError(e, os.strerror(e))
            h.addr, h.length = addr, rx_len + tx_len
            step = "promiscuous membership"
            s.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP,
                         struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b""))
            step = "bind"
            s.bind((ifname, ETH_P_ALL))
    except OSError as e:
        h.close()
        reason = e.strerror or str(e)
        if step == "interface lookup" and e.errno == _errno.ENODEV:
            reason = "no such interface"
        raise PacketPortError(e.errno, f"{where}: {step} failed: {reason}") from e
    except BaseException:
        h.close()
        raise

    _set_regs(ports.regs[p], s.fileno(), addr, rx_len, block_size, n_blocks, frame_size,
              tx_blocks, mtu)
    ports.kind[p] = PACKET
    return h


def _check_ring(ifname, block_size, n_blocks, frame_size, tx_frames, block_timeout_ms) -> None:
    if block_size <= 0 or block_size % PAGE:
        raise ValueError(f"block_size {block_size} must be a positive multiple of {PAGE}")
    if frame_size % 16 or not (TPACKET3_HDRLEN + 60 <= frame_size <= block_size):
        raise ValueError(f"frame_size {frame_size} must be a multiple of 16 in "
                         f"[{TPACKET3_HDRLEN + 60}, block_size]")
    if n_blocks <= 0 or tx_frames <= 0 or block_timeout_ms < 0:
        raise ValueError("n_blocks and tx_frames must be positive, block_timeout_ms >= 0")
    if not 0 < len(ifname.encode()) < 16:
        raise ValueError(f"bad interface name {ifname!r}")


def _set_regs(regs, fd, addr, rx_len, block_size, n_blocks, frame_size, tx_blocks, mtu) -> None:
    """The port's registers (afpacket_ring.py reads them), RX_BASE last: a
    nonzero base means "open"."""
    fpb = block_size // frame_size
    room = frame_size - R.TX_DATA_OFF
    regs[:R.N_PKT_REGS] = 0
    regs[R.FD] = fd
    regs[R.RX_BSZ] = block_size
    regs[R.RX_NBLK] = n_blocks
    regs[R.TX_BASE] = addr + rx_len
    regs[R.TX_FSZ] = frame_size
    regs[R.TX_NR] = fpb * tx_blocks
    regs[R.TX_FPB] = fpb
    regs[R.TX_BSZ] = block_size
    regs[R.TX_MAXLEN] = min(room, mtu + 14)
    regs[R.TX_MAXVLAN] = min(room, mtu + 18)
    regs[R.RX_BASE] = addr
