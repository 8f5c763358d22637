"""The engine's frame pool (DPDK's mbufs, minus everything we do not need).

A frame is an index into ``Pool``: its bytes are ``data[i, :length[i]]``.
Devices pass indices around.  A frame index has exactly one owner at a time;
whoever holds it must either hand it on (a TX accepted it, a queue took it,
a port lent it to the kernel) or free it.

The pool's memory doubles as AF_XDP UMEM (DPDK's af_xdp PMD does the same):
frame i lives in chunk i of ``buf_size`` bytes of one page-aligned mapping,
its data starting HEADROOM bytes in, where the kernel writes a received
frame.  An AF_XDP port registers the whole mapping, so frames are received
into and sent from pool frames in place, never copied in user space.  Row i
of ``data`` runs past its chunk into the next chunk's headroom, which no
frame's data uses; a frame the kernel receives or sends is at most
``buf_size - HEADROOM`` bytes (``xdp_capacity``).
"""
import mmap
from collections import namedtuple

from .hot import hot, hot_stage  # compiled without reference counting (the hot path)
import numpy as np

Pool = namedtuple("Pool", ["data", "length", "ts", "port", "free", "top"])
"""data uint8[N, BUF]; length int32[N]; ts int64[N] (RX time, ns);
port int32[N] (input port); free int32[N] (stack of free indices);
top int64[1] (number of entries on the free stack)."""

DEFAULT_BUF = 2048  # holds a 1500-byte MTU frame plus headers
HEADROOM = 256      # XDP_PACKET_HEADROOM: where copy-mode AF_XDP RX puts a frame in its chunk


def make_pool(n_frames: int = 16384, buf_size: int = DEFAULT_BUF) -> Pool:
    if n_frames <= 0 or buf_size < 64:
        raise ValueError(f"pool needs n_frames > 0 and buf_size >= 64, got {n_frames}, {buf_size}")
    # Anonymous and page-aligned, as UMEM must be; the tail page holds the
    # last row's overhang.  The array keeps the mapping alive.
    size = n_frames * buf_size + mmap.PAGESIZE
    mem = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    data = np.frombuffer(mem, np.uint8, n_frames * buf_size, HEADROOM)
    return Pool(
        data=data.reshape(n_frames, buf_size),
        length=np.zeros(n_frames, np.int32),
        ts=np.zeros(n_frames, np.int64),
        port=np.full(n_frames, -1, np.int32),
        free=np.arange(n_frames - 1, -1, -1, dtype=np.int32),
        top=np.array([n_frames], np.int64),
    )


@hot_stage
def mbuf_alloc(pool):
    """A free frame index, or -1 when the pool is exhausted."""
    t = pool.top[0]
    if t == 0:
        return -1
    t -= 1
    pool.top[0] = t
    return pool.free[t]


@hot_stage
def mbuf_free(pool, i):
    t = pool.top[0]
    pool.free[t] = i
    pool.top[0] = t + 1


@hot_stage
def mbuf_received(pool, i, length, now, port):
    """Stamp frame i as received: its length, RX time and input port."""
    pool.length[i] = length
    pool.ts[i] = now
    pool.port[i] = port


@hot
def mbuf_put_bytes(pool, i, src, n):
    """Copy n bytes of src into frame i (n is clipped to the buffer size)."""
    cap = pool.data.shape[1]
    if n > cap:
        n = cap
    for k in range(n):
        pool.data[i, k] = src[k]
    pool.length[i] = n
    return n


def pool_base(pool: Pool) -> int:
    """Address of chunk 0 (the UMEM base)."""
    return pool.data.ctypes.data - HEADROOM


def xdp_capacity(pool: Pool) -> int:
    """Bytes a frame may have to be received or sent by an AF_XDP port in
    place, or 0 when the pool's chunks cannot be UMEM chunks (a power of two
    from 2048 to the page size)."""
    b = pool.data.shape[1]
    ok = b & (b - 1) == 0 and 2048 <= b <= mmap.PAGESIZE
    return b - HEADROOM if ok else 0


def mbuf_in_use(pool: Pool) -> int:
    return int(pool.data.shape[0] - pool.top[0])
