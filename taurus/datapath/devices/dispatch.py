"""One entry point per event for every device kind; the engine calls only these.

Both run once per device per loop pass and take the whole engine tuple (over
a hundred arrays).  They never allocate, so they are ``hot`` (compiled
without reference counting, which would cost an atomic incref/decref pair
per array per call); so is l2fwd.
"""
from ..hot import hot

from .impair import impair_poll, impair_timer
from .l2fwd import l2fwd_poll
from .nic.poll import nic_poll, nic_timer
from .pktgen import pktgen_timer
from .switch.poll import switch_poll, switch_timer
from .table import IMPAIR, L2FWD, NIC, PKTGEN, SWITCH


@hot
def device_poll(E, d, now):
    """Service device d once (rx bursts, processing, tx bursts); returns work done."""
    k = E.devs.kind[d]
    if k == NIC:
        return nic_poll(E, d, now)
    if k == SWITCH:
        return switch_poll(E, d, now)
    if k == L2FWD:
        return l2fwd_poll(E, d, now)
    if k == IMPAIR:
        return impair_poll(E, d, now)
    return 0


@hot
def device_timer(E, d, timer, now):
    """Timer `timer` owned by device d expired at `now`; returns work done."""
    k = E.devs.kind[d]
    if k == NIC:
        return nic_timer(E, d, timer, now)
    if k == SWITCH:
        return switch_timer(E, d, timer, now)
    if k == PKTGEN:
        return pktgen_timer(E, d, now)
    if k == IMPAIR:
        return impair_timer(E, d, timer, now)
    return 0
