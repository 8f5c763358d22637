"""The scenario registry and what scenarios share: running an experiment
dict in virtual time, queue percentiles, drop counts, Jain over a run."""
from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from typing import Callable

import numpy as np

from taurus.experiment import schema
from taurus.tools.analysis import jain


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
    from . import load
    load()
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


def run_dict(d: dict, out: str) -> dict:
    from taurus.experiment.runner import run_experiment
    x = schema.from_dict(d, f"<reproduce {d['experiment']['name']}>")
    s = run_experiment(x, out, "virtual")
    if not s["complete"] or s["error"]:
        raise RuntimeError(f"{d['experiment']['name']}: run incomplete: {s['error']}")
    return s


def queue_percentiles(run_dir: str, port: str, t0: float, t1: float) -> tuple[float, float]:
    """(p50, p99) bytes of ``port``'s queue samples in (t0, t1]."""
    q = []
    with open(os.path.join(run_dir, "queue_series.csv")) as f:
        for r in csv.DictReader(f):
            if r["port"] == port and t0 < int(r["t_ns"]) <= t1:
                q.append(int(r["queue_bytes"]))
    if not q:
        return 0.0, 0.0
    return float(np.percentile(q, 50)), float(np.percentile(q, 99))


def drops(s: dict) -> int:
    """Packets lost anywhere: switch drops and the NICs' host-buffer drops."""
    return (int(sum(p["drops"] for p in s["ports"].values()))
            + int(sum(n.get("drop_host_buf", 0) for n in s["nics"].values())))


def port_total(s: dict, counter: str) -> int:
    """A switch-port counter (switch/state.py STAT_NAMES) summed over every port."""
    return int(sum(p["counters"].get(counter, 0) for p in s["ports"].values()))


def outputs():
    return {"plots": False, "csv": True}


def long_jain(run_dir: str, t0: float) -> float:
    """Jain's index of the flows' mean rates after t0 (flow_series.csv):
    a sample period holds a few packets, too few for a per-sample index."""
    per: dict[str, list] = {}
    with open(os.path.join(run_dir, "flow_series.csv")) as f:
        for r in csv.DictReader(f):
            if int(r["t_ns"]) > t0:
                per.setdefault(r["flow"], []).append(int(r["rate_bps"]))
    return jain(np.array([np.mean(v) for v in per.values()])) if per else 0.0


def pyplot():
    """matplotlib's pyplot, drawing to files only (loaded when a scenario plots)."""
    from taurus.experiment.plots import plt
    return plt
