"""Where the busy-polling engine runs: a core of its own.

``engine_core()`` is the last core this process may use (the others stay
for the runner, agents and apps); ``pinned(core)`` gives the calling
thread that core and nice -10 (root) for a block, and puts both back
after.  Not a real-time class: a busy-polling SCHED_FIFO task would
starve the kernel threads of its core (ksoftirqd, which carries veth
traffic), and the throttling that saves the machine stalls the loop for
50 ms each second.  ``elsewhere(core)`` keeps a process (an agent, a
watcher) off it.
"""
from __future__ import annotations

import contextlib
import os

ENGINE_NICE = -10


def engine_core() -> int | None:
    """The engine's core: the last this process may use; None on one core."""
    cores = sorted(os.sched_getaffinity(0))
    return cores[-1] if len(cores) > 1 else None


@contextlib.contextmanager
def pinned(core: int | None):
    """The calling thread on `core` (None: where it was) at nice -10
    (when allowed) for the block."""
    old = (os.sched_getaffinity(0), os.getpriority(os.PRIO_PROCESS, 0))
    if core is not None:
        os.sched_setaffinity(0, {core})
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, ENGINE_NICE)
    try:
        yield
    finally:
        os.sched_setaffinity(0, old[0])
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, old[1])


def elsewhere(core: int | None) -> None:
    """Keep this process off the engine's core (if another is allowed)."""
    cores = os.sched_getaffinity(0) - {core}
    if core is not None and cores:
        os.sched_setaffinity(0, cores)
