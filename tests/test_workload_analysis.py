"""Flow-size CDFs, Poisson arrivals, FCT slowdown binning and Jain fairness
on hand-computed cases."""
import numpy as np
import pytest

from taurus.tools.analysis import fct_slowdown, jain, slowdown_bins
from taurus.tools.workload import SizeCdf, poisson_arrivals


def test_shipped_cdfs_load_and_sample_within_their_support():
    for name in ("websearch", "hadoop"):
        c = SizeCdf.load(name)
        s = c.sample(np.random.default_rng(1), 20000)
        assert s.min() >= 1 and s.max() <= c.sizes[-1]
        assert abs(s.mean() / c.mean() - 1) < 0.1       # sampling matches the mean
    # sum of interval midpoints x probability mass: 750 + 750 + 2500 + 4000 + 8450
    # + 9800 + 60000 + 150000 + 350000 + 525000 + 600000
    assert SizeCdf.load("websearch").mean() == pytest.approx(1_711_250, rel=1e-9)


def test_bad_cdf_is_refused(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("size,cdf\n0,0\n100,50\n50,100\n")
    with pytest.raises(ValueError, match="non-decreasing"):
        SizeCdf.load(str(f))


def test_poisson_load():
    t = poisson_arrivals(np.random.default_rng(2), 0.5, 10e9, 125_000, 1.0)
    # lambda = 0.5 * 10e9 / (8 * 125000) = 5000 flows/s
    assert abs(len(t) - 5000) < 4 * np.sqrt(5000) and t.max() < 1.0
    with pytest.raises(ValueError):
        poisson_arrivals(np.random.default_rng(2), 0.0, 1e9, 1000, 1)


def test_slowdown_binning_hand_computed():
    # line 10 Gbit/s (0.8 ns per byte), base RTT 10 us
    size = [1000, 1000, 100_000, 100_000]
    ideal = [10_000 + 800, 10_000 + 800, 10_000 + 80_000, 10_000 + 80_000]
    fct = [ideal[0] * 1, ideal[1] * 3, ideal[2] * 2, ideal[3] * 4]
    sd = fct_slowdown(size, fct, 10_000, 10e9)
    assert list(sd) == pytest.approx([1, 3, 2, 4])
    bins = slowdown_bins(size, sd, [0, 10_000, 1_000_000])
    assert bins[0]["count"] == 2 and bins[0]["p50"] == pytest.approx(2.0)
    assert bins[1]["p99"] == pytest.approx(3.98)
    assert fct_slowdown([1000], [1], 10_000, 10e9)[0] == 1.0   # never below 1


def test_jain():
    assert jain([5, 5, 5, 5]) == pytest.approx(1.0)
    assert jain([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain([2, 1]) == pytest.approx(9 / 10)
