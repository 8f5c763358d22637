"""The algorithm interface: what an algorithm declares and the calls it makes.

An algorithm is one class in one file.  Its logic is a few handler
functions written in the subset of Python that Numba compiles, decorated
``@kernel``; the framework runs the same functions compiled into the
engine (``native``), compiled in the agent (``agent``, ``per-event``) and as
plain Python (``agent`` with ``jit = false``: prints and pdb work).

    class Dctcp(Algorithm):
        name = "dctcp"
        Params = DctcpParams                  # a Params dataclass: defaults, check()
        state = ("alpha", "cwnd", ...)        # per-flow state, float64 unless typed
        binds = ("ACK", "RTO")                # events delivered (ccevents.EVENTS)
        periods = {"ACK": "rtt", "RTO": 0}    # how often the engine reports each
        init = dctcp_init                     # (s, p, d): a new flow
        on_ack = dctcp_on_ack                 # (s, p, ev, d): one per bound event
        on_rto = dctcp_on_rto

Handlers get four records and read and write their fields by name:
``s`` the flow's state (``s.alpha``), ``p`` its parameters (the Params
fields, plus ``p.mss``, ``p.line_rate`` (bit/s), ``p.max_cwnd`` (bytes),
the configured start of a flow, ``p.init_cwnd`` (bytes) and ``p.init_rate``
(bit/s; 0: none configured), and any ``derived`` fields: values
``Params.derive(ctx)`` computes once per flow, such as a gain scaled by the
line rate),
``ev`` the event (``ev.bytes``, ``ev.ecn_bytes``; ccevents.FIELDS), and ``d``
the decision, set only through the setters below (``set_cwnd(d, x)``).  What
a handler sets reaches the NIC after the call (native) or after the drain
(agent), through the same bounds in every mode.  ``init`` finds in ``d.cwnd``
and ``d.rate`` the algorithm's decision in force (0: none; > 0 after an
agent restart), in ``p.init_cwnd`` and ``p.init_rate`` what the NIC applies
until a decision, and may set decisions too.  ``init`` and the ``on_<event>``
handlers are plain functions in the class body (``staticmethod(f)`` works
too); taurus/cc_algorithms/lib.py has the pieces most algorithms share
(units, averages, slow start, resuming in init, once-per-RTT gates).

A state field is a name (a float64); ``(name, int)`` or ``(name, bool)``: a
count, an index or a flag; ``(name, n)`` or ``(name, int, n)``: an array of
n.  Each scalar takes one 8-byte word of the flow's row and each array n
words (a bool the first byte of its word): the native table, the agent and
the in-loop step keep rows as float64 words (native.py, agent/inloop.py)
and view them as the record.  Numba's records hold no bool arrays, so an
array of flags is an int array.

Roles: a ``sender`` algorithm has one state record per flow; a ``receiver``
algorithm (``role = "receiver"``) one per receiving NIC, and its events
(JOIN, DATA, LEAVE, TIMER) name the sender in ``ev.flow``: ``set_credit(d,
x)`` grants that sender cumulative credit ``x`` bytes.  An array state
field, ``("backlog", 256)`` (``s.backlog[i]``), makes a receiver's
per-sender table.

TIMER: ``timer`` is a period in ns, or the name of a parameter holding one;
the engine raises a TIMER event for each flow that binds it, every period,
in virtual and in wall-clock time alike.

CSIG: an algorithm that binds CSIG declares the tag its flows' data packets
carry, ``csig = ("delay", "compact")`` (type: delay, abw, abw_c, qdepth;
format: compact or wide; ccevents.CSIG_TYPE_NAMES).  Its event mask carries
the request to the NIC (ccevents.mask_requests).  CNP: an algorithm that
binds CNP makes its receivers the notification point (DCQCN): they send a
CNP on CE or UE marks, at most one per NIC cnp_gap_ns.
"""
import dataclasses
import inspect
import operator

import numpy as np

from taurus.datapath.ccevents import (CLS_RAW, CSIG_FORMATS, CSIG_TYPE_NAMES,
                                     D_CREDIT, D_CWND, D_EV,
                                     D_HOST_CPU, D_HOST_MBA, D_PROBE, D_RATE, DECISION_DTYPE,
                                     EVENT_CLASS, EVENT_IDS, EVENT_NAMES, EVENT_ROLE,
                                     N_DECISION, ROLES, RTT_UNIT, mask_requests)
from taurus.numba_hooks import after_import

from .params import ConfigError, Params, is_derived

__all__ = ["Algorithm", "FlowContext", "kernel", "param", "param_docs", "set_rate", "set_cwnd",
           "set_credit", "set_ev", "rotate_ev", "spray_ev", "request_probe", "host_cpu",
           "host_mba", "DECISION_DTYPE", "N_DECISION", "D_CREDIT", "D_CWND", "D_EV",
           "D_HOST_CPU", "D_HOST_MBA", "D_PROBE", "D_RATE", "FRAMEWORK_PARAMS", "STATE_TYPES",
           "check_class", "event_mask", "state_field", "state_dtype", "param_dtype", "param_row",
           "period_value", "class_periods"]
_unregistered: list | None = []     # kernels marked before Numba loaded; None after


def kernel(fn):
    """Marks a handler or a helper: plain Python when called from Python, compiled
    into whatever compiled code calls it (Numba's ``register_jitable``).  The
    registration waits until Numba loads, so a listing (`taurus algorithms`)
    does not pay for importing it."""
    if _unregistered is None:
        _register(fn)
    else:
        _unregistered.append(fn)
    return fn


def _register(fn):
    from numba.extending import register_jitable
    register_jitable(fn)


def _on_numba(_module):
    global _unregistered
    pending, _unregistered = _unregistered, None
    for fn in pending:
        _register(fn)


after_import("numba", _on_numba)

# ---- the decision: DECISION_DTYPE and the D_* bits (datapath/ccevents.py, which
# the engine reads too); the setters ---------------------------------------------


@kernel
def set_rate(d, bps):
    d.rate = bps
    d.set |= D_RATE


@kernel
def set_cwnd(d, nbytes):
    d.cwnd = nbytes
    d.set |= D_CWND


@kernel
def set_credit(d, nbytes):
    d.credit = nbytes
    d.set |= D_CREDIT


@kernel
def set_ev(d, value):
    """Stamp this flow's packets with entropy value ``value``."""
    d.ev = value
    d.ev_n = 0
    d.set |= D_EV


@kernel
def rotate_ev(d):
    """Move this flow to a new entropy value (the NIC picks it)."""
    d.ev_n = -1
    d.set |= D_EV


@kernel
def spray_ev(d, first, n):
    """Spray this flow's packets over entropy values first .. first+n-1."""
    d.ev = first
    d.ev_n = n
    d.set |= D_EV


@kernel
def request_probe(d):
    """An RTT sample now (paper §3.3): the NIC sends a probe at once."""
    d.set |= D_PROBE


@kernel
def host_cpu(d, share):
    """Host action (agent modes): the host cgroup's CPU share (0..1)."""
    d.host_cpu = share
    d.set |= D_HOST_CPU


@kernel
def host_mba(d, percent):
    """Host action (agent modes): memory-bandwidth allocation, percent."""
    d.host_mba = percent
    d.set |= D_HOST_MBA


# ---- what an algorithm declares ---------------------------------------------------
FRAMEWORK_PARAMS = ("mss", "line_rate", "max_cwnd", "init_cwnd", "init_rate")


@dataclasses.dataclass
class FlowContext:
    """What the framework tells an algorithm about a flow (in ``p``):
    init_cwnd (bytes) and init_rate (bit/s) are the experiment's configured
    ``[cc] cwnd`` and ``rate``, which the NIC applies to a new flow until a
    decision replaces them (0: none configured)."""
    mss: int = 4096
    line_rate: float = 100e9
    max_cwnd: float = float(1 << 30)
    init_cwnd: float = 0.0
    init_rate: float = 0.0


class Algorithm:
    name = "base"
    role = "sender"
    Params = Params
    state: tuple = ()
    binds: tuple = ()
    periods: dict = {}
    timer = None                 # TIMER period: ns, or the name of a parameter (ns)
    samplers: dict = {}          # host samplers wanted in agent modes: name -> period (ns)
    csig = None                  # binds CSIG: (type, format) of the tag its data packets carry
    init = None

    def __init_subclass__(cls, **kw):
        """``init`` and ``on_<event>`` given as plain functions become static
        methods, so the class body names its handlers without staticmethod()."""
        super().__init_subclass__(**kw)
        for k, v in list(vars(cls).items()):
            if (k == "init" or k.startswith("on_")) and inspect.isfunction(v):
                setattr(cls, k, staticmethod(v))

    @classmethod
    def bindings(cls, params) -> tuple:
        """Events bound with these parameters; default: ``binds``."""
        return cls.binds

    @classmethod
    def timer_ns(cls, params) -> int:
        """The TIMER period for these parameters (0: none)."""
        t = cls.timer
        if t is None:
            return 0
        return int(getattr(params, t)) if isinstance(t, str) else int(t)

    @classmethod
    def handler(cls, event: str):
        return getattr(cls, f"on_{event.lower()}", None)

    @classmethod
    def describe(cls) -> dict:
        """name, role, binds, params (default, unit, meaning), state: for the CLI."""
        return {"name": cls.name, "role": cls.role, "binds": list(cls.binds),
                "periods": {k: v for k, v in cls.periods.items()}, "timer": cls.timer,
                "state": [f if isinstance(f, str) else f[0] for f in cls.state],
                "params": param_docs(cls.Params), "doc": (cls.__doc__ or "").strip()}


def param_docs(P) -> list:
    """[{name, type, default, unit, meaning}] of a Params dataclass: unit and
    meaning from the field's metadata, ``param(default, unit, meaning)``."""
    out = []
    for f in dataclasses.fields(P):
        default = f.default if f.default is not dataclasses.MISSING else None
        out.append({"name": f.name, "type": getattr(f.type, "__name__", str(f.type)),
                    "default": default, "unit": f.metadata.get("unit", ""),
                    "meaning": f.metadata.get("meaning", ""), "derived": is_derived(f)})
    return out


def param(default, unit: str = "", meaning: str = ""):
    """A documented parameter: ``g: float = param(1/16, "", "EWMA gain of alpha")``."""
    return dataclasses.field(default=default, metadata={"unit": unit, "meaning": meaning})


def check_class(cls) -> None:
    """Everything about ``cls`` a config error can name: role, events, handlers."""
    if cls.role not in ROLES:
        raise ConfigError(f"algorithm {cls.name!r}: role must be one of {ROLES}, not {cls.role!r}")
    if not (isinstance(cls.Params, type) and issubclass(cls.Params, Params)):
        raise ConfigError(f"algorithm {cls.name!r}: Params must derive from taurus Params")
    for f in cls.Params.__dataclass_fields__:
        if f in FRAMEWORK_PARAMS:
            raise ConfigError(f"algorithm {cls.name!r}: parameter {f!r} is the framework's")
    for f in cls.state:
        try:
            state_field(f)
        except (TypeError, ValueError):
            raise ConfigError(f"algorithm {cls.name!r}: state field {f!r} is not a name, "
                              f"(name, length), (name, int | bool) or (name, int, length)") from None
    for b in cls.binds:
        e = str(b).upper()
        if e not in EVENT_IDS:
            raise ConfigError(f"algorithm {cls.name!r} binds unknown event {b!r} "
                              f"(events: {', '.join(EVENT_NAMES)})")
        if EVENT_ROLE[e] not in ("any", cls.role):
            raise ConfigError(f"algorithm {cls.name!r} ({cls.role}) binds {e}, "
                              f"a {EVENT_ROLE[e]} event")
        if cls.handler(e) is None:
            raise ConfigError(f"algorithm {cls.name!r} binds {e} but has no on_{e.lower()}")
    if "TIMER" in [str(b).upper() for b in cls.binds] and cls.timer is None:
        raise ConfigError(f"algorithm {cls.name!r} binds TIMER but declares no timer period")
    _check_csig(cls)
    class_periods(cls)


def _check_csig(cls) -> None:
    binds = "CSIG" in [str(b).upper() for b in cls.binds]
    if cls.csig is None:
        if binds:
            raise ConfigError(f"algorithm {cls.name!r} binds CSIG but declares no csig = "
                              f"(type, format)")
        return
    c = cls.csig
    if not (isinstance(c, tuple) and len(c) == 2 and c[0] in CSIG_TYPE_NAMES
            and c[1] in CSIG_FORMATS):
        raise ConfigError(f"algorithm {cls.name!r}: csig must be (type, format) with type one "
                          f"of {', '.join(CSIG_TYPE_NAMES)} and format compact or wide, "
                          f"got {c!r}")


def event_mask(cls, params) -> int:
    """Bit EV_x for each event bound with ``params``; above them, what the
    flow asks of the datapath (the CSIG tag: ccevents.mask_requests)."""
    mask = 0
    for b in cls.bindings(params):
        mask |= 1 << EVENT_IDS[str(b).upper()]
    if (mask >> EVENT_IDS["CSIG"]) & 1 and cls.csig is not None:
        mask |= mask_requests(*cls.csig)       # the tag its data packets carry
    return mask


# ---- record types -----------------------------------------------------------
STATE_TYPES = {float: "<f8", int: "<i8", bool: "?"}


def state_field(f) -> tuple:
    """(name, type, length or 0) of one ``state`` entry; TypeError or
    ValueError if it is none of the forms algorithm.py's docstring lists."""
    if isinstance(f, str):
        return f, float, 0
    if not (isinstance(f, tuple) and 2 <= len(f) <= 3 and isinstance(f[0], str)):
        raise TypeError(f"{f!r}")
    if len(f) == 2 and isinstance(f[1], type):
        name, typ, n = f[0], f[1], 0
    else:
        name, typ, n = (f[0], float, f[1]) if len(f) == 2 else f
        if isinstance(n, bool) or operator.index(n) <= 0:
            raise ValueError(f"{f!r}")
    if typ not in STATE_TYPES or (typ is bool and n):
        raise ValueError(f"{f!r}")
    return name, typ, operator.index(n)


def state_dtype(cls) -> np.dtype:
    """One flow's state record: each scalar field one 8-byte word, each
    array n words, so a row is a whole number of float64 words."""
    names, formats, offsets, words = [], [], [], 0
    for f in cls.state:
        name, typ, n = state_field(f)
        names.append(name)
        formats.append((STATE_TYPES[typ], (n,)) if n else STATE_TYPES[typ])
        offsets.append(8 * words)
        words += n or 1
    if not names:
        return np.dtype([("_", "<f8")])
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": 8 * words})


def param_dtype(cls) -> np.dtype:
    names = [f.name for f in dataclasses.fields(cls.Params)] + list(FRAMEWORK_PARAMS)
    return np.dtype([(n, "<f8") for n in names])


def param_row(cls, params, ctx: FlowContext) -> np.ndarray:
    """One flow's parameter record (a float64 row of param_dtype)."""
    row = np.zeros(1, param_dtype(cls))
    for f in dataclasses.fields(cls.Params):
        row[f.name] = float(getattr(params, f.name))
    for k in FRAMEWORK_PARAMS:
        row[k] = getattr(ctx, k)
    derived = {f.name for f in dataclasses.fields(cls.Params) if is_derived(f)}
    for k, v in params.derive(ctx).items():
        if k not in derived:
            raise ConfigError(f"algorithm {cls.name!r}: derive() sets {k!r}, which is not a "
                              f"derived field of {cls.Params.__name__}")
        row[k] = float(v)
    return row


# ---- aggregation periods (paper §3.4) -------------------------------------------
def period_value(spec, where: str = "period") -> int:
    """The control-block encoding of one period spec: ns (> 0), 0 (at once),
    or -x*RTT_UNIT for "<x>rtt" (x > 0)."""
    if isinstance(spec, str):
        s = spec.strip().lower()
        if s.endswith("rtt"):
            try:
                x = float(s[:-3] or 1)
            except ValueError:
                x = -1.0
            if x > 0:
                return -max(1, round(x * RTT_UNIT))
        raise ConfigError(f"{where}: {spec!r} is not a period (ns, 0, 'rtt' or '<x>rtt')")
    if isinstance(spec, bool) or not isinstance(spec, (int, float)) or spec < 0:
        raise ConfigError(f"{where}: {spec!r} is not a period (ns, 0, 'rtt' or '<x>rtt')")
    return int(spec)


def class_periods(cls) -> dict:
    """{engine class: period value} from the declared ``periods``.  Within a
    class the most demanding wins: 0 (at once) over anything, then the
    shortest; an ns period beats an RTT-relative one (it is a hard bound)."""
    out = {}
    for name, spec in (cls.periods or {}).items():
        e = EVENT_IDS.get(str(name).upper())
        if e is None:
            raise ConfigError(f"algorithm {cls.name!r}: period for unknown event {name!r}")
        v = period_value(spec, f"algorithm {cls.name!r} period of {name}")
        c = int(EVENT_CLASS[e])
        if c == CLS_RAW:
            continue                    # Raw is never aggregated
        out[c] = v if c not in out else _stricter(out[c], v)
    return out


def _stricter(a: int, b: int) -> int:
    if a == 0 or b == 0:
        return 0
    if (a > 0) != (b > 0):
        return max(a, b)                # the ns one
    return a if abs(a) <= abs(b) else b
