"""`taurus reproduce taurus-converge` and `taurus-mice` --quick: the TAURUS
paper's Fig 9 pairs, each algorithm in an agent behind the modelled PCIe
separation against the same algorithm in the datapath; the claims the
ledger records for the full runs hold in the quick ones."""
import json
import os

import pytest

from taurus.cli import main
from taurus.reproduce.ledger import assert_claims
from taurus.reproduce.taurus_eval import ALGORITHMS


@pytest.mark.parametrize("name", ["taurus-converge", "taurus-mice"])
def test_quick(tmp_path, capsys, name):
    out = str(tmp_path / name)
    assert main(["reproduce", name, "--quick", "--out", out]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    with open(os.path.join(out, "figures.json")) as f:
        fig = json.load(f)
    assert fig["headline"] == line and fig["separation"] == "pcie"
    for alg in ALGORITHMS:
        agent = json.load(open(os.path.join(out, f"{alg}-agent", "summary.json")))
        native = json.load(open(os.path.join(out, f"{alg}-native", "summary.json")))
        assert agent["separation"] == {"report_ns": 500, "decision_ns": 500,
                                       "per_message_ps": 1400}
        assert native["separation"] is None and agent["agent"]["messages"] > 0
    assert_claims(name, fig)


@pytest.mark.parametrize("name", ["taurus-aggregation", "taurus-filter"])
def test_micro_benchmarks_quick(tmp_path, capsys, name):
    """Fig 8's micro-benchmarks: aggregation against per-event messages (and
    agent CPU), and the update filters' share, with the ledger's claims."""
    out = str(tmp_path / name)
    assert main(["reproduce", name, "--quick", "--out", out]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    with open(os.path.join(out, "figures.json")) as f:
        fig = json.load(f)
    assert fig["headline"] == line
    assert_claims(name, fig)
