"""The soak's CI-sized run (bench/reliab_soak.py, bench/reliability.py part
"soak"): perf clients with --verify one after another on real packets, with
an agent, an app and the engine SIGKILLed, then wall-clock runs with an
agent and a run SIGKILLed.  Every byte ACKed is verified, none wrong, and
nothing is left."""
import os
import sys

import pytest

from conftest import needs_root

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import reliab_soak  # noqa: E402

pytestmark = pytest.mark.serial     # namespaces, AF_XDP, the wall clock: runs alone


@needs_root
def test_soak_loses_nothing_and_leaves_nothing(tmp_path):
    r = reliab_soak.run(60, seed=1, tmp=str(tmp_path), log=print)
    p, w = r["perf"], r["run"]
    assert p["failures"] == [] and w["failures"] == [], (p["failures"], w["failures"])
    assert p["engine_kills"] == 1 and p["clients"] >= 4
    assert p["wrong"] == 0 and p["short"] == [] and r["bytes_lost"] == 0
    assert p["verified"] >= p["acked"] > 0
    assert w["runs"] >= 2 and w["complete"] >= 1
    assert p["left"] == [] and w["left"] == []
    assert r["ok"]


def test_rss_trend_is_the_fitted_rise_not_the_last_sample_over_the_first():
    # a client's buffers come and go: samples cycle by +-5% with no growth
    cycle = [100_000 * (1 + 0.05 * ((k % 3) - 1)) for k in range(90)]
    assert cycle[-1] / cycle[0] > 1.1                # first low, last high: +10.5%
    assert abs(reliab_soak.rss_trend_pct(cycle)) < 0.5
    assert reliab_soak.spread_pct(cycle) == pytest.approx((-5.0, 5.0))
    ramp = [100_000 + 20 * k for k in range(101)]    # 2% over the run
    assert reliab_soak.rss_trend_pct(ramp) == pytest.approx(2.0)
    assert reliab_soak.rss_trend_pct([1]) is None
