"""A long wall-clock run at full rate holds its memory flat: the NIC
generates the bulk bytes and the receivers sink them (runner.py)."""
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import needs_root
from taurus.tools import netns

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "dctcp_dumbbell.toml")


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _tree(pid: int) -> list[int]:
    """pid and its descendants (the engine and agent processes of a wall run)."""
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        out.append(q)
        try:
            for t in os.listdir(f"/proc/{q}/task"):
                with open(f"/proc/{q}/task/{t}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def _ours():
    return [n for n in netns.list_ns(netns.PREFIX) if "wallmem" in n]


@needs_root
def test_long_wall_run_memory_is_flat(tmp_path):
    sets = ['experiment.duration="12s"', 'experiment.warmup="1s"', 'experiment.sample="100ms"',
            'topology.name="wallmem"', 'topology.defaults.rate="10Gbit"', "outputs.plots=false"]
    out = str(tmp_path / "run")
    p = subprocess.Popen([sys.executable, "-m", "taurus.cli", "run", DEMO, "--clock", "wall",
                          "--out", out, "--no-progress"] + [a for s in sets for a in ("--set", s)],
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    samples: dict[int, list] = {}       # each process of the run: its RSS over time
    try:
        while p.poll() is None:
            if _ours():                         # the run's namespaces are up
                for q in _tree(p.pid):
                    samples.setdefault(q, []).append((time.monotonic(), _rss_mb(q)))
            time.sleep(0.5)
        err = p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err[-2000:]
    assert _ours() == []
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    assert s["complete"] and all(f["bytes"] > 1_000_000 for f in s["flows"])
    # in each process (the runner, the engine's, the agents'), over the
    # last 60% of the time it was up with the namespaces (the build and its
    # compile come first): no growth beyond noise; far below 1 GiB
    longest = max(len(v) for v in samples.values())
    for q, rows in samples.items():
        late = [r for _, r in rows[len(rows) * 2 // 5:] if r > 0]
        if len(rows) < longest // 2:
            continue                    # a process that lived briefly (a helper)
        assert len(late) > 10, (q, rows)
        assert max(late) - late[0] < 32, (q, rows)
        assert max(r for _, r in rows) < 1024, (q, rows)
