"""Find an algorithm class by built-in name, entry point or ``module:Class``.

Lookup order: ``module:Class`` if the name has a colon; else a built-in; else
an installed entry point in group ``taurus.algorithms``.  Unknown names raise
ConfigError listing what exists.
"""
import importlib
from importlib.metadata import entry_points

from .base import Algorithm, event_mask
from .compiled import CompiledAlgorithm
from .params import ConfigError, Params, build

ENTRY_POINT_GROUP = "taurus.algorithms"
BUILTINS = {"dctcp": "taurus.cc_algorithms.dctcp:Dctcp",
            "dctcp-jit": "taurus.cc_algorithms.dctcp_jit:DctcpJit"}


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


def lookup(name: str) -> type:
    """The Algorithm subclass called ``name`` (checked: Params, bindings)."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"algorithm name must be a non-empty string, got {name!r}")
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
    event_mask(cls)  # raises on unknown events or missing handlers
    if cls.compiled and (cls.drain is None or cls.flow_setup is None
                         or cls.make_state is CompiledAlgorithm.make_state):
        raise ConfigError(f"algorithm {name!r} is compiled but lacks drain, flow_setup "
                          f"or make_state (see taurus/cc_algorithms/compiled.py)")
    return cls


def make_params(cls: type, values: dict | None, where: str) -> Params:
    """``cls.Params`` from a config table (errors name ``where.key``)."""
    return build(cls.Params, values, where)
