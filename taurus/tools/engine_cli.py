"""`taurus engine run TOPO` and `taurus engine stats [NAME]`."""
import json
import sys

from taurus.datapath.engine import Engine, attach_stats
from taurus.datapath.shm import list_segments
from taurus.pidfiles import pidfile
from taurus.tools.fabric import attach_switches, engine_limits
from taurus.tools.topo_cli import load_up


def add_engine_parser(sub) -> None:
    p = sub.add_parser("engine")
    es = p.add_subparsers(dest="engine_cmd", required=True)
    r = es.add_parser("run", help="serve the switches of a running topology")
    r.add_argument("topo", help="topology file or shipped name (must be up)")
    r.add_argument("--port-kind", default="auto", choices=["auto", "af_xdp", "af_packet"])
    r.add_argument("--duration", type=float, default=0.0, help="seconds (0: until SIGINT/SIGTERM)")
    r.add_argument("--name", default=None, help="shared-memory name (taurus-...)")
    r.add_argument("--prefix", default="taurus-")
    r.set_defaults(func=cmd_run)
    s = es.add_parser("stats", help="counters of a running engine")
    s.add_argument("name", nargs="?", help="engine segment name (default: every engine)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_stats)


def cmd_run(args) -> int:
    t = load_up(args.topo, args.prefix, "engine")
    if t is None:
        return 2
    # room for every port and switch of t, and a pool for what its ports lend
    with pidfile("engine", prefix=args.prefix), Engine(clock="wall", name=args.name, **engine_limits(t)) as eng:
        attach_switches(eng, t, args.port_kind)
        print(f"engine {eng.name}: {len(eng.counters())} ports", flush=True)
        if args.duration > 0:
            eng.run_for(int(args.duration * 1e9))
        else:
            eng.run_forever()
        print(json.dumps(eng.counters()), flush=True)
    return 0


def cmd_stats(args) -> int:
    names = [args.name] if args.name else [n for n in list_segments() if n.startswith("taurus-eng")]
    out = {}
    for n in names:
        try:
            out[n] = attach_stats(n)
        except ValueError as e:
            if args.name:       # listing every engine skips their other segments (-cc, -cap, ...)
                print(f"taurus engine: {n}: {e}", file=sys.stderr)
        except FileNotFoundError as e:
            print(f"taurus engine: {n}: {e}", file=sys.stderr)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for n, st in out.items():
            print(f"{n} (pid {st['pid']})")
            for port, c in st["ports"].items():
                print(f"  {port:12} {c['kind']:9} rx {c['rx_pkts']:>10} tx {c['tx_pkts']:>10} "
                      f"drops {c['tx_drop'] + c['rx_nobuf']:>6} err {c['rx_err'] + c['tx_err']}")
    return 0
