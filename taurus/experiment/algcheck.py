"""An experiment's algorithms checked before its run: each ``[cc]`` table (the
file's, each host's, each traffic group's) loads its algorithm and receiver,
checks their handlers and parameters (cc_algorithms/validate.py) and its
mode against ``jit``.  ``problems`` lists every mistake, one line each,
naming the file and key; ``check`` raises the first; ``compile_check``
compiles what will run compiled, so a typing error in a handler stops the
run before it makes anything.
"""
from __future__ import annotations

from taurus.cc_algorithms import registry
from taurus.cc_algorithms.params import ConfigError
from taurus.cc_algorithms.validate import (compile_error, handler_errors, is_compile_error,
                                           param_errors)

from .schema import Experiment, ExperimentError


def _sites(x: Experiment):
    """(key of its table, algorithm, its key, params, their key, mode, jit) of
    each place an algorithm is configured."""
    tables = [("cc", x.cc)] + [(f"cc.hosts.{h}", c) for h, c in x.cc_hosts.items()]
    for k, c in tables:
        yield k, c.algorithm, f"{k}.algorithm", c.params, f"{k}.params", c.mode, c.jit
    for tr in x.traffic:
        if not {"algorithm", "params", "mode"} & set(tr.cc):
            continue
        for h in tr.src:
            hk = f"cc.hosts.{h}" if h in x.cc_hosts else "cc"
            c = x.host_cc(h)
            own = {w: f"{tr.key}.cc.{w}" if w in tr.cc else f"{hk}.{w}"
                   for w in ("algorithm", "params")}
            yield (tr.key, tr.cc.get("algorithm", c.algorithm), own["algorithm"],
                   tr.cc.get("params", c.params), own["params"], tr.cc.get("mode", c.mode), c.jit)


def classes(x: Experiment) -> list[tuple[type, str, bool]]:
    """(class, mode, jit) of every algorithm the run will use (valid files only)."""
    out = []
    for _, alg, _, _, _, mode, jit in _sites(x):
        if mode != "static":
            cls = registry.lookup(alg, role="sender")
            if (cls, mode, jit) not in out:
                out.append((cls, mode, jit))
    for _, c in [("cc", x.cc)] + list(x.cc_hosts.items()):
        if c.receiver:
            cls = registry.lookup(c.receiver, role="receiver")
            if (cls, "native", True) not in out:
                out.append((cls, "native", True))
    return out


def problems(x: Experiment) -> list[ExperimentError]:
    """Every algorithm mistake of ``x``, once each, in the file's order."""
    out, seen = [], set()

    def add(file, key, msg):
        e = ExperimentError(file, key, msg)
        if str(e) not in seen:
            seen.add(str(e))
            out.append(e)

    def algorithm(name, role, key, values, vkey):
        try:
            cls = registry.lookup(name, role=role)
        except ConfigError as e:
            add(x.source, key, e.message if e.file is None else str(e))
            return
        for line in handler_errors(cls):
            add(None, None, line)
        for e in param_errors(cls, values, vkey):
            add(x.source, e.key, e.message)

    for site, alg, akey, params, pkey, mode, jit in _sites(x):
        if mode == "static":
            continue
        algorithm(alg, "sender", akey, params, pkey)
        if mode == "native" and not jit and site.startswith("cc") \
                and not (site != "cc" and x.cc.jit is False and x.cc.mode != "native"):
            add(x.source, f"{site}.jit", "jit = false runs the handlers as plain Python in the "
                                         "agent: it needs mode agent or per-event, not native")
    for site, c in [("cc", x.cc)] + [(f"cc.hosts.{h}", c) for h, c in x.cc_hosts.items()]:
        if c.receiver:
            algorithm(c.receiver, "receiver", f"{site}.receiver", c.receiver_params,
                      f"{site}.receiver_params")
    return out


def check(x: Experiment) -> None:
    """Raise the first of ``problems(x)``."""
    errs = problems(x)
    if errs:
        raise errs[0]


def compile_check(x: Experiment) -> None:
    """Compile (or load from the cache) the algorithms that run compiled; a
    typing error in a handler is raised as one line naming it."""
    from taurus.cc_algorithms.runtime import Runtime
    for cls, mode, jit in classes(x):
        if jit or mode == "native":
            try:
                Runtime(cls, jit=True)
            except Exception as e:
                if is_compile_error(e):
                    raise ExperimentError(None, None, compile_error(e, cls)) from None
                # the compiler failing otherwise (it raises KeyError on some typos)
                raise ExperimentError(None, None, f"algorithm {cls.name!r} does not compile: "
                                                  f"{type(e).__name__}: {e}") from None
