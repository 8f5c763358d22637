"""Compile (or load from Numba's cache) every built-in algorithm's calls in
a process of its own, ahead of need:

    python -m taurus.cc_algorithms.warm

The test session starts it beside itself (tests/conftest.py): a cold run
compiles the engine in the session's process for minutes, while this one
fills the cache for the algorithms on the other core, so the session later
loads them instead of compiling them in line."""
import sys

from .registry import BUILTINS, lookup
from .runtime import Runtime


def warm(names=None) -> list[str]:
    """Build each algorithm's compiled runtime (its native entry is compiled
    eagerly); returns the names that failed."""
    failed = []
    for name in names or sorted(BUILTINS):
        try:
            Runtime(lookup(name))
        except Exception:               # the session reports it where it is used
            failed.append(name)
    return failed


if __name__ == "__main__":
    sys.exit(1 if warm(sys.argv[1:]) else 0)
