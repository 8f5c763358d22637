"""Virtual time's speed against an older revision, side by side.

    python bench/sim_vs.py REV [--modes native,agent,per-event] [--rounds 4]
                           [--gap 3] [--duration 1s] [--keep]

Checks REV out in a git worktree beside this one (removed at the end
unless --keep), runs `taurus run examples/dctcp_dumbbell.toml --set
experiment.duration=DURATION --set cc.mode=MODE` in each tree once to
compile, then alternately (the order flips every round, GAP seconds idle
before each run, since a run that follows a large one is slower) and
reads each run's loop time (summary.json `loop_wall_s`: the event loop,
setup and results excluded).  Prints every run, the per-round ratios and,
last, `sim-vs REV: MODE Nx (per round A-B), ...`: the median loop time of
REV over this tree's.  Goodput must be the same in both (it is reported).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = "examples/dctcp_dumbbell.toml"


def run_once(tree: str, mode: str, duration: str, out: str) -> dict:
    """One `taurus run` of the demo in `tree`; its summary."""
    subprocess.run([sys.executable, "-m", "taurus.cli", "run", DEMO, "--set",
                    f"experiment.duration={duration}", "--set", f"cc.mode={mode}",
                    "--set", "outputs.plots=false", "--out", out, "--no-progress"],
                   cwd=tree, env=dict(os.environ, PYTHONPATH=tree), check=True,
                   capture_output=True)
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def ratios(old: list[float], new: list[float]) -> tuple[float, float, float]:
    """(median old / median new, lowest and highest per-round ratio)."""
    if not old or len(old) != len(new) or min(new) <= 0:
        raise ValueError("need as many positive times from each tree")
    per = [a / b for a, b in zip(old, new)]
    return statistics.median(old) / statistics.median(new), min(per), max(per)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev")
    ap.add_argument("--modes", default="native,agent,per-event")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--gap", type=float, default=3.0)
    ap.add_argument("--duration", default="1s")
    ap.add_argument("--keep", action="store_true", help="keep REV's worktree")
    a = ap.parse_args(argv)
    modes = a.modes.split(",")
    old_tree = os.path.join(tempfile.gettempdir(), f"taurus-vs-{a.rev}")
    made = not os.path.isdir(old_tree)
    if made:
        subprocess.run(["git", "worktree", "add", "-q", "--detach", old_tree, a.rev],
                       cwd=ROOT, check=True)
    trees = {a.rev: old_tree, "this": ROOT}
    out = tempfile.mkdtemp(prefix="taurus-vs-")
    loop: dict = {}
    try:
        for mode in modes:                       # compile both, once per mode
            for tag, tree in trees.items():
                run_once(tree, mode, "20ms", os.path.join(out, f"warm-{tag}-{mode}"))
        for r in range(a.rounds):
            for mode in modes:
                order = list(trees.items())
                for tag, tree in (order if r % 2 == 0 else order[::-1]):
                    time.sleep(a.gap)
                    s = run_once(tree, mode, a.duration, os.path.join(out, f"{tag}-{mode}-{r}"))
                    loop.setdefault((mode, tag), []).append(s["loop_wall_s"])
                    print(f"round {r} {mode:9} {tag:>10}: loop {s['loop_wall_s']:.3f} s, "
                          f"engine {s['engine_wall_s']:.3f} s, "
                          f"{s['throughput_bps'] / 1e9:.3f} Gbit/s", flush=True)
    finally:
        if made and not a.keep:
            subprocess.run(["git", "worktree", "remove", "--force", old_tree], cwd=ROOT)
    parts = []
    for mode in modes:
        m, lo, hi = ratios(loop[(mode, a.rev)], loop[(mode, "this")])
        print(f"{mode}: loop {statistics.median(loop[(mode, a.rev)]):.2f} s at {a.rev}, "
              f"{statistics.median(loop[(mode, 'this')]):.2f} s here")
        parts.append(f"{mode} {m:.1f}x (per round {lo:.1f}-{hi:.1f})")
    print(f"sim-vs {a.rev}: " + ", ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
