"""Find an algorithm class by built-in name, entry point or ``module:Class``.

Lookup order: ``module:Class`` if the name has a colon; else a built-in (or
an alias of one); else an installed entry point in group
``taurus.algorithms``.  Unknown names raise ConfigError listing what exists;
a class that breaks the interface (algorithm.check_class) too.
"""
import importlib
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
            "oscar": "taurus.cc_algorithms.oscar:Oscar"}
ALIASES = {"dctcp-jit": "dctcp"}     # an older name: every algorithm runs compiled or not


def _load(spec: str, what: str) -> type:
    mod_name, _, attr = spec.partition(":")
    try:
        obj = importlib.import_module(mod_name)
    except ImportError as e:
        raise ConfigError(f"algorithm {what!r}: cannot import module {mod_name!r}: {e}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"algorithm {what!r}: module {mod_name!r} has no {attr!r}")
        obj = getattr(obj, part)
    return obj


def available() -> list[str]:
    eps = sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
    return sorted(BUILTINS) + [n for n in eps if n not in BUILTINS]


def lookup(name: str, role: str | None = None) -> type:
    """The Algorithm subclass called ``name``, checked; with ``role``, it must
    have that role ("sender" or "receiver")."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"algorithm name must be a non-empty string, got {name!r}")
    name = ALIASES.get(name, name)
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
                              f"or give 'module:Class'")
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
