"""The consumer's side of the report ring's doorbell (shmring: BELL, SLEEP).

An idle agent blocks on the ring's futex word instead of waking on a timer
to find nothing: the engine's next publication ends the wait (one wake
syscall per wait, made by ``shmring.ring_doorbell``), the timeout bounds it
(heartbeat, samplers, back-pressure steps, and an engine that never rings).

Order inside ``wait`` (why no wake-up is lost): announce the sleep (SLEEP =
a fresh generation), read BELL, re-check the ring, then FUTEX_WAIT(BELL).
A publication the re-check missed either sees SLEEP and wakes us, or moved
BELL before the kernel's own check, so the wait returns at once.
"""
import ctypes
import errno
import time

from taurus.datapath.shmring import (BELL, FUTEX_WAIT, FUTEX_WAKE, HEAD, SLEEP, SYS_FUTEX, TAIL,
                                     WAKES)

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_syscall.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_long, ctypes.c_long,
                     ctypes.c_void_p, ctypes.c_long]
_U32 = 0xFFFF_FFFF
# How a FUTEX_WAIT ended: woken by the producer, timed out, or BELL had
# already moved (a publication raced the announcement); else a signal.
_OUTCOME = {0: "woken", errno.ETIMEDOUT: "timeouts", errno.EAGAIN: "moved"}


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class Doorbell:
    """Block until the ring has records or ``timeout_ns`` passes."""

    def __init__(self, ring):
        """``ring``: a shmring.Ring (prod/cons views of the shared segment)."""
        self.prod, self.cons = ring.prod, ring.cons
        self.addr = ring.prod.ctypes.data + BELL * 8     # low half of a u64: x86 is little-endian
        self.gen = time.monotonic_ns()    # generations never repeat, even across agent restarts
        self.ts = _Timespec()
        self.tsp = ctypes.byref(self.ts)
        self.c = dict(waits=0, woken=0, timeouts=0, moved=0, interrupted=0, skipped=0)

    def wait(self, timeout_ns: int) -> bool:
        """True if records are (or became) pending before the timeout."""
        prod, cons = self.prod, self.cons
        self.gen += 1
        cons[SLEEP] = self.gen
        bell = prod.item(BELL) & _U32
        if prod.item(HEAD) != cons.item(TAIL):      # published before we announced
            cons[SLEEP] = 0
            self.c["skipped"] += 1
            return True
        self.ts.tv_sec, self.ts.tv_nsec = divmod(int(timeout_ns), 1_000_000_000)
        self.c["waits"] += 1
        rc = _syscall(SYS_FUTEX, self.addr, FUTEX_WAIT, bell, self.tsp, 0)
        cons[SLEEP] = 0
        self.c[_OUTCOME.get(0 if rc == 0 else ctypes.get_errno(), "interrupted")] += 1
        return prod.item(HEAD) != cons.item(TAIL)

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
    _syscall(SYS_FUTEX, ring.prod.ctypes.data + BELL * 8, FUTEX_WAKE, 1, None, 0)
