"""The wall-clock fidelity report (experiment/fidelity.py): its rules on
synthetic measurements, its base RTT and lateness percentiles; then on
namespaces, the wall-clock DCTCP example (congestion-limited, faithful) and
an overloaded run that must be told so."""
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import needs_root

from taurus.datapath.devices import pktgen
from taurus.datapath.devices.nic.setup import DATA_HDR
from taurus.datapath.engine import Engine
from taurus.datapath.wheel import LATE_BUCKETS, late_bucket
from taurus.experiment import fidelity as F
from taurus.experiment.report import fidelity_rows, fidelity_warnings
from taurus.experiment.runner import run_experiment
from taurus.experiment.schema import load
from taurus.tools import netns
from taurus.units import parse_size

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WALL_EXAMPLE = os.path.join(ROOT, "examples", "wall_dctcp.toml")
DEMO = os.path.join(ROOT, "examples", "dctcp_dumbbell.toml")
TOPO = f"fid{os.getpid() % 100000}"     # our namespaces, apart from any other run's

GBIT = 10**9


def timers(p99_ns, p50_ns=1_000, max_ns=None):
    return {"count": 1000, "p50_ns": p50_ns, "p99_ns": p99_ns, "max_ns": max_ns or p99_ns}


def flows(srtt_ns, base_ns=400_000, n=2):
    return [{"id": k, "src": f"h{k + 1}", "dst": "h3", "base_rtt_ns": base_ns, "srtt_ns": srtt_ns,
             "bottleneck": "s1-eth2"} for k in range(n)]


def neck(carried, rate=200_000_000, demand=20 * GBIT, queue=30_000):
    return {"s1-eth2": {"rate_bps": rate, "demand_bps": demand, "offered_bps": carried,
                        "carried_bps": carried, "queue_mean_bytes": queue, "flows": [0, 1]}}


IDLE = {"busy": 0.3, "loop_share": 0.9, "cpu_share": 0.99}
SATURATED = {"busy": 0.99, "loop_share": 0.9, "cpu_share": 0.99}


def warnings(*a):
    out = F.assess(*a)
    assert all(w.startswith("fidelity warning: ") for w in out["warnings"])
    assert out["faithful"] == (not out["warnings"])
    return out["warnings"]


def test_a_congestion_limited_run_is_clean():
    # queueing 30 KB at 200 Mbit/s = 1.2 ms on top of a 400 us base RTT
    assert warnings(timers(20_000), flows(1_700_000), neck(190e6), IDLE) == []


def test_late_timers_warn_beyond_a_tenth_of_the_base_rtt():
    assert warnings(timers(39_000), flows(1_700_000), neck(190e6), IDLE) == []
    w = warnings(timers(41_000, max_ns=900_000), flows(1_700_000), neck(190e6), IDLE)
    assert len(w) == 1 and "timers" in w[0] and "lengthen the link delays" in w[0]


def test_unreached_bottleneck_warns_when_cpu_limited():
    w = warnings(timers(1_000), flows(1_700_000), neck(100e6), SATURATED)
    assert len(w) == 1 and "no bottleneck reached its rate" in w[0] and "CPU-limited" in w[0]
    assert "lower the rates" in w[0]
    short = dict(IDLE, cpu_share=0.5)         # the machine took the core away
    w = warnings(timers(1_000), flows(1_700_000), neck(100e6), short)
    assert len(w) == 2 and "CPU-limited" in w[0] and "had the CPU only 50%" in w[1]
    assert "a core of its own" in w[0]          # not the rates: the machine's doing


def test_cpu_taken_by_other_processes_warns_alone():
    w = warnings(timers(1_000), flows(1_700_000), neck(190e6), dict(IDLE, cpu_share=0.6))
    assert len(w) == 1 and "had the CPU only 60%" in w[0] and "idle machine" in w[0]


def test_unreached_bottleneck_warns_when_window_limited_by_inflated_rtt():
    w = warnings(timers(1_000), flows(5_000_000), neck(100e6, queue=0), IDLE)
    assert len(w) == 1 and "window-limited" in w[0]


def test_unreached_bottleneck_alone_is_no_warning():
    # the senders were neither CPU- nor window-limited: e.g. the plan asks little
    assert warnings(timers(1_000), flows(1_700_000), neck(100e6), IDLE) == []
    assert warnings(timers(1_000), flows(5_000_000, n=1), neck(100e6, demand=50e6), IDLE)[0] \
        .startswith("fidelity warning: flow 0")     # inflated srtt still says so


def test_flow_and_bottleneck_figures():
    out = F.assess(timers(1_000), flows(1_700_000), neck(190e6), IDLE)
    f = out["flows"][0]
    assert f["expected_srtt_ns"] == 400_000 + 1_200_000
    assert abs(f["srtt_ratio"] - 1.0625) < 1e-3
    assert out["bottlenecks"]["s1-eth2"]["utilisation"] == 0.95


def test_late_percentiles_from_the_wheel_histogram():
    h = np.zeros(LATE_BUCKETS, np.int64)
    for v, n in ((3, 50), (1000, 49), (100_000, 1)):
        h[late_bucket(v)] += n
    p = F.late_percentiles(h, 100_000)
    assert p["count"] == 100 and p["p50_ns"] == 3 and 1000 <= p["p99_ns"] <= 1250
    assert p["max_ns"] == 100_000
    assert F.late_percentiles(np.zeros(LATE_BUCKETS, np.int64), 0)["p99_ns"] is None


def test_base_rtt_and_bottleneck_of_the_dumbbell():
    x = load("examples/dctcp_dumbbell.toml", [])
    links = F.path_links(x.topo, "h1", "h3")
    assert [u for u, _ in links] == ["h1", "s1", "s2"]
    ser = sum((DATA_HDR + 1024 + F.ACK_FRAME) * 8e9 / r for r in (10e9, 2e9, 10e9))
    assert F.base_rtt(links, 1024) == int(2 * 3 * 2000 + ser)
    assert F._bottleneck(x.topo, links) == ("s1-eth2", 2 * GBIT)


def test_report_rows_and_warnings_of_a_summary():
    fd = F.assess(timers(41_000), flows(1_700_000), neck(190e6), IDLE)
    rows = dict(fidelity_rows(fd))
    assert rows["timers late p50/p99/max (us)"] == "1.0 / 41.0 / 41.0"
    assert rows["fidelity"] == "1 warning(s)" and "s1-eth2" in "".join(rows)
    assert fidelity_warnings({"fidelity": fd}) == fd["warnings"]
    assert fidelity_rows(None) == [] and fidelity_warnings({"fidelity": None}) == []


def test_engine_loop_timing():
    """Virtual time: every timer fires on time.  Wall clock: the loop's
    clock time is accounted for (idle within all), and every fire counted."""
    with Engine(clock="virtual") as eng:
        a, _ = eng.add_mem_link("gen", "sink")
        eng.add_pktgen(a, b"x" * 64, rate_pps=1e6, count=500)
        eng.run_for(10**6)
        t = eng.loop_timing()
        assert t["late_hist"][0] == t["late_hist"].sum() == 500 and t["late_max_ns"] == 0
    with Engine(clock="wall") as eng:
        a, _ = eng.add_mem_link("gen", "sink")
        d = eng.add_pktgen(a, b"x" * 64, rate_pps=1e4, count=200)
        eng.run_for(30_000_000)
        t = eng.loop_timing()
        sent = eng.device_regs(d)[pktgen.SENT]     # one departure per timer fire
        assert 0 < t["late_hist"].sum() == sent and t["late_max_ns"] >= 0
        assert 0 < t["idle_ns"] <= t["run_ns"] and t["run_ns"] >= 29_000_000
        assert 0 < t["idle_iters"] <= t["iters"]


def test_virtual_runs_have_no_fidelity_report(tmp_path):
    x = load(DEMO, ['experiment.duration="3ms"', 'experiment.warmup="1ms"'])
    s = run_experiment(x, str(tmp_path), "virtual")
    assert s["complete"] and s["fidelity"] is None


# ---------------------------------------------------------------- real namespaces

def _ours():
    return [n for n in netns.list_ns(netns.PREFIX) if TOPO in n]


@needs_root
def test_wall_dctcp_example_is_congestion_limited_and_faithful(tmp_path):
    x = load(WALL_EXAMPLE, ['experiment.duration="1500ms"', f'topology.name="{TOPO}"'])
    try:
        s = run_experiment(x, str(tmp_path), "wall")
    finally:
        assert _ours() == []
    assert s["complete"], s["error"]
    fd, q = s["fidelity"], s["ports"]["s1-eth2"]
    if fd["engine"]["cpu_share"] < F.CPU_SHORT:
        # Other processes held the core: the report must say so, and the
        # network was not the file's, so its figures prove nothing.
        assert any("had the CPU only" in w for w in fd["warnings"]), fd["warnings"]
        pytest.skip(f"the engine had the CPU {100 * fd['engine']['cpu_share']:.0f}% of the "
                    f"wall time (machine loaded): {fd['warnings']}")
    k = parse_size("40KB")
    assert q["marks"] > 0
    assert 0.5 * k <= q["queue_mean"] <= 1.5 * k, (q["queue_mean"], fd)
    assert fd["warnings"] == [], fd


@needs_root
def test_overloaded_wall_run_gets_a_fidelity_warning(tmp_path):
    # the stock dumbbell: a 2 Gbit/s bottleneck and 2 us links, far beyond
    # what one engine core carries with its RTT
    sets = ['experiment.duration="300ms"', 'experiment.warmup="50ms"', 'experiment.sample="2ms"',
            f'topology.name="{TOPO}"', 'topology.defaults.rate="4Gbit"']
    cmd = [sys.executable, "-m", "taurus.cli", "run", DEMO, "--clock", "wall", "--no-progress",
           "--out", str(tmp_path)] + [a for v in sets for a in ("--set", v)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT,
                           env=dict(os.environ, PYTHONPATH=ROOT))
    finally:
        assert _ours() == []
    assert p.returncode == 0, p.stderr
    warned = [ln for ln in p.stderr.splitlines() if ln.startswith("fidelity warning: ")]
    assert any("no bottleneck reached its rate" in w for w in warned), p.stdout + p.stderr
    assert "fidelity" in p.stdout and "warning(s)" in p.stdout      # the run's table
