"""An algorithm checked before anything runs: it loads, its handlers take the
arguments their events pass, and the parameters a config gives it exist,
have the right types and pass its ``check()``.  By introspection: nothing
is compiled here, so ``taurus run --check`` and ``taurus algorithms NAME``
answer at once.  Each problem is one line, in the terms of the file that
has it:

    exp.toml: cc.params.betta: unknown parameter of ecn-aimd (known: beta, init_cwnd_pkts)
    ecn_aimd.py:27: on_ack(s, p, d): expected on_ack(s, p, ev, d)
    ecn_aimd.py:33: in aimd_on_ack: ev.ecn_byte: an ACK event has no 'ecn_byte' (fields: ...)

``compile_error`` reduces a compiler's typing error in a handler (pages of
text, pointing at runtime.py) to the handler's file, line and the reason.
"""
from __future__ import annotations

import dataclasses
import inspect
import linecache
import re
import typing

from taurus.datapath.ccevents import EVENT_IDS, EVENT_NAMES

from .algorithm import FRAMEWORK_PARAMS
from .params import ConfigError, _coerce, build
from .registry import shown

INIT_ARGS = ("s", "p", "d")
HANDLER_ARGS = ("s", "p", "ev", "d")


# ---- handlers -------------------------------------------------------------------
def where(fn) -> str:
    """FILE:LINE of ``fn``'s ``def`` (after its decorators)."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return repr(fn)
    line = code.co_firstlineno
    for k in range(line, line + 20):          # past @kernel and other decorators
        if linecache.getline(code.co_filename, k).lstrip().startswith(("def ", "async def ")):
            line = k
            break
    return f"{shown(code.co_filename)}:{line}"


def _takes(fn, n: int) -> bool:
    """Whether ``fn`` can be called with exactly n positional arguments."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True                            # not introspectable: the compiler will tell
    pos = [q for q in sig.parameters.values()
           if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)]
    required = [q for q in sig.parameters.values() if q.default is q.empty
                and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD)]
    var = any(q.kind == q.VAR_POSITIONAL for q in sig.parameters.values())
    return len(required) <= n and (len(pos) >= n or var) and all(q in pos for q in required)


def _shape(fn) -> str:
    try:
        return ", ".join(str(q) for q in inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return "?"


def handler_errors(cls) -> list[str]:
    """One line per handler that does not fit its call: ``init(s, p, d)``,
    ``on_<event>(s, p, ev, d)`` for an event that exists; when all fit, one
    per field a handler names that its record lacks (field_errors)."""
    out = []
    for attr in sorted(dir(cls)):
        if attr != "init" and not attr.startswith("on_"):
            continue
        fn = getattr(cls, attr, None)
        if fn is None:
            continue
        if not callable(fn):
            out.append(f"{cls.__module__}.{cls.__qualname__}.{attr}: {fn!r} is not a function")
            continue
        if attr != "init" and attr[3:].upper() not in EVENT_IDS:
            out.append(f"{where(fn)}: {attr}: no event {attr[3:].upper()} "
                       f"(handlers: on_<event>, events: {', '.join(EVENT_NAMES)})")
            continue
        args = INIT_ARGS if attr == "init" else HANDLER_ARGS
        if not _takes(fn, len(args)):
            out.append(f"{where(fn)}: {attr}({_shape(fn)}): expected {attr}({', '.join(args)})")
    return out or field_errors(cls)


# ---- record fields ------------------------------------------------------------------
def _fields(cls) -> dict:
    """The fields each record a handler gets has: s, p, d, and ev per event."""
    from .algorithm import DECISION_DTYPE, state_field
    from taurus.datapath.ccevents import EVENTS, HEADER
    head = [h if isinstance(h, str) else h[0] for h in HEADER]
    return {"s": [state_field(f)[0] for f in cls.state],
            "p": [f.name for f in dataclasses.fields(cls.Params)] + list(FRAMEWORK_PARAMS),
            "d": list(DECISION_DTYPE.names),
            "ev": {e[0]: head + [f[0] for f in e[3]] for e in EVENTS}}


def _roles(fn, roles) -> dict:
    """{argument name: role} of fn's first positional arguments."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}
    return dict(zip(names, roles))


def field_errors(cls) -> list[str]:
    """One line per ``s.x``, ``p.x``, ``d.x`` or ``ev.x`` in a handler (or a
    helper of its module it passes them to) that its record does not have;
    the compiler would stop on it (or, for an event field of another event,
    read another event's word)."""
    import ast
    import sys
    fields = _fields(cls)
    out, seen = [], set()

    def visit(fn, roles: dict, event: str | None):
        fn = inspect.unwrap(fn)
        key = (fn, tuple(sorted(roles.items())), event)
        if key in seen or not inspect.isfunction(fn):
            return
        seen.add(key)
        try:
            lines, first = inspect.getsourcelines(fn)
            tree = ast.parse(inspect.cleandoc("\n" + "".join(lines)) if lines[0][:1].isspace()
                             else "".join(lines))
        except (OSError, TypeError, SyntaxError):
            return
        path = shown(fn.__code__.co_filename)
        mod = sys.modules.get(fn.__module__)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in roles:
                role = roles[node.value.id]
                known = fields[role] if role != "ev" else \
                    (fields["ev"].get(event) if event else None)
                if known is None:
                    continue
                if node.attr not in known:
                    what = {"s": "the state", "p": "the parameters", "d": "the decision",
                            "ev": f"an {event} event"}[role]
                    out.append(f"{path}:{first + node.lineno - 1}: in {fn.__name__}: "
                               f"{node.value.id}.{node.attr}: {what} has no {node.attr!r} "
                               f"(fields: {', '.join(known)})")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and mod:
                callee = getattr(mod, node.func.id, None)
                if inspect.isfunction(callee) and callee.__module__ == fn.__module__:
                    args = [a.id if isinstance(a, ast.Name) else None for a in node.args]
                    sub = {k: roles[a] for k, a in zip(_roles(callee, [None] * len(args)), args)
                           if a in roles}
                    if sub:
                        visit(callee, sub, event)
    for attr in sorted(dir(cls)):
        if attr != "init" and not attr.startswith("on_"):
            continue
        fn = getattr(cls, attr, None)
        event = attr[3:].upper() if attr != "init" else None
        if not callable(fn) or (event is not None and event not in EVENT_IDS):
            continue
        visit(fn, _roles(fn, INIT_ARGS if event is None else HANDLER_ARGS), event)
    return list(dict.fromkeys(out))


# ---- parameters -------------------------------------------------------------------
def param_errors(cls, values: dict | None, key: str) -> list[ConfigError]:
    """Every unknown or mistyped key of ``values`` (the config table at
    ``key``, e.g. "cc.params"), each naming ``key.name``; when there are
    none, the first failed ``check()``."""
    P = cls.Params
    names = [f.name for f in dataclasses.fields(P) if f.init]
    hints = typing.get_type_hints(P)
    errs = []
    for k, v in (values or {}).items():
        if k in FRAMEWORK_PARAMS:
            errs.append(ConfigError(f"set by the framework, not a parameter of {cls.name} "
                                    f"(mss: cc.mss; line_rate: the host's link)", key=f"{key}.{k}"))
        elif k not in names:
            errs.append(ConfigError(f"unknown parameter of {cls.name} "
                                    f"(known: {', '.join(names) or 'none'})", key=f"{key}.{k}"))
        else:
            try:
                _coerce(v, hints[k], f"{key}.{k}")
            except ConfigError as e:
                errs.append(e)
    if not errs:
        try:
            build(P, values, key)
        except ConfigError as e:
            errs.append(e)
    return errs


# ---- compiler errors ------------------------------------------------------------------
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FILE = re.compile(r'File "([^"]+)", line (\d+):\n(.*)')


def is_compile_error(e: BaseException) -> bool:
    """A compiler error (by class name: this module compiles nothing)."""
    return any(c.__name__ == "NumbaError" for c in type(e).__mro__)


def compile_error(e: BaseException, cls=None) -> str:
    """A typing error in a handler as one line: FILE:LINE: in FUNCTION: reason.
    The reason is the innermost one (a kernel's error is nested in its
    caller's); the place is the innermost frame in a file of neither the
    compiler nor the framework's runtime, else the innermost kernel the
    message names, at the line naming what the reason quotes."""
    text = _ANSI.sub("", str(e))
    blocks = text.split("raised a specific error:")
    reason = ""
    for ln in blocks[-1].splitlines():
        ln = ln.strip()
        if ln and not ln.startswith(("Failed in", "TypingError: Failed in", "During:", "File ",
                                     "- Resolution", "^", "<source", "Rewrite", "[1]", "[0]",
                                     "raised from", "def ", "There are", "- Of which",
                                     "Overload", "With argument", ">>>")):
            reason = ln
            break
    if len(reason) > 240:
        reason = reason[:237] + "..."
    loc = ""
    for path, line, src in reversed(_FILE.findall(text)):
        if "site-packages" in path or path.endswith(("runtime.py", "algorithm.py")):
            continue
        fn = re.match(r"\s*def (\w+)", src)
        loc = f"{shown(path)}:{line}: " + (f"in {fn.group(1)}: " if fn else "")
        break
    names = re.findall(r"Function\(<function (\w+) at", text)
    if not loc and names and cls is not None:
        fn = _function_named(cls, names[-1])
        if fn is not None:
            loc = f"{_line_quoting(fn, reason)}: in {names[-1]}: "
    return f"{loc}{reason or type(e).__name__}"


def _function_named(cls, name: str):
    """A handler of ``cls`` or a function of its module called ``name``."""
    import sys
    for attr in dir(cls):
        fn = getattr(cls, attr, None)
        if (attr == "init" or attr.startswith("on_")) and getattr(fn, "__name__", "") == name:
            return fn
    fn = getattr(sys.modules.get(cls.__module__), name, None)
    return fn if inspect.isfunction(fn) else None


def _line_quoting(fn, reason: str) -> str:
    """FILE:LINE of the first line of ``fn`` naming a word the reason quotes
    ('nosuch'), else of its def."""
    words = re.findall(r"'(\w+)'", reason)
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return where(fn)
    for k, ln in enumerate(lines):
        if any(re.search(rf"\b{w}\b", ln) for w in words) and not ln.lstrip().startswith("@"):
            return f"{shown(fn.__code__.co_filename)}:{first + k}"
    return where(fn)
