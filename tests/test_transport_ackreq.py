"""ACK requests per window (add_nic ack_requests): a window-limited sender
asks for an ACK (AR) k times per window, so a receiver that coalesces
more than a window holds neither stalls it nor times it out, and ACKs no
more often than that."""
import pytest

from taurus.datapath.devices.nic.setup import (add_flow, flow_done, nic_completions,
                                               nic_counters, nic_post)
from test_transport_transfer import IP2, MAC2, payload, two_hosts

CWND = 64 * 1024          # 64 packets of the default MSS (1024)
SIZE = 2 << 20            # 2048 packets, 32 windows


def _send(ack_requests):
    """One 2 MiB message through a 64 KiB window to a receiver that ACKs
    every 1000 packets or after 1 ms; (completion time ns, ACKs received)."""
    eng, d1, d2, _ = two_hosts(nic_opts=dict(ack_every=1000, ack_delay_ns=1_000_000, rx_buf_bytes=SIZE,
                                             ack_requests=ack_requests))
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=CWND, buf_bytes=SIZE)
        t0 = eng.now()
        nic_post(eng, d1, f, payload(SIZE))
        eng.run_for(200_000_000)
        assert flow_done(eng, f)
        done = [c for c in nic_completions(eng) if c[0] == 1 and c[2] == f]
        c = nic_counters(eng, d1)
        return done[-1][5] - t0, c["rx_ack"], c["tx_retx"]


def test_two_requests_per_window_keep_a_coarsely_acked_flow_moving():
    t_off, acks_off, retx_off = _send(0)
    t_on, acks_on, retx_on = _send(2)
    # Without requests the window's ACK waits for the receiver's 1 ms
    # deadline, and the sender's RTO (~50 us) fires first: a spurious
    # retransmission per window.
    assert retx_off >= SIZE // CWND - 4
    # With two per window: an ACK every 32 packets, no timeout, and the
    # message takes about its serialization time (2 MiB at 10 Gbit/s: 1.7 ms).
    assert retx_on == 0
    assert SIZE // CWND * 2 <= acks_on <= SIZE // CWND * 2 + 8
    assert t_on < 2_000_000


def test_ack_requests_must_not_be_negative():
    with pytest.raises(ValueError, match="ack_requests"):
        two_hosts(nic_opts=dict(ack_requests=-1))


def test_a_refused_set_up_leaves_no_shared_memory():
    import os
    from taurus.datapath.shm import list_segments
    mine = f"taurus-eng-{os.getpid()}-"       # other xdist workers make engines meanwhile
    before = set(list_segments(mine))
    with pytest.raises(ValueError, match="ack_requests"):
        two_hosts(nic_opts=dict(ack_requests=-1))
    assert set(list_segments(mine)) <= before


def _acks(post):
    """ACKs a receiver that coalesces 1000 packets or 1 ms sends for 512 KiB
    through an open window: its ACKs come from the sender's requests."""
    eng, d1, d2, _ = two_hosts(nic_opts=dict(ack_every=1000, ack_delay_ns=1_000_000,
                                             rx_buf_bytes=SIZE))
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=SIZE, buf_bytes=SIZE)
        post(eng, d1, f)
        eng.run_for(20_000_000)
        assert flow_done(eng, f)
        return nic_counters(eng, d1)["rx_ack"]


def test_a_generated_finite_flow_asks_for_acks_as_one_message_does():
    """The NIC cuts a finite generated flow into 64 KiB pieces (gen.py), but
    it is one transfer: its ACKs are those of the same bytes posted as one
    message, not of eight messages (each end asks for an ACK)."""
    from taurus.datapath.devices.nic.setup import nic_generate
    from taurus.datapath.devices.nic.state import GEN_CHUNK
    n = 512 * 1024
    generated = _acks(lambda eng, d, f: nic_generate(eng, f, n))
    one = _acks(lambda eng, d, f: nic_post(eng, d, f, payload(n)))
    eight = _acks(lambda eng, d, f: [nic_post(eng, d, f, payload(GEN_CHUNK))
                                     for _ in range(n // GEN_CHUNK)])
    assert generated == one < eight - n // GEN_CHUNK // 2, (generated, one, eight)
