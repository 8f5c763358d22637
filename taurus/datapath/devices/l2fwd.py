"""L2 forwarder: every frame received on one port leaves by the other.

The smallest device that proves the engine loop, in the spirit of DPDK's
l2fwd: rx-burst -> tx-burst, and whatever the output port cannot take is
dropped and counted there (tx_drop).
"""
from ..ports.dispatch import port_rx_burst, port_tx_or_drop
from ..hot import hot


@hot
def l2fwd_poll(E, d, now):
    work = 0
    burst = E.burst
    for side in range(2):
        a = E.devs.ports[d, side]
        b = E.devs.ports[d, 1 - side]
        n = port_rx_burst(E.ports, E.pool, a, now, burst, burst.shape[0])
        if n > 0:
            port_tx_or_drop(E.ports, E.pool, b, now, burst, n)
            work += n
    return work
