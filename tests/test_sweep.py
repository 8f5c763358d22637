"""`taurus sweep` (taurus/experiment/sweep.py): a grid of points run in
local processes and on a Dask LocalCluster give identical figures; an
interrupted sweep resumes with only the missing points; the table, the
plots and `taurus report` on a sweep directory."""
import json
import os
import shutil

import pytest

from taurus.cli import main
from taurus.experiment import sweep
from taurus.experiment.schema import ExperimentError

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "dctcp_dumbbell.toml")
# three points of the demo's dumbbell, short
PARAMS = [("cc.params.g", [0.0625, 0.125, 0.25]), ("experiment.duration", ["3ms"]),
          ("experiment.warmup", ["1ms"])]


def test_parse_param():
    assert sweep.parse_param("cc.params.g=0.0625,0.125") == ("cc.params.g", [0.0625, 0.125])
    assert sweep.parse_param("cc.mode=native,agent") == ("cc.mode", ["native", "agent"])
    assert sweep.parse_param('experiment.duration="5ms",10ms')[1] == ["5ms", "10ms"]
    for bad in ("cc.params.g", "=1,2", "cc.params.g=", "cc.mode=native,native"):
        with pytest.raises(ExperimentError):
            sweep.parse_param(bad)


def test_every_point_is_validated_before_any_runs(tmp_path):
    with pytest.raises(ExperimentError, match=r"cc.mode=nope.*cc.mode"):
        sweep.sweep(EXAMPLE, [("cc.mode", ["native", "nope"])], str(tmp_path / "s"),
                    echo=lambda s: 0)
    assert not os.path.exists(tmp_path / "s")


def _figs(man):
    return [(p["values"], p["seed"], p["figures"]) for p in man["points"]]


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("sweep") / "local")
    lines = []
    man = sweep.sweep(EXAMPLE, PARAMS, out, workers=2, echo=lines.append, progress=False)
    return out, man, lines


def test_local_sweep_table_and_plots(local):
    out, man, lines = local
    assert [p["status"] for p in man["points"]] == ["done"] * 3
    assert [p["values"]["cc.params.g"] for p in man["points"]] == [0.0625, 0.125, 0.25]
    for p in man["points"]:
        assert p["figures"]["throughput_gbps"] > 1.5 and p["figures"]["marks"] > 0
        assert os.path.exists(os.path.join(out, p["dir"], "summary.json"))
    with open(os.path.join(out, "sweep.csv")) as f:
        rows = f.read().splitlines()
    assert len(rows) == 4 and rows[0].startswith("point,cc.params.g,experiment.duration")
    assert len(man["plots"]) == 3 and all(os.path.getsize(p) > 0 for p in man["plots"])
    assert lines[-1].startswith("sweep: 3 of 3 points done")


def test_resume_runs_only_the_missing_points(local, tmp_path):
    out, man, _ = local
    again = str(tmp_path / "again")
    shutil.copytree(out, again)
    os.remove(os.path.join(again, man["points"][1]["dir"], "summary.json"))
    lines = []
    man2 = sweep.sweep(EXAMPLE, PARAMS, again, workers=1, echo=lines.append, progress=False)
    assert lines[0] == "sweep: 3 points, 2 already done, 1 to run in 1 processes"
    assert _figs(man2) == _figs(man)          # deterministic: the rerun point is the same
    with pytest.raises(ExperimentError, match="another sweep"):
        sweep.sweep(EXAMPLE, PARAMS[:1], again, echo=lambda s: 0)


def test_dask_local_cluster_gives_identical_results(local, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    _, man, _ = local
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        man2 = sweep.sweep(EXAMPLE, PARAMS, str(tmp_path / "dask"), scheduler=cluster.scheduler_address,
                           echo=lambda s: 0, progress=False)
    assert _figs(man2) == _figs(man)


def test_cli_sweep_and_report(local, tmp_path, capsys):
    out, man, _ = local
    assert main(["report", out]) == 0
    text = capsys.readouterr().out
    assert "throughput_gbps" in text and len(text.strip().splitlines()) == 5
    assert main(["sweep", EXAMPLE, "--param", "cc.params.g"]) == 2
    assert "expected KEY=V1,V2" in capsys.readouterr().err
    d = str(tmp_path / "one")
    assert main(["sweep", EXAMPLE, "--param", "experiment.duration=3ms", "--param",
                 "experiment.warmup=1ms", "--out", d, "--workers", "1", "--no-progress"]) == 0
    assert json.load(open(os.path.join(d, "sweep.json")))["points"][0]["status"] == "done"


def test_a_sweep_loads_as_dataframes(local):
    import taurus.results as tr
    out, man, _ = local
    s = tr.load(out)
    assert isinstance(s, tr.Sweep) and list(s.points.index) == [0, 1, 2]
    assert list(s.points["cc.params.g"]) == [0.0625, 0.125, 0.25]
    runs = s.runs()
    assert [r.summary["seed"] for r in runs] == [p["seed"] for p in man["points"]]
    assert (tr.compare(runs)["throughput_bps"] / 1e9).round(3).tolist() == \
        [round(p["figures"]["throughput_gbps"], 3) for p in man["points"]]


def test_a_sweep_as_one_html_file(local, tmp_path):
    out, man, _ = local
    page = tmp_path / "s.html"
    assert main(["report", "--html", out, "-o", str(page)]) == 0
    text = page.read_text()
    assert "Sweep" in text and "cc.params.g" in text
    # a plot per swept key, then each point's rates and queue
    assert text.count("<img") == len(man["params"]) + 2 * len(man["points"])
