"""Typed dataclasses built from config tables, with errors that name the key.

Used for algorithm parameters and for the agent's own config: every unknown
key, wrong type or out-of-range value raises ``ConfigError`` naming where it
is (``[agent.params] g: expected float, got str 'x'``).
"""
import dataclasses
import math
import types
import typing

from taurus import errors


class ConfigError(errors.ConfigError):
    """A parameter or agent config value that cannot be used; ``key`` says
    where (``[agent.params].g``)."""


def _type_name(t) -> str:
    return getattr(t, "__name__", str(t))


def _coerce(value, typ, where: str):
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):           # X | None
        args = typing.get_args(typ)
        if value is None and type(None) in args:
            return None
        for t in args:
            if t is type(None):
                continue
            try:
                return _coerce(value, t, where)
            except ConfigError:
                pass
        raise ConfigError(f"expected {' or '.join(_type_name(a) for a in args)}, "
                          f"got {type(value).__name__} {value!r}", key=where)
    if dataclasses.is_dataclass(typ):
        if not isinstance(value, dict):
            raise ConfigError(f"expected a table, got {type(value).__name__}", key=where)
        return build(typ, value, where)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"expected a list, got {type(value).__name__} {value!r}", key=where)
        (item,) = typing.get_args(typ)[:1] or (typing.Any,)
        return [_coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict or typ is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"expected a table, got {type(value).__name__}", key=where)
        args = typing.get_args(typ)
        if len(args) == 2:
            return {k: _coerce(v, args[1], f"{where}.{k}") for k, v in value.items()}
        return dict(value)
    if typ is typing.Any:
        return value
    if typ is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"expected true/false, got {type(value).__name__} {value!r}",
                              key=where)
        return value
    if typ is int:
        # TOML writes big numbers as floats (1e9): accept whole floats.
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"expected an integer, got {type(value).__name__} {value!r}",
                              key=where)
        return value
    if typ is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"expected a number, got {type(value).__name__} {value!r}", key=where)
        if not math.isfinite(value):
            raise ConfigError(f"must be finite, got {value!r}", key=where)
        return float(value)
    if typ is str:
        if not isinstance(value, str):
            raise ConfigError(f"expected a string, got {type(value).__name__} {value!r}", key=where)
        return value
    raise ConfigError(f"unsupported parameter type {_type_name(typ)}", key=where)


def build(cls, data: dict | None, where: str):
    """An instance of dataclass ``cls`` from ``data``; unknown keys, bad types and
    failed ``check()`` calls raise ConfigError naming ``where.key``."""
    data = dict(data or {})
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    for k in data:
        if k not in names:
            raise ConfigError(f"unknown key {k!r} (known: {', '.join(names) or 'none'})", key=where)
    kwargs = {k: _coerce(v, hints[k], f"{where}.{k}") for k, v in data.items()}
    obj = cls(**kwargs)
    check = getattr(obj, "check", None)
    if check is not None:
        try:
            check()
        except ConfigError as e:
            if e.key and not e.file:
                raise ConfigError(e.message, key=f"{where}.{e.key}") from None
            raise ConfigError(f"{where}.{e}") from None
    return obj


def require(cond: bool, key: str, why: str) -> None:
    """For ``check()`` methods: ``require(self.g > 0, "g", "must be > 0")``."""
    if not cond:
        raise ConfigError(why, key=key)


def derived(unit: str = "", meaning: str = ""):
    """A value handlers read like a parameter (``p.target``) but that no
    config sets: ``Params.derive`` computes it once per flow from the
    parameters and the flow's context, as htsim's initNsccParams does."""
    return dataclasses.field(default=0.0, init=False,
                             metadata={"unit": unit, "meaning": meaning, "derived": True})


def is_derived(f: dataclasses.Field) -> bool:
    return bool(f.metadata.get("derived"))


@dataclasses.dataclass
class Params:
    """Base of every algorithm's parameter dataclass; override ``check()``
    with ``require(...)`` calls, and ``derive(ctx)`` for ``derived`` fields."""

    def check(self) -> None:
        pass

    def derive(self, ctx) -> dict:
        """{name: value} of the ``derived`` fields for one flow, from the
        parameters and ``ctx`` (algorithm.FlowContext: mss, line_rate,
        max_cwnd)."""
        return {}
