"""Streams are rings: a flow moves many times its buffer sizes, intact,
through loss; the sender never overruns the receiver's unconsumed bytes."""
import pytest

from taurus.datapath.devices.nic.app import WouldBlock
from taurus.datapath.devices.nic.setup import (add_flow, flow_done, nic_commit, nic_counters,
                                               nic_post, nic_send_buffer, nic_take_delivered)

from test_transport_transfer import IP1, IP2, MAC2, payload, two_hosts

RING = 64 << 10


def _pump(eng, d1, d2, f, data, msg, step_ns, take=True):
    """Post `data` in `msg`-byte messages as the ring allows; take what
    arrives.  Returns the bytes received."""
    got, pos = [], 0
    for _ in range(200_000):
        while pos < len(data):
            try:
                nic_post(eng, d1, f, data[pos:pos + msg])
            except WouldBlock:
                break
            pos += msg
        eng.run_for(step_ns)
        if take:
            got.append(nic_take_delivered(eng, d2, IP1, f))
        if pos >= len(data) and flow_done(eng, f) and (not take or sum(map(len, got)) == len(data)):
            break
    return b"".join(got)


def test_twenty_ring_sizes_intact_with_one_percent_loss():
    eng, d1, d2, _ = two_hosts(impair=dict(loss=0.01, seed=11),
                               nic_opts=dict(rx_buf_bytes=RING))
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, buf_bytes=RING)
        data = payload(20 * RING, 5)
        assert _pump(eng, d1, d2, f, data, 8000, 50_000) == data
        c1 = nic_counters(eng, d1)
        assert c1["tx_retx"] > 0 and c1["rto_fail"] == 0
        assert eng.frames_in_use() == 0


def test_posting_beyond_the_ring_would_block():
    eng, d1, d2, _ = two_hosts(nic_opts=dict(rx_buf_bytes=RING))
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, buf_bytes=RING)
        nic_post(eng, d1, f, payload(RING - 10))
        with pytest.raises(WouldBlock):
            nic_post(eng, d1, f, payload(11))
        with pytest.raises(ValueError):
            nic_post(eng, d1, f, payload(RING + 1))


def test_slow_reader_stalls_the_sender_then_it_resumes():
    """The app does not consume: the sender stops at the receiver's ring;
    once the app reads, the window reopens and the rest arrives."""
    eng, d1, d2, _ = two_hosts(nic_opts=dict(rx_buf_bytes=RING))
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, buf_bytes=4 * RING)
        data = payload(3 * RING, 9)
        for k in range(0, len(data), 16384):
            nic_post(eng, d1, f, data[k:k + 16384])
        eng.run_for(5 * 10**6)
        c2 = nic_counters(eng, d2)
        first = nic_take_delivered(eng, d2, IP1, f)
        assert len(first) == RING and not flow_done(eng, f)
        got = [first]
        for _ in range(100):
            eng.run_for(10**6)
            got.append(nic_take_delivered(eng, d2, IP1, f))
        assert b"".join(got) == data and flow_done(eng, f)
        assert nic_counters(eng, d1)["rto_fail"] == 0
        assert c2["drop_parse"] == 0


def test_zero_copy_send_wraps_the_ring_and_arrives_intact():
    """nic_send_buffer + nic_commit: each message is written in place in the
    send ring; one that crosses the ring's end comes as two views; the
    stream arrives intact, and a full ring or an oversized message is
    refused as nic_post refuses it."""
    eng, d1, d2, _ = two_hosts(nic_opts=dict(rx_buf_bytes=RING))
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, buf_bytes=RING)
        with pytest.raises(ValueError):
            nic_send_buffer(eng, d1, f, RING + 1)
        data = payload(3 * RING, 4)
        msg = 24_000                          # does not divide the ring: some straddle its end
        got, pos, split = [], 0, 0
        for _ in range(10_000):
            while pos < len(data):
                n = min(msg, len(data) - pos)
                try:
                    views = nic_send_buffer(eng, d1, f, n)
                except WouldBlock:
                    break
                split += len(views) == 2
                a = pos
                for v in views:
                    v[:] = data[a:a + len(v)]
                    a += len(v)
                assert a == pos + n
                nic_commit(eng, d1, f, n)
                pos += n
            eng.run_for(50_000)
            got.append(nic_take_delivered(eng, d2, IP1, f))
            if pos >= len(data) and flow_done(eng, f) and sum(map(len, got)) == len(data):
                break
        assert b"".join(got) == data and split >= 2
        nic_post(eng, d1, f, payload(RING - 10))
        with pytest.raises(WouldBlock):
            nic_send_buffer(eng, d1, f, 11)
