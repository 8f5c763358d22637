"""Numba loops for bench/io.py: raw-I/O ceilings and port-layer drivers.

The raw loops touch the kernel rings of a port the engine opened (through
the same registers the port layer uses) and do nothing else: no pool, no
per-frame copy except the one a forwarder cannot avoid, no counters.  They
read and write back the port's cursors (ring heads/tails, the AF_XDP free TX
frame stack, the AF_PACKET block cursor), so the raw loop and the port layer
can take turns on one socket and a measurement compares like with like: same
socket, same rings, same burst size, same kick policy (one kick per burst).

Every loop runs until `dur_ns` has passed on the engine's wall clock or
stop[0] becomes nonzero (checked every 64 iterations) and adds what it did
to st[...] (S_* slots).  `dur_ns <= 0` returns at once without touching any
ring, which is how bench/io.py compiles them before any port is open.
"""
import numba as nb
import numpy as np

import taurus.datapath  # noqa: F401  (selects the source-hashed Numba cache)
from taurus.datapath.clock import clock_now
from taurus.datapath.lowlevel import (copy_bytes, errno, kick_tx, load_acquire_u32,
                                      load_acquire_u64, store_release_u32, u32_view, u64_view)
from taurus.datapath.mbuf import HEADROOM, mbuf_alloc, mbuf_free
from taurus.datapath.ports import afpacket_ring as P
from taurus.datapath.ports import xdp_ring as X
from taurus.datapath.ports.dispatch import port_rx_burst, port_service, port_tx_burst

S_PKTS, S_BYTES, S_KICKS, S_BUSY, S_ERR, S_IDLE = range(6)
RAW_TX_FRAMES = 2048   # pool frames a raw TX loop keeps (the TX ring's size)
N_STATS = 8
M32 = 0xFFFFFFFF
CHECK = 63
EAGAIN, EBUSY, ENOBUFS, EINTR = 11, 16, 105, 4

# AF_XDP registers
FD, UMEM, FRAME = X.FD, X.UMEM, X.FRAME
FILL_PROD, FILL_DESC, FILL_MASK = X.FILL_PROD, X.FILL_DESC, X.FILL_MASK
COMP_PROD, COMP_CONS, COMP_DESC, COMP_MASK = X.COMP_PROD, X.COMP_CONS, X.COMP_DESC, X.COMP_MASK
RX_PROD, RX_CONS, RX_DESC, RX_MASK = X.RX_PROD, X.RX_CONS, X.RX_DESC, X.RX_MASK
TX_PROD, TX_CONS, TX_DESC, TX_MASK = X.TX_PROD, X.TX_CONS, X.TX_DESC, X.TX_MASK
FILL_TAIL, RX_HEAD, TX_TAIL, TX_SEEN, COMP_HEAD = (X.FILL_TAIL, X.RX_HEAD, X.TX_TAIL,
                                                   X.TX_SEEN, X.COMP_HEAD)
TX_FREE, TX_OUT, FILL_POSTED, SHIFT = X.TX_FREE, X.TX_OUT, X.FILL_POSTED, X.SHIFT

# AF_PACKET registers and ring layout
P_FD, P_RX_BASE, P_RX_BSZ, P_RX_NBLK = P.FD, P.RX_BASE, P.RX_BSZ, P.RX_NBLK
P_RX_BLK, P_RX_PKT, P_RX_OFF = P.RX_BLK, P.RX_PKT, P.RX_OFF
P_TX_BASE, P_TX_FSZ, P_TX_NR, P_TX_FPB, P_TX_BSZ = P.TX_BASE, P.TX_FSZ, P.TX_NR, P.TX_FPB, P.TX_BSZ
P_TX_HEAD, P_TX_UNSENT, P_TX_MAXLEN = P.TX_HEAD, P.TX_UNSENT, P.TX_MAXLEN
B_STATUS, B_NUM, B_FIRST = P.B_STATUS, P.B_NUM, P.B_FIRST
H_NEXT, H_SNAP, H_LEN, H_STATUS, H_MAC = P.H_NEXT, P.H_SNAP, P.H_LEN, P.H_STATUS, P.H_MAC
HDR3, TX_DATA_OFF = P.HDR3, P.TX_DATA_OFF
TP_STATUS_USER, TP_STATUS_KERNEL = P.TP_STATUS_USER, P.TP_STATUS_KERNEL
TP_STATUS_AVAILABLE, TP_STATUS_SEND_REQUEST = P.TP_STATUS_AVAILABLE, P.TP_STATUS_SEND_REQUEST


@nb.njit(cache=True, inline="always")
def _over(clk, end, stop):
    return clock_now(clk) >= end or load_acquire_u64(stop, 0) != 0


@nb.njit(cache=True, inline="always")
def _kick_result(r, st):
    """Account one kick whose sendto returned r."""
    st[S_KICKS] += 1
    if r < 0:
        e = errno()
        if e == EAGAIN or e == EBUSY or e == ENOBUFS or e == EINTR:
            st[S_BUSY] += 1
        else:
            st[S_ERR] += 1


# ---------------------------------------------------------------- AF_XDP

@nb.njit(cache=True, inline="always")
def _tx_rings(r):
    """The views xdp_raw_tx's half needs of the port with registers r: TX
    descriptors (as u64 and u32), TX producer/consumer, completion ring and
    its producer/consumer."""
    mask = r[TX_MASK]
    cmask = r[COMP_MASK]
    return (u64_view(r[TX_DESC], 2 * (mask + 1)), u32_view(r[TX_DESC], 4 * (mask + 1)),
            u32_view(r[TX_PROD], 1), u32_view(r[TX_CONS], 1),
            u64_view(r[COMP_DESC], cmask + 1), u32_view(r[COMP_PROD], 1),
            u32_view(r[COMP_CONS], 1))


@nb.njit(cache=True, inline="always")
def _tx_pass(rings, mask, cmask, lst, length, burst, fd, tail, chead, top, st):
    """One pass of the raw TX loop: reap completions back onto the free
    stack lst[:top], post up to `burst` of its frames, kick if anything is
    unsent.  Returns (tail, seen, chead, top, posted, reaped)."""
    desc64, desc32, txprod, txcons, comp, cprod, ccons = rings
    prod = np.int64(load_acquire_u32(cprod, 0))
    done = (prod - chead) & M32
    if done:
        for k in range(done):
            lst[top] = np.int64(comp[(chead + k) & cmask])
            top += 1
        chead = (chead + done) & M32
        store_release_u32(ccons, 0, chead)
    seen = np.int64(load_acquire_u32(txcons, 0))
    n = mask + 1 - ((tail - seen) & M32)
    if n > burst:
        n = burst
    if n > top:
        n = top
    if n > 0:
        for k in range(n):
            top -= 1
            s = tail & mask
            desc64[2 * s] = lst[top]
            desc32[4 * s + 2] = length
            desc32[4 * s + 3] = 0
            tail += 1
        tail &= M32
        store_release_u32(txprod, 0, tail)
    else:
        n = 0
    if seen != tail:
        _kick_result(kick_tx(fd), st)
    else:
        st[S_IDLE] += 1
    return tail, seen, chead, top, n, done


@nb.njit(cache=True)
def xdp_raw_tx(ports, p, length, burst, clk, dur_ns, stop, st):
    """Post pre-filled UMEM frames (the port's free TX stack) on the TX ring,
    kick, reap completions back onto the stack.  No pool, no copy."""
    if dur_ns <= 0:
        return 0
    r = ports.regs[p]
    fd = r[FD]
    mask = r[TX_MASK]
    cmask = r[COMP_MASK]
    rings = _tx_rings(r)
    lst = ports.lists[p]
    tail = r[TX_TAIL]
    seen = r[TX_SEEN]
    chead = r[COMP_HEAD]
    top = r[TX_FREE]
    sent = np.int64(0)
    reaped = np.int64(0)
    end = clock_now(clk) + dur_ns
    it = 0
    while True:
        if (it & CHECK) == 0 and _over(clk, end, stop):
            break
        it += 1
        tail, seen, chead, top, n, done = _tx_pass(rings, mask, cmask, lst, length, burst, fd,
                                                   tail, chead, top, st)
        sent += n
        reaped += done
    r[TX_TAIL] = tail
    r[TX_SEEN] = seen
    r[COMP_HEAD] = chead
    r[TX_FREE] = top
    r[TX_OUT] += sent - reaped      # the port layer's count of frames in flight
    st[S_PKTS] += sent
    st[S_BYTES] += sent * length
    return sent


@nb.njit(cache=True)
def xdp_raw_rx(ports, p, burst, clk, dur_ns, stop, st):
    """Read RX descriptors and hand their frames straight back to the fill
    ring.  No pool, no copy."""
    if dur_ns <= 0:
        return 0
    r = ports.regs[p]
    mask = r[RX_MASK]
    desc64 = u64_view(r[RX_DESC], 2 * (mask + 1))
    desc32 = u32_view(r[RX_DESC], 4 * (mask + 1))
    rxprod = u32_view(r[RX_PROD], 1)
    rxcons = u32_view(r[RX_CONS], 1)
    fmask = r[FILL_MASK]
    fill = u64_view(r[FILL_DESC], fmask + 1)
    fillprod = u32_view(r[FILL_PROD], 1)
    chunk = ~(r[FRAME] - 1)
    head = r[RX_HEAD]
    ftail = r[FILL_TAIL]
    got = np.int64(0)
    nbytes = np.int64(0)
    end = clock_now(clk) + dur_ns
    it = 0
    while True:
        if (it & CHECK) == 0 and _over(clk, end, stop):
            break
        it += 1
        prod = np.int64(load_acquire_u32(rxprod, 0))
        avail = (prod - head) & M32
        if avail == 0:
            st[S_IDLE] += 1
            continue
        if avail > burst:
            avail = burst
        for k in range(avail):
            s = (head + k) & mask
            nbytes += np.int64(desc32[4 * s + 2])
            fill[ftail & fmask] = np.int64(desc64[2 * s]) & chunk
            ftail += 1
        head = (head + avail) & M32
        ftail &= M32
        store_release_u32(rxcons, 0, head)
        store_release_u32(fillprod, 0, ftail)
        got += avail
    r[RX_HEAD] = head
    r[FILL_TAIL] = ftail
    r[FILL_POSTED] += got
    st[S_PKTS] += got
    st[S_BYTES] += nbytes
    return got


@nb.njit(cache=True)
def xdp_raw_txrx(ports, p, q, length, burst, clk, dur_ns, stop, st, rst):
    """xdp_raw_tx on port p and xdp_raw_rx on port q in one loop, a burst of
    each per iteration: a sender and its receiver's AF_XDP socket on one
    core (a veth delivers in the sender's kick).  TX counts go to st, RX
    counts to rst."""
    if dur_ns <= 0:
        return 0
    r = ports.regs[p]
    fd = r[FD]
    mask = r[TX_MASK]
    cmask = r[COMP_MASK]
    rings = _tx_rings(r)
    lst = ports.lists[p]
    tail = r[TX_TAIL]
    seen = r[TX_SEEN]
    chead = r[COMP_HEAD]
    top = r[TX_FREE]
    rr = ports.regs[q]
    rmask = rr[RX_MASK]
    rdesc64 = u64_view(rr[RX_DESC], 2 * (rmask + 1))
    rdesc32 = u32_view(rr[RX_DESC], 4 * (rmask + 1))
    rxprod = u32_view(rr[RX_PROD], 1)
    rxcons = u32_view(rr[RX_CONS], 1)
    fmask = rr[FILL_MASK]
    fill = u64_view(rr[FILL_DESC], fmask + 1)
    fillprod = u32_view(rr[FILL_PROD], 1)
    chunk = ~(rr[FRAME] - 1)
    head = rr[RX_HEAD]
    ftail = rr[FILL_TAIL]
    sent = np.int64(0)
    reaped = np.int64(0)
    got = np.int64(0)
    nbytes = np.int64(0)
    end = clock_now(clk) + dur_ns
    it = 0
    while True:
        if (it & CHECK) == 0 and _over(clk, end, stop):
            break
        it += 1
        # receive: what the last kick delivered goes straight back to the fill ring
        prod = np.int64(load_acquire_u32(rxprod, 0))
        avail = (prod - head) & M32
        if avail > burst:
            avail = burst
        if avail:
            for k in range(avail):
                s = (head + k) & rmask
                nbytes += np.int64(rdesc32[4 * s + 2])
                fill[ftail & fmask] = np.int64(rdesc64[2 * s]) & chunk
                ftail += 1
            head = (head + avail) & M32
            ftail &= M32
            store_release_u32(rxcons, 0, head)
            store_release_u32(fillprod, 0, ftail)
            got += avail
        tail, seen, chead, top, n, done = _tx_pass(rings, mask, cmask, lst, length, burst, fd,
                                                   tail, chead, top, st)
        sent += n
        reaped += done
    r[TX_TAIL] = tail
    r[TX_SEEN] = seen
    r[COMP_HEAD] = chead
    r[TX_FREE] = top
    r[TX_OUT] += sent - reaped
    st[S_PKTS] += sent
    st[S_BYTES] += sent * length
    rr[RX_HEAD] = head
    rr[FILL_TAIL] = ftail
    rr[FILL_POSTED] += got
    rst[S_PKTS] += got
    rst[S_BYTES] += nbytes
    return sent


@nb.njit(cache=True)
def xdp_raw_fwd(ports, a, b, burst, clk, dur_ns, stop, st):
    """Port a's RX ring -> one memcpy -> port b's TX ring; a's frame goes
    straight back to a's fill ring; kick b once per burst; reap b's
    completions.  A frame b has no room for waits on a's ring."""
    if dur_ns <= 0:
        return 0
    ra = ports.regs[a]
    rb = ports.regs[b]
    amask = ra[RX_MASK]
    adesc64 = u64_view(ra[RX_DESC], 2 * (amask + 1))
    adesc32 = u32_view(ra[RX_DESC], 4 * (amask + 1))
    rxprod = u32_view(ra[RX_PROD], 1)
    rxcons = u32_view(ra[RX_CONS], 1)
    fmask = ra[FILL_MASK]
    fill = u64_view(ra[FILL_DESC], fmask + 1)
    fillprod = u32_view(ra[FILL_PROD], 1)
    chunk = ~(ra[FRAME] - 1)
    umem_a = ra[UMEM]
    head = ra[RX_HEAD]
    ftail = ra[FILL_TAIL]
    fd = rb[FD]
    bmask = rb[TX_MASK]
    bdesc64 = u64_view(rb[TX_DESC], 2 * (bmask + 1))
    bdesc32 = u32_view(rb[TX_DESC], 4 * (bmask + 1))
    txprod = u32_view(rb[TX_PROD], 1)
    txcons = u32_view(rb[TX_CONS], 1)
    cmask = rb[COMP_MASK]
    comp = u64_view(rb[COMP_DESC], cmask + 1)
    cprod = u32_view(rb[COMP_PROD], 1)
    ccons = u32_view(rb[COMP_CONS], 1)
    umem_b = rb[UMEM]
    lst = ports.lists[b]
    tail = rb[TX_TAIL]
    seen = rb[TX_SEEN]
    chead = rb[COMP_HEAD]
    top = rb[TX_FREE]
    moved = np.int64(0)
    reaped = np.int64(0)
    nbytes = np.int64(0)
    end = clock_now(clk) + dur_ns
    it = 0
    while True:
        if (it & CHECK) == 0 and _over(clk, end, stop):
            break
        it += 1
        prod = np.int64(load_acquire_u32(cprod, 0))
        done = (prod - chead) & M32
        if done:
            for k in range(done):
                lst[top] = np.int64(comp[(chead + k) & cmask])
                top += 1
            reaped += done
            chead = (chead + done) & M32
            store_release_u32(ccons, 0, chead)
        seen = np.int64(load_acquire_u32(txcons, 0))
        n = (np.int64(load_acquire_u32(rxprod, 0)) - head) & M32
        if n > burst:
            n = burst
        room = bmask + 1 - ((tail - seen) & M32)
        if n > room:
            n = room
        if n > top:
            n = top
        if n > 0:
            for k in range(n):
                s = (head + k) & amask
                src = np.int64(adesc64[2 * s])
                ln = np.int64(adesc32[4 * s + 2])
                top -= 1
                dst = lst[top]
                copy_bytes(umem_b + dst, umem_a + src, ln)
                t = tail & bmask
                bdesc64[2 * t] = dst
                bdesc32[4 * t + 2] = ln
                bdesc32[4 * t + 3] = 0
                tail += 1
                fill[ftail & fmask] = src & chunk
                ftail += 1
                nbytes += ln
            head = (head + n) & M32
            ftail &= M32
            tail &= M32
            store_release_u32(rxcons, 0, head)
            store_release_u32(fillprod, 0, ftail)
            store_release_u32(txprod, 0, tail)
            moved += n
        if seen != tail:
            _kick_result(kick_tx(fd), st)
        elif n <= 0:
            st[S_IDLE] += 1
    ra[RX_HEAD] = head
    ra[FILL_TAIL] = ftail
    ra[FILL_POSTED] += moved
    rb[TX_TAIL] = tail
    rb[TX_SEEN] = seen
    rb[COMP_HEAD] = chead
    rb[TX_FREE] = top
    rb[TX_OUT] += moved - reaped
    st[S_PKTS] += moved
    st[S_BYTES] += nbytes
    return moved


@nb.njit(cache=True)
def xdp_prefill_tx(ports, pool, p, tmpl, n, count):
    """Give the raw TX loops of an AF_XDP port a stack of `count` pool
    frames of their own (UMEM addresses in lists[p]; taken once, kept), and
    write tmpl[:n] into every frame on it."""
    r = ports.regs[p]
    umem = r[UMEM]
    while r[TX_FREE] < count:
        i = mbuf_alloc(pool)
        if i < 0:
            break
        ports.lists[p, r[TX_FREE]] = (np.int64(i) << r[SHIFT]) + HEADROOM
        r[TX_FREE] += 1
    src = tmpl.ctypes.data
    for k in range(r[TX_FREE]):
        copy_bytes(umem + ports.lists[p, k], src, n)
    return r[TX_FREE]


# ---------------------------------------------------------------- AF_PACKET

@nb.njit(cache=True, inline="always")
def _pkt_slot(base, head, fpb, tbsz, fsz):
    return base + (head // fpb) * tbsz + (head % fpb) * fsz


@nb.njit(cache=True, inline="always")
def _pkt_kick(fd, unsent, st):
    """One sendto for flagged slots; returns what stays unsent (as pkt_service)."""
    rr = kick_tx(fd)
    _kick_result(rr, st)
    if rr > 0:
        unsent -= rr
        return unsent if unsent > 0 else 0
    if rr == 0:
        return 0
    return unsent


@nb.njit(cache=True)
def pkt_raw_tx(ports, p, length, burst, clk, dur_ns, stop, st):
    """Flag pre-filled TX slots SEND_REQUEST (length only), one sendto per
    burst.  No pool, no copy."""
    if dur_ns <= 0:
        return 0
    r = ports.regs[p]
    fd = r[P_FD]
    base = r[P_TX_BASE]
    fsz = r[P_TX_FSZ]
    nr = r[P_TX_NR]
    fpb = r[P_TX_FPB]
    tbsz = r[P_TX_BSZ]
    head = r[P_TX_HEAD]
    unsent = r[P_TX_UNSENT]
    sent = np.int64(0)
    end = clock_now(clk) + dur_ns
    it = 0
    while True:
        if (it & CHECK) == 0 and _over(clk, end, stop):
            break
        it += 1
        n = 0
        while n < burst:
            w = u32_view(_pkt_slot(base, head, fpb, tbsz, fsz), HDR3 >> 2)
            if load_acquire_u32(w, H_STATUS) != TP_STATUS_AVAILABLE:
                break
            w[H_NEXT] = 0
            w[H_LEN] = length
            store_release_u32(w, H_STATUS, TP_STATUS_SEND_REQUEST)
            head += 1
            if head == nr:
                head = 0
            n += 1
        sent += n
        unsent += n * length
        if unsent > 0:
            unsent = _pkt_kick(fd, unsent, st)
        else:
            st[S_IDLE] += 1
    r[P_TX_HEAD] = head
    r[P_TX_UNSENT] = unsent
    st[S_PKTS] += sent
    st[S_BYTES] += sent * length
    return sent


@nb.njit(cache=True)
def pkt_raw_rx(ports, p, clk, dur_ns, stop, st):
    """Walk each block the kernel hands over (read every packet header) and
    give it straight back.  No pool, no copy."""
    if dur_ns <= 0:
        return 0
    r = ports.regs[p]
    base = r[P_RX_BASE]
    bsz = r[P_RX_BSZ]
    nblk = r[P_RX_NBLK]
    blk = r[P_RX_BLK]
    k = r[P_RX_PKT]
    off = r[P_RX_OFF]
    got = np.int64(0)
    nbytes = np.int64(0)
    end = clock_now(clk) + dur_ns
    it = 0
    while True:
        if (it & CHECK) == 0 and _over(clk, end, stop):
            break
        it += 1
        w = u32_view(base + blk * bsz, bsz >> 2)
        if (load_acquire_u32(w, B_STATUS) & TP_STATUS_USER) == 0:
            st[S_IDLE] += 1
            continue
        npk = np.int64(w[B_NUM])
        if k == 0:
            off = np.int64(w[B_FIRST])
        while k < npk:
            if off < HDR3 or off + HDR3 > bsz or (off & 3) != 0:
                st[S_ERR] += npk - k
                break
            h = off >> 2
            nbytes += np.int64(w[h + H_SNAP])
            off += np.int64(w[h + H_NEXT])
            k += 1
            got += 1
        store_release_u32(w, B_STATUS, TP_STATUS_KERNEL)
        blk += 1
        if blk == nblk:
            blk = 0
        k = 0
        off = 0
    r[P_RX_BLK] = blk
    r[P_RX_PKT] = k
    r[P_RX_OFF] = off
    st[S_PKTS] += got
    st[S_BYTES] += nbytes
    return got


@nb.njit(cache=True)
def pkt_raw_fwd(ports, a, b, burst, clk, dur_ns, stop, st):
    """Packets of a's RX blocks -> one memcpy each -> b's TX slots; one
    sendto per burst; a block goes back once all its packets left.  A packet
    b has no slot for waits in its block (untagged frames only)."""
    if dur_ns <= 0:
        return 0
    ra = ports.regs[a]
    rb = ports.regs[b]
    base = ra[P_RX_BASE]
    bsz = ra[P_RX_BSZ]
    nblk = ra[P_RX_NBLK]
    blk = ra[P_RX_BLK]
    k = ra[P_RX_PKT]
    off = ra[P_RX_OFF]
    fd = rb[P_FD]
    tbase = rb[P_TX_BASE]
    fsz = rb[P_TX_FSZ]
    nr = rb[P_TX_NR]
    fpb = rb[P_TX_FPB]
    tbsz = rb[P_TX_BSZ]
    thead = rb[P_TX_HEAD]
    unsent = rb[P_TX_UNSENT]
    maxlen = rb[P_TX_MAXLEN]
    moved = np.int64(0)
    nbytes = np.int64(0)
    end = clock_now(clk) + dur_ns
    it = 0
    while True:
        if (it & CHECK) == 0 and _over(clk, end, stop):
            break
        it += 1
        addr = base + blk * bsz
        w = u32_view(addr, bsz >> 2)
        n = 0
        if (load_acquire_u32(w, B_STATUS) & TP_STATUS_USER) != 0:
            npk = np.int64(w[B_NUM])
            if k == 0:
                off = np.int64(w[B_FIRST])
            while k < npk and n < burst:
                if off < HDR3 or off + HDR3 > bsz or (off & 3) != 0:
                    st[S_ERR] += npk - k
                    k = npk
                    break
                h = off >> 2
                snap = np.int64(w[h + H_SNAP])
                if snap <= maxlen:
                    tw = u32_view(_pkt_slot(tbase, thead, fpb, tbsz, fsz), HDR3 >> 2)
                    if load_acquire_u32(tw, H_STATUS) != TP_STATUS_AVAILABLE:
                        break  # b's ring is full: kick, come back
                    copy_bytes(_pkt_slot(tbase, thead, fpb, tbsz, fsz) + TX_DATA_OFF,
                               addr + off + np.int64(w[h + H_MAC] & 0xFFFF), snap)
                    tw[H_NEXT] = 0
                    tw[H_LEN] = snap
                    store_release_u32(tw, H_STATUS, TP_STATUS_SEND_REQUEST)
                    thead += 1
                    if thead == nr:
                        thead = 0
                    unsent += snap
                    nbytes += snap
                    n += 1
                else:
                    st[S_ERR] += 1
                off += np.int64(w[h + H_NEXT])
                k += 1
            if k >= npk:
                store_release_u32(w, B_STATUS, TP_STATUS_KERNEL)
                blk += 1
                if blk == nblk:
                    blk = 0
                k = 0
                off = 0
        moved += n
        if unsent > 0:
            unsent = _pkt_kick(fd, unsent, st)
        elif n == 0:
            st[S_IDLE] += 1
    ra[P_RX_BLK] = blk
    ra[P_RX_PKT] = k
    ra[P_RX_OFF] = off
    rb[P_TX_HEAD] = thead
    rb[P_TX_UNSENT] = unsent
    st[S_PKTS] += moved
    st[S_BYTES] += nbytes
    return moved


@nb.njit(cache=True)
def pkt_prefill_tx(ports, p, tmpl, n):
    """Write tmpl[:n] as the frame of every TX slot of a PACKET port."""
    r = ports.regs[p]
    src = tmpl.ctypes.data
    for head in range(r[P_TX_NR]):
        copy_bytes(_pkt_slot(r[P_TX_BASE], head, r[P_TX_FPB], r[P_TX_BSZ], r[P_TX_FSZ])
                   + TX_DATA_OFF, src, n)
    return r[P_TX_NR]


# ---------------------------------------------------------------- port layer

@nb.njit(cache=True)
def port_tx_loop(ports, pool, p, length, bufs, clk, dur_ns, stop, st):
    """What a sending application does with the port layer: allocate a burst
    of pool frames (their bytes were written once, beforehand; only the
    length is set here), port_tx_burst, free what was not taken,
    port_service."""
    if dur_ns <= 0:
        return 0
    burst = bufs.shape[0]
    sent = np.int64(0)
    end = clock_now(clk) + dur_ns
    it = 0
    while True:
        now = clock_now(clk)
        if (it & CHECK) == 0 and (now >= end or load_acquire_u64(stop, 0) != 0):
            break
        it += 1
        n = 0
        while n < burst:
            i = mbuf_alloc(pool)
            if i < 0:
                break
            pool.length[i] = length
            bufs[n] = i
            n += 1
        k = port_tx_burst(ports, pool, p, now, bufs, n)
        for j in range(k, n):
            mbuf_free(pool, bufs[j])
        sent += k
        if port_service(ports, pool, p, now) == 0 and k == 0:
            st[S_IDLE] += 1
    st[S_PKTS] += sent
    st[S_BYTES] += sent * length
    return sent


@nb.njit(cache=True)
def port_rx_loop(ports, pool, p, out, clk, dur_ns, stop, st):
    """What a receiving application does with the port layer: port_rx_burst,
    free every frame, port_service."""
    if dur_ns <= 0:
        return 0
    got = np.int64(0)
    nbytes = np.int64(0)
    end = clock_now(clk) + dur_ns
    it = 0
    while True:
        now = clock_now(clk)
        if (it & CHECK) == 0 and (now >= end or load_acquire_u64(stop, 0) != 0):
            break
        it += 1
        n = port_rx_burst(ports, pool, p, now, out, out.shape[0])
        for k in range(n):
            nbytes += pool.length[out[k]]
            mbuf_free(pool, out[k])
        got += n
        if port_service(ports, pool, p, now) == 0 and n == 0:
            st[S_IDLE] += 1
    st[S_PKTS] += got
    st[S_BYTES] += nbytes
    return got


@nb.njit(cache=True)
def port_settle(ports, pool, p, clk, dur_ns):
    """port_service for a while: kicks what waits, reaps completions."""
    end = clock_now(clk) + dur_ns
    while clock_now(clk) < end:
        port_service(ports, pool, p, clock_now(clk))
