"""The one clock abstraction: every device sees time only through ``clock_now``.

Two clocks share one representation (a small int64 array plus a float64 array):

- WALL: the CPU's invariant TSC, read in Numba (about 10 ns) and converted to
  CLOCK_MONOTONIC nanoseconds with a calibrated ratio.  Real ports.
- VIRTUAL: a number the engine sets; when every port and device is idle it
  jumps straight to the next due event.  In-memory links; deterministic.

Times are int64 nanoseconds.  Under WALL they are CLOCK_MONOTONIC values, so
timestamps agree with what other processes read with time.monotonic_ns().
The TSC ratio is calibrated over 50 ms at start (each reading a TSC value
bracketed by two CLOCK_MONOTONIC reads, the tightest of five); the engine
calls ``clock_resync`` about once a second between run chunks, which
re-measures the ratio since its last reading and slews out any offset without
ever stepping back (without it the clock drifted ~0.2 ms per second).
"""
import time
from collections import namedtuple

import numba as nb
import numpy as np

from .lowlevel import rdtsc

WALL = 0
VIRTUAL = 1
CLOCK_NAMES = {"wall": WALL, "virtual": VIRTUAL}

# int64 slots: the current anchor (TSC0, NS0) and the last paired reading (C_READ, T_READ)
KIND, VNOW, TSC0, NS0, C_READ, T_READ = range(6)
SLEW_MAX = 1e-3        # resync changes the rate by at most 0.1%

Clock = namedtuple("Clock", ["i", "f"])
"""i int64[6] (kind, virtual now, TSC anchor, ns at the anchor, last TSC
reading paired with CLOCK_MONOTONIC, that ns); f float64[1] (ns per TSC tick)."""


def _pair() -> tuple[int, int]:
    """(TSC, CLOCK_MONOTONIC ns) read together: the TSC read bracketed by two
    clock reads, the tightest of five (the call into compiled code costs
    microseconds, enough to skew a 50 ms calibration by 2e-4)."""
    best = None
    for _ in range(5):
        t0 = time.monotonic_ns()
        c = int(_tsc_now())
        t1 = time.monotonic_ns()
        if best is None or t1 - t0 < best[0]:
            best = (t1 - t0, c, (t0 + t1) // 2)
    return best[1], best[2]


def _calibrate(sample_s: float) -> tuple[int, int, float]:
    """Measure TSC ticks against CLOCK_MONOTONIC over sample_s seconds."""
    _tsc_now()  # compile before timing
    c0, t0 = _pair()
    time.sleep(sample_s)
    c1, t1 = _pair()
    if c1 <= c0:
        raise RuntimeError("TSC does not advance; this CPU cannot run the wall clock")
    return c0, t0, (t1 - t0) / (c1 - c0)


def resync_params(tsc0: int, ns0: int, ratio: float, c_last: int, t_last: int,
                  c: int, t: int, horizon_ns: float = 1e9) -> tuple[int, int, float]:
    """A new (anchor TSC, anchor ns, ns per tick) given a fresh reading (c, t):
    continuous at c (the clock never steps), the rate measured since the last
    reading (c_last, t_last), nudged so the offset t - now fades over
    horizon_ns (at most SLEW_MAX)."""
    now = ns0 + int((c - tsc0) * ratio)
    rate = (t - t_last) / (c - c_last) if c > c_last else ratio
    slew = max(-SLEW_MAX, min(SLEW_MAX, (t - now) / horizon_ns))
    return c, now, rate * (1.0 + slew)


def clock_resync(clk: "Clock", horizon_ns: float = 1e9) -> None:
    """Wall clock only (a no-op on the virtual clock); call between run chunks."""
    if clk.i[KIND] != WALL:
        return
    c, t = _pair()
    i = clk.i
    i[TSC0], i[NS0], clk.f[0] = resync_params(int(i[TSC0]), int(i[NS0]), float(clk.f[0]),
                                              int(i[C_READ]), int(i[T_READ]), c, t,
                                              horizon_ns)
    i[C_READ], i[T_READ] = c, t


@nb.njit(cache=True)
def _tsc_now():
    return np.int64(rdtsc())


def make_clock(kind: str = "virtual", start_ns: int = 0, calibrate_s: float = 0.05) -> Clock:
    if kind not in CLOCK_NAMES:
        raise ValueError(f"clock must be one of {sorted(CLOCK_NAMES)}, got {kind!r}")
    i = np.zeros(6, np.int64)
    f = np.ones(1, np.float64)
    i[KIND] = CLOCK_NAMES[kind]
    if i[KIND] == WALL:
        i[TSC0], i[NS0], f[0] = _calibrate(calibrate_s)
        i[C_READ], i[T_READ] = i[TSC0], i[NS0]
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

