"""`taurus agent run --nic NAME --config FILE` and `taurus agent stats NAME`.

Also runnable alone: ``python -m taurus.agent.cli run --nic NAME``.
Exit status of ``run``: 0 stopped by SIGINT/SIGTERM, 1 error, 2 bad
configuration, 3 the engine is gone (datapath/watchdog.py).
"""
import argparse
import json
import logging
import sys

from taurus.cc_algorithms.params import ConfigError


def _run(args) -> int:
    from taurus.pidfiles import pidfile

    from .agent import STATS_DIR, Agent
    from .config import load
    try:
        cfg = load(args.config)
    except ConfigError as e:
        print(f"taurus agent: {e}", file=sys.stderr)
        return 2
    try:
        agent = Agent(args.nic, cfg, stats_dir=args.stats_dir or STATS_DIR, slot=args.slot)
    except FileNotFoundError as e:
        print(f"taurus agent: {args.nic!r} has no CC segment ({e.filename}); "
              "is the engine running?", file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(f"taurus agent: {e}", file=sys.stderr)
        return 1
    with pidfile("agent", args.pid_dir) if args.pid_dir else pidfile("agent"):
        rc = agent.run()
    if agent.gone is not None:
        from taurus.datapath.watchdog import exit_now
        print(f"taurus agent: {agent.gone}; exiting", file=sys.stderr)
        exit_now(rc)            # torn down: leave within the second (watchdog.exit_now)
    return rc


def _stats(args) -> int:
    import os

    from taurus.datapath import ccshm as C

    from .agent import STATS_DIR, stats_path
    try:
        cc = C.CcShm.attach(args.name, nic=args.slot)
    except FileNotFoundError:
        print(f"taurus agent: NIC {args.name!r} has no CC segment", file=sys.stderr)
        return 1
    ctl = {n: int(cc.ctl[getattr(C, n)]) for n in dir(C) if n.startswith("CTL_")}
    mine = cc.owner == cc.nic
    active = int((((cc.flags & C.FL_CC_ACTIVE) != 0) & mine).sum())
    from taurus.datapath.shmring import BELL, SLEEP, WAKES
    r = cc.ring.ring
    out = {"ctl": ctl, "ring_pending": cc.ring.pending(), "ring_capacity": cc.ring.capacity,
           "active_flows": active,
           "doorbell": {"rung": int(r.prod[BELL]), "engine_wakes": int(r.prod[WAKES]),
                        "agent_waiting": bool(r.cons[SLEEP])}}
    path = stats_path(args.name, args.stats_dir or STATS_DIR, args.slot)
    if os.path.exists(path):
        with open(path) as f:
            out["agent"] = json.load(f)
    cc.close()
    print(json.dumps(out, indent=2))
    return 0


def add_agent_parser(subparsers) -> None:
    p = subparsers.add_parser("agent")
    sub = p.add_subparsers(dest="agent_cmd", required=True)
    r = sub.add_parser("run", help="run the agent of a NIC until SIGINT/SIGTERM")
    r.add_argument("--nic", required=True, help="contract segment: an engine name + \"-cc\" (taurus-eng-...-cc), or a bare name for taurus-cc-<name>")
    r.add_argument("--slot", type=int, default=0, help="the NIC's slot in the engine's segment")
    r.add_argument("--config", help="agent TOML config (default: DCTCP with defaults)")
    r.add_argument("--pid-dir", help=argparse.SUPPRESS)
    r.add_argument("--stats-dir", default=None, help=argparse.SUPPRESS)
    r.set_defaults(func=_run)
    s = sub.add_parser("stats", help="print a NIC's CC control block and agent counters")
    s.add_argument("name")
    s.add_argument("--slot", type=int, default=0, help="the NIC's slot in the engine's segment")
    s.add_argument("--stats-dir", default=None, help=argparse.SUPPRESS)
    s.set_defaults(func=_stats)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="taurus")
    ap.add_argument("-v", "--verbose", action="store_true")
    sub = ap.add_subparsers(dest="cmd", required=True)
    add_agent_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] != ["agent"] and any(a in ("run", "stats") for a in argv[:2]):
        argv.insert(1 if argv[:1] in (["-v"], ["--verbose"]) else 0, "agent")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(name)s: %(message)s")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
