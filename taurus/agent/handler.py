"""Algorithm handler (paper §3.5): every algorithm -- the default and the
per-flow overrides, compiled or plain Python -- runs through one path,
``Runtime.drain`` (cc_algorithms/runtime.py), over the ring's own records.

- Classes and tables: each algorithm class in use has its Runtime (``jit``
  from the config) and its state and parameter tables, one row per flow of
  the engine; the decision table ``D`` (algorithm.DECISION_DTYPE) is one,
  shared by every class (a flow has one algorithm).
- A flow is set up on its first record (and again at the first record of
  a new connection on its row, as a closed flow's row is reused:
  forget_reused): the per-flow override if configured, else the default
  algorithm.  Its state row is zeroed, its
  ``D`` row holds the rate and cwnd in the context table (so an algorithm
  can go on from them after an agent restart), its parameter row is the
  class's Params plus mss, line rate and the cwnd bound; then ``init`` runs,
  and what it decides is written like any decision.  Then the flow's
  aggregation periods (period_ns), TIMER period (timer_ns) and event_mask,
  then FL_CC_ACTIVE.  ctl[CTL_DEFAULT_MASK] is the default's mask.
- A step: the message handler's poll fused with the selection of bound
  events of set-up flows (fastpath._poll; unbound records and those of flows
  without an algorithm are counted, not delivered), one drain per class with
  records, then apply_write: the decisions of the touched flows out of ``D``
  -- rate, cwnd and credit through the update filters (filters.py), the
  entropy decision (ev, ev_n), probes (cc.probe, one CTL_PROBE_DOORBELL) --
  and host actions (host_cpu, host_mba) here in Python, on HostActions.
- HOST: each host-sampler reading becomes one EV_HOST record per flow whose
  algorithm binds HOST (signals.host_fields), delivered through the same
  drain; the engine's own HOST records (the NIC's host model and the peer's
  echoed host delay, devices/nic/host.py) come through the ring like any
  other event.
- Containment: a handler that raises costs its record, and its flow loses
  that drain's decisions (a half-made decision is not a decision); init
  raising leaves the flow without an algorithm; a non-finite decision is
  rejected and an out-of-bounds one clamped by the filters; a bad host
  action is dropped.  Each kind of fault is logged once per algorithm (with
  the exception when there is one: only uncompiled code keeps it), then only
  counted (``faults`` in stats, and a summary at teardown).
- With one algorithm class and ``jit``, ``taurus agent run`` steps inside a
  compiled loop while reports keep coming (busyloop.py); with several
  classes (overrides of another class) or ``jit = false`` every step is
  driven from Python as above.
"""
import logging
import math
import os

import numba as nb
import numpy as np

from taurus.cc_algorithms.algorithm import (D_HOST_CPU, D_HOST_MBA, DECISION_DTYPE, FlowContext,
                                           class_periods, event_mask, param_row)
from taurus.cc_algorithms.runtime import Runtime
from taurus.datapath.ccevents import EVENT_NAMES, SAMPLER_IDS
from taurus.datapath.ccshm import (COUNT, CTL_DEFAULT_MASK, CTL_OPENED, DEFAULT_PERIOD_NS,
                                   EV_HOST, EVENT, FL_CC_ACTIVE, FLOW, REC_WIDTH, T_FIRST,
                                   T_LAST, V0)

from .busyloop import BusyLoop
from .fastpath import (NEW_FLOWS, OVERLOAD, READY, ApplyArrays, FastArrays, _new_flows, _poll,
                       _select, apply_write, discard)
from .filters import CLAMPED, FIELDS, REJECTED, UpdateFilter
from .messages import S_TAIL_AFTER, RecordBatch
from .signals import host_fields

log = logging.getLogger("taurus.agent.handler")
FAULTS = {REJECTED: "non-finite", CLAMPED: "out of bounds, clamped:"}
CPU_PERIOD_US = 100_000           # host_cpu: cpu.max's period


def plain(a):
    """A record array as compiled code takes it: Numba's dispatcher types an
    np.recarray in Python (~2 us an argument), a plain ndarray in C."""
    return a.view(np.ndarray)


class AlgClass:
    """One algorithm class in use: its Runtime and its state and parameter
    tables (a row per flow of the engine): ``S``, ``P`` as np.recarray (plain
    Python handlers read their fields as attributes), ``Sx``, ``Px`` as the
    runtime takes them (compiled: plain ndarray views of the same memory)."""

    def __init__(self, index: int, cls, jit: bool, max_flows: int):
        self.index, self.cls, self.name = index, cls, cls.name
        self.rt = Runtime(cls, jit=jit)
        self.S, self.P, _ = self.rt.tables(max_flows)
        self.Sx, self.Px = (plain(self.S), plain(self.P)) if jit else (self.S, self.P)
        self.samplers_added = False


class FlowConf:
    """What a flow of one (class, Params) gets at set-up."""

    def __init__(self, alg: AlgClass, params, ctx: FlowContext):
        cls = alg.cls
        self.alg, self.params = alg, params
        self.prow = param_row(cls, params, ctx)[0]
        self.mask = event_mask(cls, params)
        self.periods = class_periods(cls)
        self.timer = cls.timer_ns(params)


class AlgorithmHandler:
    def __init__(self, cc, cfg, host=None, samplers=None):
        """``host``: HostActions (None: host actions are faults);
        ``samplers``: the agent's SamplerSet (algorithms' samplers join it)."""
        self.cc, self.cfg, self.host, self.samplers = cc, cfg, host, samplers
        self.jit = cfg.agent.jit
        n = cc.max_flows
        b = cfg.bounds
        self.filter = UpdateFilter(n, (b.rate_min_bps, cfg.cwnd_min(), b.credit_min_bytes),
                                   (cfg.rate_max(), b.cwnd_max_bytes, b.credit_max_bytes))
        self.algs = []              # AlgClass, by index
        by_cls, confs = {}, {}

        def conf_of(cls, params, start):
            k = (cls, id(params), start)
            c = confs.get(k)
            if c is None:
                a = by_cls.get(cls)
                if a is None:
                    a = by_cls[cls] = AlgClass(len(self.algs), cls, self.jit, n)
                    self.algs.append(a)
                ctx = FlowContext(mss=cfg.agent.mss, line_rate=float(cfg.agent.line_rate_bps),
                                  max_cwnd=float(b.cwnd_max_bytes), init_cwnd=start[0],
                                  init_rate=start[1])
                c = confs[k] = FlowConf(a, params, ctx)
            return c
        default, per_flow = cfg.resolve()
        self.default = conf_of(*default, cfg.flow_start(-1))
        self.per_flow = {f: conf_of(*cp, cfg.flow_start(f)) for f, cp in per_flow.items()
                         if f < n}
        self.D = np.zeros(n, DECISION_DTYPE).view(np.recarray)
        self.Dn = plain(self.D)                    # for the agent's compiled steps
        self.Dx = self.Dn if self.jit else self.D  # for the drains
        self.known = np.zeros(n, np.bool_)         # flows seen
        self.conn = np.zeros(n, np.int64)          # ... the connection (cc.conn) set up
        self.opened = -1                           # cc's CTL_OPENED when last compared
        self.falg = np.full(n, -1, np.int64)       # ... their class (-1: none, setup failed)
        self.fmask = np.zeros(n, np.int64)         # ... the events it binds (HOST too)
        w = cc.ring.capacity + 1
        self.out = np.empty((2, w), np.int64)      # _select's rows and distinct flows
        self.astart = np.zeros(len(self.algs) + 1, np.int64)
        self.dfaults = np.empty(w, np.int64)       # a drain's faulted flows
        self.hostbuf = np.empty(n, np.int64)       # flows with host actions to take
        self.host_flows = []                       # flows whose algorithm binds HOST
        self.faults = {}            # (algorithm, what) -> count
        self.first_fault = None     # (class, detail, exception or None): the first handler fault
        self.c = dict(flows=0, calls=0, unbound=0, no_algorithm=0, host=0, reused=0)
        self._host_last = {}        # host action -> the value last applied
        self.busy = None            # the compiled busy loop (busyloop.py), once warmed

    def start(self) -> None:
        self.cc.ctl[CTL_DEFAULT_MASK] = self.default.mask

    def warm(self, m, loop=None) -> None:
        """Compile (or load from Numba's cache) every call now, before the
        agent announces itself, not in its first drain (``m``: the message
        handler, left as it was); ``loop``: (doorbell, cadence, timer slack)
        to compile the busy loop with as well (jit and one algorithm class)."""
        none, one = np.zeros(0, np.int64), np.zeros(1, np.int64)
        _new_flows(none, self.known)
        _select(none, one, none, none, 0, self.fmask, self.falg, self.known, self.out[0],
                self.out[1], self.astart.copy())
        self._apply(none, 0)
        discard(self.Dn, self.dfaults, 0)
        empty = np.zeros((0, REC_WIDTH), np.int64)
        confs = {}
        for c in [self.default, *self.per_flow.values()]:
            confs.setdefault(c.alg.index, c)
        for a in self.algs:
            a.rt.drain(a.Sx, a.Px, self.Dx, empty, none, self.dfaults)   # compile errors: raised
            # init runs on scratch rows holding a real flow's parameters (an
            # init that divides by p.mss must not fault on a zeroed row)
            P = a.Px[:1].copy()
            P[0] = confs[a.index].prow
            try:
                a.rt.setup(a.Sx[:1].copy(), P, self.Dx[:1].copy(), 0)
            except nb.core.errors.NumbaError:
                raise
            except Exception:
                pass              # only its compilation counts here; a real flow's fault is counted
        st = np.zeros_like(m.st)
        st[S_TAIL_AFTER] = -1
        _poll(m._prod.copy(), m._cons.copy(), m._rec, m.ctl.copy(), m.bpa, st, m.n.copy(),
              m._cap, m.batch_max, 0, self.cc.owner, self.cc.nic, m.last_t.copy(),
              m.scratch.copy(), m.copy.copy(), self.fmask, self.falg, self.known, self.out, self.astart.copy())
        if loop is not None and self.jit and len(self.algs) == 1:
            self.busy = BusyLoop(self, *loop)
            self.busy.warm(m)

    # ---- containment ----------------------------------------------------
    def fault(self, name: str, what: str, detail=None, n: int = 1) -> None:
        k = (name, what)
        m = self.faults.get(k, 0)
        self.faults[k] = m + n
        if m == 0:
            log.warning("algorithm %r: %s%s (logged once; further occurrences are counted)",
                        name, what, f": {detail}" if detail is not None else "")

    def handler_faults(self, a: AlgClass, nf: int) -> None:
        """``nf`` records whose handler raised (their flows lost this drain's decisions)."""
        err = a.rt.last_error
        if err is not None:
            e, exc = err
            detail = f"on_{EVENT_NAMES[e].lower()}: {exc!r}"
        else:
            detail = "compiled: set cc.jit = false ([agent] jit = false) to see the exception"
        if self.first_fault is None:
            self.first_fault = (a.cls, detail, err[1] if err is not None else None)
        self.fault(a.name, "handler raised", detail, nf)

    def drain_raised(self, a: AlgClass, flows, exc: BaseException) -> None:
        """A drain raised (not a handler: those are caught inside): its
        flows' decisions are dropped."""
        mine = flows[self.falg[flows] == a.index]
        self.D["set"][mine] = 0
        self.fault(a.name, "drain raised", repr(exc))

    # ---- flows ------------------------------------------------------------
    def forget_reused(self) -> None:
        """Rows of closed flows that carry a new connection now (the engine
        bumped their ``conn`` and CTL_OPENED) are flows not seen yet: set up
        afresh at their first record, not run on the old connection's state
        and filters.  One compare per step while no connection opened."""
        o = int(self.cc.ctl[CTL_OPENED])
        if o == self.opened:
            return
        self.opened = o
        stale = np.flatnonzero(self.known & (self.cc.conn != self.conn))
        if len(stale) == 0:
            return
        self.known[stale] = False
        self.falg[stale] = -1
        self.fmask[stale] = 0
        W = self.filter
        W.last[stale], W.isset[stale], W.stage[stale] = -1, False, 0.0
        if self.host_flows:
            gone = set(stale.tolist())
            self.host_flows = [f for f in self.host_flows if f not in gone]
        self.c["reused"] += len(stale)

    def _setup(self, f: int) -> bool:
        self.known[f] = True
        self.conn[f] = self.cc.conn[f]
        conf = self.per_flow.get(f, self.default)
        a = conf.alg
        cc, D = self.cc, self.D
        a.S[f] = np.zeros((), a.S.dtype)
        a.P[f] = conf.prow
        D[f] = np.zeros((), D.dtype)
        D["cwnd"][f], D["rate"][f] = cc.cwnd[f], cc.rate[f]   # in force (an agent restart)
        try:
            a.rt.setup(a.Sx, a.Px, self.Dx, f)
        except Exception as e:
            D["set"][f] = 0
            self.fault(a.name, "setup failed", repr(e))
            if self.first_fault is None:
                self.first_fault = (a.cls, f"init: {e!r}", e)
            return False
        self.falg[f], self.fmask[f] = a.index, conf.mask
        for c, v in enumerate(DEFAULT_PERIOD_NS):   # every class: a reused row keeps none of
            cc.period_ns[f, c] = conf.periods.get(c, v)   # its last flow's (before the mask)
        cc.timer_ns[f] = conf.timer
        cc.event_mask[f] = conf.mask
        cc.flags[f] |= FL_CC_ACTIVE
        self.c["flows"] += 1
        if conf.mask >> EV_HOST & 1:
            self.host_flows.append(f)
        if not a.samplers_added:
            a.samplers_added = True
            for name, period in (a.cls.samplers or {}).items():
                if self.samplers is not None:
                    try:
                        self.samplers.add(name, period)
                    except Exception as e:
                        self.fault(a.name, f"host sampler {name!r} unavailable", repr(e))
        return True

    def _setup_flows(self, flows) -> np.ndarray:
        """Set up ``flows``; returns those set up (their init may have decided)."""
        return np.array([f for f in flows.tolist() if self._setup(f)], np.int64)

    # ---- a step -------------------------------------------------------------
    def step(self, m, now_ns: int) -> None:
        """Poll the message handler ``m`` and deliver what it drained: one
        compiled call for the poll and the selection when nothing unusual
        happens, then the drains and the decisions."""
        self.forget_reused()
        cc = self.cc
        status, i, k, occ, nsel, nu, unbound, no_alg = _poll(
            m._prod, m._cons, m._rec, m.ctl, m.bpa, m.st, m.n, m._cap, m.batch_max, now_ns,
            cc.owner, cc.nic, m.last_t, m.scratch, m.copy, self.fmask, self.falg, self.known,
            self.out, self.astart)
        m.occupancy = occ
        if status == READY:
            self._run(m.copy, nsel, nu, unbound, no_alg, now_ns)
        else:
            self.finish(m, status, i, k, occ, nsel, now_ns)

    def finish(self, m, status: int, i: int, k: int, occ: float, ng: int, now_ns: int) -> None:
        """What _poll left to Python: a drain with new flows (prepared: ng
        groups), or one in overload (only polled)."""
        if status == NEW_FLOWS:
            self.dispatch(RecordBatch(m.copy[:k], m._rows, m._bounds[:ng + 1],
                                      m._flows[:ng], m._events[:ng]), now_ns)
        elif status == OVERLOAD:
            b = m.finish(i, k, occ)
            if b is not None:
                self.dispatch(b, now_ns)

    def dispatch(self, b: RecordBatch, now_ns: int) -> None:
        """Deliver a message-handler RecordBatch: new flows set up, then the
        drains and the decisions."""
        sel = _select(b.rows, b.bounds, b.flows, b.events, 0, self.fmask, self.falg, self.known,
                      self.out[0], self.out[1], self.astart)
        new = None
        if sel[0] < 0:
            new = self._setup_flows(_new_flows(b.flows, self.known))
            sel = _select(b.rows, b.bounds, b.flows, b.events, 0, self.fmask, self.falg,
                          self.known, self.out[0], self.out[1], self.astart)
        self._run(b.rec, *sel, now_ns, new)

    def _run(self, rec, nsel: int, nu: int, unbound: int, no_alg: int, now_ns: int,
             new=None) -> None:
        """The drains over the selection in ``out`` (nsel records of nu
        flows), then the decisions of those flows and of ``new`` ones."""
        c = self.c
        if unbound or no_alg:
            c["unbound"] += unbound
            c["no_algorithm"] += no_alg
        flows = self.out[1][:nu]
        if nsel > 0:
            c["calls"] += nsel
            rows, st = self.out[0], self.astart
            for a in self.algs:
                lo, hi = st.item(a.index), st.item(a.index + 1)
                if hi > lo:
                    self._drain(a, rec, rows[lo:hi], flows, self.dfaults)
        if new is not None and len(new):
            flows = np.union1d(flows, new)
        if len(flows):
            self._apply(flows, now_ns)

    def _drain(self, a: AlgClass, rec, rows, flows, faults) -> None:
        try:
            nf = a.rt.drain(a.Sx, a.Px, self.Dx, rec, rows, faults)
        except Exception as e:
            self.drain_raised(a, flows, e)
            return
        if nf:
            discard(self.Dn, faults, nf)
            self.handler_faults(a, nf)

    def _apply(self, flows, now_ns: int) -> None:
        """The decisions of ``flows`` (int64 array) into the context table,
        then the host actions."""
        W, cc = self.filter, self.cc
        nf, nh = apply_write(flows, self.Dn, cc.ev, cc.ev_n, cc.probe, cc.ctl, self.hostbuf,
                             W.stage, W.isset, W.lo, W.hi, W.last, W.n, cc.rate, cc.cwnd,
                             cc.credit, cc.version, cc.updated_ns, now_ns, W.faults)
        if nf:
            self.report(W.faults[:nf])
        if nh:
            self.host_actions(self.hostbuf[:nh])

    def report(self, faults) -> None:
        """Log what the filters rejected or clamped (rows flow, kind, field)."""
        for f, kind, k in faults.tolist():
            a = self.falg.item(f)
            self.fault(self.algs[a].name if a >= 0 else "?", f"{FAULTS[kind]} {FIELDS[k]}")

    # ---- host ---------------------------------------------------------------
    def deliver_host(self, samples, now_ns: int) -> None:
        """Host-sampler readings (name, values) as EV_HOST records to every
        flow whose algorithm binds HOST, through the same drains."""
        if not samples or not self.host_flows:
            return
        vals = [host_fields(name, v) for name, v in samples if name in SAMPLER_IDS]
        if not vals:
            return
        flows = np.array(self.host_flows, np.int64)
        rec = np.zeros((len(flows) * len(vals), REC_WIDTH), np.int64)
        rec[:, FLOW] = np.repeat(flows, len(vals))
        rec[:, EVENT] = EV_HOST
        rec[:, T_FIRST] = rec[:, T_LAST] = now_ns
        rec[:, COUNT] = 1
        rec[:, V0:V0 + 3] = np.tile(np.array(vals, np.int64), (len(flows), 1))
        faults = np.empty(len(rec), np.int64)
        alg_of = self.falg[rec[:, FLOW]]
        for a in self.algs:
            rows = np.flatnonzero(alg_of == a.index)
            if len(rows):
                self._drain(a, rec, rows, flows, faults)
        self.c["host"] += len(rec)
        self.c["calls"] += len(rec)
        self._apply(flows, now_ns)

    def host_actions(self, flows) -> None:
        """The host actions ``flows`` decided (their D rows), on HostActions;
        the last of a step wins, a repeat of the value in force is not
        applied again."""
        D = self.D
        for f in flows.tolist():
            a = self.falg.item(f)
            name = self.algs[a].name if a >= 0 else "?"
            s = int(D["set"][f])
            if s & D_HOST_CPU:
                self._host_cpu(name, float(D["host_cpu"][f]))
            if s & D_HOST_MBA:
                self._host_mba(name, float(D["host_mba"][f]))
            D["set"][f] = 0

    def _host_cpu(self, name: str, share: float) -> None:
        """The host cgroup's cpu.max: ``share`` of a CPU per CPU_PERIOD_US (as
        many CPUs as the machine has or more: no limit)."""
        if not (math.isfinite(share) and share > 0):
            self.fault(name, "host_cpu: not a CPU share > 0", repr(share))
            return
        if self._host_ok(name, "cpu", share):
            ncpu = os.cpu_count() or 1
            r = self.host.cpu_max(None if share >= ncpu else round(share * CPU_PERIOD_US),
                                  CPU_PERIOD_US)
            if not r.ok:
                self.fault(name, "host_cpu failed", r.detail)

    def _host_mba(self, name: str, percent: float) -> None:
        """resctrl memory-bandwidth allocation, ``percent`` (HostActions.mba)."""
        if not (math.isfinite(percent) and 0 < percent <= 100):
            self.fault(name, "host_mba: not a percent in (0, 100]", repr(percent))
            return
        if self._host_ok(name, "mba", percent):
            r = self.host.mba(round(percent))
            if not r.ok:
                self.fault(name, "host_mba failed", r.detail)

    def _host_ok(self, name: str, what: str, value: float) -> bool:
        """Whether to act: there are host actions and the value is new."""
        if self.host is None:
            self.fault(name, f"host_{what}: no host actions ([host] cgroup unset)")
            return False
        if self._host_last.get(what) == value:
            return False
        self._host_last[what] = value
        return True

    # ---- for the busy loop ----------------------------------------------------
    def arrays(self) -> FastArrays:
        """What _select and the (one) class's drain take, for compiled code
        that steps (the agent's busy loop)."""
        a = self.algs[0]
        return FastArrays(self.fmask, self.falg, self.known, self.out, self.astart, self.dfaults,
                          self.hostbuf, a.Sx, a.Px, self.Dx)

    def apply_arrays(self) -> ApplyArrays:
        return ApplyArrays(self.cc.ev, self.cc.ev_n, self.cc.probe)

    # ---- teardown -------------------------------------------------------
    def teardown(self) -> None:
        for (name, what), n in sorted(self.faults.items()):
            if n > 1:
                log.warning("algorithm %r: %s: %d times in all", name, what, n)
        self.host_flows.clear()

    def stats(self) -> dict:
        return dict(self.c, filters=dict(self.filter.c),
                    faults={f"{n}: {w}": c for (n, w), c in self.faults.items()})
