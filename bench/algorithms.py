#!/usr/bin/env python3
"""The compiled cost of one update of every registered algorithm, ns per
call, measured in one run beside DCTCP (issue 17's benchmark; OSCAR's seed
reports CPU cycles per update at its testbed: DCQCN 46, Swift 104, HPCC 92,
PowerTCP 159).

    python bench/algorithms.py                 # every registered algorithm
    python bench/algorithms.py --records 4096 --repeat 15 --json out.json
    python bench/algorithms.py --only dctcp,hpcc

Per algorithm, with its default parameters, a synthetic stream of the events
it binds (taurus.testing.replay.random_stream: the stream the replay
cross-test uses, spread over --flows flows) is fed record by record to

- ``native``: its native entry (``Runtime.entry``, the function whose
  address the engine calls per event), from a compiled loop, so no Python
  call sits between two calls; the loop zeroes the decision before each
  call as the engine does;
- ``drain``: the agent's compiled drain (``Runtime.drain``), all records in
  one call: ns per record.

Each figure is the best of --repeat rounds (after one untimed pass that
compiles and warms); a round times one pass of every algorithm in turn, so
load from elsewhere falls alike on all; state carries on from pass to pass
as a flow's would.  ``null`` is a class that binds the same stream's events
with empty handlers: the loop's and the dispatch's own cost, subtracted in
the ``net`` columns.  Compiling each algorithm's calls takes seconds the first
time (cached on disk after).  Last line: ``algorithms: dctcp X ns, ...``
(native, net).
"""
import argparse
import json
import os
import sys
import time

import numba as nb
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from taurus.cc_algorithms import registry  # noqa: E402
from taurus.cc_algorithms.algorithm import (N_DECISION, Algorithm, FlowContext,  # noqa: E402
                                            kernel, param_row)
from taurus.cc_algorithms.runtime import Runtime  # noqa: E402
from taurus.datapath.ccevents import EVENT_NAMES  # noqa: E402
from taurus.testing.replay import random_stream  # noqa: E402


@kernel
def _nothing(s, p, ev, d):
    pass


class Null(Algorithm):
    """Binds every sender event, does nothing: the measuring loop's own cost."""
    name = "null"
    state = ("x",)
    binds = ("ACK", "RTT", "INT", "CNP", "TIMER")
    timer = 10_000


for _e in Null.binds:
    setattr(Null, f"on_{_e.lower()}", staticmethod(_nothing))


def _native_loop(entry):
    @nb.njit
    def loop(st, par, rec, dec):
        for i in range(rec.shape[0]):
            dec[:] = 0
            entry(st, par, rec[i, 1], rec[i], dec)
    return loop


def runners(cls, records: int, flows: int, seed: int = 1):
    """(native pass, drain pass, records, events): two calls that each feed
    the whole stream once, compiled and warmed."""
    params = cls.Params()
    rt = Runtime(cls, jit=True)
    ctx = FlowContext(mss=4096, line_rate=100e9, max_cwnd=float(1 << 24))
    rec = np.ascontiguousarray(random_stream(cls, params, n=records, flows=flows, seed=seed))
    S, P, D = rt.tables(flows)
    P[:] = param_row(cls, params, ctx)[0]
    for f in range(flows):
        rt.setup(S, P, D, f)
    st = np.asarray(S).view(np.float64).reshape(-1)   # the native entry's flat views
    par = np.asarray(P).view(np.float64).reshape(-1)
    dec = np.zeros(N_DECISION, np.int64)
    loop = _native_loop(rt.entry)
    rows = np.arange(len(rec), dtype=np.int64)
    faults = np.zeros(len(rec), np.int64)

    def native():
        loop(st, par, rec, dec)

    def drain():
        rt.drain(S, P, D, rec, rows, faults)
    native()
    drain()
    return native, drain, len(rec), sorted({EVENT_NAMES[e] for e in rec[:, 2]})


def measure(classes: dict, records: int, flows: int, repeat: int) -> dict:
    """{name: {native_ns, drain_ns, events, records}}: the best of ``repeat``
    rounds; each round times every algorithm's passes in turn, so that the
    machine's load falls alike on all of them."""
    rs = {n: runners(c, records, flows) for n, c in classes.items()}
    best = {n: [float("inf"), float("inf")] for n in rs}
    for _ in range(repeat):
        for n, (native, drain, nrec, _) in rs.items():
            for k, run in enumerate((native, drain)):
                t0 = time.perf_counter_ns()
                run()
                best[n][k] = min(best[n][k], (time.perf_counter_ns() - t0) / nrec)
    return {n: {"native_ns": best[n][0], "drain_ns": best[n][1], "events": rs[n][3],
                "records": rs[n][2]} for n in rs}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=8192, help="records per pass")
    ap.add_argument("--flows", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=21, help="timed passes; the best counts")
    ap.add_argument("--only", default="", help="comma-separated names (default: all registered)")
    ap.add_argument("--json", default="", help="write the figures here")
    a = ap.parse_args(argv)
    names = [n for n in a.only.split(",") if n] or registry.available()
    if "dctcp" not in names:
        names.insert(0, "dctcp")                        # the reference, always beside
    classes = {"null": Null}
    for n in names:
        cls = registry.lookup(n)
        if cls.role != "sender":
            print(f"{n}: a receiver algorithm, skipped")
            continue
        classes[n] = cls
    res = measure(classes, a.records, a.flows, a.repeat)
    null = res.pop("null")
    out = {}
    print(f"{'algorithm':<12} {'native ns':>10} {'net':>8} {'drain ns':>10} {'net':>8}  events")
    print(f"{'null':<12} {null['native_ns']:>10.1f} {'':>8} {null['drain_ns']:>10.1f} {'':>8}")
    for n, m in res.items():
        m["native_net_ns"] = max(m["native_ns"] - null["native_ns"], 0.0)
        m["drain_net_ns"] = max(m["drain_ns"] - null["drain_ns"], 0.0)
        out[n] = m
        print(f"{n:<12} {m['native_ns']:>10.1f} {m['native_net_ns']:>8.1f} "
              f"{m['drain_ns']:>10.1f} {m['drain_net_ns']:>8.1f}  {','.join(m['events'])}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"null": null, "algorithms": out, "records": a.records,
                       "flows": a.flows, "repeat": a.repeat}, f, indent=1)
    print("algorithms: " + ", ".join(f"{n} {m['native_net_ns']:.0f} ns" for n, m in out.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
