"""One interface over every port kind; the engine and devices call only these.

    n = port_rx_burst(ports, pool, p, now, out, maxn)   frames received -> out[:n]
    k = port_tx_burst(ports, pool, p, now, bufs, n)     first k of bufs accepted
    w = port_service(ports, pool, p, now)               kicks, completions, refills
    t = port_next_event(ports, p, now)                  next arrival after now (virtual clock)
    b = port_rx_pending(ports, p, now)                  a frame waits to be received

Bursts through a port with capture on (ports/capture.py) are copied to the
capture ring: received frames after the receive, sent ones after the send.

A port that accepts a frame owns it from then on (it frees it once sent);
frames it does not accept stay with the caller.

All of it is ``hot`` (no reference counting): every device calls these
several times per loop pass, and with it each call cost ~0.45 us of atomic
incref/decref on the port and pool arrays even when nothing was there.
"""
import numpy as np

from .afpacket_ring import pkt_rx_burst, pkt_rx_pending, pkt_service, pkt_tx_burst
from .capture import CAP_RX, CAP_TX, cap_burst
from .common import INF, MEM, PACKET, TX_DROP, TX_PKTS, XDP
from .memlink import mem_next_event, mem_rx_burst, mem_rx_pending, mem_tx_burst
from .xdp_ring import xdp_rx_burst, xdp_rx_pending, xdp_service, xdp_tx_burst
from ..mbuf import mbuf_free
from ..hot import hot, hot_stage


@hot
def port_rx_burst(ports, pool, p, now, out, maxn):
    k = ports.kind[p]
    if k == MEM:
        if not mem_rx_pending(ports, p, now):   # most polls of a link find nothing: no call
            return 0
        n = mem_rx_burst(ports, pool, p, now, out, maxn)
    elif k == XDP:
        n = xdp_rx_burst(ports, pool, p, now, out, maxn)
    elif k == PACKET:
        n = pkt_rx_burst(ports, pool, p, now, out, maxn)
    else:
        n = 0
    if n and ports.cap.on[p] & CAP_RX:
        cap_burst(ports.cap, pool, p, now, out, n, CAP_RX)
    return n


@hot
def port_tx_burst(ports, pool, p, now, bufs, n):
    k = ports.kind[p]
    if ports.cap.on[p] & CAP_TX:
        return _tx_captured(ports, pool, p, now, bufs, n)
    if k == MEM:
        return mem_tx_burst(ports, pool, p, now, bufs, n)
    if k == XDP:
        return xdp_tx_burst(ports, pool, p, now, bufs, n)
    if k == PACKET:
        return pkt_tx_burst(ports, pool, p, now, bufs, n)
    return 0


@hot
def _tx_captured(ports, pool, p, now, bufs, n):
    """port_tx_burst with capture on: the frames the port counted as sent
    are copied after the burst (their bytes are still in the pool: a port
    that frees a frame at once, AF_PACKET, does so only within the call)."""
    k = ports.kind[p]
    before = ports.cnt[p, TX_PKTS]
    if k == MEM:
        taken = mem_tx_burst(ports, pool, p, now, bufs, n)
    elif k == XDP:
        taken = xdp_tx_burst(ports, pool, p, now, bufs, n)
    elif k == PACKET:
        taken = pkt_tx_burst(ports, pool, p, now, bufs, n)
    else:
        taken = 0
    sent = np.int64(ports.cnt[p, TX_PKTS] - before)
    if sent:
        # A frame a port refuses (too long: tx_err) is taken but not sent;
        # in such a rare burst the first `sent` frames are the ones captured.
        cap_burst(ports.cap, pool, p, now, bufs, sent, CAP_TX)
    return taken


@hot
def port_tx_or_drop(ports, pool, p, now, bufs, n):
    """Transmit what the port takes; free and count the rest as tx_drop."""
    sent = port_tx_burst(ports, pool, p, now, bufs, n)
    for k in range(sent, n):
        mbuf_free(pool, bufs[k])
    ports.cnt[p, TX_DROP] += n - sent
    return sent


@hot
def port_service(ports, pool, p, now):
    k = ports.kind[p]
    if k == XDP:
        return xdp_service(ports, pool, p, now)
    if k == PACKET:
        return pkt_service(ports, pool, p, now)
    return 0


@hot_stage          # inlined: the engine loop asks every pass
def port_rx_pending(ports, p, now):
    k = ports.kind[p]
    if k == MEM:
        return mem_rx_pending(ports, p, now)
    if k == XDP:
        return xdp_rx_pending(ports, p)
    if k == PACKET:
        return pkt_rx_pending(ports, p)
    return False


@hot
def port_next_event(ports, p, now):
    """The earliest arrival at p strictly after `now` (virtual clock)."""
    if ports.kind[p] == MEM:
        return mem_next_event(ports, p, now)
    return INF
