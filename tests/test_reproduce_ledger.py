"""The results ledger (taurus/reproduce/ledger.toml) and `taurus reproduce
--all`: every scenario is in it, docs/RESULTS.md is made from it, drift and
crashes are caught, and a short --all --check runs end to end."""
import json
import os
import re
import shutil

import pytest

from taurus import reproduce
from taurus.cli import main
from taurus.reproduce import ledger as L
from taurus.reproduce.suite import CRASH, DRIFT, NEW, OK, verdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_scenario_is_in_the_ledger_and_nothing_else():
    assert set(L.load()) == set(reproduce.load())


def test_every_figure_and_claim_reads_its_recorded_figures():
    """Each entry's claims hold on its own recorded values where they are
    all figures of the entry (the rest is checked by --all --check)."""
    for name, e in L.load().items():
        assert e.command == f"taurus reproduce {name}" and e.headline.startswith(f"{name}: ")
        assert e.figures, name
        for f in e.figures:
            assert f.label and f.key and f.tol >= 0 and f.atol >= 0, (name, f)
            if f.goal:
                L.goal_met(f)                    # parses


def test_results_md_is_made_from_the_ledger():
    with open(os.path.join(ROOT, "docs", "RESULTS.md")) as f:
        assert f.read() == L.render(L.load(), reproduce.load()), \
            "docs/RESULTS.md is stale: taurus reproduce --results > docs/RESULTS.md"


def test_readme_points_to_the_results():
    with open(os.path.join(ROOT, "README.md")) as f:
        assert "docs/RESULTS.md" in f.read()


def _entry(**kw):
    figs = [L.Figure("a/b", "ab", 10.0, tol=0.05), L.Figure("n", "n", 3, atol=1),
            L.Figure("gone", "gone", L.EMPTY), L.Figure("failed", "failed", [])]
    return L.Entry("x", "taurus reproduce x", "x: 1", "c", "d", 1.0, figures=figs,
                   claims=kw.get("claims", ["n < a/b", "gone > n"]))


def test_drift_within_and_beyond_tolerance():
    e = _entry()
    fig = {"a": {"b": 10.4}, "n": 4, "gone": None, "failed": []}
    assert L.drift(e, fig) == []
    fig = {"a": {"b": 10.6}, "n": 5, "gone": 7, "failed": ["dctcp"]}
    assert L.drift(e, fig) == ["a/b 10 → 10.6 (±5%)", "n 3 → 5 (±1)", "gone - → 7 (equal)",
                               "failed [] → ['dctcp'] (equal)"]
    assert L.drift(e, {"a": {}, "n": 3, "gone": None, "failed": []})[0] == \
        "a/b: no figure 'a/b'"


def test_claims_compare_paths_numbers_and_empty_figures():
    e = _entry(claims=["a/b < 2 * n", "gone > n"])
    assert L.broken_claims(e, {"a": {"b": 5}, "n": 3, "gone": None}) == []   # None: infinite
    bad = L.broken_claims(e, {"a": {"b": 7}, "n": 3, "gone": 2})
    assert bad == ["a/b < 2 * n (is 7 vs 6)", "gone > n (is 2 vs 3)"]
    with pytest.raises(L.LedgerError, match="expected 'A op B'"):
        L._parse_claim("a/b is small")


def test_goals_read_the_recorded_value():
    assert L.goal_met(L.Figure("r", "r", 8.1, goal=">= 10")) is False
    assert L.goal_met(L.Figure("r", "r", 0, goal="== 0")) is True
    assert L.goal_met(L.Figure("r", "r", 1)) is None


def test_verdicts():
    book = {"x": _entry()}
    good = {"name": "x", "figures": {"a": {"b": 10.0}, "n": 3, "gone": None, "failed": []}}
    assert verdict(good, book) == (OK, [])
    assert verdict({"name": "x", "error": "ValueError: no"}, book) == (CRASH, ["ValueError: no"])
    assert verdict({"name": "y", "figures": {}}, book)[0] == NEW
    assert verdict({"name": "x", "figures": {**good["figures"], "n": 9}}, book)[0] == DRIFT


def test_all_refuses_what_does_not_go_with_it(capsys):
    assert main(["reproduce", "--all", "--quick"]) == 2
    assert main(["reproduce", "oscar-bls", "--check"]) == 2
    assert main(["reproduce", "--all", "--check", "--mode", "agent"]) == 2
    assert main(["reproduce", "--all", "--only", "no-such"]) == 2
    assert "unknown scenario" in capsys.readouterr().err


ONLY = "oscar-fairness,tcd-states"


def test_all_check_runs_each_scenario_in_full_and_compares(tmp_path, capsys, monkeypatch):
    """Two short scenarios in two processes: both match the ledger; then a
    ledger whose figure was recorded otherwise reports the drift and exits 1,
    and --record writes the measured value back."""
    out = str(tmp_path / "all")
    assert main(["reproduce", "--all", "--check", "--only", ONLY, "--workers", "2",
                 "--out", out]) == 0, capsys.readouterr().out
    text = capsys.readouterr().out.splitlines()
    assert text[0] == f"reproduce: 2 scenarios in 2 processes -> {out}"
    assert sorted(ln.split()[:2] for ln in text[1:3]) == [["ok", "oscar-fairness"],
                                                          ["ok", "tcd-states"]]
    assert text[-1].startswith("reproduce: 2 ok, 0 drifted, 0 crashed (2 scenarios")
    for n in ONLY.split(","):
        with open(os.path.join(out, n, "figures.json")) as f:
            assert json.load(f)["quick"] is False
        assert os.path.getsize(os.path.join(out, n, "log.txt")) > 0

    book = tmp_path / "ledger.toml"
    shutil.copy(L.LEDGER, book)
    text = book.read_text()
    was = L.load()["oscar-fairness"].figures[1]
    assert was.key == "rows/authors/8/jain"
    moved = re.sub(r'(key = "rows/authors/8/jain"\nlabel = [^\n]*\nvalue = )[^\n]+', r"\g<1>0.5",
                   text)
    assert moved != text
    book.write_text(moved)
    monkeypatch.setattr(L, "LEDGER", str(book))
    monkeypatch.setattr(L, "RESULTS", str(tmp_path / "RESULTS.md"))
    assert main(["reproduce", "--all", "--check", "--only", "oscar-fairness", "--workers", "1",
                 "--out", out]) == 1
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("DRIFT")]
    assert line and f"rows/authors/8/jain 0.5 → {L.fmt(was.value)} (±0.005)" in line[0]
    assert main(["reproduce", "--all", "--record", "--only", "oscar-fairness", "--workers", "1",
                 "--out", out]) == 0
    assert L.load()["oscar-fairness"].figures[1].value == pytest.approx(was.value)
    assert (tmp_path / "RESULTS.md").read_text() == L.render(L.load(), reproduce.load())


def test_all_on_a_dask_cluster_sends_each_run_back(tmp_path):
    """On Dask a worker runs the scenario in scratch space and sends the
    directory back: the same figures as a local run, the files in place."""
    distributed = pytest.importorskip("dask.distributed")
    from taurus.reproduce.suite import run_all
    lines = []
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        res = run_all(["oscar-fairness"], str(tmp_path), scheduler=cluster.scheduler_address,
                      echo=lines.append)
    r = res["oscar-fairness"]
    assert r["status"] == OK and lines[1].startswith("ok     oscar-fairness"), lines
    with open(tmp_path / "oscar-fairness" / "figures.json") as f:
        assert json.load(f)["headline"] == r["figures"]["headline"]
    assert (tmp_path / "oscar-fairness" / "log.txt").read_text().endswith(
        r["figures"]["headline"] + "\n")
