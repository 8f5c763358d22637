"""Results as pandas DataFrames: a run directory or a sweep, ready for a
notebook.

    import taurus.results as tr
    run = tr.load("runs/dctcp-dumbbell")         # a run directory ...
    run.flows                                     # one row per flow
    run.queue_series.pivot(index="t_ns", columns="port", values="queue_bytes")
    sweep = tr.load("sweeps/k")                   # ... or a sweep directory
    sweep.points                                  # one row per point
    sweep.run(0).fct                              # any point as a Run
    tr.compare([run_a, run_b])                    # one row per run: the headline

Every column carries its unit in its name where it has one (``t_ns``,
``rate_bps``, ``queue_mean_bytes``), as the CSVs the runner writes do.  A
table the run did not write (``csv = false``, or no finite flows) is an
empty DataFrame with its columns.  pandas is the ``analysis`` extra
(``pip install taurus[analysis]``); nothing else in Taurus imports it.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

try:
    import pandas as pd
except ImportError as e:         # the extra is missing: say which
    raise ImportError("taurus.results needs pandas: pip install 'taurus[analysis]'") from e

from taurus.experiment import sweep as _sweep

# The CSVs write_results writes, and their columns (for an empty table).
SERIES = {
    "flow_series": ["t_ns", "flow", "group", "rate_bps", "cwnd_bytes"],
    "group_series": ["t_ns", "group", "rate_bps"],
    "queue_series": ["t_ns", "port", "queue_bytes"],
    "fairness": ["t_ns", "active", "jain"],
    "fct": ["what", "group", "size", "fct_ns", "base_rtt_ns", "line_rate_bps", "slowdown"],
    "fct_bins": ["lo", "hi", "count", "p50", "p95", "p99"],
}
# summary.json keys without a unit in their name, and the name they get here
_PORT_UNITS = {"tx_bytes": "tx_bytes", "queue_max": "queue_max_bytes",
               "queue_mean": "queue_mean_bytes", "queue_p99": "queue_p99_bytes"}
_FLOW_UNITS = {"size": "size_bytes"}


@dataclass
class Run:
    """One run directory: its summary and every table it wrote."""
    path: str
    summary: dict
    flows: pd.DataFrame
    groups: pd.DataFrame
    ports: pd.DataFrame
    nics: pd.DataFrame
    agents: pd.DataFrame
    algorithms: pd.DataFrame
    series: dict = field(default_factory=dict)

    def __getattr__(self, name):
        # run.flow_series, run.queue_series, run.fct, ...: the CSV tables
        series = self.__dict__.get("series", {})
        if name in series:
            return series[name]
        raise AttributeError(name)

    @property
    def name(self) -> str:
        return self.summary.get("experiment") or os.path.basename(self.path.rstrip("/"))

    @property
    def label(self) -> str:
        """The experiment with its algorithms and modes, e.g. ``dctcp-dumbbell
        (dctcp agent)``: what tells runs of one file apart."""
        algs = ", ".join(f"{a['name']} {a['mode']}" for a in self.summary.get("algorithms", []))
        return f"{self.name} ({algs})" if algs else self.name

    def headline(self) -> dict:
        """The run's main figures, one flat row (``compare`` stacks them)."""
        s = self.summary
        busiest = s.get("busiest_port") or {}
        name = busiest.get("name") if isinstance(busiest, dict) else busiest
        q = self.ports.loc[name] if name in self.ports.index else None
        fct = self.fct                      # finite flows and RPCs
        return {
            "run": self.label, "path": self.path,
            "algorithm": ",".join(a["name"] for a in s.get("algorithms", [])),
            "mode": ",".join(a["mode"] for a in s.get("algorithms", [])),
            "complete": s.get("complete"),
            "throughput_bps": s.get("throughput_bps"),
            "jain_mean": (s.get("fairness") or {}).get("jain_mean"),
            "busiest_port": name,
            "queue_mean_bytes": None if q is None else q["queue_mean_bytes"],
            "queue_p99_bytes": None if q is None else q["queue_p99_bytes"],
            "marks": int(self.ports["marks"].sum()) if len(self.ports) else 0,
            "drops": int(self.ports["drops"].sum()) if len(self.ports) else 0,
            "agent_messages": (s.get("agent") or {}).get("messages", 0),
            "fct_p50_ns": fct["fct_ns"].median() if len(fct) else None,
            "fct_p99_ns": fct["fct_ns"].quantile(0.99) if len(fct) else None,
        }


@dataclass
class Sweep:
    """A sweep directory: its grid and a row per point."""
    path: str
    manifest: dict
    points: pd.DataFrame

    def run(self, point: int) -> Run:
        """Point ``point``'s run directory as a Run."""
        return load_run(os.path.join(self.path, self.manifest["points"][point]["dir"]))

    def runs(self) -> list[Run]:
        """Every finished point's Run."""
        return [self.run(i) for i, p in enumerate(self.manifest["points"])
                if os.path.exists(os.path.join(self.path, p["dir"], "summary.json"))]


def _table(rows: dict, units: dict, index: str) -> pd.DataFrame:
    """A {name: {key: value, counters: {...}}} dict as one row per name,
    nested dicts flattened (``counters_rx``)."""
    flat = {}
    for k, v in rows.items():
        row = {}
        for key, val in v.items():
            if isinstance(val, dict):
                row.update({f"{key}_{kk}": vv for kk, vv in val.items()
                            if not isinstance(vv, dict)})
            else:
                row[units.get(key, key)] = val
        flat[k] = row
    df = pd.DataFrame.from_dict(flat, orient="index")
    df.index.name = index
    return df


def _csv(path: str, name: str) -> pd.DataFrame:
    f = os.path.join(path, name + ".csv")
    if not os.path.exists(f) or os.path.getsize(f) == 0:
        return pd.DataFrame(columns=SERIES[name])
    return pd.read_csv(f)


def load_run(path: str) -> Run:
    """A run directory (one with summary.json) as a Run."""
    path = os.fspath(path)
    with open(os.path.join(path, "summary.json")) as f:
        s = json.load(f)
    flows = pd.DataFrame([{_FLOW_UNITS.get(k, k): v for k, v in fl.items() if k != "events"}
                          | {f"events_{e}": n for e, n in (fl.get("events") or {}).items()}
                          for fl in s.get("flows", [])])
    if len(flows):
        flows = flows.set_index("id")
    hosts = (s.get("agent") or {}).get("hosts", {})
    agents = _table({h: {k: v for k, v in a.items() if k != "detail"} for h, a in hosts.items()},
                    {}, "host")
    return Run(path=path, summary=s, flows=flows,
               groups=_table(s.get("groups", {}), {}, "group"),
               ports=_table(s.get("ports", {}), _PORT_UNITS, "port"),
               nics=_table(s.get("nics", {}), {}, "host"),
               agents=agents,
               algorithms=pd.DataFrame(s.get("algorithms", [])),
               series={name: _csv(path, name) for name in SERIES})


def load(path: str) -> Run | Sweep:
    """A run directory or a sweep directory, as a Run or a Sweep."""
    path = os.fspath(path)
    if _sweep.is_sweep(path):
        return Sweep(path=path, manifest=_sweep.load(path),
                     points=pd.read_csv(os.path.join(path, _sweep.TABLE)).set_index("point"))
    if not os.path.exists(os.path.join(path, "summary.json")):
        raise FileNotFoundError(f"{path}: neither a run (summary.json) nor a sweep "
                                f"({_sweep.MANIFEST})")
    return load_run(path)


def compare(runs) -> pd.DataFrame:
    """One row per run (Runs or paths): the headline figures side by side."""
    rows = [(r if isinstance(r, Run) else load_run(r)).headline() for r in runs]
    return pd.DataFrame(rows).set_index("run")
