"""`taurus reproduce csig-nscc-fairness --quick` (seed 003): the victim
crossing two congested queues gets a fairer share with NSCC + CSIG
max(Delay) than with NSCC, and the decision counts say why (baseline: MD
and fair increase; CSIG: no-ops)."""
import json
import os
import re

from taurus.cli import main


def test_csig_nscc_fairness_quick(tmp_path, capsys):
    out = str(tmp_path / "f")
    assert main(["reproduce", "csig-nscc-fairness", "--quick", "--out", out]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    m = re.fullmatch(r"csig-nscc-fairness: NSCC ([\d.]+):1, NSCC\+CSIG ([\d.]+):1", line)
    assert m, line
    assert float(m[2]) < float(m[1])                      # the headline direction
    with open(os.path.join(out, "figures.json")) as f:
        fig = json.load(f)
    assert fig["headline"] == line
    base, csig = fig["runs"]["nscc"], fig["runs"]["nscc-csig"]
    assert base["drop"] == 0 and csig["drop"] == 0        # trims, not drops
    b, c = base["victim_decisions"], csig["victim_decisions"]
    assert b["md"] + b["fair"] > b["noop"] + b["prop"]    # above target: MD and FI
    assert c["noop"] + c["prop"] > c["md"] + c["fair"]    # at the bottleneck's delay: no-ops, PIs
    assert os.path.exists(os.path.join(out, "fairness.png"))
