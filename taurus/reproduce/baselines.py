"""`baselines`: every registered sender algorithm on a 2-flow dumbbell and
an 8:1 incast, ECN and INT on (issue: the datacenter baselines on v2)."""
import csv
import os

import numpy as np

from taurus.tools.analysis import jain

from .core import drops, long_jain, outputs, pyplot, queue_percentiles, run_dict, scenario

DUMBBELL_BPS, INCAST_BPS = 2e9, 1e9


def _dumbbell(alg: str, mode: str, quick: bool) -> dict:
    """examples/dctcp_dumbbell.toml with INT (and CSIG) on the bottleneck."""
    return {"experiment": {"name": f"dumbbell-{alg}", "duration": "4ms" if quick else "10ms",
                           "warmup": "1ms" if quick else "2ms", "seed": 1, "step": "10us",
                           "sample": "20us"},
            "topology": {"builtin": "dumbbell", "defaults": {"rate": "10Gbit", "delay": "2us"},
                         "links": [{"endpoints": ["s1", "s2"], "rate": "2Gbit", "delay": "2us",
                                    "buffer": "1MB", "ecn": {"k": "20KB"}, "int": True,
                                    "csig": True}]},
            "cc": {"algorithm": alg, "mode": mode, "mss": 1024, "cwnd": "20KB"},
            "traffic": [{"kind": "bulk", "from": ["h1", "h2"], "to": "h3"}],
            "outputs": outputs()}


def _incast(alg: str, mode: str, quick: bool) -> dict:
    """examples/incast_8to1.toml with 256 KB per sender (quick: 128 KB) and
    INT at the switch (the shipped incast topology: 1 Gbit/s, ECN K = 30 KB,
    PFC); two rounds, so the second round's flows take rows the first freed."""
    gap = 10 if quick else 20                     # ms: each round ends well within it
    return {"experiment": {"name": f"incast-{alg}", "duration": f"{1 + 2 * gap}ms",
                           "seed": 1, "step": "10us", "sample": "20us"},
            "topology": {"builtin": "incast", "switches": [{"name": "s1", "int": True}]},
            "cc": {"algorithm": alg, "mode": mode, "mss": 1024, "cwnd": "10KB"},
            "traffic": [{"kind": "incast", "from": [f"h{i}" for i in range(1, 9)], "to": "h9",
                         "size": "128KB" if quick else "256KB", "start": "1ms", "rounds": 2,
                         "interval": f"{gap}ms"}],
            "outputs": outputs()}


def _dumbbell_row(s: dict, run_dir: str) -> dict:
    port = s["busiest_port"]
    p50, p99 = queue_percentiles(run_dir, port, s["warmup_ns"], s["ended_at_ns"])
    return {"goodput_bps": s["throughput_bps"], "utilisation": s["throughput_bps"] / DUMBBELL_BPS,
            "queue_p50": p50, "queue_p99": p99, "jain": long_jain(run_dir, s["warmup_ns"]),
            "jain_per_sample": s["fairness"]["jain_mean"] or 0.0,
            "drops": drops(s), "port": port}


def _incast_row(s: dict, run_dir: str) -> dict:
    """Per round: its span (first start to last completion); goodput is all
    bytes over the spans, fairness Jain's index of the flows' goodputs per
    round (the worst round), the queue the receiver's port's within rounds."""
    rounds: dict[int, list] = {}
    for f in s["flows"]:
        rounds.setdefault(f["start_ns"], []).append(f)
    span, jains, q = 0.0, [], []
    port = s["busiest_port"]
    for t0, fl in sorted(rounds.items()):
        ends = [t0 + f["fct_ns"] if f["done"] else s["ended_at_ns"] for f in fl]
        span += max(ends) - t0
        jains.append(jain(np.array([f["goodput_bps"] for f in fl])))
        q.append((t0, max(ends)))
    bytes_ = sum(f["bytes"] for f in s["flows"])
    g = bytes_ * 8e9 / span if span else 0.0
    qs = []
    with open(os.path.join(run_dir, "queue_series.csv")) as fh:
        for r in csv.DictReader(fh):
            t = int(r["t_ns"])
            if r["port"] == port and any(a < t <= b for a, b in q):
                qs.append(int(r["queue_bytes"]))
    return {"goodput_bps": g, "utilisation": g / INCAST_BPS,
            "queue_p50": float(np.percentile(qs, 50)) if qs else 0.0,
            "queue_p99": float(np.percentile(qs, 99)) if qs else 0.0,
            "jain": float(min(jains)), "drops": drops(s), "port": port,
            "completed": sum(f["done"] for f in s["flows"]), "flows": len(s["flows"])}


def senders() -> list[str]:
    """Every registered built-in sender algorithm, in registry order."""
    from taurus.cc_algorithms import registry
    return [n for n in registry.BUILTINS if registry.lookup(n).role == "sender"]


def _fmt_row(name: str, r: dict) -> str:
    return (f"  {name:<14} {r['goodput_bps'] / 1e9:7.3f} {100 * r['utilisation']:6.1f}% "
            f"{r['queue_p50'] / 1e3:8.1f} {r['queue_p99'] / 1e3:8.1f} {r['jain']:6.3f} "
            f"{r['drops']:6d}")


HEAD = "  algorithm      Gbit/s   util  q p50 KB q p99 KB   Jain  drops"


@scenario("baselines", "every registered sender algorithm on a 2-flow dumbbell and an 8:1 "
                       "incast (256 KB per sender), ECN and INT on")
def baselines(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    algs = senders()
    res = {"dumbbell": {}, "incast": {}}
    for part, build, row in (("dumbbell", _dumbbell, _dumbbell_row),
                             ("incast", _incast, _incast_row)):
        for a in algs:
            d = os.path.join(out, f"{part}-{a}")
            try:
                res[part][a] = row(run_dict(build(a, mode, quick), d), d)
            except Exception as e:      # one algorithm's failure leaves the others' rows
                res[part][a] = {"error": f"{type(e).__name__}: {e}"}
    for part, cap, what in (("dumbbell", DUMBBELL_BPS, "2 bulk flows, 2 Gbit/s ECN+INT bottleneck"),
                            ("incast", INCAST_BPS, f"8:1, {128 if quick else 256} KB each, two "
                                                 f"rounds, 1 Gbit/s, ECN+INT, PFC")):
        echo(f"{part}: {what}")
        echo(HEAD)
        echo(f"  {'ideal':<14} {cap / 1e9:7.3f} {100.0:6.1f}% {'-':>8} {'-':>8} {1.0:6.3f} {0:6d}")
        for a in algs:
            r = res[part][a]
            echo(f"  {a:<10} failed: {r['error']}" if "error" in r else _fmt_row(a, r))
    failed = sorted({a for part in res.values() for a, r in part.items() if "error" in r})
    ok = [a for a in algs if a not in failed]
    plots = _plot_baselines(out, ok, res) if ok else []
    rows = [part[a] for part in res.values() for a in ok]
    worst_u = min((r["utilisation"] for r in rows), default=0.0)
    worst_j = min((r["jain"] for r in rows), default=0.0)
    return ({"algorithms": algs, "failed": failed, **res, "plots": plots},
            f"{len(ok)} algorithms, worst utilisation {100 * worst_u:.1f}%, "
            f"worst fairness {worst_j:.3f}" + (f" ({', '.join(failed)} failed)" if failed else ""))


def _plot_baselines(out: str, algs: list[str], res: dict) -> list[str]:
    plt = pyplot()
    figs = (("goodput", "goodput (Gbit/s)", lambda r: [r["goodput_bps"] / 1e9], None),
            ("queue", "queue (KB)", lambda r: [r["queue_p50"] / 1e3, r["queue_p99"] / 1e3],
             ("p50", "p99")),
            ("fairness", "Jain fairness", lambda r: [r["jain"]], None),
            ("drops", "drops (packets)", lambda r: [r["drops"]], None))
    made = []
    x = np.arange(len(algs))
    for name, label, get, series in figs:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
        for ax, part in zip(axes, ("dumbbell", "incast")):
            vals = np.array([get(res[part][a]) for a in algs], float)
            w = 0.8 / vals.shape[1]
            for j in range(vals.shape[1]):
                ax.bar(x + (j - (vals.shape[1] - 1) / 2) * w, vals[:, j], w,
                       label=series[j] if series else None)
            if series:
                ax.legend(fontsize=7)
            ax.set_xticks(x, algs, rotation=30, fontsize=8)
            ax.set_title(part, fontsize=9)
            ax.set_ylabel(label, fontsize=8)
        fig.tight_layout()
        p = os.path.join(out, f"{name}.png")
        fig.savefig(p, dpi=100)
        plt.close(fig)
        made.append(f"{name}.png")
    return made


