"""The memory links' arrivals heap (ports/memlink.py): whatever the sends
and receives, its top is the earliest first frame of any link, and the
ports it names as due are exactly those whose first frame is due."""
import numpy as np
import pytest

from taurus.datapath.mbuf import make_pool, mbuf_alloc, mbuf_free
from taurus.datapath.ports.common import INF, MEM
from taurus.datapath.ports.memlink import (CAP, FIFO, HEAD, TAIL, mem_due_ports,
                                           mem_next_arrival, mem_rx_burst, mem_rx_pending,
                                           mem_send_at, mem_tx_burst, mem_waiting,
                                           memlink_connect, memlink_fifo, memlink_fifo_frames)
from taurus.datapath.ports.table import make_ports


def _first_due(ports, p):
    due = mem_waiting(ports, p)
    return due[0] if due else INF


def test_the_heap_names_the_earliest_and_every_due_port():
    rng = np.random.default_rng(7)
    n = 24
    ports, pool = make_ports([MEM] * n), make_pool(4096, buf_size=256)
    room = {}
    for a in range(0, n, 2):
        bare = a % 4 == 0                 # no delay or rate: mem_send_at's links
        room[a] = room[a + 1] = int(rng.choice([4, 16, CAP]))   # small rings wrap and fill
        memlink_connect(ports, a, a + 1, delay_ns=0 if bare else int(rng.integers(0, 3000)),
                        rate_bps=0 if bare else int(rng.choice([0, 10**9, 10**10])),
                        fifo_frames=room[a])
    out = np.empty(2 * n + 2, np.int64)
    buf = np.empty(64, np.int32)
    now = 0
    for _ in range(3000):
        p = int(rng.integers(n))
        if rng.random() < 0.2:            # a sender that models the wire itself
            i = mbuf_alloc(pool)
            pool.length[i] = 100
            if not mem_send_at(ports, pool, p, now, i, now + int(rng.integers(-500, 3000))):
                assert p % 4 > 1 or ports.regs[p ^ 1, TAIL] - ports.regs[p ^ 1, HEAD] >= room[p]
                mbuf_free(pool, i)
        elif rng.random() < 0.5:
            k = int(rng.integers(1, 8))
            for j in range(k):
                buf[j] = mbuf_alloc(pool)
                pool.length[buf[j]] = 100
            sent = mem_tx_burst(ports, pool, p, now, buf, k)
            q = p ^ 1
            assert sent == k or ports.regs[q, TAIL] - ports.regs[q, HEAD] == room[q]
            for j in range(sent, k):
                mbuf_free(pool, buf[j])
        else:
            got = mem_rx_burst(ports, pool, p, now, buf, int(rng.integers(1, 8)))
            for j in range(got):
                mbuf_free(pool, buf[j])
        if rng.random() < 0.3:
            now += int(rng.integers(0, 2000))
        firsts = [_first_due(ports, q) for q in range(n)]
        assert mem_next_arrival(ports) == min(firsts)
        due = sorted(out[:mem_due_ports(ports, now, out)].tolist())
        assert due == [q for q in range(n) if firsts[q] <= now]
        assert [q for q in range(n) if mem_rx_pending(ports, q, now)] == due


def test_send_at_is_due_at_its_time_in_order_and_only_on_a_bare_link():
    """mem_send_at: the frame arrives at its due time (never before now or
    the frame ahead of it); a link with a delay or a rate refuses it."""
    ports, pool = make_ports([MEM] * 4), make_pool(64, buf_size=256)
    memlink_connect(ports, 0, 1)
    memlink_connect(ports, 2, 3, delay_ns=100)
    buf = np.empty(8, np.int32)
    a, b, c = mbuf_alloc(pool), mbuf_alloc(pool), mbuf_alloc(pool)
    assert not mem_send_at(ports, pool, 2, 0, c, 500)
    assert mem_send_at(ports, pool, 0, 10, a, 1000) and mem_send_at(ports, pool, 0, 20, b, 900)
    assert mem_next_arrival(ports) == 1000
    assert mem_rx_burst(ports, pool, 1, 999, buf, 8) == 0
    assert mem_rx_burst(ports, pool, 1, 1000, buf, 8) == 2 and list(buf[:2]) == [a, b]
    assert mem_next_arrival(ports) == INF


def test_rings_are_sized_by_bandwidth_x_delay_and_packed():
    """A ring holds twice the wire's minimum frames in flight plus the
    sender's room, as a power of two (CAP without a rate); rings lie packed,
    each aligned to its size; a bad size or a second ring is an error."""
    assert memlink_fifo_frames(10**10, 1000, room=8) == 64        # 20 in flight: 2 * 20 + 8
    assert memlink_fifo_frames(10**10, 1000) == 256               # + a NIC's burst room
    assert memlink_fifo_frames(10**11, 10**5) == CAP              # capped
    assert memlink_fifo_frames(0, 1000) == CAP                    # no rate: unbounded
    ports = make_ports([MEM] * 4)
    memlink_connect(ports, 0, 1, fifo_frames=0)
    memlink_fifo(ports, 0, 4)
    memlink_fifo(ports, 1, 64)
    assert [ports.regs[p, FIFO] >> 16 for p in (0, 1)] == [0, 128]
    with pytest.raises(ValueError, match="already"):
        memlink_fifo(ports, 1, 64)
    with pytest.raises(ValueError, match="power of two"):
        memlink_fifo(ports, 2, 48)
    with pytest.raises(ValueError, match="power of two"):
        memlink_fifo(ports, 2, 2 * CAP)
