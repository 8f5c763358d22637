"""Native mode: the algorithm compiled into the engine, called per event from
the NIC pipeline for flows flagged FL_NATIVE (the in-datapath baseline the
agent is measured against).  It writes the same context columns the agent
would, so the NIC's gates read one place whatever the mode."""
import numba as nb

from . import ccshm as C
from ..cc_algorithms.native.dctcp import dctcp_on_ack, dctcp_on_rto


@nb.njit(cache=True)
def cc_native_ack(E, f, acked_bytes, marked_bytes):
    if E.rep.flags[f] & C.FL_NATIVE:
        dctcp_on_ack(E.alg, E.rep.cwnd, f, acked_bytes, marked_bytes)


@nb.njit(cache=True)
def cc_native_rto(E, f):
    if E.rep.flags[f] & C.FL_NATIVE:
        dctcp_on_rto(E.alg, E.rep.cwnd, f)
