"""Compiled algorithms: the agent's fast path.

A Python algorithm costs the agent a few microseconds per flow and step
(handler calls, ``decide()``, ``result_update``), which at tens of thousands
of reports a second is most of a core.  A ``CompiledAlgorithm`` is the same
contract written for Numba: one object serves every flow, each flow's state
is a row of arrays, and the agent hands a whole drain to one compiled call.

    class MyCC(CompiledAlgorithm):
        name, Params, binds, periods = ...     # as for any Algorithm
        def make_state(self, max_flows): ...   # (S, P): float64[max_flows, k] per-flow
                                               # state, float64[m] parameters
        flow_setup = staticmethod(my_setup)    # njit (S, P, f, cwnd, rate): a new flow
        drain = staticmethod(my_drain)         # njit (S, P, rec, rows, bounds, val, isset)

``drain`` sees the drain's records group by group in the order the agent
delivers them to Python algorithms: group g is rows[bounds[g]:bounds[g+1]]
of ``rec`` (one flow, one event, oldest first); a flow's groups are
adjacent, by first arrival.  After a flow's last group it decides, staging
its results with ``result_update(val[f], isset[f], RATE|CWND|CREDIT, v)``;
the agent's filters (filters.py) then check and write them, as for Python
algorithms.  An exception in ``drain`` discards the whole drain's decisions
(the flows keep their last good ones) and is counted.  Plain arrays, not
namedtuples: Numba's dispatcher types each argument on every call, and a
tuple of arrays costs it microseconds.

Limits: no per-flow ``[[override]]``, no HOST events, no probe requests.
"""
import numba as nb

from .base import Algorithm

RATE, CWND, CREDIT = range(3)      # the decision's fields (filters.FIELDS)


@nb.njit(cache=True, inline="always")
def result_update(val, isset, field, value):
    """Stage one field of a flow's decision (val, isset: its rows)."""
    val[field] = value
    isset[field] = True


class CompiledAlgorithm(Algorithm):
    compiled = True
    flow_setup = None
    drain = None

    def make_state(self, max_flows: int):
        raise NotImplementedError
