"""What every port kind shares: kinds, register-table size, counter names.

A port is a row in the engine's port table.  Its kind picks the code that
services it; its registers (one int64 row, ``regs[p]``) hold whatever that
kind needs between loop iterations: file descriptor, ring addresses, cached
ring indices, cursors.  ``lists[p]`` is one int64 row of per-port scratch
(e.g. AF_XDP's free TX frame addresses in bench/_rawloops.py), because frames
kept in flight across loop calls need state that persists (docs/PLATFORM.md);
memory links read ``lists`` as one flat array and pack their rings in it,
each as large as its link needs (memlink.py).  Counters live in shared
memory so another process can read them while the engine runs.
"""
import numpy as np

# Port kinds.
MEM = 0      # in-memory link (virtual or wall clock; tests, big simulated topologies)
XDP = 1      # AF_XDP socket (copy or zero-copy)
PACKET = 2   # AF_PACKET with TPACKET_V3 rings

KIND_NAMES = {MEM: "mem", XDP: "af_xdp", PACKET: "af_packet"}

N_REGS = 64      # int64 registers per port
N_LIST = 8192    # int64 scratch entries per port

# Per-port counters (uint64).
RX_PKTS, RX_BYTES, TX_PKTS, TX_BYTES, RX_NOBUF, TX_DROP, RX_ERR, TX_ERR, \
    TX_KICKS, RX_WAKEUPS, TX_BUSY, RX_EMPTY = range(12)
N_COUNTERS = 16
COUNTER_NAMES = ["rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "rx_nobuf", "tx_drop",
                 "rx_err", "tx_err", "tx_kicks", "rx_wakeups", "tx_busy", "rx_empty"]
"""rx_nobuf: frames the port had but the pool could not take (dropped, counted).
tx_drop: frames a device handed to a port that had no room (dropped, counted).
rx_err / tx_err: frames too long for a buffer, or a socket error.
tx_kicks / rx_wakeups: syscalls made; tx_busy: kicks answered EAGAIN/EBUSY."""

INF = np.int64(2**62)  # "no event"
