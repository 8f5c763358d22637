"""TAURUS's own FCT evaluation (seed 000 §5.3, Figs. 10/11):
`taurus reproduce taurus-fct --quick` runs WebSearch and Hadoop with the
8:1 incast background on a small fat-tree, DCTCP, Swift, HPCC and Bolt
native and in the agent, and prints the slowdown tables.  Virtual time: deterministic."""
import json
import os
import re

from taurus.cli import main
from taurus.reproduce import fct_fabric as FF
from taurus.reproduce.ledger import assert_claims
from taurus.reproduce.taurus_fct import ALGORITHMS, MODES


def test_taurus_fct_quick(tmp_path, capsys):
    out = str(tmp_path / "f")
    assert main(["reproduce", "taurus-fct", "--quick", "--out", out]) == 0
    text = capsys.readouterr().out.strip().splitlines()
    num = r"[-+][\d.]+%"
    m = re.fullmatch(rf"taurus-fct: <100KB avg slowdown, agent vs native: "
                     rf"websearch dctcp ({num}), swift ({num}), hpcc ({num}), bolt ({num}); "
                     rf"hadoop dctcp ({num}), swift ({num}), hpcc ({num}), bolt ({num}) "
                     rf"\(seed: \+0\.2%\)",
                     text[-1])
    assert m, text[-1]
    with open(os.path.join(out, "figures.json")) as f:
        fig = json.load(f)
    assert fig["headline"] == text[-1]
    assert_claims("taurus-fct", fig)        # the ledger's claims, as in the full run
    for wl in ("websearch", "hadoop"):
        for alg in ALGORITHMS:
            for mode in MODES:
                r = fig[wl][alg][mode]
                assert r["finished"] >= 0.9 * r["flows"] and r["flows"] >= 150
                assert [(b["lo"], b["hi"]) for b in r["table"]] == \
                    list(zip(FF.BINS[:-1], FF.BINS[1:]))
                n = sum(b["count"] for b in r["table"])
                assert n == r["all"]["count"] and r["small"]["count"] <= n
                for b in r["table"]:
                    if b["count"]:
                        assert 1.0 <= b["p50"] <= b["p95"] <= b["p99"] and b["avg"] >= 1.0
            a, nat = fig[wl][alg]["agent"]["small"]["avg"], fig[wl][alg]["native"]["small"]["avg"]
            assert fig[wl][alg]["small_avg_pct"] == 100 * (a / nat - 1)
    # the printed table: a header of the bins, then per run n / avg / p50 / p95 / p99
    head = next(i for i, ln in enumerate(text) if ln.split()[:2] == ["<10KB", "10KB-100KB"])
    assert text[head + 1].split()[:3] == ["dctcp", "native", "n"]
    assert [text[head + k].split()[0] for k in range(2, 6)] == ["avg", "p50", "p95", "p99"]
    assert any("scaling: rates x 1/4" in ln for ln in text)
    for wl in ("websearch", "hadoop"):          # Bolt's window moves by its switches' SRCs
        assert fig[wl]["bolt"]["native"]["src_tx"] > 0 and fig[wl]["dctcp"]["native"]["src_tx"] == 0
    assert os.path.getsize(os.path.join(out, "fct_slowdown.png")) > 0
