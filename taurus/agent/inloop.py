"""An in-process agent stepped inside the engine's loop (virtual clock).

The experiment runner steps its agents at the grid point after each report
publish.  Doing that from Python costs two engine calls and ~100 us of
interpreter per publish, most of an agent-mode run.  Instead, the runner
hands the engine each agent's step as a machine address (``InLoop.entry``)
and the loop calls it at those same grid points (datapath/vagents.py): the
same steps at the same virtual times, so the run is the one Python's
stepping gives (tests/test_agent_inloop.py).

A step here is the agent's step (handler.py) compiled whole: the message
handler's poll and selection (fastpath._poll), each selected record through
its algorithm's native entry (cc_algorithms/runtime.py: the same dispatch
the drain runs, called by address so this code is the same for every
algorithm and cached once), the decisions through the filters
(fastpath.apply_write), the release.  What needs Python -- new flows,
overload, handler or filter faults, host actions -- ends the step with
``PYTHON``; the engine returns to the runner, which finishes it
(``InLoop.finish``).  An agent qualifies when it is compiled (``jit``) and
has no host samplers (they run on Python's clock).
"""
from collections import namedtuple

import numba as nb
import numpy as np
from numba import types
from numba.extending import intrinsic

from taurus.datapath.byref import at_intrinsic, pin, unpin
from taurus.datapath.ccnative import _call_entry
from taurus.datapath.ccshm import CTL_HEARTBEAT_NS, CTL_OPENED, FLOW
from taurus.datapath.hot import hot
from taurus.datapath.lowlevel import monotonic_ns

from .fastpath import (K_NO_ALG, NEW_FLOWS, OVERLOAD, R_DFAULTS, R_FAULTS, R_HOST, R_OCC,
                       R_STATUS, READY, apply_write, discard, poll_into)
from .messages import S_MORE, _release

DONE, MORE, PYTHON = 0, 1, 2
"""A step's outcome, as the engine reads it (datapath/vagents.py): done;
done but the drain was capped (step again at the next grid point); Python
must finish it (``InLoop.finish``)."""
N_RES = R_HOST + 1                  # res: fastpath's layout
K_STEPS, K_NS = range(K_NO_ALG + 1, K_NO_ALG + 3)   # cnt: fastpath's, then ours
NOT_POLLED = -1.0
A_ENTRY, A_ST, A_ST_LEN, A_PAR, A_PAR_LEN = range(5)
A_W = 8
"""Rows of ``tab``, one per algorithm class: its native entry's address,
then the address and float64 length of its state and parameter tables."""

InLoopArrays = namedtuple("InLoopArrays", "fmask falg known out astart faults hostbuf D D64 "
                          "tab cfault res cnt ts opened")
"""The algorithm handler's arrays the step reads (handler.py), the decision
table as int64 rows (``D64``: the native entry's view of a flow's ``D``
row), the classes (``tab``), faulted records per class, the last step's
result and the counts the step keeps for Python (``res``, ``cnt``), and
the engine's CTL_OPENED the handler last saw (``opened``: when a closed
flow's row carries a new connection, Python's step sets it up afresh)."""
StepArgs = namedtuple("StepArgs", "poll fast apply write")
"""PollArrays, InLoopArrays, ApplyArrays, WriteArrays."""

ARGS_T: list = []
"""StepArgs' Numba type; filled before _step compiles (byref.at_intrinsic)."""
args_at = at_intrinsic(ARGS_T)
SIG = types.int64(types.int64, types.int64)


@intrinsic
def _table(typingctx, addr, n):
    """The float64 table of n words at address `addr` (its owner keeps it)."""
    def codegen(context, builder, sig, args):
        ptr = builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.float64)))
        ary = context.make_array(types.float64[::1])(context, builder)
        itemsize = context.get_constant(types.intp, 8)
        context.populate_array(ary, data=ptr, shape=[args[1]], strides=[itemsize],
                               itemsize=itemsize, meminfo=None)
        return ary._getvalue()
    return types.float64[::1](types.int64, types.int64), codegen


@hot   # allocates nothing: see _step_on
def _drain(F, rec, lo, hi, a):
    """Class a's selected rows through its native entry, decisions adding up
    in each flow's D row; returns how many handlers raised (their flows in
    F.faults, their decisions discarded)."""
    t = F.tab[a]
    st, par = _table(t[A_ST], t[A_ST_LEN]), _table(t[A_PAR], t[A_PAR_LEN])
    rows = F.out[0]
    nf = 0
    for j in range(lo, hi):
        r = rows[j]
        f = rec[r, FLOW]
        if _call_entry(t[A_ENTRY], st, par, f, rec[r], F.D64[f]) != 0:
            F.faults[nf] = f
            nf += 1
    if nf:
        discard(F.D, F.faults, nf)
    return nf


@hot   # allocates nothing (docstring)
def _step_on(A, now):
    """One step on the agent's arrays ``A`` (a ByRef to StepArgs).  Compiled
    without reference counting, as are _drain and fastpath.poll_into: they
    read dozens of arrays through ``A`` and allocate nothing themselves, and
    with counting each read would be an atomic incref / decref pair (the
    callees that allocate count their own)."""
    M, F, X, W = A.poll, A.fast, A.apply, A.write
    if M.ctl[CTL_OPENED] != F.opened[0]:
        F.res[R_STATUS] = NOT_POLLED   # a row was reused: the whole step in Python
        return PYTHON
    F.cnt[K_STEPS] += 1
    status, nsel, nu = poll_into(M, F, F.res, F.cnt, now)
    if status != READY:
        if status == NEW_FLOWS or status == OVERLOAD:
            return PYTHON              # new flows or overload: the handler's Python path
        _release(M.cons, M.st)         # nothing, or nothing valid
        return MORE if M.st[S_MORE] else DONE
    if nu > 0:
        nd = 0
        for a in range(F.tab.shape[0]):
            lo, hi = F.astart[a], F.astart[a + 1]
            F.cfault[a] = _drain(F, M.copy, lo, hi, a) if hi > lo else 0
            nd += F.cfault[a]
        nf, nh = apply_write(F.out[1][:nu], F.D, X.ev, X.ev_n, X.probe, M.ctl, F.hostbuf,
                             W.stage, W.isset, W.lo, W.hi, W.last, W.n, W.rate, W.cwnd,
                             W.credit, W.version, W.updated_ns, now, W.faults)
        if nd > 0 or nf > 0 or nh > 0:
            F.res[R_DFAULTS], F.res[R_FAULTS], F.res[R_HOST] = nd, nf, nh
            return PYTHON              # logged, or acted on the host, there
    _release(M.cons, M.st)
    return MORE if M.st[S_MORE] else DONE


def _make_step(key):
    """The step, compiled per StepArgs type: Numba's cache keys a closure by
    its cells, so ``key`` (the type's name) makes another layout another
    entry rather than stale code.  It beats the agent's heartbeat and
    counts its own wall time (the agent's share of the engine's)."""
    def step(addr, now):
        if now == -(1 << 62):
            print(key)                 # never: keeps `key` in the cache key
        A = args_at(addr)
        t0 = monotonic_ns(A.fast.ts)
        A.poll.ctl[CTL_HEARTBEAT_NS] = t0
        r = _step_on(A, now)
        A.fast.cnt[K_NS] += monotonic_ns(A.fast.ts) - t0
        return r
    return step


_steps: dict = {}


@nb.njit(cache=True)
def _pin(args):
    return pin(args)


@nb.njit(cache=True)
def _unpin(addr, args):
    unpin(addr, args)


def _address() -> int:
    """_step's machine address (compiled, or loaded from the cache, once
    StepArgs' type is known)."""
    key = str(ARGS_T[0])
    step = _steps.get(key)
    if step is None:
        step = _steps[key] = nb.njit(cache=True)(_make_step(key))
    cres = step.overloads.get(SIG.args)
    if cres is None:
        step.compile(SIG)
        cres = step.overloads[SIG.args]
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)


class InLoop:
    """One agent's step for the engine's loop: ``entry`` (the step's
    address) and ``args`` (the address of its pinned arrays), until close()."""

    def __init__(self, agent):
        h, m = agent.handler, agent.messages
        self.agent, self.h, self.m = agent, h, m
        n = len(h.algs)
        self.tab = np.zeros((n, A_W), np.int64)
        for a in h.algs:
            st, par = a.Sx.view(np.float64).reshape(-1), a.Px.view(np.float64).reshape(-1)
            self.tab[a.index, :A_W - 3] = (a.rt.entry_address(), st.ctypes.data, st.size,
                                           par.ctypes.data, par.size)
        self.res = np.zeros(N_RES, np.float64)
        self.cnt = np.zeros(5, np.int64)
        self.cfault = np.zeros(n, np.int64)
        h.forget_reused()
        self.opened = np.array([h.opened], np.int64)
        fast = InLoopArrays(h.fmask, h.falg, h.known, h.out, h.astart, h.dfaults, h.hostbuf,
                            h.Dn, h.Dn.view(np.int64).reshape(len(h.Dn), -1), self.tab,
                            self.cfault, self.res, self.cnt, np.zeros(2, np.int64),
                            self.opened)
        self._args = StepArgs(m.poll_arrays(), fast, h.apply_arrays(),
                              h.filter.write_arrays(h.cc))
        t = nb.typeof(self._args)
        if not ARGS_T:
            ARGS_T.append(t)
        elif ARGS_T[0] != t:
            raise TypeError(f"in-loop agent: argument layout changed ({t})")
        self.entry = _address()
        self.args = int(_pin(self._args))

    @staticmethod
    def qualifies(agent) -> bool:
        """Compiled, with native entries, and no host samplers."""
        h = agent.handler
        return bool(h.jit and h.algs and not agent.samplers.items)

    def finish(self, now_ns: int) -> None:
        """Do what the step left to Python (it returned PYTHON), then release."""
        h, m = self.h, self.m
        status, i, k, occ, nsel, nu, nf, nd, nh = self.res[:R_HOST + 1].tolist()
        if status == NOT_POLLED:
            self.agent.step(now_ns)
            self.opened[0] = h.opened
            return
        m.occupancy = occ
        try:
            if status == READY:
                for a in h.algs:
                    if self.cfault[a.index]:
                        h.handler_faults(a, int(self.cfault[a.index]))
                if nf:
                    h.report(h.filter.faults[:int(nf)])
                if nh:
                    h.host_actions(h.hostbuf[:int(nh)])
            else:
                h.finish(m, int(status), int(i), int(k), occ, int(nsel), now_ns)
        finally:
            m.release()

    def sync(self) -> float:
        """Fold the counts the compiled steps kept into the handler's;
        returns the wall seconds the steps took since the last sync."""
        calls, unbound, no_alg, _steps, ns = self.cnt.tolist()
        self.cnt[:3] = 0
        self.cnt[K_NS] = 0
        c = self.h.c
        c["calls"] += calls
        c["unbound"] += unbound
        c["no_algorithm"] += no_alg
        self.opened[0] = self.h.opened     # as Python's own steps left it
        return ns / 1e9

    def step_seconds(self) -> float:
        """The wall seconds the compiled steps took since the last sync."""
        return self.cnt.item(K_NS) / 1e9

    def stepped(self) -> None:
        """The loop's step was this agent's last: take its ring occupancy."""
        self.m.occupancy = float(self.res[R_OCC])

    @property
    def steps(self) -> int:
        return int(self.cnt[K_STEPS])

    def close(self) -> None:
        if self.args:
            self.sync()
            _unpin(self.args, self._args)
            self.args = 0
