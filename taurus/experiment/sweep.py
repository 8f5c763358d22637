"""`taurus sweep FILE`: an experiment over a grid of parameters.

    taurus sweep FILE --param KEY=V1,V2[,...] [--param ...] [--repeat N]
                 [--out DIR] [--workers N | --scheduler tcp://HOST:PORT]

Every point of the grid (the product of the --param lists, each repeated N
times with experiment.seed + 0 .. N-1) is the file with those values set
(the keys and values of `taurus run --set`), run in virtual time into an
ordinary run directory, DIR/points/NNN-KEY=VALUE-.../.  Points run in
parallel processes on this machine (--workers, default the CPU count), or
one task each on a Dask distributed cluster (--scheduler; workers need only
this package installed: a task gets the validated experiment and returns
its run directory's files, so they need no shared disk).  Every point is
validated before any runs.

DIR/sweep.json and DIR/sweep.csv hold every point's parameters and its
headline figures (`figures`); DIR/sweep-KEY.png plots each figure against
each swept parameter (mean over the other parameters and repeats, with the
min-max range).  A sweep run again into the same DIR skips the points that
finished (their summary.json says complete) and runs only the rest; a DIR
holding another grid is refused.  `taurus report DIR` prints the table.
"""
from __future__ import annotations

import csv
import io
import itertools
import json
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field

from taurus.units import toml_value

from .schema import ExperimentError, apply_set, from_dict, read_toml

MANIFEST, TABLE = "sweep.json", "sweep.csv"


@dataclass
class Point:
    index: int
    values: dict                 # KEY -> value, the swept ones
    repeat: int
    seed: int
    dir: str                     # relative to the sweep directory
    figures: dict = field(default_factory=dict)
    status: str = "pending"      # pending | done | failed: ...


def parse_param(arg: str) -> tuple[str, list]:
    """``cc.params.g=0.0625,0.125`` -> ("cc.params.g", [0.0625, 0.125]);
    each value as `--set` reads it (TOML, else a bare string)."""
    key, eq, raw = arg.partition("=")
    if not eq or not key.strip() or not raw.strip():
        raise ExperimentError("--param", None, f"expected KEY=V1,V2,..., got {arg!r}")
    vals = [toml_value(v.strip()) for v in raw.split(",")]
    if len(set(map(repr, vals))) != len(vals):
        raise ExperimentError("--param", key, f"a value appears twice in {raw!r}")
    return key.strip(), vals


def _toml(v) -> str:
    """A value as `--set` takes it back."""
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v)


def _slug(values: dict) -> str:
    s = "-".join(f"{k.split('.')[-1]}={v}" for k, v in values.items())
    return "".join(c if c.isalnum() or c in "=.-_" else "_" for c in s)[:80]


def grid(path: str, params: list[tuple[str, list]], repeat: int = 1):
    """(points, experiments): every point of the grid and its validated
    Experiment; an ExperimentError names the point whose values are bad."""
    if repeat < 1:
        raise ExperimentError("--repeat", None, f"expected >= 1, got {repeat}")
    keys = [k for k, _ in params]
    if len(set(keys)) != len(keys):
        raise ExperimentError("--param", None, "a key is swept twice")
    base = read_toml(path)
    seed0 = int(base.get("experiment", {}).get("seed", 1))
    points, xs = [], []
    combos = list(itertools.product(*(v for _, v in params))) if params else [()]
    for combo in combos:
        values = dict(zip(keys, combo))
        for r in range(repeat):
            i = len(points)
            data = json.loads(json.dumps(base))          # a deep copy of plain TOML data
            for k, v in values.items():
                apply_set(data, f"{k}={_toml(v)}", f"--param {k}")
            apply_set(data, f"experiment.seed={seed0 + r}")
            src = f"{path} [{', '.join(f'{k}={v}' for k, v in values.items()) or 'base'}" \
                  f"{f', repeat {r}' if repeat > 1 else ''}]"
            xs.append(from_dict(data, source=src, base_dir=os.path.dirname(os.path.abspath(path))))
            points.append(Point(i, values, r, seed0 + r,
                                os.path.join("points", f"{i:03d}-{_slug(values) or 'base'}"
                                             + (f"-r{r}" if repeat > 1 else ""))))
    return points, xs


def figures(s: dict) -> dict:
    """A run's headline figures (flat, for the table and the plots)."""
    f = {"complete": bool(s["complete"]), "throughput_gbps": s["throughput_bps"] / 1e9,
         "jain_mean": s["fairness"]["jain_mean"],
         "drops": int(sum(p["drops"] for p in s["ports"].values())),
         "marks": int(sum(p["marks"] for p in s["ports"].values())),
         "agent_updates": s["agent"]["updates"]}
    p = s.get("busiest_port")
    if p:
        q = s["ports"][p]
        f.update(queue_mean_kb=q["queue_mean"] / 1e3, queue_p99_kb=q["queue_p99"] / 1e3)
    for g, v in s["groups"].items():
        f[f"{g}.goodput_gbps"] = v["goodput_bps"] / 1e9
        if v.get("completed"):
            f[f"{g}.fct_p50_us"] = v["fct_ns"]["p50"] / 1e3
            f[f"{g}.fct_p99_us"] = v["fct_ns"]["p99"] / 1e3
            f[f"{g}.slowdown_p99"] = v["slowdown"]["p99"]
    return f


def run_point(x, name: str) -> dict:
    """One point, wherever it runs: the run directory's files (name ->
    bytes) and the summary.  In a scratch directory, so that a worker on
    another machine needs no shared disk."""
    import tempfile

    from .runner import run_experiment
    with tempfile.TemporaryDirectory(prefix="taurus-sweep-") as d:
        s = run_experiment(x, d, "virtual")
        files = {}
        for n in os.listdir(d):
            with open(os.path.join(d, n), "rb") as f:
                files[n] = f.read()
    return {"name": name, "summary": s, "files": files}


def _finished(out: str, p: Point) -> dict | None:
    try:
        with open(os.path.join(out, p.dir, "summary.json")) as f:
            s = json.load(f)
    except (OSError, ValueError):
        return None
    return s if s.get("complete") and not s.get("error") else None


def _manifest(path, params, repeat, points) -> dict:
    return {"file": os.path.abspath(path), "params": {k: v for k, v in params},
            "repeat": repeat, "points": [p.__dict__ for p in points]}


def _same_grid(old: dict, new: dict) -> bool:
    strip = lambda m: (m["params"], m["repeat"], [(p["values"], p["seed"], p["dir"])  # noqa: E731
                                                  for p in m["points"]])
    return strip(old) == strip(new)


def sweep(path: str, params: list[tuple[str, list]], out: str, repeat: int = 1,
          workers: int | None = None, scheduler: str | None = None, echo=print,
          progress: bool | None = None) -> dict:
    """Run the grid into ``out`` (resuming), return the manifest."""
    points, xs = grid(path, params, repeat)
    os.makedirs(out, exist_ok=True)
    man = _manifest(path, params, repeat, points)
    mpath = os.path.join(out, MANIFEST)
    if os.path.exists(mpath):
        with open(mpath) as f:
            if not _same_grid(json.load(f), man):
                raise ExperimentError(out, None, "holds another sweep (other parameters or "
                                                 "values): give another --out")
    todo = []
    for p, x in zip(points, xs):
        s = _finished(out, p)
        if s is not None:
            p.figures, p.status = figures(s), "done"
        else:
            todo.append((p, x))
    echo(f"sweep: {len(points)} points, {len(points) - len(todo)} already done, "
         f"{len(todo)} to run" + (f" on {scheduler}" if scheduler else
                                  f" in {workers or os.cpu_count()} processes" if todo else ""))
    _write(out, man, points)
    if todo:
        for res in _execute(todo, workers, scheduler, progress):
            p = points[res["index"]]
            if "error" in res:
                p.status = f"failed: {res['error']}"
                continue
            d = os.path.join(out, p.dir)
            os.makedirs(d, exist_ok=True)
            for n, b in res["files"].items():
                with open(os.path.join(d, n), "wb") as f:
                    f.write(b)
            s = res["summary"]
            p.figures = figures(s)
            p.status = "done" if s["complete"] and not s["error"] else f"failed: {s['error']}"
            _write(out, man, points)
    _write(out, man, points)
    plots = plot(out, man)
    failed = [p for p in points if p.status != "done"]
    echo(table(man))
    echo(f"sweep: {len(points) - len(failed)} of {len(points)} points done"
         + (f", {len(failed)} failed" if failed else "") + f"; {os.path.join(out, TABLE)}"
         + (f"; plots: {', '.join(plots)}" if plots else ""))
    man["plots"] = plots
    return man


def _execute(todo, workers, scheduler, progress):
    """Yield {"index", "files", "summary"} or {"index", "error"} as points end."""
    from tqdm import tqdm
    bar = tqdm(total=len(todo), unit="point", desc="sweep", disable=not progress if
               progress is not None else None)
    try:
        if scheduler:
            yield from _on_dask(todo, scheduler, bar)
            return
        import multiprocessing
        # spawn: a fresh interpreter per worker (no forked Numba or pyroute2 state)
        with ProcessPoolExecutor(max_workers=workers or os.cpu_count(),
                                 mp_context=multiprocessing.get_context("spawn")) as pool:
            futs = {pool.submit(run_point, x, p.dir): p for p, x in todo}
            for fut in as_completed(futs):
                bar.update()
                yield _result(futs[fut].index, fut)
    finally:
        bar.close()


def _on_dask(todo, scheduler, bar):
    try:
        from dask.distributed import Client, as_completed as dask_completed
    except ImportError:
        raise ExperimentError("--scheduler", None, "needs Dask: pip install 'taurus[cluster]'") \
            from None
    with Client(scheduler, timeout="10s") as client:
        futs = {client.submit(run_point, x, p.dir, pure=False): p
                for p, x in todo}
        for fut in dask_completed(futs):
            bar.update()
            yield _result(futs[fut].index, fut)


def _result(index, fut) -> dict:
    try:
        return {"index": index, **fut.result()}
    except Exception as e:
        return {"index": index, "error": f"{type(e).__name__}: {e}"}


def _write(out, man, points):
    man["points"] = [p.__dict__ for p in points]
    with open(os.path.join(out, MANIFEST), "w") as f:
        json.dump(man, f, indent=1)
    keys = list(man["params"])
    figs = []
    for p in points:
        figs += [k for k in p.figures if k not in figs]
    with open(os.path.join(out, TABLE), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["point", *keys, "seed", "status", *figs, "dir"])
        for p in points:
            w.writerow([p.index, *(p.values[k] for k in keys), p.seed, p.status,
                        *(p.figures.get(k, "") for k in figs), p.dir])


def is_sweep(d: str) -> bool:
    return os.path.exists(os.path.join(d, MANIFEST))


def load(d: str) -> dict:
    with open(os.path.join(d, MANIFEST)) as f:
        return json.load(f)


SHOWN = ("throughput_gbps", "jain_mean", "queue_p99_kb", "drops", "marks")


def table(man: dict) -> str:
    """The points, a row each: swept values, seed and the main figures."""
    keys = list(man["params"])
    cols = [*keys, "seed", *SHOWN, "status"]
    rows = []
    for p in man["points"]:
        f = p["figures"]
        rows.append([str(p["values"][k]) for k in keys] + [str(p["seed"])]
                    + [("-" if k not in f else f"{f[k]:.3f}" if isinstance(f[k], float)
                        else str(f[k])) for k in SHOWN] + [p["status"][:40]])
    ws = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    buf = io.StringIO()
    buf.write("  ".join(c.rjust(w) for c, w in zip(cols, ws)) + "\n")
    for r in rows:
        buf.write("  ".join(v.rjust(w) for v, w in zip(r, ws)) + "\n")
    return buf.getvalue().rstrip("\n")


def plot(out: str, man: dict) -> list[str]:
    """One figure per swept parameter: each shown figure against its values."""
    import numpy as np

    from .plots import plt
    made = []
    done = [p for p in man["points"] if p["status"] == "done"]
    if not done:
        return made
    for key, values in man["params"].items():
        fig, axes = plt.subplots(1, len(SHOWN), figsize=(3.2 * len(SHOWN), 3))
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        xs = values if numeric else list(range(len(values)))
        for ax, fname in zip(axes, SHOWN):
            ys = [[p["figures"].get(fname) for p in done
                   if p["values"][key] == v and p["figures"].get(fname) is not None]
                  for v in values]
            m = [np.mean(y) if y else np.nan for y in ys]
            lo = [np.min(y) if y else np.nan for y in ys]
            hi = [np.max(y) if y else np.nan for y in ys]
            ax.plot(xs, m, "o-")
            ax.fill_between(xs, lo, hi, alpha=0.2)
            ax.set_title(fname, fontsize=9)
            ax.set_xlabel(key, fontsize=8)
            if not numeric:
                ax.set_xticks(xs, [str(v) for v in values], fontsize=7)
        fig.tight_layout()
        name = f"sweep-{_slug({key: ''}).rstrip('=')}.png"
        fig.savefig(os.path.join(out, name), dpi=90)
        plt.close(fig)
        made.append(os.path.join(out, name))
    return made
