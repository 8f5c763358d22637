"""Numba data path of the PACKET port (stub until the binding lands)."""
import numba as nb


@nb.njit(cache=True)
def pkt_rx_burst(ports, pool, p, now, out, maxn):
    return 0


@nb.njit(cache=True)
def pkt_tx_burst(ports, pool, p, now, bufs, n):
    return 0


@nb.njit(cache=True)
def pkt_service(ports, pool, p, now):
    return 0
