"""A soft timing wheel shared by every device of an engine (timers, pacing,
link departures).

Hashed wheel: S slots of 2**shift ns; a timer sits in the slot of its due
time, in a doubly linked FIFO, so arming and cancelling are O(1).  Each timer
keeps its exact due time, so slots only bound the scan cost, never the
precision: under the virtual clock ``wheel_next_due`` returns the exact
earliest due time and the engine jumps there.  Timers due beyond one rotation
simply stay in their slot until their round comes.  An occupancy bitmap lets
scans skip empty slots 64 at a time.  The slot width follows the engine's
scale (``slot_shift``), one rotation 4.2 ms either way: a fabric's slots
are narrow (32 ns, 131,072 of them), because a slot's timers are walked
whole at each expiry that finds one due, and a k = 8 fat-tree fires
hundreds of timers per microsecond: in 1 us slots each expiry would walk
hundreds, a cost per timer growing with the topology's event rate.  A
small engine's are 1 us (4,096 of them): few timers share a slot, and
the slot arrays (32 KB, not 1 MB) stay in cache.

Timers are pre-allocated ids.  Each has an owner (a device index) and an
argument (e.g. a flow or port), so the engine can dispatch expiries.
Expiry order is deterministic: by slot, then in arming order.

Under the virtual clock the engine expires and asks for the next due time
at every pass, often many passes within one slot; ``meta[LB]`` is a lower
bound on every armed timer's due time (exact when ``meta[LB_EXACT]`` is 1),
so an expiry before it returns at once and ``wheel_next_due`` returns it
without a scan while it is exact.  Arming lowers it; disarming the timer
that sets it makes it inexact; an expiry leaves it at the earliest timer of
the slot it ended in (exact) or that slot's end, and scans from LB's slot,
not from the last expiry's.

Lateness: each expiry adds how late it fired (now minus its due time, or
minus its arming time when it was armed with a due time already past: that
wait is the device's choice, not the engine's) to a log-linear histogram,
``late`` (``late_bucket``: exact below 8 ns, then four buckets per power of
two), and the largest to ``meta[LATE_MAX]``.  Under the virtual clock every
timer fires on time; on the wall clock this is how faithfully the engine
keeps the time the devices ask for (experiment/fidelity.py reads it).
"""
from collections import namedtuple

import numba as nb
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from .hot import hot, hot_stage
from .ports.common import INF

Wheel = namedtuple("Wheel", ["due", "nxt", "prv", "slot", "owner", "arg",
                             "head", "tail", "occ", "meta", "ref", "late"])
SHIFT, NSLOTS, LAST, ARMED, NEXT_ID, LATE_MAX, LB, LB_EXACT = range(8)
LATE_BUCKETS = 256          # late_bucket of any int64 lateness is below this


def slot_shift(n_ports: int) -> int:
    """log2 of the slot width (ns) for an engine of n_ports ports: 1 us up
    to 64 ports (a dumbbell, a few hosts), 32 ns beyond (a fabric)."""
    return 10 if n_ports <= 64 else 5


def make_wheel(capacity: int = 1 << 16, n_slots: int | None = None, shift: int = 5,
               start_ns: int = 0) -> Wheel:
    """A wheel of `capacity` timers and n_slots slots of 2**shift ns (by
    default as many as one rotation of 2**22 ns, 4.2 ms, takes)."""
    if n_slots is None:
        n_slots = 1 << max(6, 22 - shift)
    if n_slots < 64 or n_slots & (n_slots - 1):
        raise ValueError(f"n_slots must be a power of two >= 64, got {n_slots}")
    meta = np.zeros(8, np.int64)
    meta[SHIFT], meta[NSLOTS], meta[LAST] = shift, n_slots, start_ns
    return Wheel(due=np.zeros(capacity, np.int64), nxt=np.full(capacity, -1, np.int32),
                 prv=np.full(capacity, -1, np.int32), slot=np.full(capacity, -1, np.int32),
                 owner=np.full(capacity, -1, np.int32), arg=np.zeros(capacity, np.int64),
                 head=np.full(n_slots, -1, np.int32), tail=np.full(n_slots, -1, np.int32),
                 occ=np.zeros(n_slots // 64, np.uint64), meta=meta,
                 ref=np.zeros(capacity, np.int64), late=np.zeros(LATE_BUCKETS, np.int64))


@nb.njit(cache=True, inline="always")
def late_bucket(v):
    """Histogram bucket of a lateness of v ns: v itself below 8, then four
    buckets per power of two (each at most 25% wide)."""
    if v < 8:
        return max(v, 0)
    b = 0                   # bit length of v (>= 4 here)
    x = v
    while x:
        x >>= 1
        b += 1
    return 8 + (b - 4) * 4 + ((v >> (b - 3)) & 3)


def late_bucket_bounds(i: int) -> tuple[int, int]:
    """[lo, hi) ns of histogram bucket i (the inverse of late_bucket)."""
    if i < 8:
        return i, i + 1
    b, sub = (i - 8) // 4 + 4, (i - 8) % 4
    lo = (4 + sub) << (b - 3)
    return lo, lo + (1 << (b - 3))


@hot   # never allocates: no refcount per call
def wheel_alloc(w, owner, arg):
    """A new timer id for `owner`, or -1 when the wheel is full."""
    t = w.meta[NEXT_ID]
    if t >= w.due.shape[0]:
        return -1
    w.meta[NEXT_ID] = t + 1
    w.owner[t] = owner
    w.arg[t] = arg
    return t


@nb.njit(cache=True, inline="always")
def _unlink(w, t):
    s = w.slot[t]
    p, n = w.prv[t], w.nxt[t]
    if p >= 0:
        w.nxt[p] = n
    else:
        w.head[s] = n
    if n >= 0:
        w.prv[n] = p
    else:
        w.tail[s] = p
    if w.head[s] < 0:
        w.occ[s >> 6] &= ~(np.uint64(1) << np.uint64(s & 63))
    w.slot[t] = -1
    w.meta[ARMED] -= 1
    if w.due[t] <= w.meta[LB]:
        w.meta[LB_EXACT] = 0      # the earliest may be gone: LB stays a lower bound


@hot   # never allocates: no refcount per call
def wheel_cancel(w, t):
    if w.slot[t] >= 0:
        _unlink(w, t)


@nb.njit(cache=True, inline="always")
def wheel_armed(w, t):
    return w.slot[t] >= 0


@hot   # never allocates: no refcount per call
def wheel_schedule(w, t, due):
    """Arm (or re-arm) timer t for time `due`.  A due time in the past fires
    at the next expiry."""
    if w.slot[t] >= 0:
        _unlink(w, t)
    eff = due if due > w.meta[LAST] else w.meta[LAST]
    s = np.int32((eff >> w.meta[SHIFT]) & (w.meta[NSLOTS] - 1))
    w.due[t] = due
    w.ref[t] = eff
    w.slot[t] = s
    w.nxt[t] = -1
    last = w.tail[s]
    w.prv[t] = last
    if last >= 0:
        w.nxt[last] = t
    else:
        w.head[s] = t
        w.occ[s >> 6] |= np.uint64(1) << np.uint64(s & 63)
    w.tail[s] = t
    w.meta[ARMED] += 1
    if due < w.meta[LB]:
        w.meta[LB] = due          # the earliest now (exact if LB was)


@hot_stage
def wheel_quiet(meta, now):
    """Would an expiry at `now` find nothing due?  Then it is done: the
    wheel's ``meta`` records it as wheel_expire would (the engine's loop
    asks this inline every pass, and calls wheel_expire only when False)."""
    if now < meta[LAST]:
        return True
    if meta[ARMED] == 0 or now < meta[LB]:
        meta[LAST] = now          # nothing is due yet
        return True
    return False


@hot   # never allocates: no refcount per call
def wheel_expire(w, now, out, maxn):
    """Disarm every timer due at or before `now` (at most maxn) into out;
    returns how many."""
    if wheel_quiet(w.meta, now):
        return 0
    last = w.meta[LAST]
    shift = w.meta[SHIFT]
    mask = w.meta[NSLOTS] - 1
    # No armed timer sits in a slot before LB's in this rotation (a timer's
    # slot is of its due time or later), so the scan starts there.
    first = max(last, w.meta[LB]) >> shift
    steps = (now >> shift) - first + 1
    if steps > w.meta[NSLOTS]:
        steps = w.meta[NSLOTS]
    n = 0
    k = 0
    # Timers left armed in the slots scanned are due after now: those of
    # now's slot count for LB, the others belong to a later rotation.
    end = ((now >> shift) + 1) << shift
    lb = end
    while k < steps:
        s = (first + k) & mask
        word = w.occ[s >> 6] >> np.uint64(s & 63)
        if word == 0:
            k += 64 - (s & 63)      # the rest of this word's slots are empty
            continue
        z = np.int64(trailing_zeros(word))
        if z > 0:                   # on to the next occupied slot
            k += z
            continue
        t = w.head[s]
        while t >= 0:
            nx = w.nxt[t]
            if w.due[t] > now:
                if w.due[t] < lb:
                    lb = w.due[t]
            else:
                if n == maxn:
                    # Out of room: resume from this slot next time.
                    w.meta[LAST] = max(last, (first + k) << shift)
                    w.meta[LB] = 0
                    w.meta[LB_EXACT] = 0
                    return n
                _unlink(w, t)
                out[n] = t
                n += 1
                late = now - w.ref[t]
                w.late[late_bucket(late)] += 1
                if late > w.meta[LATE_MAX]:
                    w.meta[LATE_MAX] = late
            t = nx
        k += 1
    w.meta[LAST] = now
    w.meta[LB] = lb
    # Below now's slot end, lb is the earliest timer: any timer due before
    # that end and after now sits in now's slot, which was scanned whole.
    w.meta[LB_EXACT] = 1 if lb < end else 0
    return n


@hot   # never allocates: no refcount per call
def wheel_next_due(w):
    """The earliest due time of any armed timer (INF when none)."""
    if w.meta[ARMED] == 0:
        return INF
    if w.meta[LB_EXACT] != 0:
        return w.meta[LB]
    best = _next_due(w)
    w.meta[LB] = best
    w.meta[LB_EXACT] = 1
    return best


@hot
def _next_due(w):
    shift = w.meta[SHIFT]
    nslots = w.meta[NSLOTS]
    mask = nslots - 1
    base = w.meta[LAST] >> shift
    k = 0
    while k < nslots:
        s = (base + k) & mask
        word = w.occ[s >> 6] >> np.uint64(s & 63)
        if word == 0:
            k += 64 - (s & 63)      # the rest of this word's slots are empty
            continue
        z = np.int64(trailing_zeros(word))
        if z > 0:                   # on to the next occupied slot of this word
            k += z
            if k >= nslots:
                break
            s = (base + k) & mask
        # Only timers of this rotation count here; later rounds come later.
        round_end = (base + k + 1) << shift
        best = INF
        t = w.head[s]
        while t >= 0:
            if w.due[t] < round_end and w.due[t] < best:
                best = w.due[t]
            t = w.nxt[t]
        if best < INF:
            return best
        k += 1
    best = INF  # every armed timer is more than one rotation away
    for s in range(nslots):
        t = w.head[s]
        while t >= 0:
            if w.due[t] < best:
                best = w.due[t]
            t = w.nxt[t]
    return best
