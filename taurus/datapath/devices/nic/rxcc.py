"""The receiver's congestion control: events about each sender to the NIC's
receiver algorithm (native mode), and its credit grants into the receive
PDCs whose ACK_CC carry them.

A receiving NIC with a receiver algorithm (ccnative ``nic_alg[n]``) raises,
per sender (receive PDC r, ``ev.flow`` = r):
- JOIN when r's first RUD_CC_REQ arrives (``backlog``: what the sender
  announced, bytes);
- DATA for each data packet placed (``bytes``, ``packets`` 1, ``psn``,
  ``ecn_bytes`` if it arrived CE-marked, ``backlog``);
- LEAVE is defined (ccevents) but not raised yet: PDCs are never closed,
  and idle senders do not time out of the table.
What the algorithm grants (``set_credit``: cumulative bytes) becomes r's
credit, never decreasing; the next ACK_CC carries it.  Without a receiver
algorithm nothing is raised and rx.rx_grant_credit's default policy grants.
The call is out of line and reference-counted, like sigcall.py's.
"""
from collections import namedtuple

import numba as nb

from ... import ccevents as V
from ...ccnative import native_receiver
from .state import RP_CC, RP_CREDIT, RP_TARGET

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
def rx_cc_data(E, rp, n, r, p, ln, ce, was_cc, now):
    """After a data packet of PSN p, ln bytes, was placed for sender r:
    JOIN on its first CC request, then DATA."""
    if E.alg.nic_alg[n] < 0:
        return
    tgt = rp[r, RP_TARGET]
    if rp[r, RP_CC] != 0 and was_cc == 0:
        rx_cc_event(E, n, r, V.EV_JOIN, now, 0, 0, 0, 0, 0, tgt)
    rx_cc_event(E, n, r, V.EV_DATA, now, ln, 1, p, ln if ce else 0, 0, tgt)
