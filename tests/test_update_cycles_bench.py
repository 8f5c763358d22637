"""bench/update_cycles.py's table: cycles = net ns x GHz, ranked beside the
seed's order (synthetic figures; the benchmark itself is run by hand)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))

import update_cycles as U  # noqa: E402


def test_table_converts_and_ranks():
    res = {n: {"native_net_ns": ns} for n, ns in
           (("oscar", 10.0), ("dcqcn", 40.0), ("swift", 20.0), ("hpcc", 30.0),
            ("powertcp", 50.0), ("dctcp", 5.0))}
    rows = U.table(res, 2.0)
    cells = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[2:-1]] for r in rows[2:]}
    assert cells["oscar"] == ["52", "20", "10.0", "2", "1"]
    assert cells["dcqcn"] == ["46", "80", "40.0", "1", "4"]
    assert cells["powertcp"][3:] == ["5", "5"]
    assert cells["dctcp"] == ["-", "10", "5.0", "-", "-"]
