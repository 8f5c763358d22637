"""Native mode: algorithms compiled into the engine, called for each event
of the flows flagged FL_NATIVE (the in-datapath baseline the agent is
measured against).  Their decisions go to the same context columns the
agent writes, so the NIC's gates read one place whatever the mode.

The datapath names no algorithm: whoever builds the engine hands it a table
(``Engine(native=...)``, a ``NativeCC``; cc_algorithms/native.py builds one
from algorithm classes).  Row k of ``tab`` is algorithm k: the machine
address of its native entry (cc_algorithms/runtime.py, NATIVE_SIG, the same
signature for every algorithm) and where its state and parameter rows lie
in the flat ``st`` and ``par`` buffers (one row per flow index, of
``*_ROW`` float64 words each).  ``flow_alg[f]`` is flow f's algorithm (-1
none); ``lim[f]`` its decision bounds.  The engine calls the entries
through their addresses, so its cached machine code is the same whatever
the algorithms; an engine without a table refuses native flows.

Only plain arrays go into the tuple: a Python object (or a namedtuple built
anew in Python) in the engine tuple would push every ``engine_run`` call
off Numba's fast argument path (about 1.2 ms instead of 25 us a call).

Per event (report.py routes every bound event of a native flow here, one
record each, never aggregated): the record is built in ``rec`` (ccshm
layout: FLOW, EVENT, T_FIRST = T_LAST = now, COUNT = 1, values), the
decision scratch's ``set`` word is zeroed, the entry runs, and what the
handler set is applied (``native_apply``), as the agent's boundary filter
would: a value that is not a finite number is rejected (counted in
CTL_NATIVE_REJECTED, the column keeps its value), one outside the flow's
bounds clamped (CTL_NATIVE_CLAMPED), then rounded half to even (np.rint).
The bounds are the builder's, per flow (by default rate 100 kbit/s .. the
NIC's line rate, none above if unknown; cwnd 1 MSS .. 1 GiB; credit 0 ..
1 GiB).  rate, cwnd, credit go to their columns; ev, ev_n to the entropy
columns; D_PROBE sets the flow's probe column and rings the probe doorbell
as the agent does (nic/tx.py: probe_commands).  Host actions (host_cpu,
host_mba) are for agent modes and ignored here.  A handler that raised
(the entry returned 1) is counted in CTL_NATIVE_FAULTS and its decision
dropped: the flow keeps its last one.  A decision changes no flow's
scheduling state by itself: the NIC reads the columns at its next send
decision, as it does the agent's.
"""
from collections import namedtuple

import numba as nb
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import ccshm as C
from .hot import hot
from .ccevents import (D_CREDIT, D_CWND, D_EV, D_PROBE, D_RATE, DEC_CREDIT, DEC_CWND, DEC_EV,
                       DEC_EV_N, DEC_RATE, DEC_SET, N_DECISION)

NativeCC = namedtuple("NativeCC", ["st", "par", "tab", "flow_alg", "lim", "rec", "dec", "decf",
                                   "nic_alg"])
"""st, par float64[:]: every algorithm's state and parameter rows; tab
int64[K, TAB_W]: the algorithms (T_*); flow_alg int64[F]: each flow's
algorithm, -1 none; lim float64[F, N_LIM]: each flow's decision bounds
(L_*); rec int64[REC_WIDTH], dec int64[N_DECISION]: the event and decision
scratch of one call; decf: dec's words as float64 (the same memory);
nic_alg int64[MAX_NICS]: each NIC's receiver algorithm, -1 none (its state
and parameter row is the NIC's index)."""
MAX_NICS = 256

T_ENTRY, T_ST_OFF, T_ST_ROW, T_PAR_OFF, T_PAR_ROW = range(5)
TAB_W = 8
"""tab columns: the entry's address; offset (float64 words) of the
algorithm's state region in st and the words of one flow's row; the same
for par.  Flow f's state row is st[off + f * row : off + (f + 1) * row]."""
L_RATE_LO, L_RATE_HI, L_CWND_LO, L_CWND_HI, L_CREDIT_LO, L_CREDIT_HI = range(6)
N_LIM = 6

SIG = types.int64(types.float64[::1], types.float64[::1], types.int64, types.int64[::1],
                  types.int64[::1])
"""The native entry's signature (cc_algorithms/runtime.py NATIVE_SIG):
(st region, par region, flow, event record, decision) -> 0 ok, 1 raised."""


def native_cc(st, par, tab, flow_alg, lim, nic_alg=None) -> NativeCC:
    """Package a table for ``Engine(native=...)`` (with its call scratch)."""
    dec = np.zeros(N_DECISION, np.int64)
    if nic_alg is None:
        nic_alg = np.full(MAX_NICS, -1, np.int64)
    return NativeCC(st=np.ascontiguousarray(st, np.float64),
                    par=np.ascontiguousarray(par, np.float64),
                    tab=np.ascontiguousarray(tab, np.int64),
                    flow_alg=np.ascontiguousarray(flow_alg, np.int64),
                    lim=np.ascontiguousarray(lim, np.float64),
                    rec=np.zeros(C.REC_WIDTH, np.int64), dec=dec, decf=dec.view(np.float64),
                    nic_alg=np.ascontiguousarray(nic_alg, np.int64))


def no_native() -> NativeCC:
    """The engine's default: no algorithm (native flows are refused)."""
    return native_cc(np.zeros(1), np.zeros(1), np.zeros((0, TAB_W), np.int64),
                     np.full(1, -1, np.int64), np.zeros((1, N_LIM)))


def n_algorithms(A: NativeCC) -> int:
    return int(A.tab.shape[0])


def _codegen(sig):
    """Call the entry address in the first argument with the rest, cast to
    `sig`'s types; an exception raised in the callee propagates."""
    def codegen(context, builder, signature, llargs):
        fnty = context.call_conv.get_function_type(sig.return_type, sig.args)
        ptr = builder.inttoptr(llargs[0], fnty.as_pointer())
        vals = [context.cast(builder, v, t, want)
                for v, t, want in zip(llargs[1:], signature.args[1:], sig.args)]
        status, res = context.call_conv.call_function(builder, ptr, sig.return_type, sig.args,
                                                      vals)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return res
    return codegen


@intrinsic
def _call_entry(typingctx, addr, st, par, f, rec, dec):
    """The native entry at `addr` (Numba's calling convention, SIG)."""
    return types.int64(addr, st, par, f, rec, dec), _codegen(SIG)


@hot
def _invoke(A, ctl, a, row, flow, ev, now):
    """Algorithm a on the event whose values are in A.rec[V0:] already, with
    state and parameter row `row`, the record naming `flow`; returns the
    entry's status (0 ok, 1 the handler raised: counted).  The decision is
    left in A.dec."""
    rec = A.rec
    rec[C.SEQ] = 0
    rec[C.FLOW] = flow
    rec[C.EVENT] = ev
    rec[C.T_FIRST] = now
    rec[C.T_LAST] = now
    rec[C.COUNT] = 1
    A.dec[DEC_SET] = 0
    t = A.tab[a]
    nf = A.flow_alg.shape[0]
    so, sr, po, pr = t[T_ST_OFF], t[T_ST_ROW], t[T_PAR_OFF], t[T_PAR_ROW]
    ctl[C.CTL_NATIVE_CALLS] += 1
    r = _call_entry(t[T_ENTRY], A.st[so:so + nf * sr], A.par[po:po + nf * pr], row, rec, A.dec)
    if r != 0:
        ctl[C.CTL_NATIVE_FAULTS] += 1
    return r


@hot
def native_call(A, R, k, flow, ev, now):
    """Flow `flow`'s algorithm on the event whose values are in the report
    engine's scratch (``R.vals``); apply what it decided.  k: the flow's NIC
    slot (counters).
    FL_NATIVE lives in shared memory that other processes can write: a flow
    the table does not cover (an engine without native algorithms has one
    row) has no algorithm, never an index past the table."""
    a = A.flow_alg[flow] if flow < A.flow_alg.shape[0] else np.int64(-1)
    if a >= A.tab.shape[0]:
        a = -1
    if a < 0:
        return
    R.delivered[flow, ev] += 1
    for i in range(C.N_VALUES):
        A.rec[C.V0 + i] = R.vals[i]
    if _invoke(A, R.ctls[k], a, flow, flow, ev, now) == 0:
        native_apply(A, R, k, flow, now)


@nb.njit(cache=True, inline="always")
def _values(rec, v0, v1, v2, v3, v4, v5):
    """The record's values V0..V5; the rest 0."""
    rec[C.V0], rec[C.V0 + 1], rec[C.V0 + 2], rec[C.V0 + 3] = v0, v1, v2, v3
    rec[C.V0 + 4], rec[C.V0 + 5] = v4, v5
    for i in range(6, C.N_VALUES):
        rec[C.V0 + i] = 0


@nb.njit(cache=True, inline="always")
def _bounded(A, ctl, flow, j, v):
    """The decided value v of field j (0 rate, 1 cwnd, 2 credit) as it goes
    into the column, or -1 when it is rejected."""
    lo, hi = A.lim[flow, 2 * j], A.lim[flow, 2 * j + 1]
    if not lo <= v <= hi:                     # out of bounds, or not a number at all
        if not np.isfinite(v):
            ctl[C.CTL_NATIVE_REJECTED] += 1
            return np.int64(-1)
        ctl[C.CTL_NATIVE_CLAMPED] += 1
        v = lo if v < lo else hi
    return np.int64(np.rint(v))


@hot
def native_apply(A, R, k, flow, now):
    """Apply the decision in A.dec (set bits, values) to flow's columns."""
    s = A.dec[DEC_SET]
    if s == 0:
        return
    ctl = R.ctls[k]
    wrote = False
    if s & D_RATE:
        v = _bounded(A, ctl, flow, 0, A.decf[DEC_RATE])
        if v >= 0:
            R.rate[flow] = v
            wrote = True
    if s & D_CWND:
        v = _bounded(A, ctl, flow, 1, A.decf[DEC_CWND])
        if v >= 0:
            R.cwnd[flow] = v
            wrote = True
    if s & D_CREDIT:
        v = _bounded(A, ctl, flow, 2, A.decf[DEC_CREDIT])
        if v >= 0:
            R.credit[flow] = v
            wrote = True
    if s & D_EV:
        R.ev[flow] = A.dec[DEC_EV]
        R.ev_n[flow] = A.dec[DEC_EV_N]
        wrote = True
    if s & D_PROBE and R.probe[flow] == 0:
        R.probe[flow] = 1
        ctl[C.CTL_PROBE_DOORBELL] += 1
    if wrote:
        R.updated_ns[flow] = now
        R.version[flow] += 1


@hot
def native_receiver(A, R, n, sender, ev, now, v0, v1, v2, v3, v4, v5, v6, v7):
    """Event ev about `sender` (a receive PDC of NIC n) to NIC n's receiver
    algorithm (state and parameter row n), values V0..V7 (V6, V7: the NIC's
    active-sender table, ccevents ``active``, ``backlog_sum``); returns the
    cumulative credit it
    granted that sender (bytes), or -1 if it granted none (or a value that
    is not a finite number >= 0: rejected and counted)."""
    a = A.nic_alg[n]
    if a < 0:
        return np.int64(-1)
    _values(A.rec, v0, v1, v2, v3, v4, v5)
    A.rec[C.V0 + 6], A.rec[C.V0 + 7] = v6, v7
    ctl = R.ctls[min(n, R.ctls.shape[0] - 1)]
    if _invoke(A, ctl, a, n, sender, ev, now) != 0:
        return np.int64(-1)
    if (A.dec[DEC_SET] & D_CREDIT) == 0:
        return np.int64(-1)
    v = A.decf[DEC_CREDIT]
    if not (np.isfinite(v) and v >= 0):
        ctl[C.CTL_NATIVE_REJECTED] += 1
        return np.int64(-1)
    return np.int64(np.rint(min(v, 1e18)))
