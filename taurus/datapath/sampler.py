"""The engine's sampler: every `period` ns it writes one row of time series
into a buffer that Python drains, so that a run's series cost no return to
Python per sample (a return costs tens of microseconds; the dumbbell's
default 100 us sample period asked for 10,000 a simulated second).

A row is ``t, acked[F], cwnd[F], queue[Q]``: for each sampled flow row its
bytes acknowledged (FL_ACKED_OFF) and the window in force (the agent's or
native algorithm's decision, else the flow's own), and for each sampled
switch port the bytes queued over all its classes.  The sample due at t is
taken in the first loop pass at t that goes on running (after the pass's
stop checks), before any timer or device acts at t: the state after every
event before t and after whatever Python did between runs at t — what
Python reads after ``run_until(t)`` returns.

``meta`` words: PERIOD (0: off), ORIGIN (samples fall at ORIGIN + k PERIOD,
k >= 1), NEXT (engine ns of the next sample), ROWS (rows written so far),
TAKEN (rows Python has drained), LATE (samples that waited for a drain);
the buffer holds
``CAP`` rows as a ring.  At half full the sampler ends the engine's run
chunk (YIELD) so Python drains it; a full buffer is never overwritten: the
sample waits (and is counted in LATE) until Python has drained.
"""
from collections import namedtuple

import numpy as np

from .devices.nic.state import CX_CWND, FL_ACKED_OFF
from .ctlblock import YIELD
from .hot import hot
from .ports.common import INF

Sampler = namedtuple("Sampler", ["meta", "fids", "qports", "buf"])
PERIOD, ORIGIN, NEXT, ROWS, TAKEN, LATE = range(6)
N_META = 8


def make_sampler(fids=(), qports=(), cap: int = 1) -> Sampler:
    """A sampler of these flow rows and switch ports, off until started."""
    fids = np.ascontiguousarray(fids, np.int64)
    qports = np.ascontiguousarray(qports, np.int64)
    meta = np.zeros(N_META, np.int64)
    meta[NEXT] = INF
    return Sampler(meta=meta, fids=fids, qports=qports,
                   buf=np.zeros((max(1, cap), 1 + 2 * len(fids) + len(qports)), np.int64))


def rows_for(width: int, budget_words: int = 1 << 22) -> int:
    """Buffer rows for rows of `width` words: within the budget (32 MiB of
    int64), at least 2, at most 4096."""
    return int(min(4096, max(2, budget_words // max(1, width))))


@hot
def sampler_take(E, now):
    """Take the sample due by `now`, if any; returns 1 when one was taken."""
    S = E.smp
    m = S.meta
    if now < m[NEXT]:
        return 0
    cap = S.buf.shape[0]
    if m[ROWS] - m[TAKEN] >= cap:          # full: wait for Python, never overwrite
        m[LATE] += 1
        E.ctl[YIELD] = 1
        return 0
    row = S.buf[m[ROWS] % cap]
    row[0] = now
    N = E.nic
    F = S.fids.shape[0]
    for j in range(F):
        f = S.fids[j]
        row[1 + j] = N.fl[f, FL_ACKED_OFF]
        w = E.rep.cwnd[f]
        row[1 + F + j] = w if w > 0 else N.ctx[f, CX_CWND]
    qb = E.sw.qb
    for j in range(S.qports.shape[0]):
        p = S.qports[j]
        s = 0
        for c in range(qb.shape[1]):
            s += qb[p, c]
        row[1 + 2 * F + j] = s
    m[ROWS] += 1
    m[NEXT] = m[ORIGIN] + ((now - m[ORIGIN]) // m[PERIOD] + 1) * m[PERIOD]
    if 2 * (m[ROWS] - m[TAKEN]) >= cap:
        E.ctl[YIELD] = 1             # half full: Python drains between chunks
    return 1


def sampler_start(S: Sampler, period_ns: int, origin_ns: int) -> None:
    """Take samples at origin + period, origin + 2 period, ... (engine ns)."""
    if period_ns <= 0:
        raise ValueError(f"sampler: the period must be > 0 ns, got {period_ns}")
    S.meta[:] = 0
    S.meta[PERIOD] = period_ns
    S.meta[ORIGIN] = origin_ns
    S.meta[NEXT] = origin_ns + period_ns


def sampler_drain(S: Sampler) -> np.ndarray:
    """The rows written since the last drain, oldest first (a copy)."""
    m = S.meta
    rows, taken, cap = int(m[ROWS]), int(m[TAKEN]), S.buf.shape[0]
    idx = np.arange(taken, rows) % cap
    out = S.buf[idx].copy()
    m[TAKEN] = rows
    return out
