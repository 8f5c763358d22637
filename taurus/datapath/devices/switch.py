"""The software switch that emulates the fabric: an engine device with any
number of ports.  Per packet (details in the switch_* modules):

  ingress (switch_ingress)  parse once; PFC frames are honoured; route by
                            destination IP, ECMP on the 5-tuple (UET: the
                            entropy value); class by DSCP; trimming; drop-tail
                            into the egress queue (shared buffer), PFC ingress
                            accounting (switch_pfc)
  egress  (switch_port)     per-port timer on the timing wheel: strict priority
                            over classes not paused; ECN/RED or TCD marks
                            (switch_marks), CSIG (switch_csig), INT (switch_int);
                            serialization at the link rate, propagation delay
  telemetry                 per-port time series (switch_telemetry)

Set-up from Python: ``add_switch`` (switch_setup); state: switch_state.
"""
import numba as nb
import numpy as np

from ..ports.dispatch import port_rx_burst
from ..wire.codec import hot
from .switch_ingress import ingress
from .switch_port import delay_in, port_run
from .switch_state import C_IN_DELAY, SwitchState, make_switch_state  # noqa: F401
from .switch_telemetry import tel_sample


@hot
def switch_flush(E, d, now):
    """Run every port of d that has something new (queued frames, PFC
    frames, delay-line entries) so it serializes at once and arms its timer."""
    sw = E.sw
    w = 0
    again = True
    while again:
        again = False
        for k in range(E.devs.nports[d]):
            p = np.int64(E.devs.ports[d, k])
            if sw.dirty[p] != 0:
                sw.dirty[p] = 0
                w += port_run(E, p, now)
                again = True
    return w


@hot
def switch_poll(E, d, now):
    sw = E.sw
    burst = E.burst
    work = 0
    for k in range(E.devs.nports[d]):
        p = np.int64(E.devs.ports[d, k])
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


def add_switch(eng, ports, config=None, name=None) -> int:
    """Python entry: a switch device on these engine ports (see switch_setup)."""
    from .switch_setup import add_switch as _add
    return _add(eng, ports, config, name)
