"""Single-producer single-consumer rings of fixed-size records in shared memory.

The one queue shape between the engine and other processes: the report ring
(engine -> agent), application submission/completion queues (app <-> NIC).
Either end may be Numba code or Python; Python moves records in batches
(numpy slices), because per-record Python costs ~1 us (docs/PLATFORM.md).

Layout of a segment (every counter on its own cache line):
    header  u64[8]: magic, capacity, width (int64 words per record)
    prod    u64[8]: [0] head (records ever published), [1] full (refused pushes)
    cons    u64[8]: [0] tail (records ever consumed)
    records int64[capacity, width]
The producer writes records, then publishes head with release semantics; the
consumer reads head with acquire semantics.  Every record's word 0 is its
sequence number (head index at publication), so a consumer can prove that
nothing was skipped.  A full ring refuses the push and counts it: nothing is
lost silently.

Doorbell (optional, for a consumer that blocks instead of polling): prod[BELL]
counts publications the producer announced (its low 32 bits are a futex
word); a consumer about to block writes a fresh nonzero generation to
cons[SLEEP], re-checks the ring, then futex-waits on BELL with a timeout.
``ring_doorbell`` bumps BELL, fences, and issues the one wake syscall per
generation (prod[WOKEN] remembers which; prod[WAKES] counts them).  The
fence pairs with the kernel's own barrier in FUTEX_WAIT: either the producer
sees SLEEP set and wakes, or the wait sees BELL moved and returns at once.
"""
from collections import namedtuple

import numba as nb
import numpy as np

from numba import types
from numba.extending import intrinsic

from .lowlevel import load_acquire_u64, store_release_u64
from .shm import Shm
from .hot import hot

MAGIC = 0x5441555252494E47  # "TAURRING"
HEAD, FULL, BELL, WOKEN, WAKES, SINCE = 0, 1, 2, 3, 4, 5   # prod words
TAIL, SLEEP = 0, 1                                  # cons words
SYS_FUTEX, FUTEX_WAIT, FUTEX_WAKE = 202, 0, 1       # x86-64; shared (not private) futex
SEQ = 0  # word 0 of every record

Ring = namedtuple("Ring", ["hdr", "prod", "cons", "rec"])


def _layout(capacity: int, width: int):
    return 0, 64, 128, 192, 192 + capacity * width * 8


def _views(shm: Shm, capacity: int, width: int) -> Ring:
    h, p, c, r, _ = _layout(capacity, width)
    return Ring(shm.array(h, np.uint64, (8,)), shm.array(p, np.uint64, (8,)),
                shm.array(c, np.uint64, (8,)), shm.array(r, np.int64, (capacity, width)))


class ShmRing:
    """A named ring.  The creator owns (and unlinks) the segment."""

    def __init__(self, shm: Shm, ring: Ring, owner: bool = True):
        self.shm, self.ring, self._owner = shm, ring, owner
        self.capacity = ring.rec.shape[0]
        self.width = ring.rec.shape[1]

    @classmethod
    def create(cls, name: str, capacity: int, width: int) -> "ShmRing":
        if capacity < 2 or capacity & (capacity - 1):
            raise ValueError(f"ring capacity must be a power of two >= 2, got {capacity}")
        if width < 1:
            raise ValueError(f"ring width must be >= 1 word, got {width}")
        shm = Shm.create(name, _layout(capacity, width)[4])
        ring = _views(shm, capacity, width)
        ring.hdr[:3] = (MAGIC, capacity, width)
        return cls(shm, ring)

    @classmethod
    def attach(cls, name: str) -> "ShmRing":
        shm = Shm.attach(name, writable=True)
        hdr = shm.array(0, np.uint64, (8,))
        if int(hdr[0]) != MAGIC:
            raise ValueError(f"{name} is not a Taurus ring")
        return cls(shm, _views(shm, int(hdr[1]), int(hdr[2])))

    # -- Python ends, in batches ------------------------------------------
    def push(self, rows: np.ndarray, ready_ns: int = 0) -> int:
        """Publish as many rows (int64[n, width]; word 0 is overwritten with the
        sequence number) as fit; returns how many.  Refusals are counted.
        ready_ns as in ring_publish."""
        r = self.ring
        head, tail = int(r.prod[HEAD]), int(r.cons[TAIL])
        n = min(len(rows), self.capacity - (head - tail))
        if head == tail and n:
            r.prod[SINCE] = ready_ns
        idx = (head + np.arange(n)) % self.capacity
        r.rec[idx] = rows[:n]
        r.rec[idx, SEQ] = head + np.arange(n)
        r.prod[HEAD] = head + n  # x86 keeps store order; numpy stores are plain
        r.prod[FULL] += len(rows) - n
        return n

    def drain(self, max_records: int | None = None) -> np.ndarray:
        """Copy out and consume every published record (at most max_records)."""
        r = self.ring
        head, tail = int(r.prod[HEAD]), int(r.cons[TAIL])
        n = head - tail if max_records is None else min(head - tail, max_records)
        out = r.rec[(tail + np.arange(n)) % self.capacity].copy()
        r.cons[TAIL] = tail + n
        return out

    def pending(self) -> int:
        return int(self.ring.prod[HEAD]) - int(self.ring.cons[TAIL])

    def refused(self) -> int:
        return int(self.ring.prod[FULL])

    def close(self) -> None:
        """Release the segment (only a ring that owns its segment does)."""
        if self._owner:
            self.shm.close()


# -- Numba ends -----------------------------------------------------------
@hot
def ring_space(ring):
    """Records the producer may write now."""
    return ring.rec.shape[0] - np.int64(ring.prod[HEAD] - load_acquire_u64(ring.cons, TAIL))


@nb.njit(cache=True, inline="always")
def ring_slot(ring, k):
    """Row of the k-th record after the current head (write it, then publish)."""
    return ring.rec[np.int64(ring.prod[HEAD] + np.uint64(k)) & (ring.rec.shape[0] - 1)]


@hot
def ring_publish(ring, n, ready_ns):
    """Stamp sequence numbers on the n written records and make them visible.
    ready_ns: when the first of them was ready (written); if the ring was
    empty, it becomes prod[SINCE], how long the oldest record has waited."""
    head = ring.prod[HEAD]
    if head == load_acquire_u64(ring.cons, TAIL):
        ring.prod[SINCE] = np.uint64(ready_ns)
    mask = ring.rec.shape[0] - 1  # capacity is a power of two
    for k in range(n):
        ring.rec[(np.int64(head) + k) & mask, SEQ] = np.int64(head) + k
    store_release_u64(ring.prod, HEAD, head + np.uint64(n))


@hot
def ring_refuse(ring, n):
    ring.prod[FULL] += np.uint64(n)


@hot
def ring_available(ring):
    """Records the consumer may read now."""
    return np.int64(load_acquire_u64(ring.prod, HEAD) - ring.cons[TAIL])


@nb.njit(cache=True, inline="always")
def ring_peek(ring, k):
    return ring.rec[(np.int64(ring.cons[TAIL]) + k) & (ring.rec.shape[0] - 1)]


@hot
def ring_consume(ring, n):
    store_release_u64(ring.cons, TAIL, ring.cons[TAIL] + np.uint64(n))


# -- doorbell (producer side) ---------------------------------------------
_syscall = types.ExternalFunction(
    "syscall", types.int64(types.int64, types.uint64, types.int64, types.int64, types.int64,
                           types.int64))


@intrinsic
def full_fence(typingctx):
    """A sequentially consistent fence (mfence): the BELL store is visible
    before SLEEP is read."""
    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.void(), codegen


@hot
def ring_doorbell(ring):
    """After a publish: wake a consumer blocked on the bell, once per sleep."""
    store_release_u64(ring.prod, BELL, ring.prod[BELL] + np.uint64(1))
    full_fence()
    g = load_acquire_u64(ring.cons, SLEEP)
    if g != 0 and g != ring.prod[WOKEN]:
        ring.prod[WOKEN] = g
        ring.prod[WAKES] += np.uint64(1)
        _syscall(SYS_FUTEX, ring.prod.ctypes.data + np.uint64(BELL * 8), FUTEX_WAKE, 1, 0, 0)
