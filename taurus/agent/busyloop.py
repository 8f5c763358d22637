"""The agent's busy phase, compiled (compiled algorithms, ``taurus agent run``).

While reports keep coming, the run loop is: rest, step, rest, step ...  From
Python each wake-up costs ~100 us of CPU on the development machines: the sleep,
then a step whose interpreter paths, dispatchers and data went cold
meanwhile (``python bench/agent_wakeup.py``).  Here that phase is one Numba
loop around the algorithm's ``drain``: rest, heartbeat, _poll, drain, the
filters' write, release, and again -- back in Python only when a step needs
it (nothing found, a new flow, overload, a fault, the drain raised) or
``until`` passes (stats, signals, samplers, the nap's refresh).  A rest is
the nap, or, when the engine publishes less often than a nap lasts
(pacing.Cadence), a wait on the doorbell (doorbell.bell_wait).  On the wall
clock the loop takes agent-jit from ~20% to ~12% of a core at N=1 and from
~23% to ~18% at N=32 (``python bench/agent_overhead.py --clock wall --flows
1,32 --repeat 3 --modes agent-jit``, with and without ``--no-busy-loop``).

Numba cannot cache a closure, so the loop compiles (its callees come from
the cache) when the agent starts, before it announces itself.
"""
import numba as nb
import numpy as np

from taurus.datapath.ccshm import CTL_BACKPRESSURE, CTL_HEARTBEAT_NS
from taurus.datapath.lowlevel import monotonic_ns, nap
from taurus.datapath.shmring import BELL, TAIL

from .doorbell import OUTCOMES, bell_wait
from .fastpath import READY, _poll
from .filters import filter_write
from .messages import S_MORE, S_TAIL_AFTER, _release
from .pacing import cadence_sparse, cadence_update

# The last step's result (res, float64) and the counts the loop keeps (cnt).
R_STATUS, R_SLOT, R_LEN, R_OCC, R_GROUPS, R_FLOWS, R_FAULTS, R_STEPS, N_RES = range(9)
K_CALLS, K_UNBOUND, K_NO_ALG = range(3)
NO_REST, NAP, BELL_WAIT = range(3)


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
    """The busy loop compiled around one algorithm's ``drain``."""
    @nb.njit(nogil=True)
    def loop(prod, cons, ring, ctl, bp, st, n, cap, batch_max, owner, nic, last_t, scratch,
             mask, ok, known, out, S, P, stage, isset, lo, hi, last, counts, rate, cwnd,
             credit, version, updated_ns, faults, res, cnt, ts, gen, bells, cad, bell_on,
             slack_ns, nap_ns, until_ns):
        res[R_STEPS] = 0
        rest = _rest(st, ctl, cad, bell_on, nap_ns, slack_ns)
        while True:
            if rest == NAP:
                nap(ts, nap_ns)
            elif rest == BELL_WAIT:
                bell_wait(prod, cons, gen, max(until_ns - monotonic_ns(ts), 0), ts, bells)
            now = monotonic_ns(ts)
            ctl[CTL_HEARTBEAT_NS] = now
            status, i, k, occ, ng, nu, unbound, no_alg = _poll(
                prod, cons, ring, ctl, bp, st, n, cap, batch_max, now, owner, nic, last_t,
                scratch, mask, ok, known, out)
            res[R_STATUS], res[R_SLOT], res[R_LEN], res[R_OCC] = status, i, k, occ
            res[R_GROUPS], res[R_FLOWS], res[R_FAULTS] = ng, nu, 0
            res[R_STEPS] += 1
            if status != READY:
                return                    # nothing found, or Python's turn
            cnt[K_UNBOUND] += unbound
            cnt[K_NO_ALG] += no_alg
            if nu > 0:
                cnt[K_CALLS] += ng
                drain(S, P, ring[i:i + k], out[0][:out[1][ng]], out[1][:ng + 1], stage, isset)
                nf = filter_write(out[2][:nu], stage, isset, lo, hi, last, counts, rate, cwnd,
                                  credit, version, updated_ns, now, faults)
                if nf > 0:
                    res[R_FAULTS] = nf
                    return                # Python logs them
            _release(cons, st)            # before resting
            cadence_update(cad, now, np.int64(prod[BELL]))
            rest = _rest(st, ctl, cad, bell_on, nap_ns, slack_ns)
            if monotonic_ns(ts) >= until_ns:
                return
    return loop


class BusyLoop:
    """Runs the compiled loop for a FastPath and turns its exits into what
    the Python step would have done."""

    def __init__(self, fast, bell, cadence, slack_ns: int):
        """``fast``: the FastPath; ``bell``: the agent's Doorbell (None: off);
        ``cadence``: its pacing.Cadence; ``slack_ns``: the timer slack."""
        self.fast, self.bell, self.cadence, self.slack = fast, bell, cadence, slack_ns
        if bell is None:
            self._gen, self._bells = np.zeros(1, np.int64), np.zeros(len(OUTCOMES) + 1, np.int64)
        else:
            self._gen, self._bells = bell.gen, bell.counts
        self.res = np.zeros(N_RES, np.float64)
        self.cnt = np.zeros(3, np.int64)
        self.ts = np.zeros(2, np.int64)
        self.c = dict(runs=0, steps=0, raised=0)
        self._loop = make_loop(fast.alg.drain)

    def _args(self, m, alt=None):
        f, cc, fp, a = self.fast.filter, self.fast.cc, self.fast, alt or {}
        g = a.get
        return (g("prod", m._prod), g("cons", m._cons), m._rec, g("ctl", m.ctl), m.bpa,
                g("st", m.st), g("n", m.n), m._cap, m.batch_max, cc.owner, cc.nic,
                g("last_t", m.last_t), g("scratch", m.scratch), fp.mask, fp.ok, fp.known,
                fp.out, fp.S, fp.P, f.stage, f.isset, f.lo, f.hi, f.last, f.n, cc.rate,
                cc.cwnd, cc.credit, cc.version, cc.updated_ns, f.faults, self.res, self.cnt,
                self.ts, a.get("gen", self._gen), a.get("bells", self._bells),
                a.get("cad", self.cadence.a), self.bell is not None, self.slack)

    def warm(self, m) -> None:
        """Compile now, on copies (an empty ring: one step, then back)."""
        st = np.zeros_like(m.st)
        st[S_TAIL_AFTER] = -1
        prod, cons = m._prod.copy(), m._cons.copy()
        cons[TAIL] = prod[0]
        self._loop(*self._args(m, dict(prod=prod, cons=cons, ctl=m.ctl.copy(), st=st,
                                       n=m.n.copy(), last_t=m.last_t.copy(),
                                       scratch=m.scratch.copy(), gen=self._gen.copy(),
                                       bells=self._bells.copy(),
                                       cad=self.cadence.a.copy())), 0, 0)
        self.cnt[:] = 0

    def run(self, m, nap_ns: int, until_ns: int):
        """Nap, step, ... until a step needs Python or ``until_ns`` (monotonic)
        passes; returns the flows whose decisions are still to be written."""
        fp = self.fast
        if fp.out.shape[1] < m.scratch.shape[1]:
            fp.out = np.empty_like(m.scratch[:3])
        self.res[R_STATUS] = -1
        err = None
        try:
            self._loop(*self._args(m), int(nap_ns), int(until_ns))
        except Exception as e:
            err = e
        calls, unbound, no_alg = self.cnt.tolist()
        self.cnt[:] = 0
        fp.c["calls"] += calls
        if unbound or no_alg:
            fp.c["unbound"] += unbound
            fp.c["no_algorithm"] += no_alg
        status, i, k, occ, ng, nu, nf, steps = self.res.tolist()
        self.c["runs"] += 1
        self.c["steps"] += int(steps)
        m.occupancy = occ
        if err is not None:
            if status != READY:
                raise err                 # ours, not the algorithm's
            self.c["raised"] += 1
            fp._failed(int(nu), err)
            return None
        if status == READY:
            if nf:
                fp.report(fp.filter.faults[:int(nf)])
            return None
        return fp.finish(m, int(status), int(i), int(k), occ, int(ng))
