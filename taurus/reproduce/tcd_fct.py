"""`tcd-fct` and `tcd-websearch`: TCD §5.2.1 / Fig. 16a and 16b, DCQCN
with and without TCD on the seed's fat-tree, Hadoop or WebSearch at 60%
load, FCT slowdown per size, on the shared FCT harness (fct_fabric.py: the
fat-tree, traffic and slowdown).  WebSearch runs fewer flows (WS_NOTE).

The seed's setting: a k = 10 fat-tree (10 pods of 5 edge and 5
aggregation switches, 25 cores, 250 servers, 1:1), every link 40 Gbit/s
and 4 us; Hadoop flows with exponential inter-arrival times at 60% of the
links, over 40,000 flows; DCQCN (ECN: the DCQCN paper's RED) against
DCQCN+TCD (TCD marking at the switches, no cut on UE, the cut factor 1.2),
PFC X_off / X_on 320 / 318 KB.  Ours, the seed gives none: each host sends
at 60% of its link to uniformly random other hosts (the harness's
``workload``); the switches' shared buffer (24 MB, tcd.py's); no incast
background (the seed's §5.2.1 names none for this figure).

Scaling: tcd.py's ``Scale(4)``, as every tcd-* scenario: rates x 1/4
(40 -> 10 Gbit/s), delays kept, bytes x 1/4 (PFC, RED, buffer, flow sizes,
binned at their seed size), DCQCN's rate steps x 1/4.  PFC on the
switch-to-switch links only (fct_fabric.PFC_NOTE, tcd.HOST_NOTE); the
host-facing ports mark by RED (TCD needs PFC on a port: a port never
paused is either congested or not).  NIC RTO 10 ms (tcd.RTO_MIN).

Quick (--quick, the tests): a k = 4 fat-tree (16 hosts), 2 ms of arrivals
(WebSearch 6 ms).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from taurus.experiment import schema
from taurus.tools.analysis import format_slowdown, size_label

from . import fct_fabric as FF
from .core import port_total, scenario
from .taurus_fct import RunShape
from .tcd import DELAY, EPS, SEED, Scale, _plot, dcqcn, run_x

LOAD = 0.6
FCT = Scale(4)
BUFFER = 24_000_000             # bytes per switch, shared (ours: tcd.py's T1)
ROWS = (("DCQCN", False), ("DCQCN+TCD", True))   # (label, TCD at switches and in DCQCN)


@dataclass(frozen=True)
class Workload:
    scenario: str
    cdf: str
    bins: tuple                 # seed sizes (bytes)
    small: int                  # the seed's small-flow edge
    seed_p50: tuple             # the seed's small flows' median slowdown: DCQCN, DCQCN+TCD
    runs: dict


# full: 7 ms of arrivals on 250 hosts is ~44,000 flows (Hadoop's mean 120 KB
# at 60% of 40 Gbit/s is ~25,000 flows a second per host); 5 ms to drain,
# where 3 ms left 481 (DCQCN) and 613 (DCQCN+TCD) flows of >= 1 MB unfinished
RUNS = {"full": RunShape({"k": 10}, FCT.s, 12_000_000, 5_000_000),
        "quick": RunShape({"k": 4}, FCT.s, 4_000_000, 2_000_000)}
HADOOP = Workload("tcd-fct", "hadoop", (0, 10_000, 50_000, 80_000, 200_000, 1_000_000, 10**12),
                  80_000, (SEED["fct_small_p50_dcqcn"], SEED["fct_small_p50_tcd"]), RUNS)
# WebSearch's flows are 14x Hadoop's (mean 1.7 MB): the same 7 ms of arrivals
# (the same bytes, so the same cost) is ~3,000 flows, not the seed's 40,000
# (WS_NOTE); the quick run has 6 ms of arrivals for ~170 flows
WEBSEARCH = Workload("tcd-websearch", "websearch",
                     (0, 100_000, 500_000, 1_000_000, 5_000_000, 10**12), 500_000, (4.6, 2.5),
                     {"full": RUNS["full"], "quick": RunShape({"k": 4}, FCT.s, 8_000_000,
                                                              2_000_000)})
WS_NOTE = ("WebSearch runs 7 ms of arrivals (~3,000 flows): the seed's > 40,000 need ~90 ms, "
           "13x as many packets as these two runs (136 s on this machine shared), about 30 "
           "minutes, a scenario's whole budget")


def links(sc: Scale, tcd: bool) -> FF.Links:
    """The seed's links at scale sc: RED on every port, PFC (with TCD or
    not) between switches."""
    ecn = {"kmin": f"{sc.kmin}B", "kmax": f"{sc.kmax}B", "pmax": sc.pmax}
    pfc = {"xoff": f"{sc.xoff}B", "xon": f"{sc.xon}B", "tcd": tcd, "epsilon": EPS}
    return FF.Links(sc.line, sc.line, DELAY, BUFFER // sc.s, {"ecn": ecn},
                    {"ecn": ecn, "pfc": pfc})


def experiment(label: str, tcd: bool, mode: str, shape: RunShape,
               wl: Workload = HADOOP) -> dict:
    cc = {**dcqcn(FCT, tcd), "mode": mode}
    return FF.fct_x(f"{wl.scenario}-{label.lower().replace('+', '-')}", FF.Scale(FCT.s),
                    shape.tree, wl.cdf, LOAD, 0.0, shape.duration_ns, shape.drain_ns, cc,
                    links=links(FCT, tcd))


def run_one(out: str, label: str, tcd: bool, mode: str, shape: RunShape,
            wl: Workload = HADOOP) -> dict:
    d = experiment(label, tcd, mode, shape, wl)
    topo = schema.from_dict(d, f"<{wl.scenario}>").topo
    t0 = time.monotonic()
    s, _ = run_x(d, os.path.join(out, label.lower().replace("+", "-")))
    r = FF.run_stats(s, FF.Scale(FCT.s), topo, time.monotonic() - t0, wl.bins, wl.small)
    # marks as the switches wrote them (TCD: UE where a paused port's queue is undetermined)
    r["ce_marks"], r["ue_marks"] = port_total(s, "ecn_mark"), port_total(s, "ue_mark")
    return r


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


@scenario("tcd-fct", "TCD §5.2.1/Fig. 16a: Hadoop at 60% load on the seed's k = 10 fat-tree "
                     "(250 hosts) with PFC; FCT slowdown p50/p95/p99 by size, DCQCN vs "
                     "DCQCN+TCD")
def tcd_fct(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    return _scenario(HADOOP, out, quick, mode, echo)


@scenario("tcd-websearch", "TCD §5.2.1/Fig. 16b: WebSearch at 60% load on the seed's k = 10 "
                           "fat-tree (250 hosts) with PFC; FCT slowdown p50/p95/p99 by size, "
                           "DCQCN vs DCQCN+TCD")
def tcd_websearch(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    return _scenario(WEBSEARCH, out, quick, mode, echo)


def _scenario(wl: Workload, out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    which = "quick" if quick else "full"
    shape = wl.runs[which]
    run = run_one if quick else (lambda *a: FF.isolated(run_one, *a))
    res = {label: run(out, label, tcd, mode, shape, wl) for label, tcd in ROWS}
    e, t = res["DCQCN"], res["DCQCN+TCD"]
    # the seed reads p99 as ratios: "up to 1.7x" (Hadoop < 50 KB), "2x" (WebSearch < 500 KB)
    gain = {size_label(be["lo"], be["hi"]): _ratio(be["p99"], bt["p99"])
            for be, bt in zip(e["table"], t["table"])}
    _echo(res, shape, gain, wl, echo)
    if wl is WEBSEARCH and not quick:
        echo(f"  note: {WS_NOTE}")
    plots = [_plot(os.path.join(out, "fct_slowdown.png"), lambda plt: _draw(plt, res))]
    return ({**res, "p99_gain": gain, "hosts": FF.n_hosts(shape.tree), "tree": shape.tree,
             "arrivals_ms": (shape.duration_ns - shape.drain_ns) / 1e6,
             "seed": {"small_p50": list(wl.seed_p50)}, "scaling": FCT.text(wl.cdf), "plots": plots},
            f"<{wl.small // 1000}KB median slowdown DCQCN {e['small']['p50']:.1f}, "
            f"DCQCN+TCD {t['small']['p50']:.1f}")


def _echo(res: dict, shape: RunShape, gain: dict, wl: Workload, echo) -> None:
    ts = FF.tree_shape(shape.tree)
    echo(f"{wl.scenario}: fat-tree k = {shape.tree['k']} ({ts.cores} core / {ts.aggs * ts.pods} agg / "
         f"{ts.tors * ts.pods} edge, {ts.n_hosts} hosts, 1:1; the seed: k = 10, 250), {wl.cdf} at "
         f"{LOAD:g} of every host's link to random hosts, arrivals for "
         f"{(shape.duration_ns - shape.drain_ns) / 1e6:g} ms, PFC between switches; FCT slowdown "
         f"by seed size")
    for line in format_slowdown({k: r["table"] for k, r in res.items()}):
        echo("  " + line)
    echo("  p99 DCQCN / DCQCN+TCD by bin: " + ", ".join(
        f"{k} {v:.2f}x" for k, v in gain.items() if v is not None))
    echo(f"  flows < {wl.small // 1000} KB{'':<{7 - len(str(wl.small // 1000))}}"
         f"p50     p95     p99   (seed p50: DCQCN {wl.seed_p50[0]}, DCQCN+TCD "
         f"{wl.seed_p50[1]})")
    for k, r in res.items():
        sm = r["small"]
        echo(f"    {k:<12} {sm['p50']:9.2f} {sm['p95']:7.2f} {sm['p99']:7.2f}   "
             f"({sm['count']} flows)")
    for k, r in res.items():
        echo(f"  {k}: {r['finished']}/{r['flows']} flows finished, {r['pfc_xoff']} PAUSEs sent, "
             f"{r['ce_marks']} CE / {r['ue_marks']} UE marks, {r['drops']} drops, "
             f"{r['wall_s']:.0f} s wall")
    echo(f"  scaling: {FCT.text(wl.cdf)}; shared buffer 24 MB -> {BUFFER // FCT.s / 1e6:g} MB")
    echo(f"  note: {FF.PFC_NOTE}")


def _draw(plt, res: dict):
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2), sharex=True)
    first = next(iter(res.values()))["table"]
    x = np.arange(len(first))
    for ax, q in zip(axes, ("p50", "p95", "p99")):
        for k, r in res.items():
            ax.plot(x, [b[q] if b[q] is not None else np.nan for b in r["table"]], "o-",
                    label=k)
        ax.set_title(f"{q} slowdown", fontsize=9)
        ax.set_xticks(x, [size_label(b["lo"], b["hi"]) for b in first], rotation=30,
                      fontsize=7)
        ax.set_yscale("log")
    axes[0].legend(fontsize=7)
    return fig
