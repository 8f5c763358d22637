"""The agent's fast path, for a compiled default algorithm
(cc_algorithms/compiled.py): one object serves every flow, and a whole
drain -- a message-handler RecordBatch -- goes to its compiled ``drain`` in
one call.  What the algorithm handler does per flow for Python algorithms
happens here per flow too (setup on its first record: periods, event mask,
FL_CC_ACTIVE; unbound events counted, not delivered), with the same filters
and counts; only the calls are fewer.  A step is three compiled calls: the
message handler's poll fused with the selection of what the algorithm binds
(_poll), the algorithm's drain, the filters' write.  Fusing those too (a
closure per algorithm) measured no faster and cannot be cached: Numba's
per-call cost is per argument, and after a nap every call runs cold.
"""
from collections import namedtuple

import numba as nb
import numpy as np

from taurus.datapath.ccshm import FL_CC_ACTIVE, REC_WIDTH

from .messages import B_EVICT, S_TAIL_AFTER, RecordBatch, _head, _prepare

EMPTY, READY, NEW_FLOWS, OVERLOAD = range(4)     # how _poll ended

FastArrays = namedtuple("FastArrays", "mask ok known out S P")
"""_select's arrays and the algorithm's state (FastPath.arrays)."""


@nb.njit(cache=True, nogil=True)
def _new_flows(flows, known):
    """The distinct flows (``flows`` is sorted) not seen yet."""
    out = np.empty(len(flows), np.int64)
    n = 0
    for f in flows:
        if not known[f] and (n == 0 or out[n - 1] != f):
            out[n] = f
            n += 1
    return out[:n]


@nb.njit(cache=True, nogil=True)
def _select(rows, bounds, flows, events, mask, ok, known, out_rows, out_bounds, out_flows):
    """The groups the algorithm takes -- bound events of flows it set up --
    written to out_rows, out_bounds and (their distinct flows) out_flows;
    returns (groups, distinct flows, records left out as unbound, ... as
    without an algorithm), or groups = -1 if a flow is new (set it up first)."""
    for f in flows:
        if not known[f]:
            return -1, 0, 0, 0
    out_bounds[0] = nr = ng = nu = unbound = no_alg = 0
    for g in range(len(flows)):
        f, a, b = flows[g], bounds[g], bounds[g + 1]
        if not (mask >> events[g]) & 1:
            unbound += b - a
        elif not ok[f]:
            no_alg += b - a
        else:
            out_rows[nr:nr + b - a] = rows[a:b]
            nr += b - a
            ng += 1
            out_bounds[ng] = nr
            if nu == 0 or out_flows[nu - 1] != f:
                out_flows[nu] = f
                nu += 1
    return ng, nu, unbound, no_alg


@nb.njit(cache=True, nogil=True)
def _poll(prod, cons, ring, ctl, bp, st, n, cap, batch_max, now, owner, nic, last_t, scratch,
          mask, ok, known, out):
    """The message handler's poll (steps 1, 2, 3, 5) and _select in one
    call: the common case of a step, without Python in between.  Returns
    (status, slot, length, occupancy, groups, distinct flows, unbound,
    no_alg): READY
    with the selection in ``out`` (rows, bounds, flows); EMPTY; NEW_FLOWS
    (the drain is prepared in ``scratch``: set them up, then select);
    OVERLOAD (only step 1 is done: the handler's own poll does the rest)."""
    i, k, occ = _head(prod, cons, ctl, bp, st, n, cap, batch_max, now)
    if k == 0:
        return EMPTY, 0, 0, occ, 0, 0, 0, 0
    if occ >= bp[B_EVICT]:
        return OVERLOAD, i, k, occ, 0, 0, 0, 0
    rec = ring[i:i + k]
    ng = _prepare(rec, False, st, n, ctl, owner, nic, last_t, scratch)
    if ng == 0:
        return EMPTY, i, k, occ, 0, 0, 0, 0
    sel, nu, unbound, no_alg = _select(scratch[0], scratch[1][:ng + 1], scratch[2][:ng],
                                       scratch[3][:ng], mask, ok, known, out[0], out[1], out[2])
    if sel < 0:
        return NEW_FLOWS, i, k, occ, ng, 0, 0, 0
    return READY, i, k, occ, sel, nu, unbound, no_alg


class FastPath:
    def __init__(self, alg, cc, filt, mask: int, periods: dict, counts: dict, fault, report):
        """``alg``: the CompiledAlgorithm (set up); ``filt``: the handler's
        UpdateFilter (its stage takes the decisions); ``mask``, ``periods``:
        what to ask of the engine per flow; ``counts``, ``fault``: the
        handler's counters and fault log; ``report``: logs a filtered
        write's fault rows."""
        self.alg, self.cc, self.filter, self.mask, self.periods = alg, cc, filt, mask, periods
        self.c, self.fault, self.report = counts, fault, report
        n = cc.max_flows
        self.S, self.P = alg.make_state(n)
        self.known = np.zeros(n, np.bool_)      # flows seen
        self.ok = np.zeros(n, np.bool_)         # ... and set up
        self.out = np.empty((3, 1025), np.int64)   # _select's rows, bounds, flows

    def arrays(self) -> FastArrays:
        """What _poll selects with and the algorithm's drain takes, for
        compiled code that steps (the agent's busy loop)."""
        return FastArrays(self.mask, self.ok, self.known, self.out, self.S, self.P)

    def warm(self, m) -> None:
        """Compile (or load from Numba's cache) every call now (``m``: the
        message handler; its state is left as it was)."""
        none, one = np.zeros(0, np.int64), np.zeros(1, np.int64)
        _new_flows(none, self.known)
        _select(none, one, none, none, self.mask, self.ok, self.known, *self.out)
        self.alg.flow_setup(self.S.copy(), self.P, 0, 0, 0)
        self.alg.drain(self.S, self.P, np.zeros((0, REC_WIDTH), np.int64), none, one,
                       self.filter.stage, self.filter.isset)
        st = np.zeros_like(m.st)
        st[S_TAIL_AFTER] = -1
        _poll(m._prod.copy(), m._cons.copy(), m._rec, m.ctl.copy(), m.bpa, st, m.n.copy(),
              m._cap, m.batch_max, 0, self.cc.owner, self.cc.nic, m.last_t.copy(),
              m.scratch.copy(), self.mask, self.ok, self.known, self.out)

    def step(self, m, now_ns: int):
        """Poll the message handler ``m`` and hand the drain to the algorithm,
        in one compiled call when nothing unusual happens; returns the flows
        whose decisions are staged (None: nothing to write)."""
        if self.out.shape[1] < m.scratch.shape[1]:
            self.out = np.empty_like(m.scratch[:3])
        cc = self.cc
        status, i, k, occ, ng, nu, unbound, no_alg = _poll(
            m._prod, m._cons, m._rec, m.ctl, m.bpa, m.st, m.n, m._cap, m.batch_max, now_ns,
            cc.owner, cc.nic, m.last_t, m.scratch, self.mask, self.ok, self.known, self.out)
        m.occupancy = occ
        if status == READY:
            return self._run(m._rec[i:i + k], ng, nu, unbound, no_alg)
        return self.finish(m, status, i, k, occ, ng)

    def finish(self, m, status: int, i: int, k: int, occ: float, ng: int):
        """What _poll left to Python: a drain with new flows (prepared: ng
        groups), or one in overload (only polled); as step() returns."""
        if status == NEW_FLOWS:
            return self.drain(RecordBatch(m._rec[i:i + k], m._rows, m._bounds[:ng + 1],
                                          m._flows[:ng], m._events[:ng]))
        if status == OVERLOAD:
            b = m.finish(i, k, occ)
            return self.drain(b) if b is not None else None
        return None

    def drain(self, b):
        """Hand a RecordBatch to the algorithm; returns the flows whose
        decisions are staged (None: nothing to write)."""
        if self.out.shape[1] <= len(b.rows):
            self.out = np.empty((3, len(b.rows) + 1), np.int64)
        out = self.out
        sel = _select(b.rows, b.bounds, b.flows, b.events, self.mask, self.ok, self.known, *out)
        if sel[0] < 0:
            for f in _new_flows(b.flows, self.known).tolist():
                self._setup(f)
            sel = _select(b.rows, b.bounds, b.flows, b.events, self.mask, self.ok, self.known,
                          *out)
        return self._run(b.rec, *sel)

    def _run(self, rec, ng: int, nu: int, unbound: int, no_alg: int):
        """The algorithm's drain over the selection in ``out`` (ng groups, nu flows)."""
        if unbound or no_alg:
            self.c["unbound"] += unbound
            self.c["no_algorithm"] += no_alg
        if not nu:
            return None
        self.c["calls"] += ng
        out = self.out
        bounds, flows = out[1][:ng + 1], out[2][:nu]
        try:
            self.alg.drain(self.S, self.P, rec, out[0][:bounds.item(ng)], bounds,
                           self.filter.stage, self.filter.isset)
        except Exception as e:
            self._failed(nu, e)
            return None
        return flows

    def _failed(self, nu: int, e: BaseException) -> None:
        """The drain raised: a half-made decision is not a decision."""
        self.filter.isset[self.out[2][:nu]] = False
        self.fault(self.alg, "drain raised", e)

    def _setup(self, f: int) -> None:
        self.known[f] = True
        cc = self.cc
        try:
            self.alg.flow_setup(self.S, self.P, f, int(cc.cwnd[f]), int(cc.rate[f]))
        except Exception as e:
            self.fault(self.alg, "setup failed", e)
            return
        self.ok[f] = True
        for c, v in self.periods.items():      # before the mask: the engine reads both
            cc.period_ns[f, c] = v
        cc.event_mask[f] = self.mask
        cc.flags[f] |= FL_CC_ACTIVE
        self.c["flows"] += 1
