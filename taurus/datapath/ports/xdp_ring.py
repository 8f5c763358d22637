"""Numba data path of the AF_XDP port: four kernel rings reached through
addresses held in the port's registers (set up by ``xdp.open_xdp_port``).

The UMEM is the engine's frame pool (see ``mbuf``): frames are received into
and sent from pool frames in place.  The port lends pool frames to the fill
ring and refills it with a fresh frame for each one received; a frame handed
to the TX ring stays the port's until the kernel returns it on the
completion ring, then goes back to the pool.  A UMEM address is a chunk
offset: frame i's data is at ``i * FRAME + HEADROOM``.

Ring indices are free-running u32 counters shared with the kernel; we keep
our own copies in int64 registers and compare them modulo 2**32.  Our side
publishes with store-release and reads the kernel's side with load-acquire.
Rings are reached by address (lowlevel.peek/poke), never through array
views, so the whole path compiles without reference counting (``hot``).
"""
import numpy as np

from ..lowlevel import (errno, kick_tx, load_acquire_u32_at, move_bytes, peek_u32, peek_u64,
                        poke_u32, poke_u64, prefetch, store_release_u32_at, wake_rx)
from ..mbuf import HEADROOM, mbuf_alloc, mbuf_free, mbuf_received
from ..hot import hot
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
 TX_FREE, TX_MAX, NEED_WAKEUP, FILL_POSTED,
 N_RX, ZEROCOPY, ATTACH_MODE, TX_BUDGET, QUEUE, IFINDEX,
 SHIFT, TX_OUT, LENT, CAP, FILL_TARGET, FILL_CALM) = range(43)
"""FD socket (-1: closed port, every call returns 0); UMEM/UMEM_SIZE/FRAME
UMEM base address (the pool's chunk 0), size, chunk size (power of two,
= 1 << SHIFT); *_PROD/*_CONS/*_DESC addresses of each ring's producer word,
consumer word, entries; *_MASK ring size - 1; FILL_FLAGS/TX_FLAGS addresses
of the need-wakeup flag words.  Our cursors: FILL_TAIL fill producer,
RX_HEAD rx consumer, TX_TAIL tx producer, TX_SEEN last tx consumer read from
the kernel, COMP_HEAD completion consumer.  TX_OUT frames on the TX or
completion ring (at most TX_MAX, the completion ring's size); LENT frames
lent for RX (on the fill ring, in the kernel, on the RX ring), kept at
FILL_TARGET (fill_adapt), at most N_RX; FILL_CALM polls since the RX ring
last held much; CAP bytes a frame may have (FRAME - HEADROOM).
NEED_WAKEUP 1 when the kernel's need-wakeup ring flags mean something
(zero-copy; copy mode never sets them, so there we always kick), FILL_POSTED fill entries posted since the last RX wake-up.  TX_FREE
counts a stack of frames in lists[p] that bench/_rawloops' raw TX loops own.
ZEROCOPY .. IFINDEX are informational (set by the control plane)."""

M32 = 0xFFFFFFFF
RING_NEED_WAKEUP = 1  # XDP_RING_NEED_WAKEUP
EAGAIN, EBUSY, ENOBUFS = 11, 16, 105
DESC = 16  # struct xdp_desc: u64 addr, u32 len, u32 options
# Frames lent for RX follow need: few keep them hot in the cache (a deep
# fill ring hands the kernel frames last touched thousands of frames ago);
# an engine that was away long enough to let the RX ring fill halfway gets
# twice as many, up to N_RX; a long quiet spell halves them again.
FILL_START, FILL_MIN, FILL_QUIET = 256, 64, 1 << 16


@hot
def _fill(ports, pool, p, want):
    """Lend up to `want` pool frames to the fill ring; returns how many."""
    r = ports.regs[p]
    frame = r[FRAME]
    fdesc = r[FILL_DESC]
    fmask = r[FILL_MASK]
    tail = r[FILL_TAIL]
    n = 0
    while n < want:
        i = mbuf_alloc(pool)
        if i < 0:
            break
        poke_u64(fdesc + 8 * (tail & fmask), i * frame)
        tail += 1
        n += 1
    if n:
        store_release_u32_at(r[FILL_PROD], tail)
        r[FILL_TAIL] = tail & M32
        r[FILL_POSTED] += n
        r[LENT] += n
    return n


@hot
def fill_adapt(r, waiting):
    """Adjust FILL_TARGET to `waiting`, the frames on the RX ring at a poll."""
    t = r[FILL_TARGET]
    if 2 * waiting >= t and t < r[N_RX]:
        r[FILL_TARGET] = min(2 * t, r[N_RX])
        r[FILL_CALM] = 0
    elif 8 * waiting < t:
        r[FILL_CALM] += 1
        if r[FILL_CALM] >= FILL_QUIET and t > FILL_MIN:
            r[FILL_TARGET] = max(t // 2, FILL_MIN)
            r[FILL_CALM] = 0


@hot
def xdp_prime(ports, pool, p, n_rx):
    """Lend pool frames to the fill ring (FILL_START, at most n_rx, which
    bounds the adaptive target).  Called once by the control plane after
    binding; returns how many the pool had."""
    r = ports.regs[p]
    r[N_RX] = n_rx
    r[FILL_TARGET] = min(n_rx, FILL_START)
    return _fill(ports, pool, p, r[FILL_TARGET])


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
    fill_adapt(r, avail)
    if avail > maxn:
        avail = maxn
    mask = r[RX_MASK]
    rdesc = r[RX_DESC]
    umem = r[UMEM]
    frame = r[FRAME]
    shift = r[SHIFT]
    cap = r[CAP]
    n = 0
    nbytes = 0
    err = 0
    for k in range(avail):
        d = rdesc + DESC * ((head + k) & mask)
        a = np.int64(peek_u64(d))
        ln = np.int64(peek_u32(d + 8))
        i = a >> shift
        off = a - (i << shift)
        if ln > cap or off + ln > frame:
            # The kernel never hands out more than a chunk holds; a bad
            # descriptor's frame goes back to the pool (and is replaced).
            err += 1
            mbuf_free(pool, i)
            continue
        if off != HEADROOM:
            # A program that moved the packet start: put it where rows begin.
            move_bytes(umem + (i << shift) + HEADROOM, umem + a, ln)
        # The kernel wrote it a while ago: start fetching the headers the
        # devices will parse before they get to it (as DPDK's RX loops do).
        prefetch(umem + (i << shift) + HEADROOM)
        prefetch(umem + (i << shift) + HEADROOM + 64)
        mbuf_received(pool, i, ln, now, p)
        out[n] = i
        n += 1
        nbytes += ln
    store_release_u32_at(r[RX_CONS], head + avail)
    r[RX_HEAD] = (head + avail) & M32
    r[LENT] -= avail
    # Fresh frames for those taken, up to the target.
    want = r[FILL_TARGET] - r[LENT]
    got = _fill(ports, pool, p, want) if want > 0 else 0
    c = ports.cnt
    c[p, RX_PKTS] += n
    c[p, RX_BYTES] += nbytes
    if got < want:
        c[p, RX_NOBUF] += min(avail, want - got)   # fill slots left empty: the pool ran dry
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
    # Every frame sent needs a completion slot, so that ring bounds it too.
    out_room = r[TX_MAX] - r[TX_OUT]
    if out_room < room:
        room = out_room
    shift = r[SHIFT]
    cap = r[CAP]
    tdesc = r[TX_DESC]
    sent = 0
    nbytes = 0
    err = 0
    k = 0
    while k < n:
        i = bufs[k]
        ln = np.int64(pool.length[i])
        if ln <= 0 or ln > cap:
            # Accepted and dropped: a frame no UMEM chunk can carry.
            mbuf_free(pool, i)
            err += 1
            k += 1
            continue
        if room == 0:
            break
        d = tdesc + DESC * (tail & mask)
        poke_u64(d, (np.int64(i) << shift) + HEADROOM)
        poke_u32(d + 8, ln)
        poke_u32(d + 12, 0)
        tail += 1
        room -= 1
        sent += 1
        nbytes += ln
        k += 1
    if sent:
        store_release_u32_at(r[TX_PROD], tail)
        r[TX_TAIL] = tail & M32
        r[TX_OUT] += sent
    c = ports.cnt
    c[p, TX_PKTS] += sent
    c[p, TX_BYTES] += nbytes
    if err:
        c[p, TX_ERR] += err
    return k


@hot
def xdp_service(ports, pool, p, now):
    """Kick TX if descriptors wait, reap completions, refill the fill ring
    if the pool ran dry before, wake RX if asked."""
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
    # Completions: sent frames go back to the pool.
    head = r[COMP_HEAD]
    prod = np.int64(load_acquire_u32_at(r[COMP_PROD]))
    done = (prod - head) & M32
    if done:
        cmask = r[COMP_MASK]
        cdesc = r[COMP_DESC]
        shift = r[SHIFT]
        for k in range(done):
            mbuf_free(pool, np.int64(peek_u64(cdesc + 8 * ((head + k) & cmask))) >> shift)
        store_release_u32_at(r[COMP_CONS], head + done)
        r[COMP_HEAD] = (head + done) & M32
        r[TX_OUT] -= done
        work += done
    if r[LENT] < r[FILL_TARGET]:         # the pool ran dry before, or the target grew
        work += _fill(ports, pool, p, r[FILL_TARGET] - r[LENT])
    # Zero-copy drivers may sleep until told the fill ring has frames again.
    if r[FILL_POSTED] and r[NEED_WAKEUP] and \
            load_acquire_u32_at(r[FILL_FLAGS]) & RING_NEED_WAKEUP:
        c[p, RX_WAKEUPS] += 1
        wake_rx(fd)
        r[FILL_POSTED] = 0
        work += 1
    return work


@hot
def _return_span(ports, pool, p, desc, mask, stride, lo, hi):
    """Free the frames of ring entries [lo, hi) (u32 cursors)."""
    shift = ports.regs[p, SHIFT]
    n = (hi - lo) & M32
    for k in range(n):
        mbuf_free(pool, np.int64(peek_u64(desc + stride * ((lo + k) & mask))) >> shift)
    return n


@hot
def xdp_reclaim(ports, pool, p):
    """Return to the pool every frame still on the port's rings: lent to the
    fill ring, received but not taken, queued for TX, completed but not
    reaped.  Only once the XDP program is detached (no more RX); returns
    TX frames the kernel still holds (lost with the socket; 0 when idle)."""
    r = ports.regs[p]
    if r[FD] < 0:
        return 0
    _return_span(ports, pool, p, r[FILL_DESC], r[FILL_MASK], 8,
                 np.int64(load_acquire_u32_at(r[FILL_CONS])), r[FILL_TAIL])
    _return_span(ports, pool, p, r[RX_DESC], r[RX_MASK], DESC, r[RX_HEAD],
                 np.int64(load_acquire_u32_at(r[RX_PROD])))
    out = r[TX_OUT]
    out -= _return_span(ports, pool, p, r[TX_DESC], r[TX_MASK], DESC,
                        np.int64(load_acquire_u32_at(r[TX_CONS])), r[TX_TAIL])
    out -= _return_span(ports, pool, p, r[COMP_DESC], r[COMP_MASK], 8, r[COMP_HEAD],
                        np.int64(load_acquire_u32_at(r[COMP_PROD])))
    r[TX_OUT] = 0
    r[LENT] = 0
    return out
