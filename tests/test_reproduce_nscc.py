"""`taurus reproduce csig-nscc-fairness --quick` (seed 003): the victim
crossing two congested queues gets a fairer share with NSCC + CSIG
max(Delay) than with NSCC, and the decision counts say why (baseline: MD
and fair increase; CSIG: more no-ops and proportional increases)."""
import json
import os
import re

from taurus.cli import main
from taurus.reproduce.ledger import assert_claims


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
    assert_claims("csig-nscc-fairness", fig)
    base, csig = fig["runs"]["nscc"], fig["runs"]["nscc-csig"]
    assert base["drop"] == 0 and csig["drop"] == 0        # trims, not drops
    b, c = base["victim_decisions"], csig["victim_decisions"]
    assert b["md"] + b["fair"] > 4 * (b["noop"] + b["prop"])   # above target: MD and FI

    def calm(d):                                          # share of no-ops and PIs
        return (d["noop"] + d["prop"]) / max(sum(d[k] for k in ("md", "fair", "prop", "noop")), 1)
    assert calm(c) > calm(b) + 0.1                        # around target: no-ops and PIs replace them
    assert os.path.exists(os.path.join(out, "fairness.png"))


def test_nscc_lb_quick(tmp_path, capsys):
    """EV load balancing spreads the permutation over the spines: max/min
    spine utilisation falls, and no flow is left behind on a shared uplink."""
    out = str(tmp_path / "lb")
    assert main(["reproduce", "nscc-lb", "--quick", "--out", out]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    m = re.fullmatch(r"nscc-lb: spine utilisation max/min fixed ([\d.]+|inf), balanced ([\d.]+); "
                     r"p99 FCT fixed (\d+) us, balanced (\d+) us", line)
    assert m, line
    assert float(m[2]) < float(m[1]) and float(m[2]) < 1.5
    assert int(m[4]) < int(m[3])
    with open(os.path.join(out, "figures.json")) as f:
        fig = json.load(f)
    assert_claims("nscc-lb", fig)
    runs = fig["runs"]
    assert all(r["completed"] == r["flows"] and r["drops"] == 0 for r in runs.values())
