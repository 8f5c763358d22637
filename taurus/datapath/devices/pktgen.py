"""Packet generator: sends copies of a template frame on one port at a fixed
rate, paced by a timer on the engine's wheel (pktgen in the spirit of DPDK's).

Departures follow the schedule, not the loop: the n-th burst is due at
start + n * interval, so rate error does not accumulate; a generator that
falls behind (wall clock) restarts its schedule instead of bursting to catch
up, and counts the late restarts.
"""
import numba as nb
import numpy as np

from ..mbuf import mbuf_alloc
from ..ports.dispatch import port_tx_or_drop
from ..wheel import wheel_schedule

TEMPLATE, INTERVAL, REMAINING, TIMER, NEXT, SENT, BURST, LATE, NOBUF = range(9)


@nb.njit(cache=True, _nrt=True)   # copies its template: NRT even under hot callers
def pktgen_timer(E, d, now):
    regs = E.devs.regs[d]
    p = E.devs.ports[d, 0]
    tpl = regs[TEMPLATE]
    ln = E.pool.length[tpl]
    n = regs[BURST]
    if regs[REMAINING] >= 0 and regs[REMAINING] < n:
        n = regs[REMAINING]
    k = 0
    for _ in range(n):
        i = mbuf_alloc(E.pool)
        if i < 0:
            regs[NOBUF] += 1
            break
        E.pool.data[i, :ln] = E.pool.data[tpl, :ln]
        E.pool.length[i] = ln
        E.burst[k] = i
        k += 1
    port_tx_or_drop(E.ports, E.pool, p, now, E.burst, k)
    regs[SENT] += k
    if regs[REMAINING] >= 0:
        regs[REMAINING] -= n
        if regs[REMAINING] == 0:
            return k
    nxt = regs[NEXT] + regs[INTERVAL]
    if nxt < now - regs[INTERVAL]:
        regs[LATE] += 1
        nxt = now
    regs[NEXT] = nxt
    wheel_schedule(E.wheel, regs[TIMER], nxt)
    return k


@nb.njit(cache=True)
def pktgen_start(E, d, frame, start):
    """Store the template in a pool frame and arm the first departure."""
    regs = E.devs.regs[d]
    tpl = mbuf_alloc(E.pool)
    if tpl < 0:
        return False
    n = min(frame.shape[0], E.pool.data.shape[1])
    E.pool.data[tpl, :n] = frame[:n]
    E.pool.length[tpl] = n
    regs[TEMPLATE] = tpl
    regs[NEXT] = start
    wheel_schedule(E.wheel, regs[TIMER], start)
    return True
