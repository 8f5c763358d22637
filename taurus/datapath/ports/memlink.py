"""In-memory links: a pair of MEM ports joined like a veth, with an optional
propagation delay and line rate.  Frames move by index (no copy); each carries
the time it is due at the far end, so under the virtual clock the engine can
jump straight to the next arrival.

A MEM port that no device owns is an *open end*: Python injects frames into
the link through it and collects what the link delivers to it (tests, tools).

Registers of a MEM port (regs[p, ...]) and its FIFO: a ring of pairs
(frame index, due time) of a power-of-two size; HEAD/TAIL count pairs
dequeued/enqueued since it was last empty (then both start over at 0, so
a link that is mostly empty, as most are, keeps reusing its first cache
lines).  The rings of all ports lie packed in ``lists`` read as one flat
array (each aligned to its size, so none crosses a row): FIFO holds where
a port's ring starts (bits 16 up, a flat word index) and its size less
one (low 16 bits), 0 when it has none (a port joined with fifo_frames=0
gets its ring from memlink_fifo before its first frame).  A ring is as
large as its link needs (memlink_fifo_frames: twice the wire's bandwidth
x delay in minimum frames, plus room for a sender's burst), so a large
fabric's rings take little memory (a k = 8 fat-tree's 768: 1.1 MiB); a
link whose senders do not pace (an open end, a device sending at a
link's rate) gets CAP.  A full ring refuses frames:
mem_tx_burst's sender counts them as tx_drop (dispatch.port_tx_or_drop),
a switch keeps them in its own in-flight FIFO (mem_send_at).

Arrivals: the MEM ports whose FIFO holds a frame are kept in a binary
min-heap (``ports.arr``, make_arrivals: arr[0] the size; place i in 1..P
holds a port number at arr[2i] and its key, the port's first frame's due
time, at arr[2i + 1]).  Each port's key is also at arr[arr[1] + 2p] (INF
when its FIFO is empty) and its place beside it, at arr[arr[1] + 2p + 1]
(0 when out), so a sift, and whether a frame waits at a port
(mem_rx_pending, asked for every port of a polled switch and at every NIC
poll), read one short array, not rows of ``regs`` 512 bytes apart.  A
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

PEER, DELAY, RATE, HEAD, TAIL, TX_END, _SPARE, FIFO = range(8)
CAP = N_LIST // 2  # most frames a link direction can hold (and an unsized link's)
MIN_FRAME = 64     # bytes: the shortest frame a ring's size allows for
PACED_ROOM = 8     # frames beyond bandwidth x delay: a switch port's (it schedules each)
BURST_ROOM = 128   # ... a host's (a NIC hands over its TX batch, 64 frames, at once)
_ROW = N_LIST.bit_length() - 1          # lists[w >> _ROW, w & (N_LIST - 1)]: flat word w
assert N_LIST == 1 << _ROW and CAP <= 0xFFFF + 1


def memlink_fifo_frames(rate_bps: int, delay_ns: int, room: int = BURST_ROOM) -> int:
    """Frames a ring needs for a wire of this rate and delay whose sender
    paces at the rate, handing over at most `room` frames at once: twice
    the minimum frames in flight, plus room, as a power of two (at most
    CAP; a wire without a rate, CAP)."""
    if rate_bps <= 0:
        return CAP
    flight = -(-int(rate_bps) * max(int(delay_ns), 0) // (8 * MIN_FRAME * 1_000_000_000)) + 1
    need = 2 * flight + room
    return min(CAP, 1 << (need - 1).bit_length())


def memlink_fifo(ports, p: int, frames: int) -> None:
    """Give MEM port p a receive ring of `frames` (a power of two, 2..CAP)
    in ports.lists, after the rings given so far (arr's word before last
    counts the words handed out).  Once per port: every port then fits."""
    if frames < 2 or frames > CAP or frames & (frames - 1):
        raise ValueError(f"a memory link's ring holds a power of two of 2..{CAP} frames, "
                         f"not {frames}")
    if ports.regs[p, FIFO] != 0:
        raise ValueError(f"port {p} has its ring already")
    words = 2 * frames
    used = int(ports.arr[-2])
    base = -(-used // words) * words
    if base + words > ports.lists.size:
        raise ValueError(f"no room for port {p}'s ring ({ports.lists.size} words in all)")
    ports.arr[-2] = base + words
    ports.regs[p, FIFO] = (base << 16) | (frames - 1)


def make_arrivals(n_ports: int) -> np.ndarray:
    """The arrivals heap of n_ports ports, empty (ports.arr); its word
    before last counts the ring words memlink_fifo handed out."""
    a = np.zeros(4 * n_ports + 4, np.int64)
    a[1] = 2 * n_ports + 2                # where the ports' (key, place) pairs start
    a[a[1]:a[1] + 2 * n_ports:2] = INF
    return a


def memlink_connect(ports, a: int, b: int, delay_ns: int = 0, rate_bps: int = 0,
                    fifo_frames: int = CAP) -> None:
    """Join MEM ports a and b; rate_bps 0 means no serialization delay.
    Each gets a ring of fifo_frames; 0: none yet (memlink_fifo, before the
    first frame)."""
    for x, y in ((a, b), (b, a)):
        ports.regs[x, PEER] = y
        ports.regs[x, DELAY] = delay_ns
        ports.regs[x, RATE] = rate_bps
        if fifo_frames:
            memlink_fifo(ports, x, fifo_frames)


def mem_waiting(ports, p: int) -> list[int]:
    """The due times of the frames in p's ring, oldest first (Python: tests, tools)."""
    f = int(ports.regs[p, FIFO])
    flat = ports.lists.reshape(-1)
    return [int(flat[(f >> 16) + ((k & (f & 0xFFFF)) << 1) + 1])
            for k in range(int(ports.regs[p, HEAD]), int(ports.regs[p, TAIL]))]


@hot_stage
def _word(ports, p, k):
    """The flat word of p's ring where its k-th frame ever (its index; the
    due time is the next word)."""
    f = ports.regs[p, FIFO]
    return (f >> 16) + ((k & (f & 0xFFFF)) << 1)


@hot_stage
def _get(ports, w):
    return ports.lists[w >> _ROW, w & (N_LIST - 1)]


@hot_stage
def _put(ports, w, x):
    ports.lists[w >> _ROW, w & (N_LIST - 1)] = x


@hot_stage
def _room(ports, q):
    """How many frames q's ring holds."""
    return (ports.regs[q, FIFO] & 0xFFFF) + 1


@hot_stage
def _enqueue(ports, q, tail, i, t, now):
    """Frame i into q's ring as its tail-th, due at t (one due at once is
    counted in arr's last word: a device polled later in the pass sees it)."""
    w = _word(ports, q, tail)
    _put(ports, w, i)
    _put(ports, w + 1, t)
    if t <= now:
        ports.arr[ports.arr.shape[0] - 1] += 1


@hot_stage
def _place(H, p):
    """Port p's place in the arrivals heap H (0: out)."""
    return H[H[1] + 2 * p + 1]


@hot_stage
def _set_place(H, p, i):
    H[H[1] + 2 * p + 1] = i


@hot
def _arr_set(ports, p, t):
    """Port p's first frame is now due at t (INF: its FIFO is empty).  The
    sifts move a hole, not the entry, and write it once at its place."""
    H = ports.arr
    i = _place(H, p)
    if i == 0:
        if t >= INF:
            return
        H[0] += 1
        i = H[0]
    elif t >= INF:                        # out: the last takes its place
        n = H[0]
        H[0] = n - 1
        _set_place(H, p, 0)
        H[H[1] + 2 * p] = INF
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
        _set_place(H, q, i)
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
        _set_place(H, q, i)
        i = c
    H[2 * i] = p
    H[2 * i + 1] = t
    H[H[1] + 2 * p] = t
    _set_place(H, p, i)


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
    room = _room(ports, q)
    sent = 0
    nbytes = 0
    for k in range(n):
        if tail - head >= room:
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
        _enqueue(ports, q, tail, i, t + delay, now)
        tail += 1
        sent += 1
        nbytes += ln
    if sent and head == ports.regs[q, TAIL]:
        _arr_set(ports, q, _get(ports, _word(ports, q, head) + 1))    # was empty
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
    if tail - head >= _room(ports, q):
        return False
    t = max(due, now)
    if tail > head:                       # due times along one link never decrease
        t = max(t, _get(ports, _word(ports, q, tail - 1) + 1))
    _enqueue(ports, q, tail, i, t, now)
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
        w = _word(ports, p, head)
        if _get(ports, w + 1) > now:
            break
        i = _get(ports, w)
        pool.ts[i] = now
        pool.port[i] = p
        out[n] = i
        nbytes += pool.length[i]
        n += 1
        head += 1
    if n:
        if head < tail:
            _arr_set(ports, p, _get(ports, _word(ports, p, head) + 1))
        else:
            _arr_set(ports, p, INF)
            head = 0                      # empty: the ring starts over, in lines still cached
            ports.regs[p, TAIL] = 0
    ports.regs[p, HEAD] = head
    ports.cnt[p, RX_PKTS] += n
    ports.cnt[p, RX_BYTES] += nbytes
    return n


@hot_stage          # inlined: the engine loop asks every pass
def mem_rx_pending(ports, p, now):
    """Has a frame arrived at p by `now` that nobody has taken yet?"""
    return ports.arr[ports.arr[1] + 2 * p] <= now


@hot
def mem_next_arrival(ports):
    """The earliest due time in the arrivals heap (INF: none)."""
    return ports.arr[3] if ports.arr[0] > 0 else INF


@hot_stage
def arrivals_due(arr, now):
    """Is a frame due by `now` at any port of the arrivals heap ``arr``
    (ports.arr)?"""
    return arr[0] > 0 and arr[3] <= now


@hot
def mem_due_ports(ports, now, out):
    """The ports in the arrivals heap with a frame due by `now`, into out
    (their subtree at the top of the heap); returns how many."""
    H = ports.arr
    n = 0
    if not arrivals_due(H, now):
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
        if _get(ports, _word(ports, p, mid) + 1) <= now:
            lo = mid + 1
        else:
            hi = mid
    if lo < ports.regs[p, TAIL]:
        return _get(ports, _word(ports, p, lo) + 1)
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
