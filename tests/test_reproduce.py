"""`taurus reproduce`: each scenario --quick completes, writes figures.json
and its plots, and ends with its headline line."""
import json
import os
import re


from taurus.cli import main
from taurus import reproduce
from taurus.reproduce.baselines import senders
from taurus.reproduce.ledger import assert_claims


def test_list_names_every_scenario(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert {ln.split()[0] for ln in out.splitlines()} == set(reproduce.load()) \
        >= {"baselines", "host-congestion"}


def test_unknown_scenario_is_refused(capsys):
    assert main(["reproduce", "no-such"]) == 2
    assert "unknown scenario" in capsys.readouterr().err


def _last_line(capsys):
    return capsys.readouterr().out.strip().splitlines()[-1]


def test_baselines_quick(tmp_path, capsys):
    out = str(tmp_path / "b")
    assert main(["reproduce", "baselines", "--quick", "--out", out]) == 0
    line = _last_line(capsys)
    algs = senders()
    m = re.fullmatch(r"baselines: (\d+) algorithms, worst utilisation ([\d.]+)%, "
                     r"worst fairness ([\d.]+)", line)
    assert m and int(m[1]) == len(algs), line
    with open(os.path.join(out, "figures.json")) as f:
        fig = json.load(f)
    assert fig["headline"] == line and fig["algorithms"] == algs and fig["failed"] == []
    assert_claims("baselines", fig)             # the ledger's orderings, as in the full run
    for part in ("dumbbell", "incast"):
        assert set(fig[part]) == set(algs)
        for a, r in fig[part].items():
            assert {"goodput_bps", "queue_p50", "queue_p99", "jain", "drops"} <= set(r)
    # DCTCP: the 2 flows fill the bottleneck fairly; the incast completes
    d, i = fig["dumbbell"]["dctcp"], fig["incast"]["dctcp"]
    assert d["utilisation"] > 0.85 and d["jain"] > 0.9 and d["drops"] == 0
    assert i["completed"] == i["flows"] == 16 and i["utilisation"] > 0.8   # two rounds of 8
    for p in fig["plots"]:
        assert os.path.getsize(os.path.join(out, p)) > 0
    assert len(fig["plots"]) == 4


def test_host_congestion_quick(tmp_path, capsys):
    out = str(tmp_path / "h")
    assert main(["reproduce", "host-congestion", "--quick", "--out", out]) == 0
    line = _last_line(capsys)
    m = re.fullmatch(r"host-congestion: fabric-only ([\d.]+) Gbit/s, (\d+) host drops; "
                     r"host-aware ([\d.]+) Gbit/s, (\d+) host drops \(([+-][\d.]+)%\)", line)
    assert m, line
    with open(os.path.join(out, "figures.json")) as f:
        fig = json.load(f)
    assert fig["headline"] == line and fig["paper_gain_pct"] == 9.3
    assert_claims("host-congestion", fig)
    assert int(m[2]) == fig["fabric-only"]["host_drops"] > int(m[4])
    assert os.path.getsize(os.path.join(out, "host.png")) > 0


def test_an_algorithm_that_fails_leaves_the_others_rows(tmp_path, monkeypatch):
    from taurus.reproduce import baselines
    monkeypatch.setattr(baselines, "senders", lambda: ["dctcp", "no-such-algorithm"])
    lines = []
    fig = reproduce.run("baselines", str(tmp_path), quick=True, echo=lines.append)
    assert fig["failed"] == ["no-such-algorithm"]
    assert "error" in fig["incast"]["no-such-algorithm"] and "jain" in fig["incast"]["dctcp"]
    assert lines[-1].startswith("baselines: 1 algorithms,") and "(no-such-algorithm failed)" in lines[-1]
