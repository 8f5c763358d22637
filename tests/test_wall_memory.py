"""A long wall-clock run at full rate holds its memory flat: the NIC
generates the bulk bytes and the receivers sink them (runner.py)."""
import json
import os
import subprocess
import sys
import time

from conftest import needs_root
from taurus.tools import netns

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "dctcp_dumbbell.toml")


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


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
    samples = []
    try:
        while p.poll() is None:
            if _ours():                         # the run's namespaces are up
                samples.append((time.monotonic(), _rss_mb(p.pid)))
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
    # over the last 60% of the time the namespaces were up (the build and
    # its compile come first): no growth beyond noise; far below 1 GiB
    late = [r for _, r in samples[len(samples) * 2 // 5:]]
    assert len(late) > 10, samples
    assert max(late) - late[0] < 32, samples
    assert max(r for _, r in samples) < 1024
