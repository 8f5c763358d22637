"""The algorithm API (paper appendix A, in Python).

Life cycle: the agent makes one instance per flow, calls ``setup()``, then
delivers only the events the instance binds, each as an ``Events`` batch (all
records of one event type for one flow from one drain, oldest first), then
``decide()`` once per flow and step.  Handlers publish decisions with
``result_update(rate=, cwnd=, credit=)``; the agent filters them (bounds,
duplicates) before writing the context table.  ``teardown()`` at exit.

Aggregation periods (paper §3.4: "each aggregation engine has an independent
aggregation period, configured by algorithms"): ``periods`` maps a bound
event to how often the engine should report it: ns (> 0), 0 (every signal
at once), or "rtt" / "<x>rtt" (x times the flow's measured RTT, followed by
the engine as the RTT moves).  The agent writes them at flow setup.

    class MyCC(Algorithm):
        name = "mycc"
        binds = ("ACK", "ECN")
        periods = {"ACK": "rtt", "ECN": "rtt"}   # one message per RTT each
        Params = MyParams                 # a dataclass deriving from Params
        def setup(self): self.cwnd = 10 * self.mss
        def on_ack(self, ev): ...ev.total("bytes")...
        def on_ecn(self, ev): ...
        def decide(self): self.result_update(cwnd=self.cwnd)
"""
import dataclasses

import numpy as np

from taurus.datapath.ccshm import (CLS_RAW, COUNT, EVENT_CLASS, RTT_UNIT, EV_ACK, EV_CREDIT, EV_CUSTOM, EV_ECN, EV_HOST,
                                   EV_NACK, EV_OOO, EV_RTO, EV_RTT, EV_TX, EVENT_NAMES, T_FIRST,
                                   T_LAST, V0)

from .params import ConfigError, Params

# Names of V0.. per event (ccshm.py documents the values).
FIELDS = {
    EV_ACK: ("bytes", "packets", "psn", "ecn_bytes"),
    EV_ECN: ("bytes", "packets"),
    EV_OOO: ("packets",),
    EV_RTO: ("timeouts", "psn"),
    EV_RTT: ("rtt_ns", "psn", "qdelay_ns", "hops"),
    EV_TX: ("bytes", "packets", "inflight"),
    EV_CUSTOM: ("segment", "length"),
    EV_NACK: ("nacks", "trimmed", "psn"),
    EV_CREDIT: ("credit",),
}
_COL = {e: {n: V0 + i for i, n in enumerate(names)} for e, names in FIELDS.items()}
HANDLERS = {EV_ACK: "on_ack", EV_ECN: "on_ecn", EV_OOO: "on_ooo", EV_RTO: "on_rto",
            EV_RTT: "on_rtt", EV_TX: "on_tx", EV_CUSTOM: "on_custom", EV_HOST: "on_host",
            EV_NACK: "on_nack", EV_CREDIT: "on_credit"}
EVENT_IDS = {n: i for i, n in enumerate(EVENT_NAMES)}


class Events:
    """All records of one event type for one flow from one drain, oldest first.

    ``rows`` are the records as the agent read them (lists of ints: a drain
    is a few records, and plain Python beats numpy calls on a few rows), so
    making an Events costs nothing; accessors gather what they need.  Field
    names come from FIELDS: ``total("bytes")`` (sum), ``last("psn")``,
    ``col("rtt_ns")`` (a numpy copy), ``rec`` (int64[n, REC_WIDTH] copy).
    Copy what you keep: the batch is reused after the call.  ``parsed``
    (CUSTOM only): a dict of numpy columns from the segment's parser.
    """
    __slots__ = ("flow", "event", "rows", "parsed")

    def __init__(self, flow: int, event: int, rows, parsed=None):
        self.flow = flow        # (one store each: this runs once per group)
        self.event = event
        self.rows = rows
        self.parsed = parsed

    @classmethod
    def of(cls, flow: int, event: int, rec, parsed=None) -> "Events":
        """Events over every row of ``rec`` (tests, synthetic events)."""
        return BatchEvents(flow, event, rec, np.arange(len(rec)), parsed)

    def __len__(self):
        return len(self.rows)

    def _c(self, j):
        return np.array([r[j] for r in self.rows], np.int64)

    def _sum(self, j) -> int:
        rows = self.rows
        return rows[0][j] if len(rows) == 1 else sum([r[j] for r in rows])

    def col(self, name: str):
        return self._c(_COL[self.event][name])

    def total(self, name: str) -> int:
        j = _COL[self.event][name]     # (_sum inlined: the hottest accessor)
        rows = self.rows
        return rows[0][j] if len(rows) == 1 else sum([r[j] for r in rows])

    def last(self, name: str) -> int:
        return self.rows[-1][_COL[self.event][name]]

    @property
    def rec(self):
        return np.array(self.rows, np.int64).reshape(len(self.rows), -1)

    @property
    def t_first(self):
        return self._c(T_FIRST)

    @property
    def t_last(self):
        return self._c(T_LAST)

    @property
    def signals(self) -> int:
        """How many signals the records aggregate."""
        return int(self._sum(COUNT))


class BatchEvents(Events):
    """The same, for a large drain: rows ``idx`` of the numpy ``batch``, where
    the records stay.  ``src``: the batch's per-group sums (``g``: this
    group's index in them), so ``total()`` costs a lookup."""
    __slots__ = ("batch", "idx", "src", "g")

    def __init__(self, flow: int, event: int, batch, idx, parsed=None, src=None, g=0):
        self.flow, self.event, self.rows, self.parsed = flow, event, None, parsed
        self.batch, self.idx, self.src, self.g = batch, idx, src, g

    def __len__(self):
        return len(self.idx)

    def _c(self, j):
        return self.batch[self.idx, j]

    def _sum(self, j) -> int:
        # One record is the common case after aggregation: skip numpy's sum.
        if len(self.idx) == 1:
            return int(self.batch[self.idx[0], j])
        if self.src is not None:       # per-group sums of the whole batch, computed once
            return int(self.src.group_sum(j)[self.g])
        return int(self._c(j).sum())

    def total(self, name: str) -> int:
        return self._sum(_COL[self.event][name])

    def last(self, name: str) -> int:
        return int(self.batch[self.idx[-1], _COL[self.event][name]])

    @property
    def rec(self):
        return self.batch[self.idx]


@dataclasses.dataclass
class HostSample:
    """One reading of a host sampler (EV_HOST): ``source`` is the sampler's
    name, ``values`` its numbers (see taurus.agent.signals)."""
    source: str
    t_ns: int
    values: dict


@dataclasses.dataclass
class FlowContext:
    """What the agent tells an instance about its flow and host."""
    flow: int
    mss: int
    line_rate_bps: int
    max_cwnd: int = 1 << 40      # the boundary filter's cwnd ceiling (bytes)
    host: object = None          # taurus.agent.host_actions.HostActions or None
    cwnd: int = 0                # the decision in force when the instance was made
    rate: int = 0                # (0: none; > 0: e.g. a restarted agent resumes from it)


class Algorithm:
    name = "base"
    Params = Params
    binds: tuple = ()            # event names, e.g. ("ACK", "ECN")
    periods: dict = {}           # event name -> ns, 0, "rtt" or "<x>rtt" (see above)
    samplers: dict = {}          # host samplers wanted: name -> period (ns)
    compiled = False             # True: a CompiledAlgorithm (compiled.py), one object for all flows

    def __init__(self, ctx: FlowContext, params: Params):
        self.ctx, self.params = ctx, params
        self.flow, self.mss, self.line_rate_bps = ctx.flow, ctx.mss, ctx.line_rate_bps
        self._result = None
        self._probe = False

    # ---- life cycle (override what you need) ----
    def setup(self) -> None:
        pass

    def bindings(self) -> tuple:
        """Events this instance binds; default: the class's ``binds``."""
        return self.binds

    def aggregation_periods(self) -> dict:
        """Report period per bound event; default: the class's ``periods``."""
        return self.periods

    def decide(self) -> None:
        """Called once per flow after a step's events were delivered."""

    def teardown(self) -> None:
        pass

    # ---- the decision ----
    def result_update(self, rate=None, cwnd=None, credit=None) -> None:
        """Publish a decision (bit/s, bytes, bytes); None leaves a field alone.
        The agent filters and writes it after this flow's step."""
        r = self._result
        if r is None:
            self._result = [rate, cwnd, credit]
            return
        for i, v in enumerate((rate, cwnd, credit)):
            if v is not None:
                r[i] = v

    def request_probe(self) -> None:
        """Ask for an RTT sample now (paper §3.3: a probe on command): the
        engine sends this flow a probe packet at once, the receiver echoes
        it, and that sample is reported whatever the probe cadence."""
        self._probe = True

    # ---- event handlers (bound ones must be overridden) ----
    def on_ack(self, ev: Events): pass
    def on_ecn(self, ev: Events): pass
    def on_ooo(self, ev: Events): pass
    def on_rto(self, ev: Events): pass
    def on_rtt(self, ev: Events): pass
    def on_tx(self, ev: Events): pass
    def on_custom(self, ev: Events): pass
    def on_host(self, sample: HostSample): pass
    def on_nack(self, ev: Events): pass
    def on_credit(self, ev: Events): pass


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


def class_periods(inst) -> dict:
    """{engine class: period value} from an instance's bound events' periods.
    Within a class the most demanding wins: 0 (at once) over anything, then
    the shortest; an ns period beats an RTT-relative one (it is a hard bound)."""
    out = {}
    for name, spec in (inst.aggregation_periods() or {}).items():
        e = EVENT_IDS.get(str(name).upper())
        if e is None:
            raise ConfigError(f"algorithm {inst.name!r}: period for unknown event {name!r}")
        v = period_value(spec, f"algorithm {inst.name!r} period of {name}")
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


def event_mask(cls_or_inst) -> int:
    """Bit EV_x for each bound event; unknown names or missing handlers are errors."""
    binds = cls_or_inst.bindings() if isinstance(cls_or_inst, Algorithm) else cls_or_inst.binds
    cls = cls_or_inst if isinstance(cls_or_inst, type) else type(cls_or_inst)
    mask = 0
    for b in binds:
        e = EVENT_IDS.get(str(b).upper()) if not isinstance(b, int) else b
        if e is None or not 0 <= e < len(EVENT_NAMES):
            raise ConfigError(f"algorithm {cls.name!r} binds unknown event {b!r} "
                              f"(events: {', '.join(EVENT_NAMES)})")
        if cls.compiled and e == EV_HOST:
            raise ConfigError(f"algorithm {cls.name!r} is compiled: HOST events go to Python "
                              f"algorithms only")
        if not cls.compiled and getattr(cls, HANDLERS[e]) is getattr(Algorithm, HANDLERS[e]):
            raise ConfigError(f"algorithm {cls.name!r} binds {EVENT_NAMES[e]} "
                              f"but does not define {HANDLERS[e]}()")
        mask |= 1 << e
    return mask
