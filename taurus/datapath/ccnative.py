"""Native mode: an algorithm compiled into the engine, called per event from
the NIC pipeline for flows flagged FL_NATIVE (the in-datapath baseline the
agent is measured against).  It writes the same context columns the agent
would, so the NIC's gates read one place whatever the mode.

The datapath names no algorithm: whoever builds the engine hands it one
(``Engine(native=...)``) as a ``NativeCC``, per-flow state in a float64
matrix and two compiled callbacks.  The callbacks are Numba first-class
functions (called through a pointer), so the engine's cached machine code
is the same for every algorithm; an engine without one has no-ops and
refuses native flows.

    on_ack(st, par, cwnd, flow, acked_bytes, marked_bytes)
    on_rto(st, par, cwnd, flow)

``st`` is the algorithm's state (rows of its choosing x flows), ``par`` its
parameters, ``cwnd`` the context table's cwnd column (bytes).  ``par[PAR_MSS]``
is the MSS in bytes: the NIC sets it when a flow becomes native.
"""
from collections import namedtuple

import numba as nb
import numpy as np
from numba import types
from numba.core.types import WrapperAddressProtocol
from numba.experimental.function_type import _get_wrapper_address

from . import ccshm as C

NativeCC = namedtuple("NativeCC", ["st", "par", "on_ack", "on_rto"])
PAR_MSS = 0

ACK_SIG = types.void(types.float64[:, :], types.float64[:], types.int64[:], types.int64,
                     types.int64, types.int64)
RTO_SIG = types.void(types.float64[:, :], types.float64[:], types.int64[:], types.int64)


class _Callback(WrapperAddressProtocol):
    """A compiled function as a pointer of a fixed signature: the engine is
    compiled (and cached) against the signature, not the function."""

    def __init__(self, fn, sig):
        self.fn, self.sig = fn, sig

    def __wrapper_address__(self):
        return _get_wrapper_address(self.fn, self.sig)

    def signature(self):
        return self.sig


def native_cc(st: np.ndarray, par: np.ndarray, on_ack, on_rto) -> NativeCC:
    """Package an algorithm for ``Engine(native=...)``: `on_ack` and `on_rto`
    are njit functions of ACK_SIG and RTO_SIG."""
    return NativeCC(st=np.ascontiguousarray(st, np.float64),
                    par=np.ascontiguousarray(par, np.float64),
                    on_ack=_Callback(on_ack, ACK_SIG), on_rto=_Callback(on_rto, RTO_SIG))


@nb.njit(ACK_SIG, cache=True)
def _no_ack(st, par, cwnd, flow, acked_bytes, marked_bytes):
    pass


@nb.njit(RTO_SIG, cache=True)
def _no_rto(st, par, cwnd, flow):
    pass


def no_native() -> NativeCC:
    """The engine's default: no algorithm (native flows are refused)."""
    return native_cc(np.zeros((1, 1)), np.zeros(1), _no_ack, _no_rto)


@nb.njit(cache=True)
def cc_native_ack(E, f, acked_bytes, marked_bytes):
    if E.rep.flags[f] & C.FL_NATIVE:
        E.alg.on_ack(E.alg.st, E.alg.par, E.rep.cwnd, f, acked_bytes, marked_bytes)


@nb.njit(cache=True)
def cc_native_rto(E, f):
    if E.rep.flags[f] & C.FL_NATIVE:
        E.alg.on_rto(E.alg.st, E.alg.par, E.rep.cwnd, f)
