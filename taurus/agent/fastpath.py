"""The agent's compiled steps around the algorithms' drains (handler.py
drives them; busyloop.py runs them in one loop).

A step is: the message handler's poll fused with the selection of what the
algorithms take (_poll: ring, checks, order, then _select), one
``Runtime.drain`` per algorithm class with records in this drain, then the
decisions out of the decision table ``D`` (apply_write: rate, cwnd and
credit through the update filters, the entropy decision, probes; host
actions are left to Python).

Selection (_select): a group (flow, event) is taken when the flow is set up
(``falg[f]``: the index of its algorithm class, -1 none) and its algorithm
binds the event (``fmask[f]``); other records are counted (unbound, no
algorithm).  The rows taken are partitioned by algorithm class, each class's
rows in delivery order (rows ``out[0][astart[a]:astart[a + 1]]`` go to class
a's drain; a flow has one class, so each flow's records keep their order),
and the distinct flows are listed (``out[1]``) for apply_write.  A flow not
seen yet (``known``) stops the selection: Python sets it up first.
"""
from collections import namedtuple

import numba as nb
import numpy as np

from taurus.cc_algorithms.algorithm import (D_CREDIT, D_CWND, D_EV, D_HOST_CPU, D_HOST_MBA,
                                           D_PROBE, D_RATE)
from taurus.datapath.ccshm import CTL_PROBE_DOORBELL
from taurus.datapath.hot import hot
from taurus.datapath.lowlevel import store_release_u64

from .filters import filter_write
from .messages import B_EVICT, _copy_out, _head, _prepare

EMPTY, READY, NEW_FLOWS, OVERLOAD = range(4)     # how _poll ended
D_HOST = D_HOST_CPU | D_HOST_MBA

FastArrays = namedtuple("FastArrays", "fmask falg known out astart faults hostbuf S P D")
"""What _select and one algorithm class's drain take (AlgorithmHandler.arrays)."""
ApplyArrays = namedtuple("ApplyArrays", "ev ev_n probe")
"""The context-table columns apply_write writes besides the filters' (cc's)."""


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
def _select(rows, bounds, flows, events, base, fmask, falg, known, out_rows, out_flows, astart):
    """The records the algorithms take (see the module doc), as row numbers
    plus ``base``; returns (records taken, distinct flows, records left out
    as unbound, ... as without an algorithm), or records taken = -1 if a
    flow is new (set it up first)."""
    for f in flows:
        if not known[f]:
            return -1, 0, 0, 0
    na = len(astart) - 1
    astart[:] = 0
    nu = unbound = no_alg = 0
    for g in range(len(flows)):               # count per class, list the flows
        f, n = flows[g], bounds[g + 1] - bounds[g]
        a = falg[f]
        if a < 0:
            no_alg += n
        elif not (fmask[f] >> events[g]) & 1:
            unbound += n
        else:
            astart[a + 1] += n
            if nu == 0 or out_flows[nu - 1] != f:
                out_flows[nu] = f
                nu += 1
    for a in range(na):
        astart[a + 1] += astart[a]
    # Each class's rows, in order: a pass per class (there are few) rather
    # than a cursor array, so a step allocates nothing here.
    for a in range(na):
        p = astart[a]
        for g in range(len(flows)):
            f = flows[g]
            if falg[f] != a or not (fmask[f] >> events[g]) & 1:
                continue
            for j in range(bounds[g], bounds[g + 1]):
                out_rows[p] = rows[j] + base
                p += 1
    return astart[na], nu, unbound, no_alg


@nb.njit(cache=True, nogil=True)
def _poll(prod, cons, ring, ctl, bp, st, n, cap, batch_max, now, owner, nic, last_t, scratch,
          copy, fmask, falg, known, out, astart):
    """The message handler's poll (steps 1, 0, 2, 3, 5) and _select in one
    call: the common case of a step, without Python in between.  Returns
    (status, slot, length, occupancy, records taken or groups, distinct
    flows, unbound, no_alg): READY with the selection in ``out`` and
    ``astart`` (rows of ``copy``, the batch copied out of the ring); EMPTY;
    NEW_FLOWS (the drain is copied and prepared in ``scratch``, ``groups``
    of it: set them up, then select); OVERLOAD (only step 1 is done: the
    handler's own poll does the rest)."""
    i, k, occ = _head(prod, cons, ctl, bp, st, n, cap, batch_max, now)
    if k == 0:
        return EMPTY, 0, 0, occ, 0, 0, 0, 0
    if occ >= bp[B_EVICT]:
        return OVERLOAD, i, k, occ, 0, 0, 0, 0
    rec = _copy_out(ring, i, k, copy)
    ng = _prepare(rec, False, st, n, ctl, owner, nic, last_t, scratch, cap)
    if ng == 0:
        return EMPTY, i, k, occ, 0, 0, 0, 0
    sel, nu, unbound, no_alg = _select(scratch[0], scratch[1][:ng + 1], scratch[2][:ng],
                                       scratch[3][:ng], 0, fmask, falg, known, out[0], out[1],
                                       astart)
    if sel < 0:
        return NEW_FLOWS, i, k, occ, ng, 0, 0, 0
    return READY, i, k, occ, sel, nu, unbound, no_alg


# A step's result (res, float64) and the counts (cnt) the compiled loops
# keep for Python (busyloop.py, inloop.py): each appends its own after these.
(R_STATUS, R_SLOT, R_LEN, R_OCC, R_SEL, R_FLOWS, R_FAULTS, R_DFAULTS, R_HOST) = range(9)
K_CALLS, K_UNBOUND, K_NO_ALG = range(3)


@hot(nogil=True)   # allocates nothing (inloop._step_on)
def poll_into(M, F, res, cnt, now):
    """_poll on a handler's PollArrays ``M`` and selection arrays ``F``, its
    outcome written to ``res`` and counted in ``cnt``; returns (status,
    records taken, distinct flows)."""
    status, i, k, occ, nsel, nu, unbound, no_alg = _poll(
        M.prod, M.cons, M.ring, M.ctl, M.bp, M.st, M.n, M.cap, M.batch_max, now, M.owner,
        M.nic, M.last_t, M.scratch, M.copy, F.fmask, F.falg, F.known, F.out, F.astart)
    res[R_STATUS], res[R_SLOT], res[R_LEN], res[R_OCC] = status, i, k, occ
    res[R_SEL], res[R_FLOWS] = nsel, nu
    res[R_FAULTS] = res[R_DFAULTS] = res[R_HOST] = 0
    if status == READY:
        cnt[K_UNBOUND] += unbound
        cnt[K_NO_ALG] += no_alg
        if nu > 0:
            cnt[K_CALLS] += nsel
    return status, nsel, nu


@nb.njit(cache=True, nogil=True)
def discard(D, faults, nf):
    """A flow whose handler raised loses this drain's decisions (a half-made
    decision is not a decision): the flows ``faults[:nf]``."""
    for j in range(nf):
        D[faults[j]].set = 0


@nb.njit(cache=True, nogil=True)
def _decisions(flows, D, stage, isset, ev, ev_n, probe, version, updated_ns, ctl, now, hostbuf):
    """The decisions of ``flows`` out of D: rate, cwnd and credit staged for
    the filters; the entropy decision written (a repeat of the one in force
    is not; a rotation always is) and the version bumped; probes flagged, and
    the probe doorbell rung once.  Host actions stay in D (their set bits)
    and their flows go to ``hostbuf``; every other bit is cleared.
    Returns how many flows have host actions."""
    nh = 0
    probes = 0
    for i in range(len(flows)):
        f = flows[i]
        d = D[f]
        s = d.set
        if s == 0:
            continue
        if s & D_RATE:
            stage[f, 0] = d.rate
            isset[f, 0] = True
        if s & D_CWND:
            stage[f, 1] = d.cwnd
            isset[f, 1] = True
        if s & D_CREDIT:
            stage[f, 2] = d.credit
            isset[f, 2] = True
        if s & D_EV:
            if d.ev_n < 0 or ev[f] != d.ev or ev_n[f] != d.ev_n:
                if d.ev_n >= 0:
                    ev[f] = d.ev
                ev_n[f] = d.ev_n
                updated_ns[f] = now
                store_release_u64(version, f, version[f] + 1)
        if s & D_PROBE:
            probe[f] = 1
            probes += 1
        if s & D_HOST:
            hostbuf[nh] = f
            nh += 1
        d.set = s & D_HOST
    if probes:
        ctl[CTL_PROBE_DOORBELL] += 1
    return nh


@nb.njit(cache=True, nogil=True)
def apply_write(flows, D, ev, ev_n, probe, ctl, hostbuf, stage, isset, lo, hi, last, n, rate,
                cwnd, credit, version, updated_ns, now, faults):
    """_decisions, then the filters' write (filters.filter_write) of what
    was staged; returns (filter fault rows, flows with host actions)."""
    nh = _decisions(flows, D, stage, isset, ev, ev_n, probe, version, updated_ns, ctl, now,
                    hostbuf)
    nf = filter_write(flows, stage, isset, lo, hi, last, n, rate, cwnd, credit, version,
                      updated_ns, now, faults)
    return nf, nh
