"""Numba data path of the AF_XDP port: four kernel rings reached through
addresses held in the port's registers (set up by ``xdp.open_xdp_port``).

UMEM frames [0, n_rx) circulate between the fill ring, the kernel and the RX
ring; frames [n_rx, n_frames) are TX frames: free ones sit on a stack in
``lists[p, :TX_FREE]`` (persistent, so frames in flight across loop calls are
never lost or double-freed), busy ones are on the TX or completion ring.

Ring indices are free-running u32 counters shared with the kernel; we keep
our own copies in int64 registers and compare them modulo 2**32.  Our side
publishes with store-release and reads the kernel's side with load-acquire.
Rings are reached by address (lowlevel.peek/poke), never through array
views, so the whole path compiles without reference counting (``hot``).
"""
import numpy as np

from ..lowlevel import (copy_bytes, errno, kick_tx, load_acquire_u32_at, peek_u32, peek_u64,
                        poke_u32, poke_u64, store_release_u32_at, wake_rx)
from ..mbuf import mbuf_alloc, mbuf_free
from ..wire.codec import hot
from .common import (RX_BYTES, RX_ERR, RX_NOBUF, RX_PKTS, RX_WAKEUPS, TX_BUSY, TX_BYTES,
                     TX_ERR, TX_KICKS, TX_PKTS)

# Register layout of an XDP port (regs[p, ...]).
(FD, UMEM, UMEM_SIZE, FRAME,
 FILL_PROD, FILL_CONS, FILL_DESC, FILL_MASK,
 COMP_PROD, COMP_CONS, COMP_DESC, COMP_MASK,
 RX_PROD, RX_CONS, RX_DESC, RX_MASK,
 TX_PROD, TX_CONS, TX_DESC, TX_MASK,
 FILL_FLAGS, TX_FLAGS,
 FILL_TAIL, RX_HEAD, TX_TAIL, TX_SEEN, COMP_HEAD,
 TX_FREE, N_TX, NEED_WAKEUP, FILL_POSTED,
 N_RX, ZEROCOPY, ATTACH_MODE, TX_BUDGET, QUEUE, IFINDEX) = range(37)
"""FD socket (-1: closed port, every call returns 0); UMEM/UMEM_SIZE/FRAME
UMEM base address, size, frame size (power of two); *_PROD/*_CONS/*_DESC
addresses of each ring's producer word, consumer word, entries; *_MASK ring
size - 1; FILL_FLAGS/TX_FLAGS addresses of the need-wakeup flag words.
Our cursors: FILL_TAIL fill producer, RX_HEAD rx consumer, TX_TAIL tx
producer, TX_SEEN last tx consumer read from the kernel, COMP_HEAD completion
consumer.  TX_FREE entries on the free TX frame stack (lists[p]), N_TX TX
frames in all, NEED_WAKEUP 1 when the kernel's need-wakeup ring flags mean
something (zero-copy; copy mode never sets them, so there we always kick),
FILL_POSTED fill entries posted since the last RX wake-up.  N_RX .. IFINDEX
are informational (set by the control plane)."""

M32 = 0xFFFFFFFF
RING_NEED_WAKEUP = 1  # XDP_RING_NEED_WAKEUP
EAGAIN, EBUSY, ENOBUFS = 11, 16, 105
DESC = 16  # struct xdp_desc: u64 addr, u32 len, u32 options


@hot
def xdp_prime(ports, p, n_rx, n_tx):
    """Give frames [0, n_rx) to the fill ring and stack [n_rx, n_rx+n_tx) as
    free TX frames.  Called once by the control plane after binding."""
    r = ports.regs[p]
    frame = r[FRAME]
    tail = r[FILL_TAIL]
    for k in range(n_rx):
        poke_u64(r[FILL_DESC] + 8 * (tail & r[FILL_MASK]), k * frame)
        tail += 1
    r[FILL_TAIL] = tail & M32
    store_release_u32_at(r[FILL_PROD], tail)
    r[FILL_POSTED] = n_rx
    for k in range(n_tx):
        ports.lists[p, k] = (n_rx + k) * frame
    r[TX_FREE] = n_tx
    r[N_TX] = n_tx
    r[N_RX] = n_rx


@hot
def xdp_rx_burst(ports, pool, p, now, out, maxn):
    r = ports.regs[p]
    if r[FD] < 0:
        return 0
    head = r[RX_HEAD]
    prod = np.int64(load_acquire_u32_at(r[RX_PROD]))
    avail = (prod - head) & M32
    if avail == 0:
        return 0
    if avail > maxn:
        avail = maxn
    mask = r[RX_MASK]
    rdesc = r[RX_DESC]
    fmask = r[FILL_MASK]
    fdesc = r[FILL_DESC]
    umem = r[UMEM]
    chunk = ~(r[FRAME] - 1)
    cap = pool.data.shape[1]
    pbase = pool.data.ctypes.data
    pstride = pool.data.strides[0]
    ftail = r[FILL_TAIL]
    n = 0
    nbytes = 0
    nobuf = 0
    err = 0
    for k in range(avail):
        d = rdesc + DESC * ((head + k) & mask)
        a = np.int64(peek_u64(d))
        ln = np.int64(peek_u32(d + 8))
        if ln > cap:
            err += 1
        else:
            i = mbuf_alloc(pool)
            if i < 0:
                nobuf += 1
            else:
                copy_bytes(pbase + i * pstride, umem + a, ln)
                pool.length[i] = ln
                pool.ts[i] = now
                pool.port[i] = p
                out[n] = i
                n += 1
                nbytes += ln
        # The fill ring holds every RX frame, so it always has room.
        poke_u64(fdesc + 8 * (ftail & fmask), a & chunk)
        ftail += 1
    store_release_u32_at(r[RX_CONS], head + avail)
    store_release_u32_at(r[FILL_PROD], ftail)
    r[RX_HEAD] = (head + avail) & M32
    r[FILL_TAIL] = ftail & M32
    r[FILL_POSTED] += avail
    c = ports.cnt
    c[p, RX_PKTS] += n
    c[p, RX_BYTES] += nbytes
    if nobuf:
        c[p, RX_NOBUF] += nobuf
    if err:
        c[p, RX_ERR] += err
    return n


@hot
def xdp_rx_pending(ports, p):
    r = ports.regs[p]
    return r[FD] >= 0 and np.int64(load_acquire_u32_at(r[RX_PROD])) != r[RX_HEAD]


@hot
def xdp_tx_burst(ports, pool, p, now, bufs, n):
    r = ports.regs[p]
    if r[FD] < 0:
        return 0
    mask = r[TX_MASK]
    tail = r[TX_TAIL]
    room = mask + 1 - ((tail - r[TX_SEEN]) & M32)
    if room < n:
        seen = np.int64(load_acquire_u32_at(r[TX_CONS]))
        r[TX_SEEN] = seen
        room = mask + 1 - ((tail - seen) & M32)
    top = r[TX_FREE]
    frame = r[FRAME]
    tdesc = r[TX_DESC]
    umem = r[UMEM]
    pbase = pool.data.ctypes.data
    pstride = pool.data.strides[0]
    sent = 0
    nbytes = 0
    err = 0
    k = 0
    while k < n:
        i = bufs[k]
        ln = np.int64(pool.length[i])
        if ln <= 0 or ln > frame:
            # Accepted and dropped: a frame no UMEM buffer can carry.
            mbuf_free(pool, i)
            err += 1
            k += 1
            continue
        if room == 0 or top == 0:
            break
        top -= 1
        a = ports.lists[p, top]
        copy_bytes(umem + a, pbase + i * pstride, ln)
        d = tdesc + DESC * (tail & mask)
        poke_u64(d, a)
        poke_u32(d + 8, ln)
        poke_u32(d + 12, 0)
        tail += 1
        room -= 1
        mbuf_free(pool, i)
        sent += 1
        nbytes += ln
        k += 1
    if sent:
        store_release_u32_at(r[TX_PROD], tail)
        r[TX_TAIL] = tail & M32
    r[TX_FREE] = top
    c = ports.cnt
    c[p, TX_PKTS] += sent
    c[p, TX_BYTES] += nbytes
    if err:
        c[p, TX_ERR] += err
    return k


@hot
def xdp_service(ports, pool, p, now):
    """Kick TX if descriptors wait, reap completions, wake RX if asked."""
    r = ports.regs[p]
    fd = r[FD]
    if fd < 0:
        return 0
    work = 0
    c = ports.cnt
    tail = r[TX_TAIL]
    if tail != r[TX_SEEN]:
        seen = np.int64(load_acquire_u32_at(r[TX_CONS]))
        r[TX_SEEN] = seen
        if seen != tail and (r[NEED_WAKEUP] == 0 or
                             load_acquire_u32_at(r[TX_FLAGS]) & RING_NEED_WAKEUP):
            c[p, TX_KICKS] += 1
            if kick_tx(fd) >= 0:
                work += 1
            else:
                e = errno()
                if e == EAGAIN or e == EBUSY or e == ENOBUFS:
                    c[p, TX_BUSY] += 1
                else:
                    c[p, TX_ERR] += 1
    # Completions: sent frames come back to the free stack.
    head = r[COMP_HEAD]
    prod = np.int64(load_acquire_u32_at(r[COMP_PROD]))
    done = (prod - head) & M32
    if done:
        cmask = r[COMP_MASK]
        cdesc = r[COMP_DESC]
        top = r[TX_FREE]
        for k in range(done):
            ports.lists[p, top] = np.int64(peek_u64(cdesc + 8 * ((head + k) & cmask)))
            top += 1
        r[TX_FREE] = top
        store_release_u32_at(r[COMP_CONS], head + done)
        r[COMP_HEAD] = (head + done) & M32
        work += done
    # Zero-copy drivers may sleep until told the fill ring has frames again.
    if r[FILL_POSTED] and r[NEED_WAKEUP] and \
            load_acquire_u32_at(r[FILL_FLAGS]) & RING_NEED_WAKEUP:
        c[p, RX_WAKEUPS] += 1
        wake_rx(fd)
        r[FILL_POSTED] = 0
        work += 1
    return work
