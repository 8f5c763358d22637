"""The switch's entry points for the engine: one poll (RX burst, ingress per
frame) and one timer handler (egress, telemetry).  The stages are listed in
the package docstring (switch/__init__.py)."""
import numba as nb
import numpy as np

from ...ports.common import MEM
from ...ports.dispatch import port_rx_burst
from ...ports.memlink import mem_rx_pending
from ...hot import hot
from .ingress import ingress
from .egress import delay_in, port_run
from .state import C_IN_DELAY, SwitchState, make_switch_state  # noqa: F401
from .telemetry import tel_sample


@hot
def switch_flush(E, d, now):
    """Run every port of d that has something new (queued frames, PFC
    frames, delay-line entries) so it serializes at once and arms its timer."""
    sw = E.sw
    marked = sw.dirty.shape[0] - 1        # how many ports are marked (queues.mark_dirty)
    w = 0
    again = sw.dirty[marked] > 0
    while again:
        again = False
        for k in range(E.devs.nports[d]):
            p = np.int64(E.devs.ports[d, k])
            if sw.dirty[p] != 0:
                sw.dirty[p] = 0
                sw.dirty[marked] -= 1
                w += port_run(E, p, now)
                again = sw.dirty[marked] > 0   # none left: no walk to find that out
    return w


@hot
def switch_poll(E, d, now):
    sw = E.sw
    burst = E.burst
    work = 0
    for k in range(E.devs.nports[d]):
        p = np.int64(E.devs.ports[d, k])
        if E.ports.kind[p] == MEM and not mem_rx_pending(E.ports, p, now):
            continue      # asked inline: most ports of a polled switch have nothing
        n = port_rx_burst(E.ports, E.pool, p, now, burst, burst.shape[0])
        if n == 0:
            continue
        work += n
        ind = sw.pcfg[p, C_IN_DELAY]
        for j in range(n):
            if ind > 0:
                delay_in(E, p, np.int64(burst[j]), now + ind)
            else:
                ingress(E, d, p, np.int64(burst[j]), now)
    if work:
        work += switch_flush(E, d, now)
    return work


@hot
def switch_timer(E, d, timer, now):
    p = E.wheel.arg[timer]
    if p < 0:
        return tel_sample(E, d, now)
    w = port_run(E, p, now)
    return w + switch_flush(E, d, now)

