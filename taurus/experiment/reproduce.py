"""`taurus reproduce`: named scenarios that put a seed's or paper's figure
beside ours.

    taurus reproduce --list
    taurus reproduce NAME [--out DIR] [--quick] [--mode native|agent|per-event]

A scenario is one function registered with ``@scenario(name, about)``: it
builds experiments as dicts (schema.from_dict, the same keys as the files in
examples/), runs them with runner.run_experiment in virtual time (so the
result is deterministic), and returns its figures and one headline line.
``run`` writes ``figures.json`` and the scenario's plots into DIR (each
experiment's own run directory below it) and ends with ``NAME: ...``.
``--quick`` shortens the runs (the tests use it); ``--mode`` picks where the
algorithms decide (native by default: the same decisions as the agent
modes, tests/test_cc_replay.py, at less cost).
"""
from __future__ import annotations

import csv
import json
import os
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np

from taurus.tools.analysis import jain

from . import schema


@dataclass
class Scenario:
    name: str
    about: str
    fn: Callable            # fn(out_dir, quick, mode, echo) -> (figures dict, headline)


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, about: str):
    def reg(fn):
        SCENARIOS[name] = Scenario(name, about, fn)
        return fn
    return reg


def run(name: str, out: str, quick: bool = False, mode: str = "native", echo=print) -> dict:
    """Run scenario ``name`` into ``out``: figures.json, plots; the last
    line echoed is the headline ``name: ...``."""
    if name not in SCENARIOS:
        raise KeyError(f"unknown scenario {name!r}; known: {', '.join(sorted(SCENARIOS))}")
    os.makedirs(out, exist_ok=True)
    figures, headline = SCENARIOS[name].fn(out, quick, mode, echo)
    figures = {"scenario": name, "quick": quick, "mode": mode, **figures,
               "headline": f"{name}: {headline}"}
    with open(os.path.join(out, "figures.json"), "w") as f:
        json.dump(figures, f, indent=1, default=float)
    echo(f"figures: {os.path.join(out, 'figures.json')}")
    echo(figures["headline"])
    return figures


def _run(d: dict, out: str) -> dict:
    from .runner import run_experiment
    x = schema.from_dict(d, f"<reproduce {d['experiment']['name']}>")
    s = run_experiment(x, out, "virtual")
    if not s["complete"] or s["error"]:
        raise RuntimeError(f"{d['experiment']['name']}: run incomplete: {s['error']}")
    return s


def _queue(run_dir: str, port: str, t0: float, t1: float) -> tuple[float, float]:
    """(p50, p99) bytes of ``port``'s queue samples in (t0, t1]."""
    q = []
    with open(os.path.join(run_dir, "queue_series.csv")) as f:
        for r in csv.DictReader(f):
            if r["port"] == port and t0 < int(r["t_ns"]) <= t1:
                q.append(int(r["queue_bytes"]))
    if not q:
        return 0.0, 0.0
    return float(np.percentile(q, 50)), float(np.percentile(q, 99))


def _drops(s: dict) -> int:
    """Packets lost anywhere: switch drops and the NICs' host-buffer drops."""
    return (int(sum(p["drops"] for p in s["ports"].values()))
            + int(sum(n.get("drop_host_buf", 0) for n in s["nics"].values())))


def _outputs():
    return {"plots": False, "csv": True}


# ---------------------------------------------------------------- baselines

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
            "outputs": _outputs()}


def _incast(alg: str, mode: str, quick: bool) -> dict:
    """examples/incast_8to1.toml with 256 KB per sender and INT at the switch
    (the shipped incast topology: 1 Gbit/s, ECN K = 30 KB, PFC)."""
    rounds = 1 if quick else 2
    return {"experiment": {"name": f"incast-{alg}", "duration": f"{1 + 20 * rounds}ms",
                           "seed": 1, "step": "10us", "sample": "20us"},
            "topology": {"builtin": "incast", "switches": [{"name": "s1", "int": True}]},
            "cc": {"algorithm": alg, "mode": mode, "mss": 1024, "cwnd": "10KB"},
            "traffic": [{"kind": "incast", "from": [f"h{i}" for i in range(1, 9)], "to": "h9",
                         "size": "256KB", "start": "1ms", "rounds": rounds,
                         "interval": "20ms"}],
            "outputs": _outputs()}


def _long_jain(run_dir: str, t0: float) -> float:
    """Jain's index of the flows' mean rates after t0 (flow_series.csv):
    a sample period holds a few packets, too few for a per-sample index."""
    per: dict[str, list] = {}
    with open(os.path.join(run_dir, "flow_series.csv")) as f:
        for r in csv.DictReader(f):
            if int(r["t_ns"]) > t0:
                per.setdefault(r["flow"], []).append(int(r["rate_bps"]))
    return jain(np.array([np.mean(v) for v in per.values()])) if per else 0.0


def _dumbbell_row(s: dict, run_dir: str) -> dict:
    port = s["busiest_port"]
    p50, p99 = _queue(run_dir, port, s["warmup_ns"], s["ended_at_ns"])
    return {"goodput_bps": s["throughput_bps"], "utilisation": s["throughput_bps"] / DUMBBELL_BPS,
            "queue_p50": p50, "queue_p99": p99, "jain": _long_jain(run_dir, s["warmup_ns"]),
            "jain_per_sample": s["fairness"]["jain_mean"] or 0.0,
            "drops": _drops(s), "port": port}


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
            "jain": float(min(jains)), "drops": _drops(s), "port": port,
            "completed": sum(f["done"] for f in s["flows"]), "flows": len(s["flows"])}


def senders() -> list[str]:
    """Every registered built-in sender algorithm, in registry order."""
    from taurus.cc_algorithms import registry
    return [n for n in registry.BUILTINS if registry.lookup(n).role == "sender"]


def _fmt_row(name: str, r: dict) -> str:
    return (f"  {name:<10} {r['goodput_bps'] / 1e9:7.3f} {100 * r['utilisation']:6.1f}% "
            f"{r['queue_p50'] / 1e3:8.1f} {r['queue_p99'] / 1e3:8.1f} {r['jain']:6.3f} "
            f"{r['drops']:6d}")


HEAD = "  algorithm  Gbit/s   util  q p50 KB q p99 KB   Jain  drops"


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
                res[part][a] = row(_run(build(a, mode, quick), d), d)
            except Exception as e:      # one algorithm's failure leaves the others' rows
                res[part][a] = {"error": f"{type(e).__name__}: {e}"}
    for part, cap, what in (("dumbbell", DUMBBELL_BPS, "2 bulk flows, 2 Gbit/s ECN+INT bottleneck"),
                            ("incast", INCAST_BPS, "8:1, 256 KB each, 1 Gbit/s, ECN+INT, PFC")):
        echo(f"{part}: {what}")
        echo(HEAD)
        echo(f"  {'ideal':<10} {cap / 1e9:7.3f} {100.0:6.1f}% {'-':>8} {'-':>8} {1.0:6.3f} {0:6d}")
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
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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


# ---------------------------------------------------------- host congestion

PAPER_HOST_GAIN = 9.3        # % throughput, TAURUS (host CC) vs DOCA-PCC under host congestion, §5
HOST_NOTES = (
    "host-aware: h3's flow runs hostcc with mba in an agent; in virtual time an MBA limit of "
    "p% leaves the hog p% of its share (experiment/hog.py ModelHostActions)",
    "network-only: without the host-local response the hog keeps its share; a host drop "
    "costs DCTCP a retransmission, no window cut (it cuts on ECN and timeouts), so a full "
    "host buffer keeps the fabric-only host busy")


def _host_congestion(alg: str, mode: str, quick: bool, mba: bool = False) -> dict:
    """2 senders, 10 Gbit/s links; the receiver h3 delivers into memory at
    10 Gbit/s through a 256 KB host buffer, and a hog takes half of that
    from 2 ms to 8 ms of 10 (quick: 1 ms to 5 ms of 6).  h3 sends a paced
    100 Mbit/s flow back to h1: the flow whose algorithm sees h3's own host
    samples, and with ``mba`` takes hostCC's host-local response (in an
    agent: native mode ignores host actions)."""
    dur, hog0, hog1 = ("6ms", "1ms", "5ms") if quick else ("10ms", "2ms", "8ms")
    back = {"algorithm": alg, "rate": "100Mbit"}
    if mba:
        back.update(mode="agent", params={"mba": True})
    return {"experiment": {"name": f"host-{alg}", "duration": dur, "warmup": "500us",
                           "seed": 1, "step": "10us", "sample": "20us"},
            "topology": {"name": "hostcong", "defaults": {"rate": "10Gbit", "delay": "2us",
                                                          "buffer": "1MB"},
                         "hosts": [{"name": "h1"}, {"name": "h2"}, {"name": "h3"}],
                         "switches": [{"name": "s1", "ecn": {"k": "20KB"}}],
                         "links": [{"endpoints": ["h1", "s1"]}, {"endpoints": ["h2", "s1"]},
                                   {"endpoints": ["s1", "h3"]}]},
            "cc": {"algorithm": alg, "mode": mode, "mss": 1024, "cwnd": "20KB"},
            "traffic": [{"kind": "bulk", "from": ["h1", "h2"], "to": "h3"},
                        {"kind": "bulk", "from": "h3", "to": "h1", "cc": back}],
            "host_model": {"host_bw": "10Gbit", "buffer": "256KB", "sample": "10us",
                           "hosts": ["h3"]},
            "host_load": [{"host": "h3", "share": 0.5, "start": hog0, "stop": hog1}],
            "outputs": _outputs()}


HOST_ROWS = (("fabric-only", "dctcp", False), ("network-only", "hostcc", False),
             ("host-aware", "hostcc", True))


def host_congestion_pair(out: str, quick: bool, mode: str) -> dict:
    """{row: figures} for HOST_ROWS: DCTCP; hostcc's network response alone;
    hostcc with hostCC's host-local response (MBA on the hog) too.  Goodput
    is the two senders' to h3 (after the warmup)."""
    res = {}
    for key, alg, mba in HOST_ROWS:
        d = os.path.join(out, key)
        s = _run(_host_congestion(alg, mode, quick, mba), d)
        fwd = [f for f in s["flows"] if f["dst"] == "h3"]
        res[key] = {"algorithm": alg, "mba": mba, "goodput_bps": s["groups"]["traffic[0]"]["goodput_bps"],
                    "host_drops": int(s["nics"]["h3"]["drop_host_buf"]),
                    "switch_drops": int(sum(p["drops"] for p in s["ports"].values())),
                    "jain": jain(np.array([f["goodput_bps"] for f in fwd])),
                    "host_actions": s["agent"]["hosts"].get("h3", {}).get("detail", {})
                    .get("host_actions", {})}
    return res


@scenario("host-congestion", "TAURUS §5: 2 senders, a receiver whose memory bandwidth a hog "
                             "halves for a window; fabric-only DCTCP vs host-congestion CC")
def host_congestion(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    res = host_congestion_pair(out, quick, mode)
    f = res["fabric-only"]

    def gain(r):
        return 100 * (r["goodput_bps"] / f["goodput_bps"] - 1) if f["goodput_bps"] else 0.0
    echo("host-congestion: h1, h2 -> h3 at 10 Gbit/s; h3's host 10 Gbit/s, halved by a hog")
    echo("                   Gbit/s  host drops  switch drops   Jain   vs fabric-only")
    for k, r in res.items():
        echo(f"  {k:<14} {r['goodput_bps'] / 1e9:9.3f} {r['host_drops']:11d} "
             f"{r['switch_drops']:13d} {r['jain']:6.3f} {gain(r):+8.1f}%")
    echo(f"  paper: host CC +{PAPER_HOST_GAIN}% throughput (TAURUS vs DOCA-PCC under host "
         f"congestion)")
    for n in HOST_NOTES:
        echo(f"  note: {n}")
    _plot_host(out, res)
    h = res["host-aware"]
    return ({**res, "gain_pct": gain(h), "network_only_gain_pct": gain(res["network-only"]),
             "paper_gain_pct": PAPER_HOST_GAIN, "notes": list(HOST_NOTES), "plots": ["host.png"]},
            f"fabric-only {f['goodput_bps'] / 1e9:.2f} Gbit/s, {f['host_drops']} host drops; "
            f"host-aware {h['goodput_bps'] / 1e9:.2f} Gbit/s, {h['host_drops']} host drops "
            f"({gain(h):+.1f}%)")


def _plot_host(out: str, res: dict) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.2))
    keys = list(res)
    a1.bar(keys, [res[k]["goodput_bps"] / 1e9 for k in keys])
    a1.set_ylabel("goodput (Gbit/s)")
    a2.bar(keys, [res[k]["host_drops"] for k in keys])
    a2.set_ylabel("host drops (packets)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "host.png"), dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------- the command

def add_reproduce_parser(sub) -> None:
    p = sub.add_parser("reproduce", help="run a named scenario: a paper's figure beside ours")
    p.add_argument("name", nargs="?", help="the scenario (--list shows them)")
    p.add_argument("--list", action="store_true", help="list the scenarios")
    p.add_argument("--out", help="output directory (default: runs/reproduce-NAME)")
    p.add_argument("--quick", action="store_true", help="shorter runs")
    p.add_argument("--mode", default="native", choices=["native", "agent", "per-event"],
                   help="where the algorithms decide (default: native)")
    p.set_defaults(func=reproduce_cmd)


def reproduce_cmd(a) -> int:
    if a.list or not a.name:
        for s in SCENARIOS.values():
            print(f"{s.name:<16} {s.about}")
        return 0 if a.list else 2
    if a.name not in SCENARIOS:
        print(f"taurus reproduce: unknown scenario {a.name!r}; known: "
              f"{', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    from taurus.pidfiles import pidfile
    try:
        with pidfile("run"):        # as `taurus run`: `taurus topo clean` finds us after a SIGKILL
            run(a.name, a.out or os.path.join("runs", f"reproduce-{a.name}"), a.quick, a.mode)
    except Exception as e:
        print(f"taurus reproduce: {a.name} failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0
