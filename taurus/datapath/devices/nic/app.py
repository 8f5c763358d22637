"""The Python ends of a NIC's app queues and stream rings, shared by the
in-process API (setup.py) and apps in other processes (taurus.transport).

The SQ has one producer and the CQ one consumer per NIC: one app (process
or thread) per host NIC at a time.  Stores from numpy are plain; x86 keeps
store order, and the engine loads the SQ head with acquire semantics.
"""
import numpy as np

from .state import (N_QC, QC_CQ_HEAD, QC_CQ_TAIL, QC_SQ_HEAD, QC_SQ_TAIL, SQ_END, SQ_ID,
                        SQ_MSG, SQ_OP)


class WouldBlock(BlockingIOError):
    """The operation cannot proceed now (ring, message queue or SQ full);
    retry after the engine has made progress."""


def sq_submit(N, n: int, op: int, ident: int, end: int, msg: int = 0) -> None:
    """One submission; WouldBlock when the SQ is full."""
    b = n * N_QC
    qc, sq = N.qc, N.sq
    head = qc.item(b + QC_SQ_HEAD)
    if head - qc.item(b + QC_SQ_TAIL) >= sq.shape[1]:
        raise WouldBlock("submission queue full")
    k = head & (sq.shape[1] - 1)
    sq[n, k, SQ_OP] = op
    sq[n, k, SQ_ID] = ident
    sq[n, k, SQ_END] = end
    sq[n, k, SQ_MSG] = msg
    qc[b + QC_SQ_HEAD] = head + 1


def cq_drain(N, n: int) -> np.ndarray:
    """Every completion record of NIC n published so far (int64[k, 6]).
    Indices that say less than nothing or more than the ring holds were
    rewritten by another process: the tail catches up, nothing is read."""
    b = n * N_QC
    head, tail = int(N.qc[b + QC_CQ_HEAD]), int(N.qc[b + QC_CQ_TAIL])
    C = N.cq.shape[1]
    if not 0 <= head - tail <= C:
        N.qc[b + QC_CQ_TAIL] = head
        return np.zeros((0, N.cq.shape[2]), np.int64)
    out = N.cq[n, (tail + np.arange(head - tail)) & (C - 1)].copy()
    N.qc[b + QC_CQ_TAIL] = head
    return out


def ring_views(arena, base: int, cap: int, off: int, n: int) -> list[memoryview]:
    """The n bytes at stream offset off of the ring arena[base:base+cap] as
    writable views: one, or two where the span wraps (zero-copy send)."""
    s = off % cap
    a = min(n, cap - s)
    first = memoryview(arena[base + s:base + s + a])
    return [first] if a == n else [first, memoryview(arena[base:base + n - a])]


def ring_read(arena, base: int, cap: int, off: int, n: int) -> bytes:
    """n bytes from stream offset off of the ring arena[base:base+cap]."""
    s = off % cap
    a = min(n, cap - s)
    return arena[base + s:base + s + a].tobytes() + arena[base:base + n - a].tobytes()
