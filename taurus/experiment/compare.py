"""Virtual time against real packets: one experiment file run on both
clocks (``taurus run FILE --clock both``), its figures side by side.

``figures`` reads the ones both clocks measure alike from a run summary:
goodput, the bottleneck's queue mean and p99 (the port with the largest
mean queue in virtual time, read under the same name on the wall clock),
the flows' mean srtt, ECN marks and drops there, FCT percentiles of the
groups with finished flows, and agent messages.  ``compare`` flags each
figure whose two values differ by more than the tolerance (relative to
the larger); ``plot_queues`` overlays the two queue series
(queue_series.csv of each run directory).
"""
from __future__ import annotations

import csv
import json
import os

TOLERANCE = 0.2             # relative difference flagged
SUMMARY = "summary.json"


def bottleneck(s: dict) -> str | None:
    """The port with the largest mean queue (ties: the most marks)."""
    ports = s.get("ports") or {}
    if not ports:
        return None
    return max(ports, key=lambda p: (ports[p]["queue_mean"], ports[p]["marks"]))


def figures(s: dict, port: str | None) -> dict[str, float | None]:
    """{figure: value} of one run summary at bottleneck `port`."""
    p = (s.get("ports") or {}).get(port or "", {})
    srtts = [f["srtt_ns"] for f in s.get("flows", []) if f.get("srtt_ns")]
    out = {"goodput (Gbit/s)": s.get("throughput_bps", 0.0) / 1e9,
           "queue mean (KB)": p["queue_mean"] / 1e3 if p else None,
           "queue p99 (KB)": p["queue_p99"] / 1e3 if p else None,
           "srtt mean (us)": sum(srtts) / len(srtts) / 1e3 if srtts else None,
           "ECN marks": p.get("marks") if p else None,
           "drops": p.get("drops") if p else None}
    for g, gs in sorted((s.get("groups") or {}).items()):
        if gs.get("completed"):
            for q in ("p50", "p99"):
                v = gs["fct_ns"].get(q)
                out[f"{g} FCT {q} (us)"] = v / 1e3 if v is not None else None
    out["agent messages"] = (s.get("agent") or {}).get("messages")
    return out


def differs(a, b, tol: float = TOLERANCE) -> bool:
    if a is None or b is None:
        return a is not b
    big = max(abs(a), abs(b))
    return big > 0 and abs(a - b) / big > tol


def compare(virtual: dict, wall: dict, tol: float = TOLERANCE) -> dict:
    """The two summaries' figures and which differ: {"port", "tolerance",
    "rows": [{figure, virtual, wall, flagged}], "flagged": [figure]}."""
    port = bottleneck(virtual)
    fv, fw = figures(virtual, port), figures(wall, port)
    rows = [{"figure": k, "virtual": fv.get(k), "wall": fw.get(k),
             "flagged": differs(fv.get(k), fw.get(k), tol)} for k in fv]
    return {"port": port, "tolerance": tol, "rows": rows,
            "flagged": [r["figure"] for r in rows if r["flagged"]],
            "wall_fidelity_warnings": (wall.get("fidelity") or {}).get("warnings", [])}


def table(c: dict) -> str:
    """The comparison as text, flagged figures marked."""
    def f(v):
        if v is None:
            return "-"
        return f"{v:.3f}" if isinstance(v, float) and abs(v) < 100 else f"{v:,.0f}"
    w = max(len(r["figure"]) for r in c["rows"])
    lines = [f"virtual time against real packets (bottleneck {c['port']}; "
             f"! differs by more than {100 * c['tolerance']:.0f}%)",
             f"{'':{w}}  {'virtual':>12}  {'wall':>12}"]
    for r in c["rows"]:
        lines.append(f"{r['figure']:{w}}  {f(r['virtual']):>12}  {f(r['wall']):>12}"
                     f"{'  !' if r['flagged'] else ''}")
    for x in c["wall_fidelity_warnings"]:
        lines.append(x)
    return "\n".join(lines)


def _queue(run_dir: str, port: str):
    path = os.path.join(run_dir, "queue_series.csv")
    if not os.path.exists(path):
        return [], []
    t, q = [], []
    with open(path) as fh:
        for r in csv.DictReader(fh):
            if r["port"] == port:
                t.append(int(r["t_ns"]) / 1e6)
                q.append(int(r["queue_bytes"]) / 1e3)
    return t, q


def plot_queues(virtual_dir: str, wall_dir: str, port: str, out: str) -> str | None:
    """The bottleneck's queue on both clocks in one PNG; None without series."""
    tv, qv = _queue(virtual_dir, port)
    tw, qw = _queue(wall_dir, port)
    if not tv and not tw:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(tv, qv, lw=1, label="virtual time")
    ax.plot(tw, qw, lw=1, label="wall clock (real packets)")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel(f"{port} queue (KB)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def write(out_dir: str, virtual_dir: str, wall_dir: str, tol: float = TOLERANCE) -> dict:
    """Compare the two run directories; writes compare.json and
    compare_queue.png into out_dir; returns the comparison."""
    with open(os.path.join(virtual_dir, SUMMARY)) as f:
        sv = json.load(f)
    with open(os.path.join(wall_dir, SUMMARY)) as f:
        sw = json.load(f)
    c = compare(sv, sw, tol)
    c["runs"] = {"virtual": virtual_dir, "wall": wall_dir}
    c["plot"] = plot_queues(virtual_dir, wall_dir, c["port"],
                            os.path.join(out_dir, "compare_queue.png")) if c["port"] else None
    with open(os.path.join(out_dir, "compare.json"), "w") as f:
        json.dump(c, f, indent=1)
    return c
