"""The agent's benchmark runs small and reports what it measured."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from agent_wakeup import bench, wake_cost  # noqa: E402  (bench/ is not a package)


def test_throughput_bench_drains_everything_it_pushed():
    for jit in (True, False):
        r = bench(records=4096, flows=8, batch=1024, algorithm="dctcp", jit=jit)
        assert r["records"] >= 4096 and r["records_per_s"] > 0 and r["cwnd_writes"] > 0


def test_wake_cost_reports_every_nap_and_batch_size():
    rows = wake_cost("dctcp", naps_us=(0, 50), records=(0, 3), n=5, jit=False)
    assert [(w["nap_us"], w["records"]) for w in rows] == [(0, 0), (0, 3), (50, 0), (50, 3)]
    assert all(w["step_us"] > 0 and w["sleep_us"] >= 0 for w in rows)
    assert rows[2]["sleep_us"] > 0                 # a nap costs something
