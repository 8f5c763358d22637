"""taurus.results: a run directory as DataFrames whose figures are the
summary's and the CSVs', and examples/analysis.py (DCTCP against OSCAR on
the demo) run headless as a user would."""
import os
import sys

import pytest

import taurus.results as tr

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import analysis  # noqa: E402  (examples/ is not a package)


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    d = tmp_path_factory.mktemp("analysis")
    assert analysis.main([str(d), "--duration", "3ms", "--warmup", "1ms"]) == 0
    return d


def test_the_analysis_example_compares_the_two_algorithms(out, capsys):
    assert os.path.getsize(out / "queue.png") > 0
    t = tr.compare([out / "dctcp", out / "oscar"])
    assert list(t["algorithm"]) == ["dctcp", "oscar"] and t["complete"].all()
    assert (t["throughput_bps"] > 1e9).all() and (t["agent_messages"] > 0).all()


def test_a_run_loads_with_the_summarys_figures(out):
    r = tr.load(str(out / "dctcp"))
    s = r.summary
    assert isinstance(r, tr.Run) and r.label == "dctcp-dumbbell (dctcp agent)"
    assert list(r.flows["src"]) == [f["src"] for f in s["flows"]]
    assert r.flows["goodput_bps"].tolist() == [f["goodput_bps"] for f in s["flows"]]
    port = s["busiest_port"]
    assert r.ports.loc[port, "queue_mean_bytes"] == s["ports"][port]["queue_mean"]
    assert r.ports.loc[port, "counters_ecn_mark"] == s["ports"][port]["marks"]
    assert set(r.agents.index) == set(s["agent"]["hosts"]) and r.agents["messages"].sum() == \
        s["agent"]["messages"]
    q = r.queue_series
    assert list(q.columns) == ["t_ns", "port", "queue_bytes"] and set(q["port"]) == set(s["ports"])
    assert list(r.fct.columns) == tr.SERIES["fct"]          # no finite flows: empty, with columns
    assert r.algorithms.loc[0, "name"] == "dctcp"


def test_a_directory_that_is_neither_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a run"):
        tr.load(str(tmp_path))
