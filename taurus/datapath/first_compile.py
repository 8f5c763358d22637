"""The engine's first compile with a set of sources: said, and split with a
second process.

On a cold Numba cache the engine's loop takes minutes to compile (the
sources' hash names the cache: numba_cache.py).  The first engine a process
builds then says so on stderr, with where the compiled code goes, and on a
machine with a spare core starts ``python -m taurus.datapath.warm``, which
compiles the loop's parts in the reverse order: the two processes meet in
the middle (warm.py), and each loads from the cache what the other filed.
The warmer is stopped once the loop is in: what it has not compiled yet the
process compiles when it needs it.

TAURUS_WARMING in the environment (set by the test session, whose own
warmers run beside it, and by the warmer itself) keeps the second process
out; the notice is printed either way.
"""
import os
import subprocess
import sys
import time

WARMING = "TAURUS_WARMING"


def cached(dispatcher) -> bool:
    """Whether Numba's cache holds an index for this compiled function (a
    cold cache has none)."""
    cache = getattr(dispatcher, "_cache", None)
    path = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    return path is None or os.path.exists(path)


def _spare_core() -> bool:
    return len(os.sched_getaffinity(0)) > 1


class FirstCompile:
    """``with FirstCompile(engine_run): engine_run(...)``: a notice and a
    warmer when the loop is not in the cache; nothing otherwise."""

    def __init__(self, dispatcher, out=sys.stderr):
        self.cold = not cached(dispatcher)
        self.where = getattr(getattr(dispatcher, "_cache", None), "_cache_path", "?")
        self.out, self.warmer, self.t0 = out, None, 0.0

    def __enter__(self):
        if not self.cold:
            return self
        self.t0 = time.monotonic()
        split = not os.environ.get(WARMING) and _spare_core()
        print(f"taurus: compiling the engine for these sources, once: about 2 min with "
              f"a spare core, 4 min without{' (using one)' if split else ''}; "
              f"kept in {self.where}", file=self.out, flush=True)
        if split:
            self.warmer = subprocess.Popen([sys.executable, "-m", "taurus.datapath.warm"],
                                           env={**os.environ, WARMING: "1"},
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc):
        if self.warmer is not None:
            if self.warmer.poll() is None:
                self.warmer.terminate()         # warm.py removes its shared memory
            try:
                self.warmer.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.warmer.kill()
                self.warmer.wait()
        if self.cold and exc[0] is None:
            print(f"taurus: engine compiled in {time.monotonic() - self.t0:.0f} s",
                  file=self.out, flush=True)
        return False
