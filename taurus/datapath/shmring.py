"""Single-producer single-consumer rings of fixed-size records in shared memory.

The one queue shape between the engine and other processes: the report ring
(engine -> agent), application submission/completion queues (app <-> NIC).
Either end may be Numba code or Python; Python moves records in batches
(numpy slices), because per-record Python costs ~1 us here (PLATFORM.md).

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
"""
from collections import namedtuple

import numba as nb
import numpy as np

from .lowlevel import load_acquire_u64, store_release_u64
from .shm import Shm

MAGIC = 0x5441555252494E47  # "TAURRING"
HEAD, FULL = 0, 1
TAIL = 0
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
    def push(self, rows: np.ndarray) -> int:
        """Publish as many rows (int64[n, width]; word 0 is overwritten with the
        sequence number) as fit; returns how many.  Refusals are counted."""
        r = self.ring
        head, tail = int(r.prod[HEAD]), int(r.cons[TAIL])
        n = min(len(rows), self.capacity - (head - tail))
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
@nb.njit(cache=True)
def ring_space(ring):
    """Records the producer may write now."""
    return ring.rec.shape[0] - np.int64(ring.prod[HEAD] - load_acquire_u64(ring.cons, TAIL))


@nb.njit(cache=True, inline="always")
def ring_slot(ring, k):
    """Row of the k-th record after the current head (write it, then publish)."""
    return ring.rec[np.int64(ring.prod[HEAD] + np.uint64(k)) & (ring.rec.shape[0] - 1)]


@nb.njit(cache=True)
def ring_publish(ring, n):
    """Stamp sequence numbers on the n written records and make them visible."""
    head = ring.prod[HEAD]
    mask = ring.rec.shape[0] - 1  # capacity is a power of two
    for k in range(n):
        ring.rec[(np.int64(head) + k) & mask, SEQ] = np.int64(head) + k
    store_release_u64(ring.prod, HEAD, head + np.uint64(n))


@nb.njit(cache=True)
def ring_refuse(ring, n):
    ring.prod[FULL] += np.uint64(n)


@nb.njit(cache=True)
def ring_available(ring):
    """Records the consumer may read now."""
    return np.int64(load_acquire_u64(ring.prod, HEAD) - ring.cons[TAIL])


@nb.njit(cache=True, inline="always")
def ring_peek(ring, k):
    return ring.rec[(np.int64(ring.cons[TAIL]) + k) & (ring.rec.shape[0] - 1)]


@nb.njit(cache=True)
def ring_consume(ring, n):
    store_release_u64(ring.cons, TAIL, ring.cons[TAIL] + np.uint64(n))
