"""`taurus algorithms [--json] [--events] [NAME [--params]]`: what can be run,
what each algorithm binds (as configured by default; an event bound only
for some parameter values is marked with its condition) and takes.  NAME
is checked as a run would check it (cc_algorithms/validate.py); ``--params``
prints its parameters as a TOML table to paste into an experiment file."""
import dataclasses
import json

from taurus.cc_algorithms import registry
from taurus.cc_algorithms.params import ConfigError
from taurus.cc_algorithms.validate import handler_errors
from taurus.datapath.ccevents import describe as describe_events


def add_algorithms_parser(sub) -> None:
    p = sub.add_parser("algorithms")
    p.add_argument("name", nargs="?", help="one algorithm (name, entry point or module:Class)")
    p.add_argument("--json", action="store_true", help="machine-readable")
    p.add_argument("--events", action="store_true", help="the events and their fields instead")
    p.add_argument("--params", action="store_true",
                   help="NAME's parameters with units and defaults, as TOML to paste")
    p.set_defaults(func=cmd_algorithms)


def algorithms(names=None) -> list:
    """describe() of each algorithm; one that fails to load gets ``error``.
    Handlers are checked (validate.py) for every algorithm named and for
    every one a listing finds outside the package: the tests check the
    shipped ones, and reading their sources is most of a listing's time."""
    out = []
    for name in names or registry.available():
        try:
            cls = registry.lookup(name)
            checked = bool(names) or name not in registry.BUILTINS
            errs = handler_errors(cls) if checked else []
            if errs:
                raise ConfigError("; ".join(errs))
            d = cls.describe()
            d["name"] = name if name in registry.BUILTINS or ":" in name else d["name"]
            d["bound"], d["conditions"] = bindings(cls)
        except ConfigError as e:
            d = {"name": name, "error": str(e)}
        out.append(d)
    return out


def _variants(P):
    """(field, value) pairs that differ from the defaults, one field at a time."""
    for f in dataclasses.fields(P):
        if not f.init:
            continue                    # derived: no config sets it
        v = f.default
        if isinstance(v, bool):
            yield f.name, not v
        elif isinstance(v, (int, float)):
            yield f.name, type(v)(0) if v else type(v)(1)


def bindings(cls) -> tuple[list, dict]:
    """(events bound with the default parameters, {event: condition}) where
    the condition says which parameter value binds it ("pace = true") or
    keeps it ("only with base_rtt = 0.0")."""
    P = cls.Params
    try:
        base = [str(e).upper() for e in cls.bindings(P())]
    except Exception:
        return [str(e).upper() for e in cls.binds], {}
    cond = {}
    for k, v in _variants(P):
        try:
            other = [str(e).upper() for e in cls.bindings(dataclasses.replace(P(), **{k: v}))]
        except Exception:
            continue
        for e in other:
            if e not in base:
                cond.setdefault(e, f"with {k} = {_toml(v)}")
        for e in base:
            if e not in other:
                cond.setdefault(e, f"only with {k} = {_toml(getattr(P(), k))}")
    for e in cls.binds:
        e = str(e).upper()
        if e not in base and e not in cond:
            cond[e] = "not bound with these parameters"
    return base, cond


def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


def params_toml(a: dict) -> str:
    """An algorithm's parameters as a [cc.params] table: defaults, units, meanings."""
    lines = [f"# {a['name']}: its parameters and their defaults "
             f"(or one at a time: --set cc.params.NAME=VALUE)", "[cc.params]"]
    rows = [(f"{p['name']} = {_toml(p['default'])}",
             ": ".join(x for x in (p["unit"], p["meaning"]) if x)) for p in a["params"]
            if not p["derived"]]
    w = max((len(r[0]) for r in rows), default=0)
    lines += [f"{r[0]:<{w}}  # {r[1]}" if r[1] else r[0] for r in rows]
    return "\n".join(lines)


def _text(algs) -> str:
    lines = []
    for a in algs:
        if "error" in a:
            lines.append(f"{a['name']}: cannot load: {a['error']}")
            continue
        doc = a["doc"].splitlines()[0] if a["doc"] else ""
        lines.append(f"{a['name']} ({a['role']}): {doc}")
        bound, cond = a.get("bound", a["binds"]), a.get("conditions", {})
        binds = [e + (f" ({cond[e]})" if e in cond else "") for e in bound]
        binds += [f"{e} ({c})" for e, c in cond.items() if e not in bound]
        lines.append(f"  binds: {', '.join(binds) or '-'}"
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
    if args.params and not args.name:
        print("taurus algorithms: --params needs an algorithm NAME")
        return 2
    algs = algorithms([args.name] if args.name else None)
    if args.params:
        if "error" in algs[0]:
            print(f"{algs[0]['name']}: cannot load: {algs[0]['error']}")
            return 1
        print(params_toml(algs[0]))
        return 0
    print(json.dumps(algs, indent=1, default=str) if args.json else _text(algs))
    return 1 if args.name and "error" in algs[0] else 0
