"""`taurus topo up|down|show FILE` and `taurus topo clean`.

Wire with `add_topo_parser(subparsers)`; each command sets `args.func`,
which returns the process exit code.  FILE may also name a shipped
topology ("line", "dumbbell", "two_hosts") or a generated one
("fat_tree:k=4,oversubscription=2", "leaf_spine:leaves=4,spines=2,hosts_per_leaf=8").
"""
import argparse
import json
import os
import sys

from taurus.tools import netns, topology as topo


def _path(arg: str) -> str:
    if not os.path.exists(arg) and os.path.exists(topo.builtin(arg)):
        return topo.builtin(arg)
    return arg


def load(arg: str, prefix: str) -> topo.Topology:
    """A topology file, a shipped name, or a generator spec
    (``fat_tree:k=4,oversubscription=2``, ``leaf_spine:leaves=4,spines=2``)."""
    if not os.path.exists(arg):
        t = topo.from_spec(arg, prefix=prefix)
        if t is not None:
            return t
    return topo.load(_path(arg), prefix=prefix)


def load_up(arg: str, prefix: str, who: str):
    """The topology `arg` (file or shipped name) if it is up, else None after
    telling the user why (a bad file or spec) or how to bring it up."""
    try:
        t = load(arg, prefix)
    except topo.TopologyError as e:
        print(f"taurus {who}: error: {e}", file=sys.stderr)
        return None
    if not t.is_up():
        print(f"taurus {who}: topology {t.name} is not up (taurus topo up {arg})", file=sys.stderr)
        return None
    return t


def _guard(fn):
    def run(args) -> int:
        try:
            return fn(args)
        except topo.TopologyError as e:
            print(f"taurus topo: error: {e}", file=sys.stderr)
            return 2
        except PermissionError as e:
            print(f"taurus topo: error: {e} (needs root)", file=sys.stderr)
            return 1
    return run


@_guard
def cmd_up(args) -> int:
    t = load(args.file, args.prefix).up()
    print(f"topology {t.name} is up: {len(t.hosts)} hosts, {len(t.switches)} switches, "
          f"{len(t.links)} links")
    for h in t.hosts:
        print(f"  {h:8} {t.ip_of(h):15} ns {t.ns_of(h)}")
    for s in t.switches:
        print(f"  {s:8} {'':15} ns {t.ns_of(s)}")
    return 0


@_guard
def cmd_down(args) -> int:
    t = load(args.file, args.prefix)
    removed = t.down()
    for r in removed:
        print(f"removed {r}")
    if not removed:
        print(f"topology {t.name} was not up")
    return 0


@_guard
def cmd_show(args) -> int:
    t = load(args.file, args.prefix)
    d = t.describe()
    if args.json:
        print(json.dumps(d, indent=2))
        return 0
    print(f"topology {d['name']} ({'up' if t.is_up() else 'down'})")
    for n in d["nodes"]:
        print(f"  {n['kind']:6} {n['name']:8} ns {n['ns']:28} {n['ip'] or ''}")
        for i in n["ifaces"]:
            print(f"         {i['name']:15} {i['mac']}  -> {i['peer']}")
        for ip, ifs in n.get("routes", {}).items():
            print(f"         route {ip:15} via {', '.join(ifs)}")
    for lk in d["links"]:
        print(f"  link {lk['endpoints'][0]} -- {lk['endpoints'][1]}  rate={lk['rate_bps']} bit/s "
              f"delay={lk['delay_ns']} ns buffer={lk['buffer_bytes']} B mtu={lk['mtu']}")
    return 0


@_guard
def cmd_clean(args) -> int:
    removed, left = topo.clean(prefix=args.prefix, pid_dir=args.pid_dir)
    for r in removed:
        print(f"removed {r}")
    for x in left:
        print(f"could not remove {x}", file=sys.stderr)
    if not removed and not left:
        print("nothing to clean")
    return 1 if left else 0


def add_topo_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("topo")
    sub = p.add_subparsers(dest="topo_cmd", required=True)

    def common(q):
        q.add_argument("--prefix", default=netns.PREFIX,
                       help="namespace name prefix (default %(default)s)")
        return q
    for name, fn, hlp in (("up", cmd_up, "build a topology"),
                          ("down", cmd_down, "remove a topology"),
                          ("show", cmd_show, "print nodes, interfaces, routes")):
        q = common(sub.add_parser(name, help=hlp))
        q.add_argument("file", help="topology TOML file, a shipped name (line, dumbbell, two_hosts) "
                                        "or a generator (fat_tree:k=4, leaf_spine:leaves=4,spines=2)")
        q.set_defaults(func=fn)
        if name == "show":
            q.add_argument("--json", action="store_true")
    q = common(sub.add_parser("clean", help="remove everything Taurus created (also after a crash)"))
    q.add_argument("--pid-dir", default=topo.PID_DIR)
    q.set_defaults(func=cmd_clean)
    return p


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="taurus")
    add_topo_parser(ap.add_subparsers(dest="cmd", required=True))
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
