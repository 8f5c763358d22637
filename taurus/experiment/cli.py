"""`taurus run FILE` and `taurus report RUN_DIR...`."""
from __future__ import annotations

import os
import sys
import time


def add_run_parsers(sub) -> None:
    r = sub.add_parser("run", help="run an experiment file (TOML)")
    r.add_argument("file")
    r.add_argument("--clock", choices=["wall", "virtual"], default="virtual",
                   help="virtual: one process, memory links, deterministic; "
                        "wall: namespaces and real ports")
    r.add_argument("--out", help="run directory (default: runs/<name>-<clock>-<time>)")
    r.add_argument("--check", action="store_true", help="validate the file and exit")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override one value of the file, e.g. cc.mode=native (repeatable)")
    r.add_argument("--no-progress", action="store_true")
    r.add_argument("--port-kind", default="auto", choices=["auto", "af_xdp", "af_packet"])
    r.set_defaults(func=run_cmd)
    p = sub.add_parser("report", help="print runs side by side")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR")
    p.set_defaults(func=report_cmd)


def run_cmd(a) -> int:
    from .schema import ExperimentError, load
    try:
        x = load(a.file, a.set)
        from .traffic import build_plan
        plan = build_plan(x)
    except (ExperimentError, ValueError) as e:
        print(f"taurus run: {e}", file=sys.stderr)
        return 2
    if a.check:
        print(f"{a.file}: ok ({len(x.topo.hosts)} hosts, {len(x.topo.switches)} switches, "
              f"{len(plan.flows)} flows, {len(plan.rpcs)} RPC slots)")
        return 0
    out = a.out or os.path.join("runs", f"{x.name}-{a.clock}-{time.strftime('%Y%m%d-%H%M%S')}")
    from taurus.pidfiles import pidfile
    from .report import table
    from .runner import run_experiment
    with pidfile("run"):          # `taurus topo clean` finds us after a SIGKILL
        try:
            s = run_experiment(x, out, a.clock, progress=not a.no_progress and sys.stderr.isatty()
                               or False, port_kind=a.port_kind)
        except Exception as e:
            print(f"taurus run: failed: {type(e).__name__}: {e} (partial results in {out})",
                  file=sys.stderr)
            return 1
    print(table([out]))
    print(f"results: {out}/summary.json" + (f"; plots: {', '.join(os.path.join(out, p) for p in s.get('plots', []))}"
                                             if s.get("plots") else ""))
    return 0 if s["complete"] else 130


def report_cmd(a) -> int:
    from .report import table
    missing = [d for d in a.runs if not os.path.exists(os.path.join(d, "summary.json"))]
    if missing:
        print(f"taurus report: no summary.json in {', '.join(missing)}", file=sys.stderr)
        return 2
    print(table(a.runs))
    return 0
