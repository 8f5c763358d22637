"""PNG plots of a run directory, drawn from its CSV files (so they can be
redrawn without rerunning): rates and cwnds over time, switch queues over
time, FCT slowdown by flow size."""
from __future__ import annotations

import csv
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")          # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def _read(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def plot_run(run_dir: str) -> list[str]:
    made = []
    rows = _read(os.path.join(run_dir, "flow_series.csv"))
    groups = _read(os.path.join(run_dir, "group_series.csv"))
    if rows or groups:
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        per = defaultdict(list)
        for r in rows:
            per[f"flow {r['flow']} ({r['group']})"].append(
                (int(r["t_ns"]) / 1e6, int(r["rate_bps"]) / 1e9, int(r["cwnd_bytes"]) / 1e3))
        for name, pts in per.items():
            t, rate, cw = zip(*pts)
            a1.plot(t, rate, label=name, lw=1)
            a2.plot(t, cw, label=name, lw=1)
        gper = defaultdict(list)
        for r in groups:
            gper[r["group"]].append((int(r["t_ns"]) / 1e6, int(r["rate_bps"]) / 1e9))
        for name, pts in gper.items():
            if not any(name in k for k in per):     # groups without per-flow lines
                t, rate = zip(*pts)
                a1.plot(t, rate, label=f"{name} (all flows)", lw=1, ls="--")
        a1.set_ylabel("rate (Gbit/s)")
        a2.set_ylabel("cwnd (KB)")
        a2.set_xlabel("time (ms)")
        if len(per) + len(gper) <= 12:
            a1.legend(fontsize=7, loc="upper right")
        fig.tight_layout()
        made.append(_save(fig, run_dir, "rates.png"))
    q = _read(os.path.join(run_dir, "queue_series.csv"))
    if q:
        per = defaultdict(list)
        for r in q:
            per[r["port"]].append((int(r["t_ns"]) / 1e6, int(r["queue_bytes"]) / 1e3))
        fig, ax = plt.subplots(figsize=(8, 3.5))
        for name, pts in per.items():
            if any(v for _, v in pts):
                t, v = zip(*pts)
                ax.plot(t, v, label=name, lw=1)
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("queue (KB)")
        if ax.lines:                        # every queue stayed empty: nothing to name
            ax.legend(fontsize=7, loc="upper right")
        fig.tight_layout()
        made.append(_save(fig, run_dir, "queue.png"))
    fct = _read(os.path.join(run_dir, "fct.csv"))
    bins = _read(os.path.join(run_dir, "fct_bins.csv"))
    if fct:
        fig, ax = plt.subplots(figsize=(8, 3.5))
        ax.scatter([int(r["size"]) for r in fct], [float(r["slowdown"]) for r in fct], s=4,
                   alpha=0.4, label="flows / RPCs")
        for q, mk in (("p50", "o-"), ("p95", "s-"), ("p99", "^-")):
            pts = [((int(b["lo"]) * int(b["hi"])) ** 0.5 or int(b["hi"]) / 2, float(b[q]))
                   for b in bins if b[q] not in ("", "None")]
            if pts:
                ax.plot(*zip(*pts), mk, label=q)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("flow size (bytes)")
        ax.set_ylabel("FCT slowdown")
        ax.legend(fontsize=7)
        fig.tight_layout()
        made.append(_save(fig, run_dir, "fct_slowdown.png"))
    return made


def _save(fig, run_dir, name) -> str:
    p = os.path.join(run_dir, name)
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return name
