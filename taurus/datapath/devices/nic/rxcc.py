"""The receiver's congestion control: the NIC's active-sender table,
events about each sender to the NIC's receiver algorithm (native mode),
and its credit grants into the receive PDCs whose ACK_CC carry them.

The active-sender table (a NIC with a receiver algorithm): a sender
(receive PDC r) is in it from its first RUD_CC_REQ (RP_JOINED) until it
leaves; per NIC, NR_RX_ACTIVE counts them and NR_RX_BACKLOG sums their
announced backlogs (RUD_CC_REQ credit_target, RP_BACKLOG as counted).  It
is bounded by the receive PDC table, and a closed PDC leaves it at once.

Events to the NIC's receiver algorithm, per sender (``ev.flow`` = r),
each with the table as it is after the event (``active``, ``backlog_sum``):
- JOIN when r's first RUD_CC_REQ arrives, or its first after it left
  (``backlog``: what the sender announced, bytes);
- DATA for each data packet placed (``bytes``, ``packets`` 1, ``psn``,
  ``ecn_bytes`` if it arrived CE-marked, ``backlog``);
- TIMER (``ticks``, ``period``) to each sender in the table, every
  NR_RX_TICK ns when the algorithm binds TIMER (its own wheel timer;
  rx.rx_tick), so it can grant senders that have nothing in flight: a
  grant that grew goes out at once in an ACK;
- LEAVE ``reason`` 0 when r's PDC is closed (close.pdc_free); ``reason`` 1
  when no data came from it for the NIC's idle timeout (NR_RX_IDLE; a scan
  every half of it on the NIC's timer); its next data joins it again.
What the algorithm grants (``set_credit``: cumulative bytes) becomes r's
credit, never decreasing; the next ACK_CC carries it.  Each grant that
raised a credit counts in the NIC's ``rx_grant``.  Without a receiver
algorithm nothing is raised, no table is kept and rx.rx_grant_credit's
default policy grants.  The call is out of line and reference-counted.
"""
from collections import namedtuple

import numba as nb

from ... import ccevents as V
from ...ccnative import native_receiver
from ...wheel import wheel_schedule
from .state import (C_RX_GRANT, M_NRP, NR_RX_ACTIVE, NR_RX_BACKLOG, NR_RX_IDLE, NR_RX_TIMER, RP_BACKLOG,
                    RP_CC, RP_CREDIT, RP_JOINED, RP_LAST_T, RP_NIC, RP_TARGET)

RxE = namedtuple("RxE", ["rep", "alg", "rp", "ncnt"])


@nb.njit(cache=True, _nrt=True)
def _event(X, n, r, ev, now, v0, v1, v2, v3, v4, v5, v6, v7):
    g = native_receiver(X.alg, X.rep, n, r, ev, now, v0, v1, v2, v3, v4, v5, v6, v7)
    if g > X.rp[r, RP_CREDIT]:
        X.rp[r, RP_CREDIT] = g
        X.ncnt[n, C_RX_GRANT] += 1


@nb.njit(cache=True, inline="always")
def rx_cc_event(E, n, r, ev, now, v0, v1, v2, v3, v4, v5):
    """Event ev about sender r, with NIC n's active-sender table (V6, V7)."""
    if E.alg.nic_alg[n] >= 0:
        nr = E.nic.nr
        _event(RxE(E.rep, E.alg, E.nic.rp, E.nic.ncnt), n, r, ev, now, v0, v1, v2, v3, v4, v5,
               nr[n, NR_RX_ACTIVE], nr[n, NR_RX_BACKLOG])


@nb.njit(cache=True, inline="always")
def _table_join(N, n, r):
    N.rp[r, RP_JOINED] = 1
    N.rp[r, RP_BACKLOG] = 0
    N.nr[n, NR_RX_ACTIVE] += 1


@nb.njit(cache=True, inline="always")
def _table_backlog(N, n, r, tgt):
    N.nr[n, NR_RX_BACKLOG] += tgt - N.rp[r, RP_BACKLOG]
    N.rp[r, RP_BACKLOG] = tgt


@nb.njit(cache=True, inline="always")
def _table_leave(N, n, r):
    N.nr[n, NR_RX_BACKLOG] -= N.rp[r, RP_BACKLOG]
    N.nr[n, NR_RX_ACTIVE] -= 1
    N.rp[r, RP_BACKLOG] = 0
    N.rp[r, RP_JOINED] = 0


@nb.njit(cache=True, inline="always")
def rx_cc_data(E, rp, n, r, p, ln, ce, now):
    """After a data packet of PSN p, ln bytes, was placed for sender r:
    JOIN on its first CC request, then DATA."""
    if E.alg.nic_alg[n] < 0:
        return
    N = E.nic
    tgt = rp[r, RP_TARGET]
    if rp[r, RP_CC] != 0 and rp[r, RP_JOINED] == 0:
        _table_join(N, n, r)
        _table_backlog(N, n, r, tgt)
        rx_cc_event(E, n, r, V.EV_JOIN, now, 0, 0, 0, 0, 0, tgt)
    elif rp[r, RP_JOINED] != 0:
        _table_backlog(N, n, r, tgt)
    rx_cc_event(E, n, r, V.EV_DATA, now, ln, 1, p, ln if ce else 0, 0, tgt)


@nb.njit(cache=True, inline="always")
def rx_cc_close(E, n, r, now):
    """Receive PDC r is being closed: it leaves the table at once (LEAVE
    reason 0)."""
    if E.alg.nic_alg[n] >= 0 and E.nic.rp[r, RP_JOINED] != 0:
        _table_leave(E.nic, n, r)
        rx_cc_event(E, n, r, V.EV_LEAVE, now, 0, 0, 0, 0, 0, 0)


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
            _table_leave(N, n, r)
            rx_cc_event(E, n, r, V.EV_LEAVE, now, 1, 0, 0, 0, 0, 0)
    wheel_schedule(E.wheel, N.nr[n, NR_RX_TIMER], now + max(idle // 2, 1))

