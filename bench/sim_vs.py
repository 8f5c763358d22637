"""Virtual time's speed against an older revision, side by side.

    python bench/sim_vs.py REV [--case dumbbell|fat-tree]
                           [--modes native,agent,per-event] [--rounds 4]
                           [--gap 3] [--duration 1s] [--keep]

Checks REV out in a git worktree beside this one (removed at the end
unless --keep) and runs the same experiment in each tree: once to compile,
then alternately (the order flips every round, GAP seconds idle before
each run, since a run that follows a large one is slower).  The case:
  dumbbell  examples/dctcp_dumbbell.toml (2 DCTCP flows), DURATION
            (default 1 s), in each of --modes;
  fat-tree  bench/sim.py's quick fat-tree (k = 4, 16 hosts, WebSearch flows
            at 60% load, 10 Gbit/s, 1 us links), DURATION (default 20 ms),
            DCTCP in the agent (--modes agent by default).
Reads each run's loop time (summary.json `loop_wall_s`: the event loop,
setup and results excluded) and packet-hops (frames sent by every port and
NIC).  Prints every run, then per mode the median loop times and, last,
`sim-vs REV: MODE Nx per simulated second (per round A-B), Mx per
packet-hop, ...`: REV's median over this tree's.  The two trees may move
slightly different numbers of packets (the transport changed between
them), hence the per-packet-hop figure beside the loop's.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "dctcp_dumbbell.toml")
_spec = importlib.util.spec_from_file_location("bench_sim", os.path.join(ROOT, "bench", "sim.py"))
sim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sim)


def run_once(tree: str, path: str, mode: str, duration: str, out: str) -> dict:
    """One `taurus run` of the experiment file `path` in `tree`; its summary."""
    subprocess.run([sys.executable, "-m", "taurus.cli", "run", path, "--set",
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


def experiment_file(case: str, out: str) -> str:
    """The experiment file of `case` (written under `out` when generated)."""
    if case == "dumbbell":
        return DEMO
    text, _ = sim._experiment("fat-tree", True)       # k = 4
    path = os.path.join(out, "fat-tree.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev")
    ap.add_argument("--case", choices=("dumbbell", "fat-tree"), default="dumbbell")
    ap.add_argument("--modes", default=None, help="default: native,agent,per-event "
                    "(dumbbell), agent (fat-tree)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--gap", type=float, default=3.0)
    ap.add_argument("--duration", default=None, help="default: 1s (dumbbell), 20ms (fat-tree)")
    ap.add_argument("--keep", action="store_true", help="keep REV's worktree")
    a = ap.parse_args(argv)
    fat = a.case == "fat-tree"
    modes = (a.modes or ("agent" if fat else "native,agent,per-event")).split(",")
    duration = a.duration or ("20ms" if fat else "1s")
    old_tree = os.path.join(tempfile.gettempdir(), f"taurus-vs-{a.rev}")
    made = not os.path.isdir(old_tree)
    if made:
        subprocess.run(["git", "worktree", "add", "-q", "--detach", old_tree, a.rev],
                       cwd=ROOT, check=True)
    trees = {a.rev: old_tree, "this": ROOT}
    out = tempfile.mkdtemp(prefix="taurus-vs-")
    path = experiment_file(a.case, out)
    loop: dict = {}
    hop: dict = {}                               # wall seconds per million packet-hops
    try:
        for mode in modes:                       # compile both, once per mode
            for tag, tree in trees.items():
                run_once(tree, path, mode, "2ms" if fat else "20ms",
                         os.path.join(out, f"warm-{tag}-{mode}"))
        for r in range(a.rounds):
            for mode in modes:
                order = list(trees.items())
                for tag, tree in (order if r % 2 == 0 else order[::-1]):
                    time.sleep(a.gap)
                    s = run_once(tree, path, mode, duration, os.path.join(out, f"{tag}-{mode}-{r}"))
                    hops = sim.packet_hops(s)
                    loop.setdefault((mode, tag), []).append(s["loop_wall_s"])
                    hop.setdefault((mode, tag), []).append(s["loop_wall_s"] / max(hops, 1) * 1e6)
                    print(f"round {r} {mode:9} {tag:>10}: loop {s['loop_wall_s']:.3f} s, "
                          f"engine {s['engine_wall_s']:.3f} s, {hops / 1e6:.3f} M packet-hops, "
                          f"{hops / 1e6 / s['loop_wall_s']:.3f} M/s, "
                          f"{s['throughput_bps'] / 1e9:.3f} Gbit/s", flush=True)
    finally:
        if made and not a.keep:
            subprocess.run(["git", "worktree", "remove", "--force", old_tree], cwd=ROOT)
    parts = []
    for mode in modes:
        m, lo, hi = ratios(loop[(mode, a.rev)], loop[(mode, "this")])
        h, hlo, hhi = ratios(hop[(mode, a.rev)], hop[(mode, "this")])
        print(f"{mode}: loop {statistics.median(loop[(mode, a.rev)]):.2f} s at {a.rev}, "
              f"{statistics.median(loop[(mode, 'this')]):.2f} s here; "
              f"{1 / statistics.median(hop[(mode, a.rev)]):.3f} vs "
              f"{1 / statistics.median(hop[(mode, 'this')]):.3f} M packet-hops/s")
        parts.append(f"{mode} {m:.1f}x per simulated second (per round {lo:.1f}-{hi:.1f}), "
                     f"{h:.1f}x per packet-hop ({hlo:.1f}-{hhi:.1f})")
    print(f"sim-vs {a.rev} ({a.case}): " + ", ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
