"""The wall clock's TSC resync: it never steps, measures the rate over the
whole run, and slews a bounded offset away (taurus/datapath/clock.py)."""
import time

import pytest

from taurus.datapath.clock import SLEW_MAX, clock_now, clock_resync, make_clock, resync_params

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

RATIO = 0.4                       # ns per tick of a 2.5 GHz TSC


def _now(tsc0, ns0, ratio, c):
    return ns0 + int((c - tsc0) * ratio)


@pytest.mark.parametrize("true_ratio,offset", [(0.4, 0), (0.4002, 0), (0.3999, 30_000),
                                               (0.4, -2_000_000)])
def test_resync_is_continuous_and_converges(true_ratio, offset):
    # calibrated at c=0 as t=0 (off by `offset`); the clock runs at RATIO from there
    tsc0, ns0, ratio = 0, 0, RATIO
    c, last = 0, (0, offset)
    errors = []
    for _ in range(30):                          # a resync a second
        c += int(1e9 / true_ratio)
        t = int(c * true_ratio) + offset         # CLOCK_MONOTONIC at this TSC
        before = _now(tsc0, ns0, ratio, c)
        tsc0, ns0, ratio = resync_params(tsc0, ns0, ratio, *last, c, t)
        last = (c, t)
        assert (tsc0, ns0) == (c, before)        # continuous: no step at the anchor
        assert ratio > 0                         # and never backwards after it
        errors.append(abs(t - before))
    assert errors[-1] < 1_000, errors            # offset and rate error both gone


def test_slew_is_bounded():
    _, _, r = resync_params(0, 0, RATIO, 0, -10**9, 10**9, 4 * 10**8 - 10**9)  # 1 s ahead
    assert r == pytest.approx(RATIO * (1 - SLEW_MAX))
    _, _, r = resync_params(0, 0, RATIO, 0, 10**9, 10**9, 4 * 10**8 + 10**9)   # 1 s behind
    assert r == pytest.approx(RATIO * (1 + SLEW_MAX))


def test_engine_clock_follows_monotonic_after_resync():
    clk = make_clock("wall", calibrate_s=0.02)
    clock_resync(clk)
    time.sleep(0.05)
    clock_resync(clk)
    d = sorted(int(clock_now(clk)) - time.monotonic_ns() for _ in range(7))[3]
    assert abs(d) < 1_000_000, d     # loose: a loaded VM; the drift it removes is ~0.2 ms/s
    assert clock_resync(make_clock("virtual")) is None
