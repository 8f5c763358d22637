"""How many frames an engine's pool needs, and how many each real port lends
for RX, when the engine opens many AF_XDP ports (a generated topology on
namespaces opens one per link end: 96 for a k = 4 fat-tree).

Each AF_XDP port lends pool frames to its fill ring (``ports/xdp_ring.py``:
256 at first, growing to its ``rx_frames`` when the engine falls behind),
so a fixed pool runs dry as ports multiply: 96 ports of 256 frames each
want 24,576, and the default pool has 16,384, leaving nothing for the
switches and NICs.  As DPDK's examples size their mempools (ports x ring
depths + what the application holds), the pool here is
``frames + ports x (rx_frames + TX_SLACK)``, with ``frames`` what the
switches and NICs hold (the default pool).

Fill depth per port shrinks as ports multiply: the kernel's veth copy
delivers at most about 1 Mpps to all of a machine's sockets together
(docs/PLATFORM.md), so in an engine stall of ~10 ms (three busy processes
on two cores) about 10,000 frames arrive in all, whatever the number of
ports.  The ports together lend at most RX_LEND_TOTAL frames, each at most
RX_FRAMES_MAX and at least RX_FRAMES_MIN (two bursts: what one poll
takes), which keeps the pool, pinned once per socket as its UMEM, at tens
of MB rather than ports x 2 MB.
"""
POOL_FRAMES = 16384      # the default pool: what switch queues and NICs hold
RX_FRAMES_MAX = 1024     # open_xdp_port's default rx_frames
RX_FRAMES_MIN = 64       # two bursts of 32
RX_LEND_TOTAL = 16384    # frames every port together lends for RX
TX_SLACK = 64            # frames between a port's TX kick and its completion reap


def rx_frames(n_ports: int) -> int:
    """The most frames each of `n_ports` AF_XDP ports lends to its fill ring."""
    if n_ports <= 0:
        return RX_FRAMES_MAX
    return max(RX_FRAMES_MIN, min(RX_FRAMES_MAX, RX_LEND_TOTAL // n_ports))


def pool_frames(n_ports: int, frames: int = POOL_FRAMES, rx: int | None = None) -> int:
    """Frames of a pool for `frames` held by devices plus `n_ports` real
    ports, each lending at most `rx` (default rx_frames(n_ports)) and
    holding TX_SLACK."""
    if n_ports < 0 or frames <= 0 or (rx is not None and rx <= 0):
        raise ValueError(f"pool_frames needs n_ports >= 0, frames > 0 and rx > 0, "
                         f"got {n_ports}, {frames}, {rx}")
    return frames + n_ports * ((rx_frames(n_ports) if rx is None else rx) + TX_SLACK)

