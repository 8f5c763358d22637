"""`taurus algorithms [--json] [--events] [NAME]`: what can be run, and what
each algorithm binds and takes."""
import json

from taurus.cc_algorithms import registry
from taurus.cc_algorithms.params import ConfigError
from taurus.datapath.ccevents import describe as describe_events


def add_algorithms_parser(sub) -> None:
    p = sub.add_parser("algorithms", help="list the registered congestion-control algorithms")
    p.add_argument("name", nargs="?", help="one algorithm (name, entry point or module:Class)")
    p.add_argument("--json", action="store_true", help="machine-readable")
    p.add_argument("--events", action="store_true", help="the events and their fields instead")
    p.set_defaults(func=cmd_algorithms)


def algorithms(names=None) -> list:
    """describe() of each algorithm; one that fails to load gets ``error``."""
    out = []
    for name in names or registry.available():
        try:
            d = registry.lookup(name).describe()
            d["name"] = name if name in registry.BUILTINS or ":" in name else d["name"]
        except ConfigError as e:
            d = {"name": name, "error": str(e)}
        out.append(d)
    return out


def _text(algs) -> str:
    lines = []
    for a in algs:
        if "error" in a:
            lines.append(f"{a['name']}: cannot load: {a['error']}")
            continue
        doc = a["doc"].splitlines()[0] if a["doc"] else ""
        lines.append(f"{a['name']} ({a['role']}): {doc}")
        lines.append(f"  binds: {', '.join(a['binds']) or '-'}"
                     + (f"; timer: {a['timer']}" if a["timer"] is not None else ""))
        for p in a["params"]:
            unit = f" {p['unit']}" if p["unit"] else ""
            if p["derived"]:
                lines.append(f"  ({p['name']}{unit}: derived, {p['meaning']})")
            else:
                lines.append(f"  {p['name']} = {p['default']!r}{unit}  {p['meaning']}")
    return "\n".join(lines)


def _events_text(evs) -> str:
    lines = []
    for e in evs:
        lines.append(f"{e['name']} ({e['class']}, {e['role']})")
        for f in e["fields"]:
            lines.append(f"  {f['name']:<10} V{f['word']}  {f['meaning']}")
    return "\n".join(lines)


def cmd_algorithms(args) -> int:
    if args.events:
        evs = describe_events()
        print(json.dumps(evs, indent=1) if args.json else _events_text(evs))
        return 0
    algs = algorithms([args.name] if args.name else None)
    print(json.dumps(algs, indent=1, default=str) if args.json else _text(algs))
    return 1 if args.name and "error" in algs[0] else 0
