"""The agent's busy phase, compiled (``jit``, one algorithm class, ``taurus
agent run``).

While reports keep coming, the run loop is: rest, step, rest, step ...  From
Python each wake-up costs ~100 us of CPU on the development machines: the sleep,
then a step whose interpreter paths, dispatchers and data went cold
meanwhile (``python bench/agent_wakeup.py``).  Here that phase is one Numba
loop around the algorithm's ``Runtime.drain``: rest, heartbeat, _poll, drain,
apply_write (decisions through the filters into the table), release, and
again -- back in Python only when a step needs it (nothing found, a new flow,
overload, a handler raised, a filter fault, a host action, the drain raised)
or ``until`` passes (stats, signals, samplers, the nap's refresh).  A rest is
the nap, or, when the engine publishes less often than a nap lasts
(pacing.Cadence), a wait on the doorbell (doorbell.bell_wait).

The loop is a closure over the algorithm's drain, cached on disk like the
algorithm's own calls (its cell names the drain by the algorithm's source
key: cc_algorithms/runtime.py), so an agent starts without compiling it.
"""
import time
from collections import namedtuple

import numba as nb
import numpy as np

from taurus.datapath.byref import byref
from taurus.datapath.ccshm import CTL_BACKPRESSURE, CTL_HEARTBEAT_NS
from taurus.datapath.lowlevel import monotonic_ns, nap
from taurus.datapath.shmring import BELL, TAIL

from .doorbell import OUTCOMES, bell_wait
from .fastpath import (R_DFAULTS, R_FAULTS, R_HOST, R_STATUS, READY, ApplyArrays, FastArrays,
                       apply_write, discard, poll_into)
from .filters import WriteArrays
from .messages import S_MORE, S_TAIL_AFTER, PollArrays, _release
from .pacing import cadence_sparse, cadence_update

# The last step's result (res, float64; fastpath's layout, then the loop's
# own) and the counts the loop keeps (cnt: fastpath's K_*).
R_STEPS, N_RES = range(9, 11)
NO_REST, NAP, BELL_WAIT = range(3)

LoopArrays = namedtuple("LoopArrays", "res cnt ts gen bells cad bell_on slack_ns")
"""The loop's own: results, counts, clock scratch, the doorbell's and the
cadence's state, whether there is a doorbell, the timer slack."""
LoopArgs = namedtuple("LoopArgs", "poll fast apply write loop")
"""Everything the loop reads and updates, by owner: the message handler
(PollArrays), the algorithm handler (FastArrays, ApplyArrays), the filters
(WriteArrays), the BusyLoop (LoopArrays).  The loop is handed its five parts
as plain tuples and names them again inside: Numba's dispatcher types a
plain tuple in C but a namedtuple in Python, which for these ~45 arrays
doubles the cost of a call (~4 us more)."""


@nb.njit(cache=True, nogil=True)
def _rest(st, ctl, cad, bell_on, nap_ns, slack_ns):
    """How to rest before the next step: not at all (the drain was capped),
    on the doorbell (publications sparser than a nap lasts, and no
    back-pressure: the timer's calm steps lower that), or the nap."""
    if st[S_MORE]:
        return NO_REST
    if bell_on and ctl[CTL_BACKPRESSURE] <= 1 and cadence_sparse(cad, nap_ns + slack_ns):
        return BELL_WAIT
    return NAP


def make_loop(drain):
    """The busy loop compiled around one algorithm class's ``drain``."""
    @nb.njit(nogil=True, cache=True)
    def loop(args, nap_ns, until_ns):
        A = byref(LoopArgs(PollArrays(*args[0]), FastArrays(*args[1]), ApplyArrays(*args[2]),
                           WriteArrays(*args[3]), LoopArrays(*args[4])))   # fields read in place
        M, F, X, W, L = A.poll, A.fast, A.apply, A.write, A.loop
        L.res[R_STEPS] = 0
        rest = _rest(M.st, M.ctl, L.cad, L.bell_on, nap_ns, L.slack_ns)
        while True:
            if rest == NAP:
                nap(L.ts, nap_ns)
            elif rest == BELL_WAIT:
                bell_wait(M.prod, M.cons, L.gen, max(until_ns - monotonic_ns(L.ts), 0), L.ts,
                          L.bells)
            now = monotonic_ns(L.ts)
            M.ctl[CTL_HEARTBEAT_NS] = now
            res = L.res
            status, nsel, nu = poll_into(M, F, res, L.cnt, now)
            res[R_STEPS] += 1
            if status != READY:
                return                    # nothing found, or Python's turn
            if nu > 0:
                out = F.out
                nd = drain(F.S, F.P, F.D, M.copy, out[0][:nsel], F.faults)
                if nd > 0:
                    discard(F.D, F.faults, nd)
                nf, nh = apply_write(out[1][:nu], F.D, X.ev, X.ev_n, X.probe, M.ctl, F.hostbuf,
                                     W.stage, W.isset, W.lo, W.hi, W.last, W.n, W.rate, W.cwnd,
                                     W.credit, W.version, W.updated_ns, now, W.faults)
                if nd > 0 or nf > 0 or nh > 0:
                    res[R_DFAULTS], res[R_FAULTS], res[R_HOST] = nd, nf, nh
                    return                # Python logs them, or acts on the host
            _release(M.cons, M.st)        # before resting
            cadence_update(L.cad, now, np.int64(M.prod[BELL]))
            rest = _rest(M.st, M.ctl, L.cad, L.bell_on, nap_ns, L.slack_ns)
            if monotonic_ns(L.ts) >= until_ns:
                return
    return loop


class BusyLoop:
    """Runs the compiled loop for the algorithm handler (one class, jit) and
    turns its exits into what the Python step would have done."""

    def __init__(self, handler, bell, cadence, slack_ns: int):
        """``handler``: the AlgorithmHandler; ``bell``: the agent's Doorbell
        (None: off); ``cadence``: its pacing.Cadence; ``slack_ns``: the timer
        slack."""
        self.h, self.bell, self.cadence, self.slack = handler, bell, cadence, slack_ns
        if bell is None:
            self._gen, self._bells = np.zeros(1, np.int64), np.zeros(len(OUTCOMES) + 1, np.int64)
        else:
            self._gen, self._bells = bell.gen, bell.counts
        self.res = np.zeros(N_RES, np.float64)
        self.cnt = np.zeros(3, np.int64)
        self.ts = np.zeros(2, np.int64)
        self.c = dict(runs=0, steps=0, raised=0)
        self._own = LoopArrays(self.res, self.cnt, self.ts, self._gen, self._bells,
                               cadence.a, bell is not None, slack_ns)
        self._made = (None, None)            # (message handler, the loop's args)
        (a,) = handler.algs
        self.alg = a
        self._loop = make_loop(a.rt.drain)

    def _args(self, m, poll=None, loop=None) -> tuple:
        """LoopArgs' parts as plain tuples (see LoopArgs)."""
        h = self.h
        return (tuple(m.poll_arrays() if poll is None else poll), tuple(h.arrays()),
                tuple(h.apply_arrays()), tuple(h.filter.write_arrays(h.cc)),
                tuple(self._own if loop is None else loop))

    def _run_args(self, m) -> tuple:
        """_args(m), made again only for another message handler: their
        owners allocate the arrays once."""
        mm, args = self._made
        if mm is not m:
            args = self._args(m)
            self._made = (m, args)
        return args

    def warm(self, m) -> None:
        """Compile now, on copies (an empty ring: one step, then back)."""
        p = m.poll_arrays()
        st = np.zeros_like(p.st)
        st[S_TAIL_AFTER] = -1
        prod, cons = p.prod.copy(), p.cons.copy()
        cons[TAIL] = prod[0]
        p = p._replace(prod=prod, cons=cons, ctl=p.ctl.copy(), st=st, n=p.n.copy(),
                       last_t=p.last_t.copy(), scratch=p.scratch.copy(), copy=p.copy.copy())
        own = self._own._replace(gen=self._gen.copy(), bells=self._bells.copy(),
                                 cad=self.cadence.a.copy())
        self._loop(self._args(m, p, own), 0, 0)
        self.cnt[:] = 0

    def run(self, m, nap_ns: int, until_ns: int) -> None:
        """Nap, step, ... until a step needs Python or ``until_ns`` (monotonic)
        passes; then what the Python step would have done with that step."""
        h = self.h
        self.res[R_STATUS] = -1
        err = None
        try:
            self._loop(self._run_args(m), int(nap_ns), int(until_ns))
        except Exception as e:
            err = e
        calls, unbound, no_alg = self.cnt.tolist()
        self.cnt[:] = 0
        h.c["calls"] += calls
        if unbound or no_alg:
            h.c["unbound"] += unbound
            h.c["no_algorithm"] += no_alg
        status, i, k, occ, nsel, nu, nf, nd, nh, steps = self.res.tolist()
        self.c["runs"] += 1
        self.c["steps"] += int(steps)
        m.occupancy = occ
        if err is not None:
            if status != READY:
                raise err                 # ours, not the algorithm's
            self.c["raised"] += 1
            h.drain_raised(self.alg, h.out[1][:int(nu)], err)
            return
        if status == READY:
            if nd:
                h.handler_faults(self.alg, int(nd))
            if nf:
                h.report(h.filter.faults[:int(nf)])
            if nh:
                h.host_actions(h.hostbuf[:int(nh)])
            return
        h.finish(m, int(status), int(i), int(k), occ, int(nsel), time.monotonic_ns())
