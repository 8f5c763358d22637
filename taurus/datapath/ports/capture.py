"""Packet capture at the ports (what DPDK's pdump is to its ethdevs).

Every engine has a capture segment ``<engine>-cap`` in shared memory.  A
consumer (``tools/pcap.py``: ``taurus run --pcap``, ``taurus perf --pcap``,
``taurus capture``) claims it, sets the snap length and turns capture on
per port and direction (``on[p]``: CAP_RX | CAP_TX); the port dispatch
(``ports/dispatch.py``) then copies each frame a burst moved through such a
port, as it is on the wire, into a ring of fixed-size slots with its time,
port and direction.  With capture off the datapath pays one load and branch
per burst, not per frame.

The ring has one producer (the engine) and one consumer.  A full ring never
blocks the datapath: frames that do not fit are counted (``ctl[DROPS]``) and
skipped.  A consumer that drains between run chunks (in the engine's
process, virtual time included) sets ``ctl[C_YIELD]``: then a half-full ring
ends the chunk (the engine control block's YIELD word), so that consumer
keeps up whatever the burst.

Layout of the segment:
    ctl  int64[N_CTL]: magic, slots, slot bytes, max ports, clock kind,
         snap length, owner pid, yield when half full | producer line: HEAD (records written),
         DROPS | consumer line: TAIL (records consumed)
    on   int64[max ports]: capture flags per port
    hdr  int64[slots, 4]: time (ns, the engine clock), port | direction << 16,
         frame length, bytes captured
    data uint8[slots, slot bytes]
"""
from collections import namedtuple

import numpy as np

from ..ctlblock import YIELD
from ..hot import hot
from ..lowlevel import copy_bytes, load_acquire_u64, store_release_u64
from ..shm import Shm

CAP_RX, CAP_TX = 1, 2
MAGIC = 0x5441555243415031   # "TAURCAP1"
(C_MAGIC, C_SLOTS, C_SLOT_BYTES, C_MAX_PORTS, C_CLOCK, C_SNAPLEN, C_OWNER,
 C_YIELD) = range(8)
C_HEAD, C_DROPS = 8, 9        # producer cache line
C_TAIL = 16                   # consumer cache line
N_CTL = 24
H_TS, H_PORT, H_LEN, H_CAPLEN = range(4)
DIR_SHIFT = 16
DEFAULT_SLOTS = 8192

Capture = namedtuple("Capture", ["on", "ctl", "hdr", "data", "yld"])
"""on int64[P]; ctl int64[N_CTL]; hdr int64[S, 4]; data uint8[S, B] (S a
power of two); yld: the engine's control block, whose YIELD word a half-full
ring sets (``Capture.yld[YIELD] = 1``)."""


def _layout(max_ports: int, slots: int, slot_bytes: int):
    on = N_CTL * 8
    hdr = on + max_ports * 8
    data = hdr + slots * 4 * 8
    return on, hdr, data, data + slots * slot_bytes


def _views(shm: Shm, max_ports: int, slots: int, slot_bytes: int, yld) -> Capture:
    on, hdr, data, _ = _layout(max_ports, slots, slot_bytes)
    return Capture(on=shm.array(on, np.int64, (max_ports,)),
                   ctl=shm.array(0, np.int64, (N_CTL,)),
                   hdr=shm.array(hdr, np.int64, (slots, 4)),
                   data=shm.array(data, np.uint8, (slots, slot_bytes)), yld=yld)


class CaptureShm:
    """The capture segment: created (and unlinked) by its engine, attached
    by an out-of-process consumer.  Pages are touched only as frames are
    captured, so an idle segment costs no memory."""

    def __init__(self, shm: Shm, cap: Capture):
        self.shm, self.cap = shm, cap

    @classmethod
    def create(cls, name: str, max_ports: int, slot_bytes: int, yld: np.ndarray,
               virtual: bool, slots: int = DEFAULT_SLOTS) -> "CaptureShm":
        if slots < 2 or slots & (slots - 1):
            raise ValueError(f"capture slots must be a power of two >= 2, got {slots}")
        shm = Shm.create(name, _layout(max_ports, slots, slot_bytes)[3])
        cap = _views(shm, max_ports, slots, slot_bytes, yld)
        cap.ctl[:C_OWNER + 1] = (MAGIC, slots, slot_bytes, max_ports, int(virtual),
                                 slot_bytes, 0)
        return cls(shm, cap)

    @classmethod
    def attach(cls, name: str) -> "CaptureShm":
        """A running engine's capture segment, writable (the consumer moves
        TAIL and sets the flags); `name` is the engine's name."""
        shm = Shm.attach(name + "-cap", writable=True)
        ctl = shm.array(0, np.int64, (N_CTL,))
        if int(ctl[C_MAGIC]) != MAGIC:
            raise ValueError(f"{name}-cap is not a Taurus capture segment")
        cap = _views(shm, int(ctl[C_MAX_PORTS]), int(ctl[C_SLOTS]), int(ctl[C_SLOT_BYTES]),
                     np.zeros(N_CTL, np.int64))   # the engine's own control block is not ours
        return cls(shm, cap)

    def close(self) -> None:
        self.shm.close()


def no_capture(max_ports: int, slot_bytes: int = 64) -> Capture:
    """A capture block in process memory with capture off (port tables
    made outside an engine: tests, benchmarks)."""
    ctl = np.zeros(N_CTL, np.int64)
    ctl[:C_SNAPLEN + 1] = (MAGIC, 2, slot_bytes, max_ports, 0, slot_bytes)
    return Capture(on=np.zeros(max_ports, np.int64), ctl=ctl, hdr=np.zeros((2, 4), np.int64),
                   data=np.zeros((2, slot_bytes), np.uint8), yld=np.zeros(N_CTL, np.int64))


@hot
def cap_burst(cap, pool, p, now, bufs, n, d):
    """Copy frames bufs[:n] that port p moved in direction d (CAP_RX or
    CAP_TX) at time `now` into the ring; what does not fit is counted."""
    ctl = cap.ctl
    slots = cap.hdr.shape[0]
    width = cap.data.shape[1]
    head = ctl[C_HEAD]
    tail = np.int64(load_acquire_u64(ctl, C_TAIL))
    snap = ctl[C_SNAPLEN]
    if snap > width:
        snap = width
    dst = cap.data.ctypes.data
    dstride = cap.data.strides[0]
    src = pool.data.ctypes.data
    sstride = pool.data.strides[0]
    tag = p | (d << DIR_SHIFT)
    k = 0
    while k < n and head - tail < slots:
        i = bufs[k]
        ln = np.int64(pool.length[i])
        m = ln if ln < snap else snap
        if m < 0:
            m = 0
        s = head & (slots - 1)
        copy_bytes(dst + s * dstride, src + np.int64(i) * sstride, m)
        h = cap.hdr[s]
        h[H_TS] = now
        h[H_PORT] = tag
        h[H_LEN] = ln
        h[H_CAPLEN] = m
        head += 1
        k += 1
    store_release_u64(ctl, C_HEAD, head)
    if k < n:
        ctl[C_DROPS] += n - k
    if 2 * (head - tail) >= slots and ctl[C_YIELD] != 0:
        cap.yld[YIELD] = 1
