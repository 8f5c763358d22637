"""The receiver's congestion control: events about each sender to the NIC's
receiver algorithm (native mode), and its credit grants into the receive
PDCs whose ACK_CC carry them.

A receiving NIC with a receiver algorithm (ccnative ``nic_alg[n]``) raises,
per sender (receive PDC r, ``ev.flow`` = r):
- JOIN when r's first RUD_CC_REQ arrives (``backlog``: what the sender
  announced, bytes);
- DATA for each data packet placed (``bytes``, ``packets`` 1, ``psn``,
  ``ecn_bytes`` if it arrived CE-marked, ``backlog``);
- LEAVE (``reason`` 1) when no data came from it for the NIC's idle
  timeout (NR_RX_IDLE; a scan every half of it on the NIC's timer); its
  next data joins it again.  (PDCs are not closed yet: reason 0 is unused.)
What the algorithm grants (``set_credit``: cumulative bytes) becomes r's
credit, never decreasing; the next ACK_CC carries it.  Without a receiver
algorithm nothing is raised and rx.rx_grant_credit's default policy grants.
The call is out of line and reference-counted, like sigcall.py's.
"""
from collections import namedtuple

import numba as nb

from ... import ccevents as V
from ...ccnative import native_receiver
from ...wheel import wheel_schedule
from .state import (M_NRP, NR_RX_IDLE, NR_RX_TIMER, RP_CC, RP_CREDIT, RP_JOINED, RP_LAST_T,
                    RP_NIC, RP_TARGET)

RxE = namedtuple("RxE", ["rep", "alg", "rp"])


@nb.njit(cache=True, _nrt=True)
def _event(X, n, r, ev, now, v0, v1, v2, v3, v4, v5):
    g = native_receiver(X.alg, X.rep, n, r, ev, now, v0, v1, v2, v3, v4, v5)
    if g > X.rp[r, RP_CREDIT]:
        X.rp[r, RP_CREDIT] = g


@nb.njit(cache=True, inline="always")
def rx_cc_event(E, n, r, ev, now, v0, v1, v2, v3, v4, v5):
    if E.alg.nic_alg[n] >= 0:
        _event(RxE(E.rep, E.alg, E.nic.rp), n, r, ev, now, v0, v1, v2, v3, v4, v5)


@nb.njit(cache=True, inline="always")
def rx_cc_data(E, rp, n, r, p, ln, ce, now):
    """After a data packet of PSN p, ln bytes, was placed for sender r:
    JOIN on its first CC request, then DATA."""
    if E.alg.nic_alg[n] < 0:
        return
    tgt = rp[r, RP_TARGET]
    rp[r, RP_LAST_T] = now
    if rp[r, RP_CC] != 0 and rp[r, RP_JOINED] == 0:
        rp[r, RP_JOINED] = 1
        rx_cc_event(E, n, r, V.EV_JOIN, now, 0, 0, 0, 0, 0, tgt)
    rx_cc_event(E, n, r, V.EV_DATA, now, ln, 1, p, ln if ce else 0, 0, tgt)


@nb.njit(cache=True, inline="always")
def rx_cc_idle(E, n, now):
    """The idle scan (NIC timer TK_RXIDLE): senders silent for NR_RX_IDLE
    leave the receiver algorithm's table; the scan runs again in half of it."""
    N = E.nic
    idle = N.nr[n, NR_RX_IDLE]
    if idle <= 0 or E.alg.nic_alg[n] < 0:
        return
    rp = N.rp
    for r in range(1, N.meta[M_NRP] + 1):
        if rp[r, RP_NIC] == n + 1 and rp[r, RP_JOINED] != 0 and now - rp[r, RP_LAST_T] >= idle:
            rp[r, RP_JOINED] = 0
            rx_cc_event(E, n, r, V.EV_LEAVE, now, 1, 0, 0, 0, 0, 0)
    wheel_schedule(E.wheel, N.nr[n, NR_RX_TIMER], now + max(idle // 2, 1))
