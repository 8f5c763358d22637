"""Find an algorithm class by built-in name, entry point, ``path/file.py:Class``
or ``module:Class``.

Lookup order: a file (``path/to/file.py:Class``, relative to ``base_dir``,
loaded without PYTHONPATH) or ``module:Class`` if the name has a colon;
else a built-in (or an alias of one); else an installed entry point in
group ``taurus.algorithms``.  Unknown names raise ConfigError listing what
exists; a class that breaks the interface (algorithm.check_class) too.
``source(name)`` says where a name's class comes from, for run summaries.
"""
import hashlib
import importlib
import importlib.util
import os
import re
import sys
from importlib.metadata import entry_points

from .algorithm import Algorithm, check_class
from .params import ConfigError, Params, build

ENTRY_POINT_GROUP = "taurus.algorithms"
BUILTINS = {"dctcp": "taurus.cc_algorithms.dctcp:Dctcp",
            "dcqcn": "taurus.cc_algorithms.dcqcn:Dcqcn",
            "hpcc": "taurus.cc_algorithms.hpcc:Hpcc",
            "swift": "taurus.cc_algorithms.swift:Swift",
            "timely": "taurus.cc_algorithms.timely:Timely",
            "hostcc": "taurus.cc_algorithms.hostcc:Hostcc",
            "nscc": "taurus.cc_algorithms.nscc:Nscc",
            "nscc-csig": "taurus.cc_algorithms.nscc:NsccCsig",
            "rccc": "taurus.cc_algorithms.rccc:Rccc",
            "oscar": "taurus.cc_algorithms.oscar:Oscar",
            "powertcp": "taurus.cc_algorithms.powertcp:PowerTcp",
            "theta-powertcp": "taurus.cc_algorithms.powertcp:ThetaPowerTcp",
            "bolt": "taurus.cc_algorithms.bolt:Bolt"}
ALIASES = {"dctcp-jit": "dctcp"}     # an older name: every algorithm runs compiled or not


def is_file_spec(name) -> bool:
    """``path/to/file.py:Class`` (or ``file.py:Class``), not ``module:Class``."""
    mod = name.partition(":")[0] if isinstance(name, str) else ""
    return mod.endswith(".py") or "/" in mod


def resolve(name: str, base_dir: str | None = None) -> str:
    """``name`` with a relative file path made absolute against ``base_dir``
    (an experiment file's directory); any other name unchanged."""
    if not is_file_spec(name):
        return name
    path, _, attr = name.partition(":")
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        path = os.path.join(base_dir or ".", path)
    return f"{os.path.abspath(path)}:{attr}"


def shown(path: str) -> str:
    """A path as messages show it: relative to the working directory when under it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _file_module(path: str, what: str):
    """The module of an algorithm file, loaded once per content: the module's
    name carries the file's hash, so an edited file is a new module."""
    try:
        with open(path, "rb") as f:
            src = f.read()
    except OSError as e:
        raise ConfigError(f"algorithm {what!r}: cannot read {shown(path)}: {e.strerror}") from None
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    name = f"taurus_file_{stem}_{hashlib.sha1(path.encode() + src).hexdigest()[:12]}"
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod             # before running it: dataclasses look their module up
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        del sys.modules[name]
        raise ConfigError(f"{_where(e, path)}: {type(e).__name__}: {_msg(e)}") from None
    return mod


def _msg(e: BaseException) -> str:
    return e.msg if isinstance(e, SyntaxError) else str(e)


def _where(e: BaseException, path: str) -> str:
    """FILE:LINE of the innermost frame of ``e`` in ``path``."""
    line = e.lineno if isinstance(e, SyntaxError) and e.filename == path else None
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f"{shown(path)}:{line}" if line else shown(path)


def _load(spec: str, what: str) -> type:
    mod_name, _, attr = spec.partition(":")
    if is_file_spec(spec):
        obj = _file_module(os.path.abspath(mod_name), what)
        mod_name = shown(os.path.abspath(mod_name))
    else:
        try:
            obj = importlib.import_module(mod_name)
        except ImportError as e:
            raise ConfigError(f"algorithm {what!r}: cannot import module {mod_name!r}: {e}"
                              f" (a file is given as 'path/to/file.py:Class')") from None
    if not attr:
        raise ConfigError(f"algorithm {what!r}: name the class after a colon, "
                          f"{mod_name}:Class ({_classes(obj)})")
    mod = obj
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"algorithm {what!r}: {mod_name} has no {attr!r} ({_classes(mod)})")
        obj = getattr(obj, part)
    return obj


def _classes(mod) -> str:
    """The Algorithm subclasses defined in ``mod``, for messages."""
    found = [k for k, v in vars(mod).items() if isinstance(v, type) and issubclass(v, Algorithm)
             and v is not Algorithm and v.__module__ == mod.__name__]
    return f"algorithms in it: {', '.join(found)}" if found else "it defines no Algorithm subclass"


def source(name: str) -> dict:
    """Where ``name``'s class comes from: {"kind": "builtin" | "plugin" |
    "file" | "module", ...}; a file with its path and sha256, a plugin with
    its entry point's value and distribution."""
    name = ALIASES.get(name, name)
    if is_file_spec(name):
        path = name.partition(":")[0]
        try:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            digest = None
        return {"kind": "file", "path": path, "sha256": digest}
    if ":" in name:
        return {"kind": "module", "spec": name}
    if name in BUILTINS:
        return {"kind": "builtin", "spec": BUILTINS[name]}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            dist = getattr(ep, "dist", None)
            return {"kind": "plugin", "spec": ep.value,
                    "distribution": dist.name if dist is not None else None}
    return {"kind": "unknown"}


def available() -> list[str]:
    eps = sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
    return sorted(BUILTINS) + [n for n in eps if n not in BUILTINS]


def lookup(name: str, role: str | None = None, base_dir: str | None = None) -> type:
    """The Algorithm subclass called ``name``, checked; with ``role``, it must
    have that role ("sender" or "receiver").  A relative file path is taken
    from ``base_dir`` (default: the working directory)."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"algorithm name must be a non-empty string, got {name!r}")
    name = resolve(ALIASES.get(name, name), base_dir)
    if ":" in name:
        cls = _load(name, name)
    elif name in BUILTINS:
        cls = _load(BUILTINS[name], name)
    else:
        eps = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
        if not eps:
            raise ConfigError(f"unknown algorithm {name!r}; built-in: {', '.join(sorted(BUILTINS))}; "
                              f"installed ({ENTRY_POINT_GROUP}): "
                              f"{', '.join(a for a in available() if a not in BUILTINS) or 'none'}; "
                              f"or give 'path/to/file.py:Class' or 'module:Class'")
        try:
            cls = eps[0].load()
        except Exception as e:
            raise ConfigError(f"algorithm {name!r}: entry point failed to load: {e}") from None
    if not (isinstance(cls, type) and issubclass(cls, Algorithm)):
        raise ConfigError(f"algorithm {name!r} is {cls!r}, not a taurus Algorithm subclass")
    if not (isinstance(cls.Params, type) and issubclass(cls.Params, Params)):
        raise ConfigError(f"algorithm {name!r}: Params must derive from taurus Params")
    check_class(cls)
    if role is not None and cls.role != role:
        raise ConfigError(f"algorithm {name!r} is a {cls.role} algorithm, not a {role} one")
    return cls


def make_params(cls: type, values: dict | None, where: str) -> Params:
    """``cls.Params`` from a config table (errors name ``where.key``)."""
    return build(cls.Params, values, where)
