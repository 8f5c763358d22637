"""The `taurus reproduce` command line."""
import os
import sys

from . import load, run


def add_reproduce_parser(sub) -> None:
    p = sub.add_parser("reproduce", help="run a named scenario: a paper's figure beside ours")
    p.add_argument("name", nargs="?", help="the scenario (--list shows them)")
    p.add_argument("--list", action="store_true", help="list the scenarios")
    p.add_argument("--out", help="output directory (default: runs/reproduce-NAME)")
    p.add_argument("--quick", action="store_true", help="shorter runs")
    p.add_argument("--mode", default="native", choices=["native", "agent", "per-event"],
                   help="where the algorithms decide (default: native)")
    p.set_defaults(func=reproduce_cmd)


def reproduce_cmd(a) -> int:
    if a.list or not a.name:
        w = max(map(len, load()))
        for s in load().values():
            print(f"{s.name:<{w}}  {s.about}")
        return 0 if a.list else 2
    if a.name not in load():
        print(f"taurus reproduce: unknown scenario {a.name!r}; known: "
              f"{', '.join(load())}", file=sys.stderr)
        return 2
    from taurus.pidfiles import pidfile
    try:
        with pidfile("run"):        # as `taurus run`: `taurus topo clean` finds us after a SIGKILL
            run(a.name, a.out or os.path.join("runs", f"reproduce-{a.name}"), a.quick, a.mode)
    except Exception as e:
        print(f"taurus reproduce: {a.name} failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0
