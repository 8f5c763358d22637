"""Compare DCTCP and OSCAR on the demo's dumbbell with pandas.

    python examples/analysis.py [OUT_DIR] [--duration 10ms] [--warmup 2ms]

Runs examples/dctcp_dumbbell.toml twice (cc.algorithm = dctcp, then oscar)
into OUT_DIR (default: runs/analysis), loads both runs as DataFrames
(taurus.results) and prints their headline figures side by side, the
bottleneck queue's percentiles and each flow's goodput; writes
OUT_DIR/queue.png with the two queues over time.  The same few lines work
in a notebook cell.
"""
import argparse
import contextlib
import io
import os
import sys

import matplotlib
import taurus.results as tr
from taurus.cli import main as taurus

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def run(alg: str, out: str, duration: str, warmup: str) -> tr.Run:
    d = os.path.join(out, alg)
    log = io.StringIO()
    with contextlib.redirect_stdout(log):          # the run's own report: kept for errors
        rc = taurus(["run", os.path.join(HERE, "dctcp_dumbbell.toml"), "--out", d,
                     "--no-progress", "--set", f'cc.algorithm="{alg}"',
                     "--set", "outputs.plots=false", "--set", f'experiment.duration="{duration}"',
                     "--set", f'experiment.warmup="{warmup}"'])
    if rc:
        sys.exit(f"{log.getvalue()}taurus run {alg} failed ({rc})")
    return tr.load(d)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default="runs/analysis")
    ap.add_argument("--duration", default="10ms")
    ap.add_argument("--warmup", default="2ms")
    a = ap.parse_args(argv)
    runs = [run(alg, a.out, a.duration, a.warmup) for alg in ("dctcp", "oscar")]

    table = tr.compare(runs)
    print(table[["throughput_bps", "jain_mean", "queue_mean_bytes", "queue_p99_bytes",
                 "marks", "agent_messages"]].to_string())

    # the bottleneck's queue over time, one column per algorithm
    port = runs[0].summary["busiest_port"]
    q = {r.label: r.queue_series[r.queue_series["port"] == port].set_index("t_ns")["queue_bytes"]
         for r in runs}
    queues = tr.pd.DataFrame(q)
    print(f"\n{port} queue (bytes):")
    print(queues.describe(percentiles=[0.5, 0.99]).loc[["mean", "50%", "99%", "max"]].to_string())

    goodput = tr.pd.concat({r.label: r.flows[["src", "goodput_bps"]] for r in runs})
    print("\nper-flow goodput (Gbit/s):")
    print((goodput["goodput_bps"] / 1e9).round(3).to_string())

    ax = (queues / 1e3).plot(figsize=(7, 3), drawstyle="steps-post")
    ax.set_xlabel("t (ns)")
    ax.set_ylabel(f"{port} queue (KB)")
    plt.tight_layout()
    plt.savefig(os.path.join(a.out, "queue.png"), dpi=100)
    print(f"\nplot: {os.path.join(a.out, 'queue.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
