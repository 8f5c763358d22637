"""Algorithm handler (paper §3.5): per-flow instances, event binding,
filtered ``result_update`` into the CC context table, and containment.

- A flow gets its instance on its first record: the per-flow override if
  configured, else the default algorithm.  Its event_mask is set from the
  instance's bindings and its aggregation periods (period_ns) from the
  instance's declared periods; ctl[CTL_DEFAULT_MASK] is the default's mask.
- Only bound events are delivered (others counted as ``unbound``), one
  ``Events`` batch per (flow, event) per step, then ``decide()``.
- Results pass the boundary and duplicate-value filters (filters.py); the
  written fields, then ``version`` and ``updated_ns``, are stored per flow.
- Containment: an exception in any algorithm call, a non-numeric / NaN /
  infinite value, or a clamped value never reaches the table unfiltered; the
  flow keeps its last good decision.  Each kind of fault is logged once per
  algorithm, then only counted (``faults`` in stats, and a summary at teardown).
- A compiled default algorithm (cc_algorithms/compiled.py) takes the fast
  path instead (fastpath.py): same set-up per flow, same filters and counts.
"""
import logging

import numpy as np

from taurus.cc_algorithms.base import (HANDLERS, Events, FlowContext, HostSample, class_periods,
                                       event_mask)
from taurus.datapath.ccshm import (CTL_DEFAULT_MASK, CTL_PROBE_DOORBELL, EV_CUSTOM, EV_HOST,
                                   FL_CC_ACTIVE, V0)

from .busyloop import BusyLoop
from .fastpath import FastPath
from .filters import CLAMPED, FIELDS, REJECTED, UpdateFilter
from .signals import CUSTOM_PARSERS, raw_bytes

log = logging.getLogger("taurus.agent.handler")
ENGINE_EVENTS = ~(1 << EV_HOST)   # HOST is the agent's own: never asked of the engine
FAULTS = {REJECTED: "non-finite or non-numeric", CLAMPED: "out of bounds, clamped:"}


class AlgorithmHandler:
    def __init__(self, cc, cfg, host=None, samplers=None):
        self.cc, self.cfg, self.host, self.samplers = cc, cfg, host, samplers
        self.default, self.per_flow = cfg.resolve()
        b = cfg.bounds
        self.filter = UpdateFilter(cc.max_flows,
                                   (b.rate_min_bps, cfg.cwnd_min(), b.credit_min_bytes),
                                   (cfg.rate_max(), b.cwnd_max_bytes, b.credit_max_bytes))
        self.inst = {}              # flow -> Algorithm
        self.failed = set()         # flows whose instance could not be made
        self.host_bound = []        # instances bound to HOST
        self.segments = {sid: CUSTOM_PARSERS[name]
                         for name, sid in cfg.agent.custom_segments.items() if name in CUSTOM_PARSERS}
        self.faults = {}            # (algorithm, what) -> count
        self.c = dict(flows=0, unbound=0, no_algorithm=0, custom_unparsed=0, calls=0)
        self.compiled = self._compiled() if self.default[0].compiled else None
        self.busy = None            # the compiled busy loop (busyloop.py), once warmed

    def _compiled(self) -> FastPath:
        cls, params = self.default
        a = cls(FlowContext(-1, self.cfg.agent.mss, self.cfg.agent.line_rate_bps,
                            self.cfg.bounds.cwnd_max_bytes, self.host), params)
        a.setup()
        return FastPath(a, self.cc, self.filter, event_mask(a) & ENGINE_EVENTS, class_periods(a),
                        self.c, self.fault, self._report)

    def start(self) -> None:
        cls, params = self.default
        self.cc.ctl[CTL_DEFAULT_MASK] = self._mask_of_class(cls, params)

    def warm(self, messages, loop=None) -> None:
        """Compile (or load) the filters and the fast path now (see
        MessageHandler.warm); ``loop``: (doorbell, cadence, timer slack) to
        compile the busy loop with as well."""
        self.filter.write(self.cc, np.zeros(0, np.int64), 0)
        if self.compiled is not None:
            self.compiled.warm(messages)
            if loop is not None:
                self.busy = BusyLoop(self.compiled, *loop)
                self.busy.warm(messages)

    def _mask_of_class(self, cls, params) -> int:
        """Bindings of a fresh instance (bindings() may read params, not setup state)."""
        probe = cls(FlowContext(-1, self.cfg.agent.mss, self.cfg.agent.line_rate_bps), params)
        try:
            return event_mask(probe) & ENGINE_EVENTS
        except Exception:
            return event_mask(cls) & ENGINE_EVENTS

    # ---- containment ----------------------------------------------------
    def fault(self, inst_or_cls, what: str, exc: BaseException | None = None) -> None:
        name = getattr(inst_or_cls, "name", "?")
        k = (name, what)
        n = self.faults.get(k, 0) + 1
        self.faults[k] = n
        if n == 1:
            log.warning("algorithm %r: %s%s (logged once; further occurrences are counted)",
                        name, what, f": {exc!r}" if exc is not None else "")

    # ---- instances ------------------------------------------------------
    def instance(self, flow: int):
        a = self.inst.get(flow)
        if a is not None or flow in self.failed:
            return a
        cls, params = self.per_flow.get(flow, self.default)
        ctx = FlowContext(flow, self.cfg.agent.mss, self.cfg.agent.line_rate_bps,
                          self.cfg.bounds.cwnd_max_bytes, self.host,
                          int(self.cc.cwnd[flow]), int(self.cc.rate[flow]))
        try:
            a = cls(ctx, params)
            a.setup()
            mask = event_mask(a)
            periods = class_periods(a)
        except Exception as e:
            self.fault(cls, "setup failed", e)
            self.failed.add(flow)
            return None
        a._handlers = [getattr(a, HANDLERS[e]) for e in range(len(HANDLERS))]
        a._mask = mask
        for name, period in (cls.samplers or {}).items():
            if self.samplers is not None:
                try:
                    self.samplers.add(name, period)
                except Exception as e:
                    self.fault(cls, f"host sampler {name!r} unavailable", e)
        if mask >> EV_HOST & 1:
            self.host_bound.append(a)
        self.inst[flow] = a
        for c, v in periods.items():   # before the mask: the engine reads both
            self.cc.period_ns[flow, c] = v
        self.cc.event_mask[flow] = mask & ENGINE_EVENTS
        self.cc.flags[flow] |= FL_CC_ACTIVE
        self.c["flows"] += 1
        return a

    def _call(self, a, fn, arg=None) -> None:
        try:
            fn() if arg is None else fn(arg)
        except Exception as e:
            self._fail(a, fn, e)

    def _fail(self, a, fn, e: BaseException) -> None:
        a._result = None              # a half-made decision is not a decision
        self.fault(a, f"{getattr(fn, '__name__', 'handler')} raised", e)

    # ---- delivery -------------------------------------------------------
    def step(self, messages, now_ns: int) -> None:
        """Poll the message handler and deliver what it drained."""
        if self.compiled is not None:             # poll and drain fused (fastpath.py)
            flows = self.compiled.step(messages, now_ns)
            if flows is not None:
                self._write(flows, now_ns)
            return
        batch = messages.poll(now_ns)
        if batch is not None:
            self.dispatch(batch, now_ns)

    def dispatch(self, batch, now_ns: int) -> None:
        """Deliver a message-handler Batch (groups of (flow, first arrival,
        event, Events), each flow's groups together), then decide and write
        per flow."""
        if self.compiled is not None:
            flows = self.compiled.drain(batch)
            if flows is not None:
                self._write(flows, now_ns)
            return
        touched = []
        prev = -1
        a = None
        calls = 0
        for f, _, e, ev in batch.groups:
            if f != prev:
                prev = f
                a = self.inst.get(f)
                if a is None:
                    a = self.instance(f)
                if a is not None:
                    touched.append(a)
            if a is None:
                self.c["no_algorithm"] += len(ev)
            elif not a._mask >> e & 1:
                self.c["unbound"] += len(ev)
            elif e == EV_CUSTOM:
                calls += 1
                self._custom(a, f, ev.rec)
            else:
                calls += 1
                try:
                    a._handlers[e](ev)
                except Exception as exc:
                    self._fail(a, a._handlers[e], exc)
        self.c["calls"] += calls
        self._decide_and_write(touched, now_ns)

    def _custom(self, a, flow, rec) -> None:
        seg = rec[:, V0]
        for sid in np.unique(seg).tolist():     # usually one segment kind
            part = rec[seg == sid]
            parser = self.segments.get(sid)
            parsed = None
            if parser is not None:
                try:
                    parsed = parser(*raw_bytes(part))
                except Exception as e:
                    self.fault(a, f"custom parser for segment {sid} raised", e)
            else:
                self.c["custom_unparsed"] += len(part)
            self._call(a, a._handlers[EV_CUSTOM], Events.of(flow, EV_CUSTOM, part, parsed))

    def deliver_host(self, samples, now_ns: int) -> None:
        """Host samples (name, values) to every instance bound to HOST."""
        if not samples or not self.host_bound:
            return
        for name, values in samples:
            hs = HostSample(name, now_ns, values)
            for a in self.host_bound:
                self._call(a, a._handlers[EV_HOST], hs)
        self._decide_and_write(self.host_bound, now_ns)

    def _write(self, flows, now_ns: int) -> None:
        """The staged decisions of ``flows`` through the filters into the table."""
        self._report(self.filter.write(self.cc, flows, now_ns))

    def _report(self, faults) -> None:
        """Log what the filters rejected or clamped (rows flow, kind, field)."""
        for f, kind, k in faults.tolist():
            a = self.compiled.alg if self.compiled is not None else self.inst.get(f)
            self.fault(a, f"{FAULTS[kind]} {FIELDS[k]}")

    def _decide_and_write(self, insts, now_ns: int) -> None:
        """decide() per flow; each decision is staged, then all pass the
        filters and what is left is stored (most are duplicates: nothing to
        store).  Probes asked for are flagged per flow, then the engine is
        told once (the doorbell)."""
        probes = 0
        staged = []
        for a in insts:
            try:
                a.decide()
            except Exception as exc:
                self._fail(a, a.decide, exc)
            if a._probe:
                a._probe = False
                self.cc.probe[a.flow] = 1
                probes += 1
            r = a._result
            if r is not None:
                a._result = None
                self.filter.put(a.flow, r)
                staged.append(a.flow)
        if staged:
            self._write(np.array(staged, np.int64), now_ns)
        if probes:
            self.cc.ctl[CTL_PROBE_DOORBELL] += 1

    # ---- teardown -------------------------------------------------------
    def teardown(self) -> None:
        for a in self.inst.values():
            self._call(a, a.teardown)
        if self.compiled is not None:
            self._call(self.compiled.alg, self.compiled.alg.teardown)
        for (name, what), n in sorted(self.faults.items()):
            if n > 1:
                log.warning("algorithm %r: %s: %d times in all", name, what, n)
        self.inst.clear()
        self.host_bound.clear()

    def stats(self) -> dict:
        return dict(self.c, filters=dict(self.filter.c),
                    faults={f"{n}: {w}": c for (n, w), c in self.faults.items()})

