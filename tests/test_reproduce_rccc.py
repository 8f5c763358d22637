"""`taurus reproduce rccc-incast --quick`: the headline in the issue's
format, in the seed's direction."""
import json
import os
import re

from taurus.cli import main
from taurus.reproduce.ledger import assert_claims


def _last_line(capsys):
    return capsys.readouterr().out.strip().splitlines()[-1]


def test_rccc_incast_quick(tmp_path, capsys):
    """RCCC + NSCC against NSCC alone on an 8:1 incast: RCCC loses nothing,
    keeps the last-hop queue below NSCC's, fills the receiver's link and
    shares it evenly."""
    out = str(tmp_path / "r")
    assert main(["reproduce", "rccc-incast", "--quick", "--out", out]) == 0
    line = _last_line(capsys)
    m = re.fullmatch(r"rccc-incast: RCCC drops (\d+), utilisation ([\d.]+)%, shares max/min "
                     r"([\d.]+), queue p99 ([\d.]+) KB; NSCC alone drops (\d+), queue p99 "
                     r"([\d.]+) KB", line)
    assert m, line
    d, u, s, q, d2, q2 = int(m[1]), float(m[2]), float(m[3]), float(m[4]), int(m[5]), float(m[6])
    assert d == 0 and d < d2                   # nothing dropped or trimmed; NSCC alone trims
    assert q < q2                              # a shorter last-hop queue
    assert u >= 90 and s <= 1.05               # (full run: >= 95%)
    with open(os.path.join(out, "figures.json")) as f:
        fig = json.load(f)
    assert fig["headline"] == line
    assert_claims("rccc-incast", fig)
    r = fig["runs"]["rccc"]
    assert r["completed"] == r["flows"] == 8 and r["marks"] == 0    # last-hop ECN off
    for p in fig["plots"]:
        assert os.path.getsize(os.path.join(out, p)) > 0
