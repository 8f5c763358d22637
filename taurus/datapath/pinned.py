"""The engine's state by address: compiled entries that Python calls on a
running engine take ``Engine.state_addr()`` (byref.pin's copy of its state)
and reach the state through ``state_at``.  They skip typing and unboxing
~150 arrays per call, and their callees get the ByRef types the loop's own
calls have, so they reuse the loop's compiled code instead of compiling
the callees again for tuples (minutes in a cold test run)."""
import numba as nb

from .byref import at_intrinsic
from .devices.nic.gen import gen_refill
from .devices.nic.tx import wake_flow
from .devices.pktgen import pktgen_start
from .ports.memlink import mem_collect, mem_inject
from .report import report_engine, report_timer_start

STATE_T: list = []
"""The Numba type of every engine's state tuple (Engine.install refuses
another); the first Engine fills it before anything here compiles."""
state_at = at_intrinsic(STATE_T)


@nb.njit(cache=True)
def at_inject(addr, port, now, frame, n):
    E = state_at(addr)
    return mem_inject(E.ports, E.pool, port, now, frame, n)


@nb.njit(cache=True)
def at_collect(addr, port, now, out_data, out_len):
    E = state_at(addr)
    return mem_collect(E.ports, E.pool, port, now, out_data, out_len)


@nb.njit(cache=True)
def at_pktgen_start(addr, d, frame, start):
    return pktgen_start(state_at(addr), d, frame, start)


@nb.njit(cache=True)
def at_timer_start(addr, flow, now):
    return report_timer_start(report_engine(state_at(addr)), flow, now)


@nb.njit(cache=True)
def at_wake_flow(addr, f, now):
    E = state_at(addr)
    wake_flow(E.nic, E.wheel, f, now)


@nb.njit(cache=True)
def at_gen_refill(addr, f, now):
    gen_refill(state_at(addr), f, now)
