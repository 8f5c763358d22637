"""The `taurus reproduce` command line."""
import os
import sys
import time

from . import load, run


def add_reproduce_parser(sub) -> None:
    p = sub.add_parser("reproduce")
    p.add_argument("name", nargs="?", help="the scenario (--list shows them)")
    p.add_argument("--list", action="store_true", help="list the scenarios")
    p.add_argument("--out", help="output directory (default: runs/reproduce-NAME, "
                                 "runs/reproduce-all with --all)")
    p.add_argument("--quick", action="store_true", help="shorter runs")
    p.add_argument("--mode", default="native", choices=["native", "agent", "per-event"],
                   help="where the algorithms decide (default: native)")
    p.add_argument("--all", action="store_true",
                   help="every scenario in full, each in a process of its own")
    p.add_argument("--only", help="with --all: these scenarios (comma-separated)")
    p.add_argument("--check", action="store_true",
                   help="with --all: compare each with the results ledger; exit 1 on any "
                        "crash, drift or scenario missing from it")
    p.add_argument("--record", action="store_true",
                   help="with --all: write the figures measured into the ledger (and "
                        "docs/RESULTS.md); say why in the commit")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, help="with --all: parallel processes "
                                               "(default: the CPU count)")
    g.add_argument("--scheduler", help="with --all: a Dask scheduler (tcp://HOST:PORT)")
    p.add_argument("--results", action="store_true",
                   help="print docs/RESULTS.md as made from the ledger")
    p.set_defaults(func=reproduce_cmd)


def _err(msg: str) -> int:
    print(f"taurus reproduce: {msg}", file=sys.stderr)
    return 2


def reproduce_cmd(a) -> int:
    if a.results:
        from .ledger import load as ledger, render
        sys.stdout.write(render(ledger(), load()))
        return 0
    if a.all:
        return _all(a)
    if a.check or a.record or a.only or a.workers or a.scheduler:
        return _err("--check, --record, --only, --workers and --scheduler go with --all")
    if a.list or not a.name:
        w = max(map(len, load()))
        for s in load().values():
            print(f"{s.name:<{w}}  {s.about}")
        return 0 if a.list else 2
    if a.name not in load():
        return _err(f"unknown scenario {a.name!r}; known: {', '.join(load())}")
    from taurus.pidfiles import pidfile
    try:
        with pidfile("run"):        # as `taurus run`: `taurus topo clean` finds us after a SIGKILL
            run(a.name, a.out or os.path.join("runs", f"reproduce-{a.name}"), a.quick, a.mode)
    except Exception as e:
        print(f"taurus reproduce: {a.name} failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


def _all(a) -> int:
    from . import ledger as L
    from .suite import CRASH, OK, run_all, summary
    if a.name or a.quick:
        return _err("--all runs every scenario in full: no NAME, no --quick (--only A,B)")
    if (a.check or a.record) and a.mode != "native":
        return _err("the ledger holds native-mode runs: --check and --record need "
                    "--mode native")
    names = list(load())
    if a.only:
        names = [n.strip() for n in a.only.split(",") if n.strip()]
        bad = [n for n in names if n not in load()]
        if bad:
            return _err(f"unknown scenario(s) {', '.join(bad)}; known: {', '.join(load())}")
    book = L.load()
    t0 = time.monotonic()
    from taurus.pidfiles import pidfile
    with pidfile("run"):
        res = run_all(names, a.out or os.path.join("runs", "reproduce-all"), a.workers,
                      a.scheduler, a.mode)
    print(summary(res, time.monotonic() - t0))
    stale = [n for n in book if n not in load()]
    if stale:
        print(f"ledger entries with no scenario: {', '.join(stale)}")
    if a.record:
        done = L.record({n: r for n, r in res.items() if r["status"] != CRASH})
        with open(L.RESULTS, "w") as f:
            f.write(L.render(L.load(), load()))
        print(f"recorded {len(done)} scenario(s) in {L.LEDGER}; {L.RESULTS} made anew")
    if not a.check:
        return 1 if any(r["status"] == CRASH for r in res.values()) else 0
    return 0 if all(r["status"] == OK for r in res.values()) and not stale else 1
