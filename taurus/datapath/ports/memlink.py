"""In-memory links: a pair of MEM ports joined like a veth, with an optional
propagation delay and line rate.  Frames move by index (no copy); each carries
the time it is due at the far end, so under the virtual clock the engine can
jump straight to the next arrival.

A MEM port that no device owns is an *open end*: Python injects frames into
the link through it and collects what the link delivers to it (tests, tools).

Registers of a MEM port (regs[p, ...]) and its FIFO: lists[p] holds pairs
(frame index, due time); HEAD/TAIL count pairs ever dequeued/enqueued.

Arrivals: the MEM ports whose FIFO holds a frame are kept in a binary
min-heap (``ports.arr``, make_arrivals: arr[0] the size; place i in 1..P
holds a port number at arr[2i] and its key, the port's first frame's due
time, at arr[2i + 1], so that the compares of a sift read one short array,
not rows of ``regs`` 512 bytes apart; HPOS, a port's place, 0 when out).
Each port's key is also at arr[arr[1] + p] (INF when its FIFO is empty),
so whether a frame waits at a port (mem_rx_pending, asked for every port
of a polled switch and at every NIC poll) is one read of a short array.  A
send into an empty FIFO puts the port in, a receive moves it to its next
frame (or out), so under the virtual clock the engine finds the next
arrival and the ports with a frame due at the top of the heap, not by
asking every port (an open end's frames wait for Python at the top: the
engine then asks every port, as without the heap).  arr's last word
counts frames due the moment they were sent (a link without delay or
rate): a device polled later in the same pass must see them, as it would
asking its ports.
"""
import numba as nb
import numpy as np

from ..mbuf import mbuf_alloc, mbuf_free, mbuf_put_bytes
from ..hot import hot, hot_stage
from .common import INF, N_LIST, RX_BYTES, RX_PKTS, TX_BYTES, TX_PKTS

PEER, DELAY, RATE, HEAD, TAIL, TX_END, HPOS = range(7)
CAP = N_LIST // 2  # frames a link direction can hold


def make_arrivals(n_ports: int) -> np.ndarray:
    """The arrivals heap of n_ports ports, empty (ports.arr)."""
    a = np.zeros(3 * n_ports + 3, np.int64)
    a[1] = 2 * n_ports + 2                # where the ports' keys start
    a[a[1]:a[1] + n_ports] = INF
    return a


def memlink_connect(ports, a: int, b: int, delay_ns: int = 0, rate_bps: int = 0) -> None:
    """Join MEM ports a and b; rate_bps 0 means no serialization delay."""
    for x, y in ((a, b), (b, a)):
        ports.regs[x, PEER] = y
        ports.regs[x, DELAY] = delay_ns
        ports.regs[x, RATE] = rate_bps


@hot
def _arr_set(ports, p, t):
    """Port p's first frame is now due at t (INF: its FIFO is empty).  The
    sifts move a hole, not the entry, and write it once at its place."""
    H = ports.arr
    i = ports.regs[p, HPOS]
    if i == 0:
        if t >= INF:
            return
        H[0] += 1
        i = H[0]
    elif t >= INF:                        # out: the last takes its place
        n = H[0]
        H[0] = n - 1
        ports.regs[p, HPOS] = 0
        H[H[1] + p] = INF
        if i == n:
            return
        p = H[2 * n]
        t = H[2 * n + 1]
    while i > 1:                                             # up
        j = i >> 1
        if H[2 * j + 1] <= t:
            break
        q = H[2 * j]
        H[2 * i] = q
        H[2 * i + 1] = H[2 * j + 1]
        ports.regs[q, HPOS] = i
        i = j
    n = H[0]
    while True:                                              # down
        c = 2 * i
        if c > n:
            break
        if c + 1 <= n and H[2 * c + 3] < H[2 * c + 1]:
            c += 1
        if H[2 * c + 1] >= t:
            break
        q = H[2 * c]
        H[2 * i] = q
        H[2 * i + 1] = H[2 * c + 1]
        ports.regs[q, HPOS] = i
        i = c
    H[2 * i] = p
    H[2 * i + 1] = t
    H[H[1] + p] = t
    ports.regs[p, HPOS] = i


@hot
def mem_tx_burst(ports, pool, p, now, bufs, n):
    """Put up to n frames on the wire toward p's peer; returns how many fit."""
    q = ports.regs[p, PEER]
    if q < 0:
        return 0
    head = ports.regs[q, HEAD]
    tail = ports.regs[q, TAIL]
    delay = ports.regs[p, DELAY]
    rate = ports.regs[p, RATE]
    sent = 0
    nbytes = 0
    for k in range(n):
        if tail - head >= CAP:
            break
        i = bufs[k]
        ln = pool.length[i]
        t = now
        if rate > 0:
            # Serialization: the wire is busy until the previous frame has left.
            if ports.regs[p, TX_END] > t:
                t = ports.regs[p, TX_END]
            t += (np.int64(ln) * 8 * 1_000_000_000 + rate - 1) // rate
            ports.regs[p, TX_END] = t
        slot = (tail % CAP) * 2
        ports.lists[q, slot] = i
        ports.lists[q, slot + 1] = t + delay
        if t + delay <= now:
            ports.arr[ports.arr.shape[0] - 1] += 1
        tail += 1
        sent += 1
        nbytes += ln
    if sent and head == ports.regs[q, TAIL]:
        _arr_set(ports, q, ports.lists[q, (head % CAP) * 2 + 1])    # was empty
    ports.regs[q, TAIL] = tail
    ports.cnt[p, TX_PKTS] += sent
    ports.cnt[p, TX_BYTES] += nbytes
    return sent


@hot
def mem_send_at(ports, pool, p, now, i, due):
    """Put frame i on p's wire, due at the far end at `due` (or now, or
    after the frame before it, if later): for a sender that models the
    wire's rate and delay itself (a switch port), so the frame goes at
    once, not at its arrival.  False when the link is full, has no peer,
    or has a rate or delay of its own (the sender then hands frames over
    at their arrival, through mem_tx_burst)."""
    q = ports.regs[p, PEER]
    if q < 0 or ports.regs[p, DELAY] != 0 or ports.regs[p, RATE] != 0:
        return False
    head = ports.regs[q, HEAD]
    tail = ports.regs[q, TAIL]
    if tail - head >= CAP:
        return False
    t = max(due, now)
    if tail > head:                       # due times along one link never decrease
        t = max(t, ports.lists[q, ((tail - 1) % CAP) * 2 + 1])
    slot = (tail % CAP) * 2
    ports.lists[q, slot] = i
    ports.lists[q, slot + 1] = t
    if t <= now:
        ports.arr[ports.arr.shape[0] - 1] += 1
    if head == tail:
        _arr_set(ports, q, t)             # was empty
    ports.regs[q, TAIL] = tail + 1
    ports.cnt[p, TX_PKTS] += 1
    ports.cnt[p, TX_BYTES] += pool.length[i]
    return True


@hot
def mem_rx_burst(ports, pool, p, now, out, maxn):
    """Take up to maxn frames that have arrived at p by time now."""
    head = ports.regs[p, HEAD]
    tail = ports.regs[p, TAIL]
    n = 0
    nbytes = 0
    while head < tail and n < maxn:
        slot = (head % CAP) * 2
        if ports.lists[p, slot + 1] > now:
            break
        i = ports.lists[p, slot]
        pool.ts[i] = now
        pool.port[i] = p
        out[n] = i
        nbytes += pool.length[i]
        n += 1
        head += 1
    ports.regs[p, HEAD] = head
    if n:
        _arr_set(ports, p, ports.lists[p, (head % CAP) * 2 + 1] if head < tail else INF)
    ports.cnt[p, RX_PKTS] += n
    ports.cnt[p, RX_BYTES] += nbytes
    return n


@hot_stage          # inlined: the engine loop asks every pass
def mem_rx_pending(ports, p, now):
    """Has a frame arrived at p by `now` that nobody has taken yet?"""
    return ports.arr[ports.arr[1] + p] <= now


@hot
def mem_next_arrival(ports):
    """The earliest due time in the arrivals heap (INF: none)."""
    return ports.arr[3] if ports.arr[0] > 0 else INF


@hot
def mem_due_ports(ports, now, out):
    """The ports in the arrivals heap with a frame due by `now`, into out
    (their subtree at the top of the heap); returns how many."""
    H = ports.arr
    n = 0
    if H[0] == 0 or H[3] > now:
        return 0
    out[0] = 1                            # a stack of heap places, then the answer
    top = 1
    while top > 0:
        top -= 1
        i = out[top]
        out[out.shape[0] - 1 - n] = H[2 * i]
        n += 1
        for c in (2 * i, 2 * i + 1):
            if c <= H[0] and H[2 * c + 1] <= now:
                out[top] = c
                top += 1
    for k in range(n):                    # the answer to the front
        out[k] = out[out.shape[0] - 1 - k]
    return n


@hot
def mem_next_event(ports, p, now):
    """The first arrival at p after `now` (INF if none).  Due times along one
    link never decrease, so a binary search finds it even when frames that
    are already due wait at an open end."""
    lo = ports.regs[p, HEAD]
    hi = ports.regs[p, TAIL]
    while lo < hi:
        mid = (lo + hi) // 2
        if ports.lists[p, (mid % CAP) * 2 + 1] <= now:
            lo = mid + 1
        else:
            hi = mid
    if lo < ports.regs[p, TAIL]:
        return ports.lists[p, (lo % CAP) * 2 + 1]
    return INF


@nb.njit(cache=True)
def mem_inject(ports, pool, p, now, frame, n):
    """Open end: send one frame (bytes) from p into the link. False when the
    pool or the link is full."""
    i = mbuf_alloc(pool)
    if i < 0:
        return False
    mbuf_put_bytes(pool, i, frame, n)
    one = np.empty(1, np.int32)
    one[0] = i
    if mem_tx_burst(ports, pool, p, now, one, 1) == 1:
        return True
    mbuf_free(pool, i)
    return False


@nb.njit(cache=True)
def mem_collect(ports, pool, p, now, out_data, out_len):
    """Open end: move every frame that reached p by `now` into out_data rows;
    returns the count (at most out_data.shape[0])."""
    buf = np.empty(out_data.shape[0], np.int32)
    n = mem_rx_burst(ports, pool, p, now, buf, out_data.shape[0])
    for k in range(n):
        i = buf[k]
        ln = pool.length[i]
        m = min(ln, out_data.shape[1])
        out_data[k, :m] = pool.data[i, :m]
        out_len[k] = ln
        mbuf_free(pool, i)
    return n
