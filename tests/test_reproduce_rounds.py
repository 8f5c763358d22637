"""The convergence counter (taurus/reproduce/rounds.py) on synthetic rate
traces whose rounds are known."""
import numpy as np
import pytest

from taurus.reproduce.rounds import (growth, level, own_rounds, per_round, rounds_to_reach,
                                     rounds_to_settle, settled, spread)

RTT = 10_000.0


def _trace(per_round_values, samples=5):
    """Samples every RTT / samples ns holding each round's value."""
    t = np.arange(len(per_round_values) * samples) * RTT / samples
    return t, np.repeat(per_round_values, samples)


def test_halving_from_28_settles_in_known_rounds():
    # 28 -> 14 -> 7 -> 3.5 -> 1.75 -> 1.0 (then held): in band from round 6
    v = [28, 14, 7, 3.5, 1.75] + [1.0] * 20
    t, x = _trace(np.array(v, float))
    r = per_round(t, x, 0, len(v) * RTT, RTT)
    assert np.allclose(r, v)
    level = settled(r)
    assert level == 1.0
    assert rounds_to_settle(r, level) == 6


def test_additive_ramp_settles_in_known_rounds():
    # 0.1 + 0.06 per round up to 1.0: 0.94 at round 14 (6% short), 1.0 from round 15
    v = list(np.minimum(0.1 + 0.06 * np.arange(30), 1.0))
    r = per_round(*_trace(np.array(v)), 0, 30 * RTT, RTT)
    assert rounds_to_settle(r, settled(r)) == 16


def test_level_is_the_traces_own_target():
    # settles at 0.95 (HPCC's eta): a band on the link would never count it
    v = [0.3, 0.6, 0.92] + [0.95] * 20
    r = per_round(*_trace(np.array(v)), 0, 23 * RTT, RTT)
    assert settled(r) == 0.95 and rounds_to_settle(r, settled(r)) == 3


def test_leaving_the_band_restarts_the_count():
    v = [2.0, 1.0, 1.0, 1.3, 1.0] + [1.0] * 20
    r = per_round(*_trace(np.array(v)), 0, 25 * RTT, RTT)
    assert rounds_to_settle(r, settled(r)) == 5
    assert rounds_to_reach(r, level(r)) == 2         # reached at round 2, left at round 4


def test_oscillation_never_settles():
    v = [1.0, 1.2] * 12
    r = per_round(*_trace(np.array(v)), 0, 24 * RTT, RTT)
    assert settled(r) is None and rounds_to_settle(r, None) is None
    assert level(r) == 1.1 and abs(spread(r) - 0.2 / 1.1) < 1e-9
    assert rounds_to_reach(r, 1.0) == 1 and rounds_to_reach(r, 5.0) is None


def test_partial_round_and_empty_round():
    t = np.array([0, 1, 25_000.0])           # round 1 holds no sample: repeats round 0
    r = per_round(t, np.array([2.0, 4.0, 8.0]), 0, 35_000, RTT)
    assert list(r) == [3.0, 3.0, 8.0]


def test_growth_orders():
    d = [4, 10, 28]
    assert growth(d, [3, 3, 4])["order"] == "O(1)"
    g = growth(d, [10 + 5 * np.log2(x) for x in d])
    assert g["order"] == "O(log Delta)" and abs(g["per_doubling"] - 5) < 1e-9
    assert growth(d, [2 * x for x in d])["order"] == "O(Delta)"
    assert growth(d, [None, 3, None])["order"] is None
    assert growth([4, 28], [3, 30])["order"] == "growing"
    assert growth(d, [30, 20, 10])["order"] == "shrinking"


def test_own_rounds_count_the_paths_round_trips():
    t = np.arange(0, 100_000, 1_000.0)
    assert own_rounds(t, np.full(len(t), RTT), 0, 100_000) == pytest.approx(10.0)
    slow = np.where(t < 50_000, 2 * RTT, RTT)          # a queue doubles the first half's RTT
    assert own_rounds(t, slow, 0, 100_000) == pytest.approx(7.5)
    assert own_rounds(t, slow, 200_000, 300_000) == 0.0
