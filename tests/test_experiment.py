"""Experiment files, `taurus run` and its results.

Cheap checks first (validation, plan, FCT binning by hand), then the demo
experiment in virtual time, then a run interrupted half-way, then the same
experiment on real namespaces at a short duration."""
import glob
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import needs_root

from taurus.experiment import schema
from taurus.experiment.results import path_of
from taurus.experiment.runner import run_experiment
from taurus.experiment.traffic import build_plan
from taurus.tools import netns
from taurus.tools.analysis import fct_slowdown, slowdown_bins

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "*.toml")))
DEMO = os.path.join(ROOT, "examples", "dctcp_dumbbell.toml")


def small(extra: dict | None = None) -> dict:
    d = {"experiment": {"name": "t", "duration": "1ms"},
         "topology": {"name": "t", "hosts": [{"name": "h1"}, {"name": "h2"}, {"name": "h3"}],
                      "switches": [{"name": "s1"}],
                      "links": [{"endpoints": ["h1", "s1"]}, {"endpoints": ["h2", "s1"]},
                                {"endpoints": ["s1", "h3"]}]}}
    for k, v in (extra or {}).items():
        d[k] = v
    return d


# ---------------------------------------------------------------- validation

@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_every_example_validates(path):
    x = schema.load(path)
    assert build_plan(x).flows


def test_examples_are_the_five_of_the_issue():
    names = {os.path.basename(p) for p in EXAMPLES}
    assert {"dctcp_dumbbell.toml", "incast_8to1.toml", "mice_elephants.toml",
            "converge_1plus7.toml", "fabric_congestion.toml", "host_congestion.toml"} <= names


@pytest.mark.parametrize("patch, key, words", [
    ({"experiment": {"name": "t", "duration": "1ms", "colour": 1}}, "experiment.colour", "unknown key"),
    ({"experiment": {"name": "t", "duration": "soon"}}, "experiment.duration", "delay"),
    ({"traffic": [{"kind": "bulk", "from": "h9", "to": "h3"}]}, "traffic[0].from", "unknown host"),
    ({"traffic": [{"kind": "bulk", "from": "h1", "to": "h3", "size": "-1KB"}]}, "traffic[0].size", "size"),
    ({"traffic": [{"kind": "teleport"}]}, "traffic[0].kind", "expected one of"),
    ({"traffic": [{"kind": "rpc", "from": "h1", "to": "h3", "request": "1KB"}]}, "traffic[0].count", "missing"),
    ({"traffic": [{"kind": "bulk", "from": "h1", "to": "h3", "cc": {"mode": "fast"}}]},
     "traffic[0].cc.mode", "expected one of"),
    ({"cc": {"mode": "agent", "hosts": {"h7": {}}}}, "cc.hosts.h7", "unknown host"),
    ({"host_load": [{"host": "h3"}]}, "host_load[0].cpu", "needs cpu"),
    ({"outputs": {"size_bins": ["1KB", "1KB"]}}, "outputs.size_bins", "increase"),
    ({"wat": 1}, "wat", "unknown key"),
])
def test_bad_values_name_their_key(patch, key, words):
    with pytest.raises(schema.ExperimentError) as e:
        schema.from_dict(small(patch), "x.toml")
    assert e.value.key == key and words in e.value.message, str(e.value)


def test_topology_errors_name_the_topology_key():
    d = small()
    d["topology"]["links"][0]["rate"] = "fast"
    with pytest.raises(schema.ExperimentError) as e:
        schema.from_dict(d, "x.toml")
    assert e.value.key == "topology.links[0].rate"


def test_builtin_topology_with_parameters():
    x = schema.load(DEMO)
    lk = next(lk for lk in x.topo.links if {lk.a, lk.b} == {"s1", "s2"})
    assert lk.rate == 2 * 10**9 and x.topo.port_features("s1", lk.a_iface)["ecn"]
    d = {"experiment": {"name": "t", "duration": "1ms"},
         "topology": {"builtin": "dumbbell", "links": [{"endpoints": ["h1", "h2"]}]}}
    with pytest.raises(schema.ExperimentError, match="topology.links\\[0\\].endpoints"):
        schema.from_dict(d, "x.toml")


def test_set_overrides_a_value():
    x = schema.load(DEMO, ["cc.mode=native", 'experiment.duration="3ms"'])
    assert x.cc.mode == "native" and x.duration == 3_000_000
    with pytest.raises(schema.ExperimentError, match="cc.mode"):
        schema.load(DEMO, ["cc.mode=warp"])


def test_plan_is_a_function_of_the_seed():
    tr = [{"kind": "workload", "from": ["h1", "h2"], "to": ["h3"], "cdf": "websearch",
           "load": 0.3, "scale": 0.01, "stop": "1ms"}]
    a = build_plan(schema.from_dict(small({"traffic": tr}), "x"))
    b = build_plan(schema.from_dict(small({"traffic": tr}), "x"))
    c = build_plan(schema.from_dict(small({"traffic": tr, "experiment": {
        "name": "t", "duration": "1ms", "seed": 2}}), "x"))
    key = [(f.src, f.dst, f.start, f.size) for f in a.flows]
    assert key == [(f.src, f.dst, f.start, f.size) for f in b.flows]
    assert key != [(f.src, f.dst, f.start, f.size) for f in c.flows]
    assert all(f.dst == "h3" and f.start < 1_000_000 for f in a.flows)


# ---------------------------------------------------------------- FCT slowdown by hand

def test_slowdown_bins_hand_computed():
    d = small()
    d["topology"]["links"][2].update(rate="1Gbit", delay="3us")
    x = schema.from_dict(d, "x")             # links without rate count as 10 Gbit/s
    assert path_of(x.topo, "h1", "h3") == (3_000, 10**9)
    # Base RTT 10 us, 10 Gbit/s: ideal(10 KB) = 10 + 8 = 18 us, ideal(1 MB) = 10 + 800 us.
    sizes = [10_000, 10_000, 10_000, 1_000_000]
    fct = [18_000, 36_000, 90_000, 1_620_000]
    sd = fct_slowdown(sizes, fct, 10_000, 10**10)
    assert np.allclose(sd, [1.0, 2.0, 5.0, 2.0])
    bins = slowdown_bins(sizes, sd, [0, 100_000, 10**7])
    assert bins[0]["count"] == 3 and bins[0]["p50"] == 2.0
    assert bins[0]["p95"] == pytest.approx(2.0 + 0.9 * 3.0)      # numpy linear: 4.7
    assert bins[1] == {"lo": 100_000, "hi": 10**7, "count": 1, "p50": 2.0, "p95": 2.0, "p99": 2.0}


# ---------------------------------------------------------------- virtual runs

@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("demo"))
    x = schema.load(DEMO, ['experiment.duration="5ms"', 'experiment.warmup="1ms"'])
    return out, run_experiment(x, out, "virtual")


def test_demo_runs_in_virtual_time(demo_run):
    out, s = demo_run
    assert s["complete"] and not s["error"] and s["clock"] == "virtual"
    assert 0.8e9 < s["throughput_bps"] < 2e9
    assert s["fairness"]["jain_mean"] > 0.8
    for f in s["flows"]:
        assert {"bytes", "goodput_bps", "fct_ns"} <= set(f) and f["bytes"] > 0
    bott = s["ports"][s["busiest_port"]]
    assert s["busiest_port"] == "s1-eth2" and bott["marks"] > 0 and bott["drops"] == 0
    assert 0 < bott["queue_mean"] < 60_000
    assert s["agent"]["messages"] > 0 and s["agent"]["updates"] > 0 and s["agent"]["cpu_s"] > 0
    for f in ("summary.json", "flow_series.csv", "queue_series.csv", "fairness.csv",
              "group_series.csv", "fct.csv", "fct_bins.csv", "rates.png", "queue.png"):
        assert os.path.getsize(os.path.join(out, f)) > 0, f
    with open(os.path.join(out, "summary.json")) as fh:
        assert json.load(fh)["experiment"] == "dctcp-dumbbell"


def test_report_prints_runs_side_by_side(demo_run, tmp_path):
    out, _ = demo_run
    from taurus.cli import main
    other = tmp_path / "other"
    other.mkdir()
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    s["complete"], s["error"] = False, "stopped by SIGINT"
    (other / "summary.json").write_text(json.dumps(s))
    r = subprocess.run([sys.executable, "-m", "taurus.cli", "report", out, str(other)],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "other" in lines[0] and os.path.basename(out) in lines[0]
    assert any("throughput" in ln for ln in lines)
    assert any("NO (stopped by SIGINT)" in ln for ln in lines)
    assert main(["report", str(tmp_path / "nowhere")]) == 2


def test_rpc_and_workload_in_virtual_time(tmp_path):
    """The closed RPC loop (request -> response -> next) and open-loop CDF flows."""
    d = small({"traffic": [
        {"kind": "rpc", "from": "h1", "to": "h3", "count": 20, "request": "200B",
         "response": "2KB", "concurrency": 2},
        {"kind": "workload", "from": ["h2"], "to": ["h3"], "cdf": "hadoop", "load": 0.2,
         "scale": 0.1, "stop": "1ms"}],
        "cc": {"mode": "native"}, "outputs": {"plots": False}})
    d["topology"]["defaults"] = {"rate": "10Gbit", "delay": "1us"}
    x = schema.from_dict(d, "x")
    s = run_experiment(x, str(tmp_path), "virtual", progress=True)   # the bar goes to stderr
    assert s["complete"]
    assert s["rpc"]["count"] == 20 and s["rpc"]["p50"] > 4_000   # >= base RTT 4 us
    wl = s["groups"]["traffic[1]"]
    assert wl["flows"] > 3 and wl["completed"] >= wl["flows"] - 2
    assert sum(b["count"] for b in s["fct_slowdown"]) == 20 + wl["completed"]
    assert all(b["p50"] is None or b["p50"] >= 1.0 for b in s["fct_slowdown"])


def _leftovers(pid: int) -> list[str]:
    return glob.glob(f"/dev/shm/taurus-eng-{pid}-*") + glob.glob(f"/run/taurus/run-{pid}.pid")


def _interrupt(args, tmp_path, sig, wait_for, settle=4.0):
    out = str(tmp_path / "run")
    p = subprocess.Popen([sys.executable, "-m", "taurus.cli", "run", *args, "--out", out,
                          "--no-progress"], cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not wait_for(p.pid) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(settle)              # past the build, into the run
        assert p.poll() is None, p.communicate()
        p.send_signal(sig)
        rc = p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert os.path.exists(os.path.join(out, "summary.json")), p.communicate()
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    return p.pid, rc, s


def _engine_time_past(pid: int, ns: int) -> bool:
    """The run's engine (virtual clock) has reached `ns`: it is mid-run."""
    from taurus.datapath.engine import attach_stats
    for path in glob.glob(f"/dev/shm/taurus-eng-{pid}-*"):
        name = os.path.basename(path)
        if name.rsplit("-", 1)[-1].isdigit():          # the engine's own segment
            try:
                return attach_stats(name)["now"] >= ns
            except (OSError, ValueError):
                return False
    return False


def test_interrupted_run_leaves_nothing_and_marks_summary(tmp_path):
    # Signalled once the run is 10% through (not after a fixed wait: a fast
    # engine may have finished the run by then).
    pid, rc, s = _interrupt([DEMO, "--set", 'experiment.duration="500ms"'], tmp_path,
                            signal.SIGINT, lambda pid: _engine_time_past(pid, 50_000_000),
                            settle=0.0)
    assert rc == 130
    assert s["complete"] is False and "SIGINT" in s["error"]
    assert 0 < s["ended_at_ns"] < 500_000_000
    assert _leftovers(pid) == []


# ---------------------------------------------------------------- real namespaces

WALL = ['experiment.duration="400ms"', 'experiment.warmup="100ms"', 'experiment.sample="20ms"',
        'topology.name="exptest"', 'topology.defaults.rate="1Gbit"']


def _ours():
    return [n for n in netns.list_ns(netns.PREFIX) if "exptest" in n]


@needs_root
def test_demo_on_namespaces_cleans_up(tmp_path):
    x = schema.load(DEMO, WALL)
    try:
        s = run_experiment(x, str(tmp_path), "wall")
    finally:
        assert _ours() == []
    assert s["complete"] and s["clock"] == "wall", s["error"]
    # Measured here: ~0.01-0.03 Gbit/s, srtt 5-22 ms on the wall-clock NIC
    # path (see the issue note); this test checks the plumbing, not the rate.
    assert all(f["bytes"] > 50_000 for f in s["flows"])
    assert s["agent"]["messages"] > 0 and s["ports"]["s1-eth2"]["counters"]["tx"] > 0


@needs_root
def test_wall_run_killed_leaves_no_namespaces(tmp_path):
    sets = []
    for a in WALL:
        sets += ["--set", a.replace("400ms", "8s")]
    pid, rc, s = _interrupt([DEMO, "--clock", "wall", *sets], tmp_path, signal.SIGTERM,
                            lambda pid: bool(_ours()) and glob.glob(f"/dev/shm/taurus-eng-{pid}-*"))
    assert rc == 130 and s["complete"] is False and "SIGTERM" in s["error"]
    assert _ours() == [] and _leftovers(pid) == []
