"""The consumer's side of the report ring's doorbell (shmring: BELL, SLEEP).

An idle agent blocks on the ring's futex word instead of waking on a timer
to find nothing: the engine's next publication ends the wait (one wake
syscall per wait, made by ``shmring.ring_doorbell``), the timeout bounds it
(heartbeat, samplers, back-pressure steps, and an engine that never rings).

Order inside ``bell_wait`` (why no wake-up is lost): announce the sleep
(SLEEP = a fresh generation), read BELL, re-check the ring, then
FUTEX_WAIT(BELL).  A publication the re-check missed either sees SLEEP and
wakes us, or moved BELL before the kernel's own check, so the wait returns
at once.  Compiled, so that the agent's compiled busy loop (busyloop.py)
waits exactly as the Python one does.
"""
import errno
import time

import numba as nb
import numpy as np

from taurus.datapath.lowlevel import errno as _errno
from taurus.datapath.shmring import (BELL, FUTEX_WAIT, FUTEX_WAKE, HEAD, SLEEP, SYS_FUTEX, TAIL,
                                     WAKES, _syscall)

# How a wait ended: skipped (records were already there), woken by the
# producer, timed out, BELL had already moved (a publication raced the
# announcement), or a signal.
OUTCOMES = ("skipped", "woken", "timeouts", "moved", "interrupted")
SKIPPED, WOKEN, TIMEOUT, MOVED, INTERRUPTED = range(5)
_ETIMEDOUT, _EAGAIN = errno.ETIMEDOUT, errno.EAGAIN


@nb.njit(cache=True, nogil=True)
def announce(prod, cons, gen):
    """Step 1: announce the sleep (a fresh generation, ``gen``: int64[1]) and
    read BELL; -1 if records are pending already (then no sleep)."""
    gen[0] += 1
    cons[SLEEP] = np.uint64(gen[0])
    bell = np.int64(prod[BELL] & np.uint64(0xFFFF_FFFF))
    if prod[HEAD] != cons[TAIL]:               # published before we announced
        cons[SLEEP] = 0
        return -1
    return bell


@nb.njit(cache=True, nogil=True)       # nogil: other threads run while we block
def block(prod, cons, bell, timeout_ns, ts):
    """Step 2: FUTEX_WAIT while BELL still reads ``bell`` (``ts``: int64[2])."""
    ts[0], ts[1] = timeout_ns // 1_000_000_000, timeout_ns % 1_000_000_000
    rc = _syscall(SYS_FUTEX, prod.ctypes.data + np.uint64(BELL * 8), FUTEX_WAIT, bell,
                  ts.ctypes.data, 0)
    cons[SLEEP] = 0
    if rc == 0:
        return WOKEN
    e = _errno()
    return TIMEOUT if e == _ETIMEDOUT else MOVED if e == _EAGAIN else INTERRUPTED


@nb.njit(cache=True, nogil=True)
def bell_wait(prod, cons, gen, timeout_ns, ts, counts):
    """Block until the producer publishes or ``timeout_ns`` passes; counts
    (int64[len(OUTCOMES) + 1]: outcomes, then waits) how it ended."""
    bell = announce(prod, cons, gen)
    if bell < 0:
        counts[SKIPPED] += 1
        return SKIPPED
    counts[len(OUTCOMES)] += 1
    r = block(prod, cons, bell, timeout_ns, ts)
    counts[r] += 1
    return r


class Doorbell:
    """Block until the ring has records or ``timeout_ns`` passes."""

    def __init__(self, ring):
        """``ring``: a shmring.Ring (prod/cons views of the shared segment)."""
        self.prod, self.cons = ring.prod, ring.cons
        # Generations never repeat, even across agent restarts.
        self.gen = np.array([time.monotonic_ns()], np.int64)
        self.ts = np.zeros(2, np.int64)
        self.counts = np.zeros(len(OUTCOMES) + 1, np.int64)

    @property
    def c(self) -> dict:
        return dict(zip(("waits",) + OUTCOMES, [int(self.counts[-1])]
                        + self.counts[:-1].tolist()))

    def wait(self, timeout_ns: int) -> bool:
        """True if records are (or became) pending before the timeout."""
        bell_wait(self.prod, self.cons, self.gen, int(timeout_ns), self.ts, self.counts)
        return self.prod.item(HEAD) != self.cons.item(TAIL)

    def bells(self) -> int:
        """Publications the producer announced so far."""
        return self.prod.item(BELL)

    def engine_wakes(self) -> int:
        """Wake syscalls the producer made (its side of the cost)."""
        return int(self.prod[WAKES])

    def close(self) -> None:
        self.cons[SLEEP] = 0


def ring_bell(ring) -> None:
    """A Python producer's doorbell (tests, the fake datapath): bump BELL and
    always wake (FUTEX_WAKE orders itself after the bump; no fence needed)."""
    ring.prod[BELL] += 1
    _wake(ring.prod)


@nb.njit(cache=True)
def _wake(prod):
    _syscall(SYS_FUTEX, prod.ctypes.data + np.uint64(BELL * 8), FUTEX_WAKE, 1, 0, 0)
