"""bench/sim_vs.py's ratio: medians of each tree's loop times, and the
per-round range."""
import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("bench_sim_vs", os.path.join(HERE, "bench", "sim_vs.py"))
sv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sv)


def test_ratio_is_of_the_medians_with_the_per_round_range():
    m, lo, hi = sv.ratios([10.0, 30.0, 20.0], [1.0, 2.0, 4.0])
    assert m == pytest.approx(10.0) and lo == pytest.approx(5.0) and hi == pytest.approx(15.0)


def test_ratio_needs_matching_positive_times():
    for old, new in (([], []), ([1.0], [1.0, 2.0]), ([1.0], [0.0])):
        with pytest.raises(ValueError):
            sv.ratios(old, new)


def test_fat_tree_case_is_the_quick_k4_fat_tree(tmp_path):
    from taurus.experiment.schema import read_toml
    path = sv.experiment_file("fat-tree", str(tmp_path))
    cfg = read_toml(path)
    assert cfg["topology"]["fat_tree"]["k"] == 4 and cfg["cc"]["mode"] == "agent"
    assert sv.experiment_file("dumbbell", str(tmp_path)) == sv.DEMO
