"""The one clock abstraction: every device sees time only through ``clock_now``.

Two clocks share one representation (a small int64 array plus a float64 array):

- WALL: the CPU's invariant TSC, read in Numba (about 10 ns) and converted to
  CLOCK_MONOTONIC nanoseconds with a calibrated ratio.  Real ports.
- VIRTUAL: a number the engine sets; when every port and device is idle it
  jumps straight to the next due event.  In-memory links; deterministic.

Times are int64 nanoseconds.  Under WALL they are CLOCK_MONOTONIC values, so
timestamps agree with what other processes read with time.monotonic_ns().
"""
import time
from collections import namedtuple

import numba as nb
import numpy as np

from .lowlevel import rdtsc

WALL = 0
VIRTUAL = 1
CLOCK_NAMES = {"wall": WALL, "virtual": VIRTUAL}

# int64 slots
KIND, VNOW, TSC0, NS0 = range(4)

Clock = namedtuple("Clock", ["i", "f"])
"""i int64[4] (kind, virtual now, TSC base, ns base); f float64[1] (ns per TSC tick)."""


def _calibrate(sample_s: float) -> tuple[int, int, float]:
    """Measure TSC ticks against CLOCK_MONOTONIC over sample_s seconds."""
    _tsc_now()  # compile before timing
    t0, c0 = time.monotonic_ns(), _tsc_now()
    time.sleep(sample_s)
    t1, c1 = time.monotonic_ns(), _tsc_now()
    if c1 <= c0:
        raise RuntimeError("TSC does not advance; this CPU cannot run the wall clock")
    return c0, t0, (t1 - t0) / (c1 - c0)


@nb.njit(cache=True)
def _tsc_now():
    return np.int64(rdtsc())


def make_clock(kind: str = "virtual", start_ns: int = 0, calibrate_s: float = 0.05) -> Clock:
    if kind not in CLOCK_NAMES:
        raise ValueError(f"clock must be one of {sorted(CLOCK_NAMES)}, got {kind!r}")
    i = np.zeros(4, np.int64)
    f = np.ones(1, np.float64)
    i[KIND] = CLOCK_NAMES[kind]
    if i[KIND] == WALL:
        i[TSC0], i[NS0], f[0] = _calibrate(calibrate_s)
    else:
        i[VNOW] = start_ns
    return Clock(i, f)


@nb.njit(cache=True, inline="always")
def clock_now(clk):
    if clk.i[KIND] == VIRTUAL:
        return clk.i[VNOW]
    return clk.i[NS0] + np.int64((np.int64(rdtsc()) - clk.i[TSC0]) * clk.f[0])


@nb.njit(cache=True, inline="always")
def clock_is_virtual(clk):
    return clk.i[KIND] == VIRTUAL


@nb.njit(cache=True)
def clock_advance_to(clk, t):
    """Virtual clock only: move forward to t (never backward)."""
    if t > clk.i[VNOW]:
        clk.i[VNOW] = t


def clock_now_py(clk: Clock) -> int:
    return int(clock_now(clk))
