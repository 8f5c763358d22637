"""Flow churn through the NIC API (bench/reliab_churn.py): closed rows are
reused, so the tables stay bounded by the flows open at once."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import reliab_churn  # noqa: E402


def test_churn_keeps_tables_bounded():
    r = reliab_churn.run(flows=2000, concurrent=64)
    assert r["flows"] == 2000 and r["frames_in_use"] == 0
    assert r["peak"]["flow_rows"] <= 2 * 64 and r["peak"]["pdc_rows"] <= 2 * 64
    assert r["end"]["flows"] == 0 and r["end"]["pdcs"] == 0
