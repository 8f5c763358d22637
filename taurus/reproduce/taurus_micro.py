"""`taurus-aggregation` and `taurus-filter`: the TAURUS paper's micro-
benchmarks (§5.2, Fig 8a-c).

Fig 8a/b: the report engine's aggregation against none (each signal one
message, the CCP-like per-event design) for N DCTCP flows: messages to the
agent and the agent's CPU.  The paper: -82.8 ... -95.9% messages, -23.5 ...
-58.1% CPU, at 400 Gbit/s.  What aggregation can remove depends on the
signals one flow's report per RTT gathers, i.e. on the packets in flight
per flow: the paper's testbed had ~98 per path (400 Gbit/s x 8 us / 4 KB);
here a 2 Gbit/s bottleneck with 100 us links keeps ~94 (a ~406 us base RTT
of 1 KB packets), as bench/agent_overhead.py does.  Messages are counted in
virtual time (deterministic); the agent's CPU is its measured thread time
per simulated second, so it varies from run to run and the ledger checks
only its direction.

Fig 8c: the agent's update filters (boundary and duplicate value): the
share of the decisions they keep off the NIC, per algorithm.  The paper:
14.2 ... 32.5%.
"""
import os

from .core import outputs, run_dict, scenario

PAPER_MSGS = (82.8, 95.9)          # % fewer messages with aggregation
PAPER_CPU = (23.5, 58.1)           # % less agent CPU
PAPER_FILTER = (14.2, 32.5)        # % of updates the filter removes
FILTER_ALGS = ("dctcp", "swift", "hpcc", "dcqcn", "timely")


def _dumbbell(name: str, cc: dict, parallel: int, quick: bool) -> dict:
    """h1 -- s1 -- h2, 10 Gbit/s access, a 2 Gbit/s ECN (K 20 KB) and INT
    bottleneck, 100 us links; ``parallel`` bulk flows h1 -> h2."""
    return {"experiment": {"name": name, "duration": "8ms" if quick else "20ms",
                           "warmup": "2ms", "seed": 1, "step": "50us", "sample": "200us"},
            "topology": {"name": "micro", "defaults": {"rate": "10Gbit", "delay": "100us",
                                                       "buffer": "4MB"},
                         "hosts": [{"name": "h1"}, {"name": "h2"}],
                         "switches": [{"name": "s1", "int": True}],
                         "links": [{"endpoints": ["h1", "s1"]},
                                   {"endpoints": ["s1", "h2"], "rate": "2Gbit",
                                    "ecn": {"k": "20KB"}}]},
            "cc": {"mss": 1024, "cwnd": "10KB", "separation": "pcie", **cc},
            "traffic": [{"kind": "bulk", "from": "h1", "to": "h2", "parallel": parallel}],
            "outputs": outputs()}


def _agent_row(s: dict) -> dict:
    sim_s = s["ended_at_ns"] / 1e9
    return {"messages": s["agent"]["messages"], "messages_per_s": s["agent"]["messages"] / sim_s,
            "cpu_share": s["agent"]["cpu_s"] / sim_s, "goodput_bps": s["throughput_bps"],
            "signals": _signals(s)}


def _signals(s: dict) -> int:
    """Signals the report engine took for the agent (before aggregation)."""
    return int(sum(sum(f["events"].values()) for f in s["flows"]))


@scenario("taurus-aggregation", "TAURUS Fig 8a/b: messages and agent CPU with the report "
                                "engine's aggregation vs without (per-event), N DCTCP flows")
def taurus_aggregation(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    res = {}
    for n in (1, 8) if quick else (1, 4, 16, 32):
        r = {}
        for m in ("agent", "per-event"):
            d = os.path.join(out, f"n{n}-{m}")
            r[m] = _agent_row(run_dict(_dumbbell(f"agg-{n}-{m}", {"algorithm": "dctcp",
                                                                   "mode": m}, n, quick), d))
        a, p = r["agent"], r["per-event"]
        r["msg_reduction_pct"] = 100 * (1 - a["messages"] / p["messages"]) if p["messages"] else 0.0
        r["cpu_reduction_pct"] = (100 * (1 - a["cpu_share"] / p["cpu_share"])
                                  if p["cpu_share"] else 0.0)
        res[str(n)] = r
    echo("taurus-aggregation: N DCTCP flows, 2 Gbit/s bottleneck, ~94 packets in flight a path")
    echo("   N   messages/s agent  per-event   fewer   agent CPU % of a core   less")
    for n, r in res.items():
        a, p = r["agent"], r["per-event"]
        echo(f"  {n:>3} {a['messages_per_s']:13.0f} {p['messages_per_s']:10.0f} "
             f"{r['msg_reduction_pct']:6.1f}%   {100 * a['cpu_share']:8.2f} "
             f"{100 * p['cpu_share']:8.2f}   {r['cpu_reduction_pct']:5.1f}%")
    echo(f"  paper: -{PAPER_MSGS[0]}...-{PAPER_MSGS[1]}% messages, -{PAPER_CPU[0]}..."
         f"-{PAPER_CPU[1]}% CPU at 400 Gbit/s (CPU here: measured, varies run to run)")
    lo = min(r["msg_reduction_pct"] for r in res.values())
    hi = max(r["msg_reduction_pct"] for r in res.values())
    return ({"rows": res, "min_msg_reduction_pct": lo, "max_msg_reduction_pct": hi,
             "paper_msg_reduction_pct": list(PAPER_MSGS), "paper_cpu_reduction_pct": list(PAPER_CPU)},
            f"aggregation: {lo:.1f}...{hi:.1f}% fewer messages "
            f"(paper {PAPER_MSGS[0]}...{PAPER_MSGS[1]}%)")


def _filter_row(s: dict) -> dict:
    kept, removed = 0, 0
    for h in s["agent"]["hosts"].values():
        for k, v in h["detail"]["handler"].get("filters", {}).items():
            if k.startswith("written"):
                kept += v
            elif k.startswith(("duplicate", "rejected", "clamped")):
                removed += v
    total = kept + removed
    return {"decisions": total, "written": kept, "removed": removed,
            "removed_pct": 100 * removed / total if total else 0.0}


@scenario("taurus-filter", "TAURUS Fig 8c: the share of decisions the agent's update filters "
                           "keep off the NIC, per algorithm")
def taurus_filter(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    res = {}
    for alg in FILTER_ALGS:
        d = os.path.join(out, alg)
        res[alg] = _filter_row(run_dict(_dumbbell(f"filter-{alg}", {"algorithm": alg,
                                                                   "mode": "agent"}, 2, quick), d))
    echo("taurus-filter: 2 flows, 2 Gbit/s ECN+INT bottleneck, agent mode")
    echo("            decisions  written  filtered")
    for alg, r in res.items():
        echo(f"  {alg:<8} {r['decisions']:10d} {r['written']:8d} {r['removed_pct']:8.1f}%")
    echo(f"  paper: the filter removes {PAPER_FILTER[0]}...{PAPER_FILTER[1]}% of updates")
    head = ", ".join(f"{a} {r['removed_pct']:.1f}%" for a, r in res.items())
    return ({**res, "paper_pct": list(PAPER_FILTER)}, f"filtered {head}")
