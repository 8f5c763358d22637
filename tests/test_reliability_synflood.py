"""A SYN flood from random sources fills a host NIC's receive PDC tables
only up to their size (the rest is refused and counted); once the flood's
PDCs have been silent for the NIC's idle time (close.py: pdc_idle_ns) new
connections take their rows, so flows opened after the flood work."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import reliab_synflood  # noqa: E402


def test_flows_opened_after_a_syn_flood_work():
    r = reliab_synflood.run(n_syn=200, max_flows=32, legit=2, nbytes=64 << 10)
    assert r["legit_after_flood"] == "3/3"
    assert r["opened_by_flood"] <= r["pdc_rows"] < r["syn_frames"] // 2
    assert r["refused"] > 0 and r["idle_closed"] > 0
    assert r["rows_at_end"]["pdc_rows"] <= r["pdc_rows"]
