"""The host NIC transport in virtual time, two hosts: bytes arrive intact
through loss and reordering; pacing, window and credit gates hold; 10k flows
complete."""
import numpy as np
import pytest

from taurus.datapath.devices.impair import add_impair, impair_counters
from taurus.datapath.devices.nic.setup import (add_flow, add_nic, flow_done, flow_stats,
                                               nic_completions, nic_counters, nic_delivered,
                                               nic_post, nic_reserve, nic_take_delivered)
from taurus.datapath.engine import Engine

MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"
IP1, IP2 = "10.0.0.1", "10.0.0.2"
G = 1_000_000_000


def two_hosts(rate=10 * G, delay=1000, impair=None, max_flows=64, nic_opts=None, **reserve):
    """h1 -- [impair] -- h2 over memory links; returns (eng, d1, d2, dimp).
    A set-up that raises closes the engine (its shared memory) first."""
    eng = Engine(clock="virtual", n_frames=32768)
    try:
        nic_reserve(eng, max_flows=max_flows, **reserve)
        if impair is None:
            a, b = eng.add_mem_link("h1", "h2", delay_ns=delay, rate_bps=rate)
            di = None
        else:
            a, x = eng.add_mem_link("h1", "im0", delay_ns=delay, rate_bps=rate)
            y, b = eng.add_mem_link("im1", "h2", delay_ns=delay, rate_bps=rate)
            di = add_impair(eng, x, y, **impair)
        opts = dict(line_rate_bps=rate)
        opts.update(nic_opts or {})
        d1 = add_nic(eng, a, MAC1, IP1, **opts)
        d2 = add_nic(eng, b, MAC2, IP2, **opts)
    except BaseException:
        eng.close()
        raise
    return eng, d1, d2, di


def payload(n, seed=0):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


@pytest.mark.parametrize("loss,reorder", [(0.0, 0.0), (0.01, 0.0), (0.10, 0.0), (0.0, 0.05),
                                          (0.10, 0.05)])
def test_random_bytes_arrive_intact(loss, reorder):
    eng, d1, d2, di = two_hosts(impair=dict(loss=loss, reorder=reorder, reorder_k=3,
                                            reorder_delay_ns=20_000, seed=7))
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        g = add_flow(eng, d2, MAC1, IP1)               # the other way at the same time
        msgs = [payload(n, s) for s, n in enumerate((1, 1500, 70_000, 123_457))]
        for m in msgs:
            nic_post(eng, d1, f, m)
        back = payload(50_000, 99)
        nic_post(eng, d2, g, back)
        eng.run_for(2 * 10**9)
        assert flow_done(eng, f) and flow_done(eng, g)
        assert nic_delivered(eng, d2, IP1, f) == b"".join(msgs)
        assert nic_delivered(eng, d1, IP2, g) == back
        ic = impair_counters(eng, di)
        c1, c2 = nic_counters(eng, d1), nic_counters(eng, d2)
        if loss:
            assert ic["dropped"] > 0 and c1["tx_retx"] > 0
        if reorder:
            assert ic["reordered"] > 0 and c2["rx_ooo"] > 0
        if not loss and not reorder:
            assert c1["tx_retx"] == 0 and c2["rx_dup"] == 0
        assert c1["rto_fail"] == 0 and c2["drop_parse"] == 0
        # completions: 4 sent + 4 received messages on flow f, in order
        cq = nic_completions(eng)
        tx = [r for r in cq if r[0] == 1 and r[2] == f]
        rx = [r for r in cq if r[0] == 2 and r[1] == 1]
        ends = list(np.cumsum([len(m) for m in msgs]))
        assert [r[4] for r in tx] == ends and [r[3] for r in tx] == [0, 1, 2, 3]
        assert [r[4] for r in rx] == ends
        assert all(b[5] >= a[5] for a, b in zip(tx, tx[1:]))
        assert eng.frames_in_use() == 0


def test_take_delivered_streams_in_order():
    eng, d1, d2, _ = two_hosts()
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        data = payload(30_000, 3)
        nic_post(eng, d1, f, data[:10_000])
        eng.run_for(10**6)
        first = nic_take_delivered(eng, d2, IP1, f)
        nic_post(eng, d1, f, data[10_000:])
        eng.run_for(10**6)
        assert first + nic_take_delivered(eng, d2, IP1, f) == data
        assert nic_take_delivered(eng, d2, IP1, f) == b""


def _rate(eng, port, t0, t1, b0, b1):
    return (b1 - b0) * 8 * 1e9 / (t1 - t0)


@pytest.mark.parametrize("rate", [1 * G, 3_300_000_000])
def test_paced_flow_achieves_its_rate(rate):
    eng, d1, d2, _ = two_hosts(rate=25 * G)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, rate_bps=rate)
        nic_post(eng, d1, f, payload(900_000, 1))
        eng.run_for(200_000)                          # past the start
        b0, t0 = eng.counters()["h1"]["tx_bytes"], eng.now()
        eng.run_for(1_500_000)
        b1, t1 = eng.counters()["h1"]["tx_bytes"], eng.now()
        assert abs(_rate(eng, 0, t0, t1, b0, b1) / rate - 1) < 0.02
        eng.run_for(10**8)
        assert flow_done(eng, f)


def test_line_rate_shared_fairly_between_paced_flows():
    """Two unpaced flows on a 10G line get equal shares; the NIC never
    exceeds its line (no queue builds on the wire)."""
    eng, d1, d2, _ = two_hosts(rate=10 * G)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        g = add_flow(eng, d1, MAC2, IP2)
        nic_post(eng, d1, f, payload(400_000, 1))
        nic_post(eng, d1, g, payload(400_000, 2))
        eng.run_for(200_000)
        sf, sg = flow_stats(eng, f)["tx_bytes"], flow_stats(eng, g)["tx_bytes"]
        assert abs(sf / sg - 1) < 0.02
        b = eng.counters()["h1"]["tx_bytes"]
        assert b * 8 <= 10 * G * 200_000 / 1e9 + 1200 * 8   # + the frame sent at t=0


def test_late_peer_costs_one_retransmission_per_timeout():
    """Frames delayed past the RTO (a peer process that did not run): each
    timeout resends one packet, and the first ACK after it, acknowledging
    packets that were never resent, ends the episode (F-RTO): the window in
    flight is not sent twice."""
    from taurus.datapath.ports import memlink
    eng, d1, d2, _ = two_hosts(rate=10 * G, delay=1000)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=64_000)
        data = payload(1_000_000, 5)
        nic_post(eng, d1, f, data)
        eng.run_for(300_000)                            # srtt known, window full
        a = eng.port_index("h1")
        eng.E.ports.regs[a, memlink.DELAY] = 400_000     # the next frames are late
        eng.run_for(60_000)
        eng.E.ports.regs[a, memlink.DELAY] = 1000
        eng.run_for(10**8)
        assert flow_done(eng, f) and nic_delivered(eng, d2, IP1, f) == data
        c1, c2 = nic_counters(eng, d1), nic_counters(eng, d2)
        assert c1["rto_fire"] >= 2                      # the delay spanned timeouts
        assert c1["tx_retx"] == c1["rto_fire"] == c2["rx_dup"]
        assert c1["retx_sack"] == c1["retx_nack"] == 0


@pytest.mark.parametrize("more_to_send", [True, False])
def test_packets_lost_in_an_outage_are_resent_after_one_probe(more_to_send):
    """Everything in flight is lost (both directions down for a while).  Once
    the link is back, one timeout's probe is enough: with more data to send,
    the packets sent after it are SACKed, which shows the holes; at the end
    of the data, the ACK of the probe alone says the rest is lost (F-RTO).
    Either way the rest is resent at once, not one packet per timeout."""
    from taurus.datapath.devices import impair
    eng, d1, d2, di = two_hosts(rate=10 * G, delay=1000, impair=dict(seed=3))
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=64_000)
        first, last = payload(600_000 if more_to_send else 100_000, 6), payload(40_000, 7)
        nic_post(eng, d1, f, first)
        eng.run_for(300_000)
        regs = eng.E.devs.regs[di]
        regs[impair.LOSS] = impair.P_ONE                # outage, longer than the
        if not more_to_send:                            # window takes to send
            nic_post(eng, d1, f, last)
        eng.run_for(200_000)
        regs[impair.LOSS] = 0
        eng.run_for(10**8)
        c1 = nic_counters(eng, d1)
        lost = impair_counters(eng, di)["dropped"]
        assert flow_done(eng, f)
        assert nic_delivered(eng, d2, IP1, f) == first + (b"" if more_to_send else last)
        assert lost > 25
        assert c1["rto_fire"] <= 4 and c1["tx_retx"] <= lost + c1["rto_fire"]
        if not more_to_send:
            assert c1["retx_sack"] == c1["retx_nack"] == 0


@pytest.mark.parametrize("cwnd", [4096, 20_000])
def test_window_caps_inflight(cwnd):
    eng, d1, d2, _ = two_hosts(rate=100 * G, delay=5000)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=cwnd)
        data = payload(500_000, 5)
        nic_post(eng, d1, f, data)
        eng.run_for(10**8)
        st = flow_stats(eng, f)
        assert flow_done(eng, f) and nic_delivered(eng, d2, IP1, f) == data
        assert 0 < st["max_inflight"] <= cwnd
        assert st["max_inflight"] > cwnd - 1024          # and the window is used
        # window-limited: about one window per RTT (RTT >= 2 * 5 us)
        dur = st["done_t"] - st["first_t"]
        assert len(data) / dur * 1e9 <= cwnd / 10e-6 * 1.05


def test_credit_gates_sending():
    """An RCCC flow sends only within cumulative credit; the receiver's
    grants (ACK_CC CREDIT) keep it going to the end."""
    eng, d1, d2, _ = two_hosts(delay=50_000, nic_opts=dict(init_credit=8192,
                                                           credit_window=16384))
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, credit=True)
        data = payload(300_000, 6)
        nic_post(eng, d1, f, data)
        eng.run_for(90_000)                              # before any grant: only init credit
        assert flow_stats(eng, f)["tx_bytes"] <= 8192
        eng.run_for(10**8)
        st = flow_stats(eng, f)
        assert flow_done(eng, f) and nic_delivered(eng, d2, IP1, f) == data
        assert st["credit"] >= len(data) and st["max_inflight"] <= 16384 + 1024


def test_ten_thousand_flows_complete():
    n = 10_000
    eng, d1, d2, _ = two_hosts(rate=100 * G, max_flows=n, tx_bytes=n * 2048,
                               rx_bytes=n * 2048, nic_opts=dict(rx_buf_bytes=2048))
    with eng:
        flows = [add_flow(eng, d1, MAC2, IP2, rate_bps=G, buf_bytes=2048) for _ in range(n)]
        for k, f in enumerate(flows):
            nic_post(eng, d1, f, bytes([k & 0xFF]) * (1000 + k % 1000))
        eng.run_for(10**9)
        assert all(flow_done(eng, f) for f in flows)
        assert all(nic_delivered(eng, d2, IP1, f) == bytes([k & 0xFF]) * (1000 + k % 1000)
                   for k, f in list(enumerate(flows))[::97])
        assert nic_counters(eng, d2)["pdc_open"] == n


def test_a_steady_flow_keeps_an_rto_margin_and_never_times_out():
    """RTO = srtt + max(4 rttvar, rto_min): with a constant RTT (rttvar -> 0)
    the margin stays rto_min, where RFC 6298's max(rto_min, srtt + 4 rttvar)
    shrank to srtt and fired with the ACK (many flows at 1 MSS over a steady
    queue timed out every RTT)."""
    eng, d1, d2, _ = two_hosts(delay=100_000, nic_opts={"rto_min_ns": 50_000,
                                                        "rto_init_ns": 1_000_000})
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=1024)      # one packet per RTT
        nic_post(eng, d1, f, payload(300 * 1024))
        eng.run_for(10**8)
        st = flow_stats(eng, f)
        assert flow_done(eng, f)
        assert 200_000 <= st["srtt"] < 210_000
        assert st["srtt"] + 50_000 <= st["rto"] < st["srtt"] + 60_000
        assert nic_counters(eng, d1)["rto_fire"] == 0


def test_a_slow_reader_gets_a_window_edge_not_a_retransmission():
    """The receiving app reads a 64 KiB ring every 50 us, while the link
    brings 64 KiB in 52 us: the receiver advertises its ring's edge before
    the ring fills (tx_window_adv), the sender stops there, and nothing is
    refused or sent twice; the bytes arrive intact.  (A reader slower than
    that still costs retransmissions: docs/PROTOCOLS.md, receive window.)"""
    eng, d1, d2, _ = two_hosts(nic_opts=dict(rx_buf_bytes=64 << 10))
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        data = payload(1 << 20, 7)
        nic_post(eng, d1, f, data)
        got = b""
        for _ in range(2000):
            eng.run_for(50_000)
            got += nic_take_delivered(eng, d2, IP1, f)
            if len(got) == len(data):
                break
        assert got == data
        snd, rcv = nic_counters(eng, d1), nic_counters(eng, d2)
        assert rcv["tx_window_adv"] > 0
        assert rcv["drop_rx_window"] == 0 and snd["tx_retx"] == 0, (snd, rcv)


def test_a_window_nack_overtaken_by_the_update_does_not_close_the_window():
    """Receive-window edges only grow: a NO_PKT_BUFFER NACK older than the
    window update the sender already took (reordered or late) leaves the
    sender's edge alone.  Taking it would close a window the receiver has
    reopened, and the receiver sends no second update: the flow would wait
    for its persist probe, with the RTO backed off."""
    from taurus.datapath.devices.nic.state import FL_ACKED_OFF, FL_RPDC, FL_UNA, FL_WBLOCK, FL_WEND
    from taurus.datapath.wire import frames as F
    from taurus.datapath.wire import layers as L
    from taurus.datapath.wire import spec as S
    eng, d1, d2, _ = two_hosts(nic_opts=dict(rx_buf_bytes=64 << 10))
    with eng:
        N = eng.E.nic
        f = add_flow(eng, d1, MAC2, IP2)
        data = payload(256 << 10, 3)
        nic_post(eng, d1, f, data)
        eng.run_for(200_000)                 # nobody reads: the sender stops at the ring's edge
        assert N.fl[f, FL_WBLOCK] == 1
        stale = int(N.fl[f, FL_WEND])
        got = b""
        for _ in range(2000):                # the app reads: window updates reopen it
            got += nic_take_delivered(eng, d2, IP1, f)
            if len(got) == len(data):
                break
            eng.run_for(20_000)
        eng.run_for(100_000)
        assert got == data and N.fl[f, FL_WBLOCK] == 0
        edge = int(N.fl[f, FL_WEND])
        assert edge > stale
        nack = L.PDS_BY_TYPE[S.T_NACK](nack_code=S.NACK_NO_PKT_BUFFER, vendor_code=0,
                                       nack_psn=int(N.fl[f, FL_UNA]) & 0xFFFFFFFF,
                                       spdcid=int(N.fl[f, FL_RPDC]), dpdcid=f,
                                       nack_payload=stale & 0xFFFFFFFF)
        before = nic_counters(eng, d1)["rx_window_nack"]
        assert eng.inject(eng.port_index("h2"),
                          bytes(F.uet_frame(nack, src_mac=MAC2, dst_mac=MAC1,
                                            src_ip=IP2, dst_ip=IP1)))
        eng.run_for(20_000)
        assert nic_counters(eng, d1)["rx_window_nack"] == before + 1    # taken, not dropped
        assert N.fl[f, FL_WEND] == edge and N.fl[f, FL_WBLOCK] == 0
        more = payload(32 << 10, 4)           # and the flow sends at once (no persist wait)
        nic_post(eng, d1, f, more)
        eng.run_for(60_000)
        assert nic_take_delivered(eng, d2, IP1, f) == more
        assert N.fl[f, FL_ACKED_OFF] == len(data) + len(more)
