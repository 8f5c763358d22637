"""`taurus reproduce --all`: every scenario in full, in parallel processes on
this machine (``workers``) or one task each on a Dask cluster
(``scheduler``), each compared with the results ledger (ledger.py).

Each scenario runs in a process of its own (a fresh interpreter: no state
carried from one scenario into the next) into ``out/NAME``, its output
lines in ``out/NAME/log.txt``.  On Dask a worker runs it in a scratch
directory and sends the directory back packed, so workers need no shared
disk.  The longest scenarios (by the ledger's seconds) start first.
"""
from __future__ import annotations

import io
import os
import tarfile
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed

from . import ledger as L

OK, DRIFT, CRASH, NEW = "ok", "DRIFT", "CRASH", "NEW"


def run_one(name: str, out: str | None, mode: str = "native") -> dict:
    """Scenario ``name`` in full into ``out`` (None: a scratch directory,
    returned packed as ``tar``): {name, figures | error, seconds, log}."""
    from . import run
    lines: list[str] = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="taurus-reproduce-") as tmp:
        d = out or tmp
        res = {"name": name}
        try:
            res["figures"] = run(name, d, quick=False, mode=mode, echo=lines.append)
        except Exception as e:
            res["error"] = f"{type(e).__name__}: {e}"
            lines.append(traceback.format_exc())
        res["seconds"] = time.monotonic() - t0
        res["log"] = "\n".join(lines) + "\n"
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "log.txt"), "w") as f:
            f.write(res["log"])
        if out is None:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w:gz") as tar:
                tar.add(d, arcname=".")
            res["tar"] = buf.getvalue()
    return res


def verdict(res: dict, book: dict[str, L.Entry]) -> tuple[str, list[str]]:
    """(status, what moved) of one scenario's run against the ledger."""
    if "error" in res:
        return CRASH, [res["error"]]
    if res["name"] not in book:
        return NEW, ["not in the ledger (taurus/reproduce/ledger.toml)"]
    moved = L.drift(book[res["name"]], res["figures"])
    return (DRIFT, moved) if moved else (OK, [])


def run_all(names: list[str], out: str, workers: int | None = None,
            scheduler: str | None = None, mode: str = "native", echo=print) -> dict:
    """Run ``names``, echoing one line per scenario as it ends; returns
    {name: result}, each with its status and what moved."""
    book = L.load()
    order = sorted(names, key=lambda n: -book[n].seconds if n in book else 0)
    os.makedirs(out, exist_ok=True)
    where = f"on {scheduler}" if scheduler else f"in {workers or os.cpu_count()} processes"
    echo(f"reproduce: {len(order)} scenarios {where} -> {out}")
    w = max(map(len, order), default=0)
    results = {}
    for res in _execute(order, out, workers, scheduler, mode):
        if "tar" in res:
            with tarfile.open(fileobj=io.BytesIO(res.pop("tar")), mode="r:gz") as tar:
                tar.extractall(os.path.join(out, res["name"]), filter="data")
        res["status"], res["moved"] = verdict(res, book)
        results[res["name"]] = res
        head = res["figures"]["headline"] if "figures" in res else ""
        echo(f"{res['status']:<6} {res['name']:<{w}} {res['seconds']:6.0f} s  "
             + ("; ".join(res["moved"]) if res["moved"] else head))
    return results


def _execute(order, out, workers, scheduler, mode):
    if scheduler:
        try:
            from dask.distributed import Client, as_completed as dask_completed
        except ImportError:
            raise SystemExit("taurus reproduce: --scheduler needs Dask: "
                             "pip install 'taurus[cluster]'") from None
        with Client(scheduler, timeout="10s") as client:
            futs = {client.submit(run_one, n, None, mode, pure=False): n for n in order}
            for fut in dask_completed(list(futs)):
                yield _result(fut, futs[fut])
        return
    import multiprocessing
    with ProcessPoolExecutor(max_workers=workers or os.cpu_count(),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        futs = {pool.submit(run_one, n, os.path.join(out, n), mode): n for n in order}
        for fut in as_completed(futs):
            yield _result(fut, futs[fut])


def _result(fut, name: str) -> dict:
    try:
        return fut.result()
    except BaseException as e:          # the worker itself died
        return {"name": name, "error": f"{type(e).__name__}: {e}", "seconds": 0.0}


def summary(results: dict, seconds: float) -> str:
    n = {s: sum(r["status"] == s for r in results.values()) for s in (OK, DRIFT, CRASH, NEW)}
    return (f"reproduce: {n[OK]} ok, {n[DRIFT]} drifted, {n[CRASH]} crashed"
            + (f", {n[NEW]} not in the ledger" if n[NEW] else "")
            + f" ({len(results)} scenarios, {seconds:.0f} s)")
