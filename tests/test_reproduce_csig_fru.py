"""`taurus reproduce csig-swift-fru --quick`: Swift against Swift + FRU on
the seed's workload (640 KB open-loop foreground ops, 10 MB background
bursts), one load and one lambda: what the full sweep shows at loads 0.2
and 0.4, in direction and order of magnitude."""
import re

from taurus.reproduce.ledger import assert_claims
from taurus.testing.quick import run_quick


def test_csig_swift_fru_quick(tmp_path, capsys):
    """FRU lowers the foreground median by well over the seed's 15% (new
    flows ramp up in a few RTTs instead of one packet an RTT) and every op
    completes without loss; the tag line says compact min(ABW/C)."""
    text, fig = run_quick("csig-swift-fru", str(tmp_path / "f"), capsys)
    line = fig["headline"]
    m = re.fullmatch(r"csig-swift-fru: foreground median Swift (\d+) us, Swift\+FRU (\d+) us "
                     r"\((-?\d+)% lower; load ([\d.]+), lambda ([\d.]+)\); background median "
                     r"(\d+) / (\d+) us \(([-+]\d+)%\)", line)
    assert m, line
    assert "CSIG tag (swift): min(ABW/C), compact (4 B" in text
    assert_claims("csig-swift-fru", fig)
    a, b = fig["runs"]["warm"]["0.4"]["swift"], fig["runs"]["warm"]["0.4"]["fru0.5"]
    assert 15 < fig["best"]["fg_gain_pct"] < 60
    assert 100e3 < b["fg_p50_ns"] < a["fg_p50_ns"] < 1e6      # hundreds of us, FRU lower
    for r in (a, b):
        assert r["fg_done"] == r["fg_ops"] > 50 and r["bg_done"] == r["bg_ops"] == 2
        assert r["drops"] == 0
    assert abs(fig["best"]["bg_pct"]) < 25     # 2 background ops; the full run: within 5%
