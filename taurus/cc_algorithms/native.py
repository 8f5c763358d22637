"""Native mode from the algorithm side: the table of algorithms an engine is
handed (``Engine(native=table.native)``), and flows set up on it.

    tab = NativeTable(max_flows)          # the engine's max_flows
    dctcp = tab.add(Dctcp)                # algorithm ids, any number, each class once
    fixed = tab.add(MyAlgorithm)
    eng = Engine(..., max_flows=max_flows, native=tab.native)
    f = add_flow(eng, ...)
    tab.start(eng, f, dctcp, {"g": 0.0625})   # or a Params instance

``start`` writes flow f's parameter row (its Params, plus mss, line_rate and
max_cwnd: FlowContext, by default from f's NIC) and decision bounds, sets
the flow native (nic/setup.py set_flow_mode: the algorithm id, the event
mask from the algorithm's bindings with these parameters, the TIMER
period), runs the algorithm's ``init`` on the flow's zeroed state with the
decision in force (the context columns), and applies what init decided
through the engine's own bounds (ccnative.native_apply).  Each flow has its
own parameters; algorithms of any number share the engine.

Bounds of a flow's decisions (those of the agent's boundary filter by
default): rate RATE_MIN .. the line rate (none above when the line rate is
unknown), cwnd 1 MSS .. max_cwnd, credit 0 .. CREDIT_MAX.
"""
import dataclasses
import math

import numba as nb
import numpy as np

from taurus.datapath import ccnative as CN
from taurus.datapath.ccevents import EV_TIMER
from taurus.datapath.devices.nic.setup import (flow_nic, nic_init_credit, nic_rx_idle, nic_rx_tick,
                                               set_flow_mode)
from taurus.datapath.devices.nic.state import DR_SLOT, NR_LINE, NR_MSS

from .algorithm import (DECISION_DTYPE, FlowContext, check_class, event_mask, param_row)
from .params import ConfigError, Params, build
from .runtime import Runtime

RATE_MIN = 100_000.0
CREDIT_MAX = float(1 << 30)
IDLE_NS = 500_000              # a receiver's senders leave after this long silent


def pipe_credit(line_rate: int, delay_ns: int, mss: int) -> int:
    """The credit a new sender to a receiver starts with by default (RCCC's
    pipe-cleaning burst): one BDP of the receiver's link (line_rate bit/s)
    with an RTT of 4 times its delay (two alike links each way; 1 us when
    unknown), at least 2 MSS."""
    return max(2 * mss, int(line_rate) * 4 * (int(delay_ns) or 1000) // 8_000_000_000)


@dataclasses.dataclass
class _Alg:
    cls: type
    rt: Runtime
    st_off: int
    st_row: int
    par_off: int
    par_row: int


class NativeTable:
    """Native algorithms for one engine of ``max_flows`` flows (flow indices
    0 .. max_flows-1 each have a state and a parameter row per algorithm)."""

    def __init__(self, max_flows: int):
        if max_flows < 1:
            raise ValueError("max_flows must be >= 1")
        self.max_flows = int(max_flows)
        self.algs: list[_Alg] = []
        self._native = None
        self._D = np.zeros(1, DECISION_DTYPE)

    # ---- building (before the engine) -------------------------------------------
    def add(self, cls) -> int:
        """Algorithm ``cls`` (an Algorithm subclass; a receiver algorithm's
        rows are per receiving NIC, see start_receiver) in the table;
        returns its id (the same id if it is there already).  Compiles its
        native entry (cached on disk)."""
        for i, a in enumerate(self.algs):
            if a.cls is cls:
                return i
        if self._native is not None:
            raise ValueError("NativeTable.add: the engine has the table already; add every "
                             "algorithm before taking .native")
        check_class(cls)
        rt = Runtime(cls)
        st_off = sum(a.st_row for a in self.algs) * self.max_flows
        par_off = sum(a.par_row for a in self.algs) * self.max_flows
        self.algs.append(_Alg(cls, rt, st_off, rt.state_dtype.itemsize // 8,
                              par_off, rt.param_dtype.itemsize // 8))
        return len(self.algs) - 1

    @property
    def native(self) -> CN.NativeCC:
        """The arrays for ``Engine(native=...)`` (built once; the table and the
        engine share them)."""
        if self._native is None:
            F = self.max_flows
            tab = np.zeros((len(self.algs), CN.TAB_W), np.int64)
            for i, a in enumerate(self.algs):
                tab[i, CN.T_ENTRY] = a.rt.entry_address()
                tab[i, CN.T_ST_OFF], tab[i, CN.T_ST_ROW] = a.st_off, a.st_row
                tab[i, CN.T_PAR_OFF], tab[i, CN.T_PAR_ROW] = a.par_off, a.par_row
            if len(set(tab[:, CN.T_ENTRY])) < len(self.algs):
                # two algorithms' entries resolved to one body (taurus/numba_uids.py)
                raise RuntimeError("native table: two algorithms' compiled entries share one "
                                   f"address ({', '.join(a.cls.name for a in self.algs)}); "
                                   "remove the Numba cache (~/.cache/taurus) and rerun")
            n_st = max(1, sum(a.st_row for a in self.algs) * F)
            n_par = max(1, sum(a.par_row for a in self.algs) * F)
            self._native = CN.native_cc(np.zeros(n_st), np.zeros(n_par), tab,
                                        np.full(F, -1, np.int64), np.zeros((F, CN.N_LIM)))
        return self._native

    # ---- per flow ---------------------------------------------------------------
    def state(self, alg: int) -> np.ndarray:
        """Algorithm alg's state rows (a record view: ``state(a)[f].cwnd``)."""
        a = self.algs[alg]
        n = a.st_row * self.max_flows
        return self.native.st[a.st_off:a.st_off + n].view(a.rt.state_dtype)

    def params(self, alg: int) -> np.ndarray:
        """Algorithm alg's parameter rows (a record view)."""
        a = self.algs[alg]
        n = a.par_row * self.max_flows
        return self.native.par[a.par_off:a.par_off + n].view(a.rt.param_dtype)

    def make_params(self, alg: int, values=None, where: str | None = None) -> Params:
        """Algorithm alg's Params from a dict (ConfigError naming ``where.key``)
        or as given."""
        cls = self.algs[alg].cls
        if isinstance(values, Params):
            if not isinstance(values, cls.Params):
                raise ConfigError(f"{cls.name}: expected {cls.Params.__name__}, got "
                                  f"{type(values).__name__}")
            return values
        return build(cls.Params, values, where or f"{cls.name}.params")

    def set_flow(self, flow: int, alg: int, params=None, ctx: FlowContext | None = None,
                 rate_max: float | None = None) -> tuple[int, int]:
        """Write flow's parameter row and decision bounds for algorithm alg
        (rate_max: the rate bound, default ctx.line_rate; 0 none); returns
        (event_mask, timer_ns) its bindings give with these parameters.
        ``start`` does this and the rest."""
        if not 0 <= flow < self.max_flows:
            raise ValueError(f"flow {flow} is beyond the table's {self.max_flows} flows")
        cls = self.algs[alg].cls
        p = self.make_params(alg, params)
        ctx = ctx or FlowContext()
        t = cls.timer_ns(p)
        mask = event_mask(cls, p)
        if (mask >> EV_TIMER) & 1 and t <= 0:
            raise ConfigError(f"algorithm {cls.name!r} binds TIMER with a period of {t} ns")
        self.params(alg)[flow] = param_row(cls, p, ctx)[0]
        hi = float(ctx.line_rate if rate_max is None else rate_max)
        self.native.lim[flow] = (RATE_MIN, hi if hi > 0 else math.inf, float(ctx.mss),
                                 float(ctx.max_cwnd), 0.0, CREDIT_MAX)
        return mask, (t if (mask >> EV_TIMER) & 1 else 0)

    def start(self, eng, flow: int, alg: int, params=None,
              ctx: FlowContext | None = None) -> None:
        """Flow ``flow`` of engine ``eng`` runs algorithm ``alg`` natively
        from now on, with these parameters (a dict, a Params, or None for
        the defaults) and context (default: the flow's NIC's MSS and line
        rate, max_cwnd 1 GiB; a NIC of unknown line rate: FlowContext's
        default in ``p.line_rate``, no upper rate bound)."""
        if eng.E.alg is not self._native:
            raise ValueError("this engine was not built with this table "
                             "(Engine(native=table.native))")
        nic = flow_nic(eng, flow)
        rate_max = None
        if ctx is None:
            ctx = FlowContext(mss=nic["mss"], line_rate=nic["line_rate"] or FlowContext.line_rate)
            rate_max = nic["line_rate"]
        if self.algs[alg].cls.role != "sender":
            raise ConfigError(f"algorithm {self.algs[alg].cls.name!r} is a receiver algorithm: "
                              f"start_receiver() gives it a NIC")
        mask, t = self.set_flow(flow, alg, params, ctx, rate_max)
        set_flow_mode(eng, flow, "native", alg=alg, event_mask=mask, timer_ns=t)
        self._init(eng, flow, alg, nic["slot"])

    def _init(self, eng, flow: int, alg: int, slot: int) -> None:
        """init on the (zeroed) state, with the decision in force in d; its
        decision applied as the engine applies any."""
        cc, A = eng.cc, self.native
        D = self._D
        D[:] = 0
        D[0]["rate"], D[0]["cwnd"], D[0]["credit"] = cc.rate[flow], cc.cwnd[flow], cc.credit[flow]
        S, P = self.state(alg), self.params(alg)
        rt = self.algs[alg].rt
        rt.setup(S[flow:flow + 1], P[flow:flow + 1], D, 0)
        A.dec[:] = D.view(np.int64)
        CN.native_apply(A, eng.E.rep, slot, flow, eng.now())

    def warm(self, eng) -> None:
        """Compile (or load from Numba's cache) what ``start`` and
        ``start_receiver`` run, now, changing nothing: a long-lived engine
        (``taurus perf -s``) meets its first native flow between two run
        chunks, where a compile would stop its loop for seconds on a cold
        cache while the flow's peer is timing it."""
        if eng.E.alg is not self._native:
            raise ValueError("this engine was not built with this table "
                             "(Engine(native=table.native))")
        for i, a in enumerate(self.algs):
            # init runs on a scratch row of default parameters, never a zeroed one
            # (an init that divides by p.mss must not fault here)
            P = self.params(i)[:1].copy()
            P[0] = param_row(a.cls, a.cls.Params(), FlowContext())[0]
            try:
                a.rt.setup(self.state(i)[:1].copy(), P, self._D.copy(), 0)
            except nb.core.errors.NumbaError:
                raise
            except Exception:
                pass             # only its compilation counts here
        A = self._native
        dec = A.dec.copy()
        A.dec[:] = 0             # no decision (set bits 0): nothing is applied
        CN.native_apply(A, eng.E.rep, 0, 0, eng.now())
        A.dec[:] = dec

    # ---- per receiving NIC ----------------------------------------------------------
    def start_receiver(self, eng, dev: int, alg: int, params=None,
                       ctx: FlowContext | None = None, idle_ns: int = IDLE_NS,
                       init_credit: int | None = None) -> None:
        """NIC device ``dev`` of ``eng`` runs receiver algorithm ``alg``
        natively: it sees JOIN, DATA, LEAVE (closed, or silent for idle_ns)
        and, if it binds TIMER, a TIMER per period of each of its senders
        (nic/rxcc.py) and its ``set_credit`` grants are their credit.  Its
        state and parameter row is the NIC's index.  init_credit: the credit
        a new sender starts with before any grant (nic_init_credit; default:
        the NIC's as it is), e.g. ``pipe_credit``.  Credit flows to the NIC
        (add_flow credit=True, starting from the same initial credit) are
        the senders it grants."""
        if eng.E.alg is not self._native:
            raise ValueError("this engine was not built with this table "
                             "(Engine(native=table.native))")
        cls = self.algs[alg].cls
        if cls.role != "receiver":
            raise ConfigError(f"algorithm {cls.name!r} is a {cls.role} algorithm, not a receiver")
        n = int(eng.E.devs.regs[dev, DR_SLOT])
        if not n < min(self.max_flows, len(self.native.nic_alg)):
            raise ValueError(f"NIC index {n} beyond the table's rows")
        p = self.make_params(alg, params)
        binds_timer = (event_mask(cls, p) >> EV_TIMER) & 1
        tick = cls.timer_ns(p) if binds_timer else 0
        if binds_timer and tick <= 0:
            raise ConfigError(f"algorithm {cls.name!r} binds TIMER with a period of {tick} ns")
        if ctx is None:
            N = eng.E.nic
            ctx = FlowContext(mss=int(N.nr[n, NR_MSS]),
                              line_rate=float(N.nr[n, NR_LINE]) or FlowContext.line_rate)
        self.params(alg)[n] = param_row(cls, p, ctx)[0]
        S = self.state(alg)
        S[n:n + 1].view(np.float64)[:] = 0.0
        D = self._D
        D[:] = 0
        self.algs[alg].rt.setup(S[n:n + 1], self.params(alg)[n:n + 1], D, 0)
        self.native.nic_alg[n] = alg
        nic_rx_idle(eng, dev, idle_ns)
        nic_rx_tick(eng, dev, tick)
        if init_credit is not None:
            nic_init_credit(eng, dev, init_credit)
