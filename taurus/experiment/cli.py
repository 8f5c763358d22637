"""`taurus run FILE`, `taurus sweep FILE --param ...` and `taurus report RUN_DIR...`."""
from __future__ import annotations

import os
import sys
import time


def add_run_parsers(sub) -> None:
    r = sub.add_parser("run")
    r.add_argument("file")
    r.add_argument("--clock", choices=["wall", "virtual", "both"], default="virtual",
                   help="virtual: one process, memory links, deterministic; "
                        "wall: namespaces and real ports; both: one after the other, "
                        "compared (RUN_DIR/virtual, RUN_DIR/wall, RUN_DIR/compare.json)")
    r.add_argument("--tolerance", type=float, default=None, metavar="FRACTION",
                   help="--clock both: flag figures that differ by more than this "
                        "(default 0.2)")
    r.add_argument("--out", help="run directory (default: runs/<name>-<clock>-<time>)")
    r.add_argument("--check", action="store_true", help="validate the file and exit")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override one value of the file, e.g. cc.mode=native (repeatable)")
    r.add_argument("--no-progress", action="store_true")
    r.add_argument("--port-kind", default="auto", choices=["auto", "af_xdp", "af_packet"])
    r.add_argument("--pcap", nargs="?", const="all", default=None, metavar="PORTS",
                   help="capture these engine ports (comma list, e.g. s1-eth0,h1-eth0; "
                        "default all) into RUN_DIR/capture.pcapng")
    r.add_argument("--pcap-file", default=None, metavar="FILE",
                   help="write the capture here instead")
    from taurus.tools.pcap import add_capture_options
    add_capture_options(r)
    r.set_defaults(func=run_cmd)
    w = sub.add_parser("sweep")
    w.add_argument("file")
    w.add_argument("--param", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a swept key and its values, e.g. cc.params.g=0.0625,0.125 (repeatable: "
                        "the grid is their product)")
    w.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="each point N times, with experiment.seed + 0 .. N-1")
    w.add_argument("--out", help="sweep directory (default: runs/sweep-<name>-<time>); "
                                 "an existing one is resumed")
    w.add_argument("--workers", type=int, default=None, metavar="N",
                   help="local processes (default: the CPU count)")
    w.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run on this Dask distributed cluster instead (pip install 'taurus[cluster]')")
    w.add_argument("--no-progress", action="store_true")
    w.set_defaults(func=sweep_cmd)
    p = sub.add_parser("report")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--html", action="store_true",
                   help="write one self-contained HTML file (tables, plots, experiment files)")
    p.add_argument("-o", "--output", metavar="FILE", default="report.html",
                   help="the HTML file (default: report.html)")
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
    from .algcheck import problems
    from .frames import problems as frame_problems
    clocks = ("virtual", "wall") if a.clock == "both" else (a.clock,)
    errs = problems(x) + [e for c in clocks for e in frame_problems(x, c)]  # one line each
    for e in errs:
        print(f"taurus run: {e}", file=sys.stderr)
    if errs:
        return 2
    if a.check:
        print(f"{a.file}: ok ({len(x.topo.hosts)} hosts, {len(x.topo.switches)} switches, "
              f"{len(plan.flows)} flows, {len(plan.rpcs)} RPC slots)")
        return 0
    out = a.out or os.path.join("runs", f"{x.name}-{a.clock}-{time.strftime('%Y%m%d-%H%M%S')}")
    pcap = None
    if a.pcap is not None or a.pcap_file:
        from taurus.tools.pcap import CaptureError, capture_options, parse_ports
        try:
            pcap = dict(capture_options(a), ports=parse_ports(a.pcap),
                        path=a.pcap_file or os.path.join(out, "capture.pcapng"))
        except CaptureError as e:
            print(f"taurus run: {e}", file=sys.stderr)
            return 2
    if a.clock == "both":
        return _run_both(a, out, pcap)
    return _run_one(a, x, out, a.clock, pcap)


def _run_both(a, out: str, pcap) -> int:
    """The file in virtual time, then on the wall clock (the capture, if
    any, there), and the two compared (compare.py)."""
    from . import compare
    from .schema import load
    dirs = {}
    for clock in ("virtual", "wall"):
        dirs[clock] = os.path.join(out, clock)
        print(f"--- {clock} ---")
        rc = _run_one(a, load(a.file, a.set), dirs[clock], clock,
                      pcap if clock == "wall" else None)
        if rc != 0:
            return rc
    c = compare.write(out, dirs["virtual"], dirs["wall"],
                      compare.TOLERANCE if a.tolerance is None else a.tolerance)
    print(compare.table(c))
    print(f"comparison: {out}/compare.json" + (f"; plot: {c['plot']}" if c["plot"] else ""))
    return 0


def _run_one(a, x, out: str, clock: str, pcap) -> int:
    from taurus.pidfiles import pidfile
    from .schema import ExperimentError
    from .faults import AlgorithmFault
    from .report import fault_line, fidelity_warnings, table
    from .runner import run_experiment
    with pidfile("run"):          # `taurus topo clean` finds us after a SIGKILL
        try:
            s = run_experiment(x, out, clock, progress=not a.no_progress and sys.stderr.isatty()
                               or False, port_kind=a.port_kind, pcap=pcap)
        except ExperimentError as e:        # validation before the run: nothing was made
            print(f"taurus run: {e}", file=sys.stderr)
            return 2
        except AlgorithmFault as e:
            if e.trace:
                print(e.trace, file=sys.stderr, end="")
            print(f"taurus run: failed: {e} (partial results in {out})", file=sys.stderr)
            return 1
        except Exception as e:
            print(f"taurus run: failed: {type(e).__name__}: {e} (partial results in {out})",
                  file=sys.stderr)
            return 1
    print(table([out]))
    if fault_line(s):
        print(fault_line(s), file=sys.stderr)
    for w in fidelity_warnings(s):
        print(w, file=sys.stderr)
    if s.get("pcap"):
        from taurus.tools.pcap import summary_line
        print(summary_line(s["pcap"]))
    print(f"results: {out}/summary.json" + (f"; plots: {', '.join(os.path.join(out, p) for p in s.get('plots', []))}"
                                             if s.get("plots") else ""))
    return 0 if s["complete"] else 130


def sweep_cmd(a) -> int:
    from .schema import ExperimentError
    from .sweep import parse_param, sweep
    try:
        params = [parse_param(p) for p in a.param]
        name = os.path.splitext(os.path.basename(a.file))[0]
        out = a.out or os.path.join("runs", f"sweep-{name}-{time.strftime('%Y%m%d-%H%M%S')}")
        from taurus.pidfiles import pidfile
        with pidfile("run"):
            man = sweep(a.file, params, out, a.repeat, a.workers, a.scheduler,
                        progress=False if a.no_progress else None)
    except ExperimentError as e:
        print(f"taurus sweep: {e}", file=sys.stderr)
        return 2
    except OSError as e:            # e.g. the scheduler cannot be reached
        print(f"taurus sweep: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0 if all(p["status"] == "done" for p in man["points"]) else 1


def report_cmd(a) -> int:
    from .report import table
    from . import sweep
    missing = [d for d in a.runs
               if not (sweep.is_sweep(d) or os.path.exists(os.path.join(d, "summary.json")))]
    if missing:
        print(f"taurus report: no summary.json in {', '.join(missing)}", file=sys.stderr)
        return 2
    if a.html:
        from .html_report import write
        print(f"report: {write(a.runs, a.output)}")
        return 0
    sweeps = [d for d in a.runs if sweep.is_sweep(d)]
    for d in sweeps:
        print(f"{d}:\n{sweep.table(sweep.load(d))}")
    a.runs = [d for d in a.runs if d not in sweeps]
    if a.runs:
        print(table(a.runs))
    return 0
