"""The agent's fast path, for a compiled default algorithm
(cc_algorithms/compiled.py): one object serves every flow, and a whole
drain -- a message-handler RecordBatch -- goes to its compiled ``drain`` in
one call.  What the algorithm handler does per flow for Python algorithms
happens here per flow too (setup on its first record: periods, event mask,
FL_CC_ACTIVE; unbound events counted, not delivered), with the same filters
and counts; only the calls are fewer.
"""
import numba as nb
import numpy as np

from taurus.datapath.ccshm import FL_CC_ACTIVE, REC_WIDTH


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
def _select(rows, bounds, flows, events, mask, ok, known):
    """The groups the algorithm takes -- bound events of flows it set up --
    as (rows, bounds, their distinct flows), and how many records were left
    out as unbound and as without an algorithm; None if a flow is new (set
    it up first)."""
    for f in flows:
        if not known[f]:
            return None
    out_rows = np.empty(len(rows), np.int64)
    out_bounds = np.empty(len(bounds), np.int64)
    uflows = np.empty(len(flows), np.int64)
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
            if nu == 0 or uflows[nu - 1] != f:
                uflows[nu] = f
                nu += 1
    return out_rows[:nr], out_bounds[:ng + 1], uflows[:nu], unbound, no_alg


class FastPath:
    def __init__(self, alg, cc, filt, mask: int, periods: dict, counts: dict, fault):
        """``alg``: the CompiledAlgorithm (set up); ``filt``: the handler's
        UpdateFilter (its stage takes the decisions); ``mask``, ``periods``:
        what to ask of the engine per flow; ``counts``, ``fault``: the
        handler's counters and fault log."""
        self.alg, self.cc, self.filter, self.mask, self.periods = alg, cc, filt, mask, periods
        self.c, self.fault = counts, fault
        n = cc.max_flows
        self.S, self.P = alg.make_state(n)
        self.known = np.zeros(n, np.bool_)      # flows seen
        self.ok = np.zeros(n, np.bool_)         # ... and set up

    def warm(self) -> None:
        """Compile (or load from Numba's cache) every call now."""
        none, one = np.zeros(0, np.int64), np.zeros(1, np.int64)
        _new_flows(none, self.known)
        _select(none, one, none, none, self.mask, self.ok, self.known)
        self.alg.flow_setup(self.S.copy(), self.P, 0, 0, 0)
        self.alg.drain(self.S, self.P, np.zeros((0, REC_WIDTH), np.int64), none, one,
                       self.filter.stage, self.filter.isset)

    def drain(self, b):
        """Hand a RecordBatch to the algorithm; returns the flows whose
        decisions are staged (None: nothing to write)."""
        sel = _select(b.rows, b.bounds, b.flows, b.events, self.mask, self.ok, self.known)
        if sel is None:
            for f in _new_flows(b.flows, self.known).tolist():
                self._setup(f)
            sel = _select(b.rows, b.bounds, b.flows, b.events, self.mask, self.ok, self.known)
        rows, bounds, flows, unbound, no_alg = sel
        if unbound or no_alg:
            self.c["unbound"] += unbound
            self.c["no_algorithm"] += no_alg
        if not len(flows):
            return None
        self.c["calls"] += len(bounds) - 1
        try:
            self.alg.drain(self.S, self.P, b.rec, rows, bounds, self.filter.stage,
                           self.filter.isset)
        except Exception as e:
            self.filter.isset[flows] = False    # a half-made decision is not a decision
            self.fault(self.alg, "drain raised", e)
            return None
        return flows

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
