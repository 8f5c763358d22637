"""Native mode: an algorithm compiled into the engine, called per event from
the NIC pipeline for flows flagged FL_NATIVE (the in-datapath baseline the
agent is measured against).  It writes the same context columns the agent
would, so the NIC's gates read one place whatever the mode.

The datapath names no algorithm: whoever builds the engine hands it one
(``Engine(native=...)``) as a ``NativeCC``, per-flow state in a float64
matrix and two compiled callbacks.  The engine calls them through their
addresses, so its cached machine code is the same for every algorithm; an
engine without one has no-ops and refuses native flows.

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
from numba.core import cgutils
from numba.extending import intrinsic

from . import ccshm as C

NativeCC = namedtuple("NativeCC", ["st", "par", "fn"])
"""st, par: the algorithm's state and parameters; fn int64[2]: the machine
addresses of its compiled on_ack and on_rto (only arrays, so that calling
the engine from Python stays on Numba's fast argument path)."""
PAR_MSS = 0
ON_ACK, ON_RTO = 0, 1

ACK_SIG = types.void(types.float64[:, :], types.float64[:], types.int64[:], types.int64,
                     types.int64, types.int64)
RTO_SIG = types.void(types.float64[:, :], types.float64[:], types.int64[:], types.int64)


def _entry(fn, sig) -> int:
    """The address of `fn` compiled for `sig`, in Numba's own calling
    convention (what a first-class function's jit_addr holds)."""
    if sig.args not in fn.overloads:
        fn.compile(sig.args)
    cres = fn.overloads[sig.args]
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)


def _codegen(sig):
    """Call the entry address in the first argument with the rest, cast to
    `sig`'s types; an exception raised in the callee propagates."""
    def codegen(context, builder, signature, llargs):
        fnty = context.call_conv.get_function_type(sig.return_type, sig.args)
        ptr = builder.inttoptr(llargs[0], fnty.as_pointer())
        vals = [context.cast(builder, v, t, want)
                for v, t, want in zip(llargs[1:], signature.args[1:], sig.args)]
        status, _ = context.call_conv.call_function(builder, ptr, sig.return_type, sig.args, vals)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return context.get_dummy_value()
    return codegen


@intrinsic
def _call_ack(typingctx, addr, st, par, cwnd, flow, acked, marked):
    return types.void(addr, st, par, cwnd, flow, acked, marked), _codegen(ACK_SIG)


@intrinsic
def _call_rto(typingctx, addr, st, par, cwnd, flow):
    return types.void(addr, st, par, cwnd, flow), _codegen(RTO_SIG)


def native_cc(st: np.ndarray, par: np.ndarray, on_ack, on_rto) -> NativeCC:
    """Package an algorithm for ``Engine(native=...)``: `on_ack` and `on_rto`
    are njit functions of ACK_SIG and RTO_SIG."""
    return NativeCC(st=np.ascontiguousarray(st, np.float64),
                    par=np.ascontiguousarray(par, np.float64),
                    fn=np.array([_entry(on_ack, ACK_SIG), _entry(on_rto, RTO_SIG)], np.int64))


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
        _call_ack(E.alg.fn[ON_ACK], E.alg.st, E.alg.par, E.rep.cwnd, f, acked_bytes, marked_bytes)


@nb.njit(cache=True)
def cc_native_rto(E, f):
    if E.rep.flags[f] & C.FL_NATIVE:
        _call_rto(E.alg.fn[ON_RTO], E.alg.st, E.alg.par, E.rep.cwnd, f)
