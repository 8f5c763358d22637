"""PDC close (nic/close.py): CLOSE / REQ_CLOSE, and the rows of closed
connections freed and reused (virtual time, memory link)."""
import time

import numpy as np

from taurus.cc_algorithms.native import NativeTable
from taurus.datapath.devices.nic.close import CLOSED_LINGER_RTOS
from taurus.datapath.devices.nic.setup import (add_flow, add_nic, flow_closed, flow_done,
                                               nic_close, nic_counters, nic_delivered, nic_post,
                                               nic_req_close, nic_sink, nic_table_use, rx_pdc)
from taurus.datapath.devices.nic.state import (FL_START, FL_STATE, FS_CLOSED, M_FL_CLOSED,
                                               NR_RTO_INIT, NR_RTO_MIN, NR_RX_ACTIVE,
                                               M_NRP, RP_BUFCAP, RP_BUFOFF, RP_CLOSED, RP_LAST_T,
                                               RP_NIC)
from taurus.datapath.engine import Engine
from taurus.datapath.wheel import NEXT_ID
from test_cc_receiver import EqualShare

MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"
IP1, IP2 = "10.0.0.1", "10.0.0.2"


def _pair(max_flows=64, tab=None, **nic):
    eng = Engine(clock="virtual", max_flows=max_flows + 2, n_frames=8192,
                 native=tab.native if tab else None)
    a, b = eng.add_mem_link("h1", "h2", delay_ns=1000, rate_bps=10_000_000_000)
    eng.reserve_nics(max_flows=max_flows, tx_bytes=max_flows * 8192,
                     rx_bytes=max_flows * 8192)
    d1 = add_nic(eng, a, MAC1, IP1, line_rate_bps=10_000_000_000, mss=1024,
                 rx_buf_bytes=8192, **nic)
    d2 = add_nic(eng, b, MAC2, IP2, line_rate_bps=10_000_000_000, mss=1024,
                 rx_buf_bytes=8192, **nic)
    return eng, d1, d2


def test_a_closed_flow_frees_both_ends_and_its_row_is_reused():
    eng, d1, d2 = _pair(8)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192)
        nic_post(eng, d1, f, b"first" * 100)
        nic_close(eng, d1, f)
        eng.run_for(200_000)
        assert flow_done(eng, f) and flow_closed(eng, f)
        assert nic_delivered(eng, d2, IP1, f) == b""          # its PDC is gone
        use = nic_table_use(eng)
        assert use["flows"] == 0 and use["pdcs"] == 0 and use["hash"] == 0, use
        c1, c2 = nic_counters(eng, d1), nic_counters(eng, d2)
        assert c1["tx_close"] == 1 and c1["flow_close"] == 1 and c2["pdc_close"] == 1
        g = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192)      # the same row, a new connection
        assert g == f
        nic_post(eng, d1, g, b"second" * 50)
        eng.run_for(200_000)
        assert flow_done(eng, g) and nic_delivered(eng, d2, IP1, g) == b"second" * 50
        assert nic_table_use(eng)["pdc_rows"] == 1


def test_req_close_asks_the_sender_to_close():
    eng, d1, d2 = _pair(8)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192)
        nic_post(eng, d1, f, b"x" * 5000)
        eng.run_for(200_000)
        assert flow_done(eng, f) and not flow_closed(eng, f) and rx_pdc(eng, d2, IP1, f)
        nic_req_close(eng, d2, IP1, f)
        eng.run_for(200_000)
        assert flow_closed(eng, f) and nic_table_use(eng)["pdcs"] == 0
        assert nic_counters(eng, d1)["rx_close"] == 1       # the REQ_CLOSE


def test_a_flow_that_never_sent_closes_at_once():
    eng, d1, d2 = _pair(8)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192)
        nic_close(eng, d1, f)
        eng.run_for(10_000)
        assert flow_closed(eng, f) and nic_counters(eng, d1)["tx_close"] == 0


def test_100k_short_flows_keep_every_table_bounded():
    """100,000 short credit flows, 64 at a time, each closed after its
    message: the flow rows, PDC rows, hash entries and timers stay within
    what is open at once, and the receiver algorithm sees each sender join
    and leave (reason 0: closed) at once."""
    tab = NativeTable(64)
    alg = tab.add(EqualShare)
    K, TOTAL = 48, 100_000
    eng, d1, d2 = _pair(K, tab)
    t0 = time.monotonic()
    with eng:
        tab.start_receiver(eng, d2, alg, {"rate": 8e9}, idle_ns=0)
        n2 = int(eng.E.devs.regs[d2, 0])
        S = tab.state(alg)[n2]
        timers0 = None
        done = 0
        peak = {}
        while done < TOTAL:
            batch = [add_flow(eng, d1, MAC2, IP2, buf_bytes=4096, credit=True)
                     for _ in range(min(K, TOTAL - done))]
            for f in batch:
                nic_post(eng, d1, f, b"m" * 64)
                nic_close(eng, d1, f)
            for _ in range(100):
                eng.run_for(20_000)
                if all(flow_closed(eng, f) for f in batch):
                    break
            assert all(flow_closed(eng, f) for f in batch), done
            done += len(batch)
            use = nic_table_use(eng)
            for k, v in use.items():
                peak[k] = max(peak.get(k, 0), v)
            if timers0 is None:
                timers0 = int(eng.E.wheel.meta[NEXT_ID])
        use = nic_table_use(eng)
        assert use["flows"] == 0 and use["pdcs"] == 0 and use["hash"] == 0, use
        assert peak["flow_rows"] <= K and peak["pdc_rows"] <= K and peak["hash"] <= K, peak
        assert int(eng.E.wheel.meta[NEXT_ID]) == timers0     # no timer allocated after the first batch
        c1, c2 = nic_counters(eng, d1), nic_counters(eng, d2)
        assert c1["flow_close"] == TOTAL and c2["pdc_close"] == TOTAL
        assert c1["close_fail"] == 0 and c2["rx_data"] == TOTAL
        assert S["closed"] == TOTAL and S["leaves"] == TOTAL and S["active_max"] <= K
        assert int(eng.E.nic.nr[n2, NR_RX_ACTIVE]) == 0
        assert np.count_nonzero(eng.E.nic.rs_bits) == 0
    assert time.monotonic() - t0 < 60


def _closed_flows(eng, d1, n):
    """n connections from d1 to d2 that sent and closed."""
    fs = [add_flow(eng, d1, MAC2, IP2, buf_bytes=8192) for _ in range(n)]
    for f in fs:
        nic_post(eng, d1, f, b"a" * 3000)
        nic_close(eng, d1, f)
    eng.run_for(200_000)
    assert all(flow_closed(eng, f) for f in fs)


def test_closed_pdcs_give_their_rows_up_when_the_tables_are_full():
    """Closed receive PDCs wait for their sender's next connection on the
    same PDC id; with the tables full of them, a SYN from another sender
    takes the row of one silent for pdc_linger_ns (close.py)."""
    eng, d1, d2 = _pair(2)
    with eng:
        _closed_flows(eng, d1, 2)
        use = nic_table_use(eng)
        assert use["pdcs_closed"] == 2 and use["pdc_rows"] == 2, use
        eng.run_until(eng.now() + 2_000_000, stop_idle=False)   # past the linger (8 x 200 us)
        g = add_flow(eng, d2, MAC1, IP1, buf_bytes=8192)      # the other way: a new sender
        nic_post(eng, d2, g, b"b" * 3000)
        eng.run_for(200_000)
        assert flow_done(eng, g) and nic_delivered(eng, d1, IP2, g) == b"b" * 3000
        assert nic_counters(eng, d2)["pdc_idle_close"] == 1      # the row was d2's
        use = nic_table_use(eng)
        assert use["pdcs"] == 1 and use["pdcs_closed"] == 1 and use["pdc_rows"] == 2, use



def _closed_conn(eng, d1, start):
    """A connection from d1 to d2 starting at PSN `start`, closed; its flow
    row (the PDC id), the receiver's closed PDC row, and when that PDC's
    linger ends."""
    N = eng.E.nic
    f = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192, start_psn=start)
    nic_post(eng, d1, f, b"old" * 1000)
    nic_close(eng, d1, f)
    eng.run_for(200_000)
    assert flow_closed(eng, f) and nic_table_use(eng)["pdcs_closed"] == 1
    (r,) = np.flatnonzero(N.rp[:, RP_CLOSED])
    n2 = int(N.rp[r, RP_NIC]) - 1
    linger = CLOSED_LINGER_RTOS * int(max(N.nr[n2, NR_RTO_INIT], N.nr[n2, NR_RTO_MIN]))
    return f, r, int(N.rp[r, RP_LAST_T]) + linger


def test_a_restarted_sender_reconnects_to_a_long_lived_receiver():
    """A restarted sender process starts its rows at another first PSN
    (setup.first_psn).  On the PDC id of a connection the receiver closed,
    its SYN with an earlier start is dropped (drop_wrong_pdc) within
    pdc_linger_ns, and the reset exchange (reset.py) frees the closed PDC
    for it at once; one with a later start opens it at once by itself."""
    eng, d1, d2 = _pair(8)
    with eng:
        f, r, quiet_until = _closed_conn(eng, d1, 5000)
        dropped = nic_counters(eng, d2)["drop_wrong_pdc"]
        g = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192, start_psn=0)   # the new process
        assert g == f                                    # the same row: the same PDC id
        nic_post(eng, d1, g, b"new" * 1000)
        eng.run_until(quiet_until - 1, stop_idle=False)  # within the linger
        c1, c2 = nic_counters(eng, d1), nic_counters(eng, d2)
        assert c2["drop_wrong_pdc"] > dropped and c2["pdc_reset"] == 1, c2
        assert flow_done(eng, g) and nic_delivered(eng, d2, IP1, g) == b"new" * 1000
        assert c2["pdc_open"] == 2 and c1["rto_fail"] == 0, (c1, c2)
        assert nic_table_use(eng)["pdc_rows"] == 1       # the closed PDC's row, reused
        nic_close(eng, d1, g)
        eng.run_for(200_000)
        h = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192, start_psn=1 << 20)  # a later start
        nic_post(eng, d1, h, b"next" * 100)
        eng.run_for(200_000)                             # within the linger: at once
        assert flow_done(eng, h) and nic_delivered(eng, d2, IP1, h) == b"next" * 100
        c2 = nic_counters(eng, d2)
        assert c2["pdc_open"] == 3 and c2["pdc_reset"] == 1


def test_a_restarted_sender_takes_over_an_open_pdc_its_predecessor_left():
    """A sender process that died without closing leaves its receive PDC
    open.  Its successor's SYN on that PDC id with an earlier start is
    dropped and asked about; the successor resets the stale PDC and its
    connection opens within one initial RTO (reset.py), without waiting
    for pdc_idle_ns; the old PDC's unread bytes are gone with it."""
    eng, d1, d2 = _pair(8)
    with eng:
        N = eng.E.nic
        f = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192, start_psn=5000)
        nic_post(eng, d1, f, b"old" * 1000)
        eng.run_for(200_000)
        assert flow_done(eng, f) and nic_table_use(eng)["pdcs"] == 1
        N.fl[f, FL_STATE] = FS_CLOSED        # the sender dies: its row is free, no CLOSE sent
        N.meta[M_FL_CLOSED] += 1
        g = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192, start_psn=0)   # its successor
        assert g == f
        nic_post(eng, d1, g, b"new" * 1000)
        eng.run_for(int(N.nr[0, NR_RTO_INIT]))
        c1, c2 = nic_counters(eng, d1), nic_counters(eng, d2)
        assert c2["drop_wrong_pdc"] > 0 and c2["pdc_reset"] == 1 and c1["rto_fail"] == 0
        assert flow_done(eng, g) and nic_delivered(eng, d2, IP1, g) == b"new" * 1000
        assert c2["pdc_open"] == 2 and nic_table_use(eng)["pdcs"] == 1


def test_a_late_copy_of_a_closed_connection_is_dropped_however_late():
    """A SYN with the closed connection's own start PSN is a copy of its
    packets, however late: dropped (drop_wrong_pdc), the closed PDC stays
    and nothing is delivered, long past pdc_linger_ns."""
    eng, d1, d2 = _pair(8)
    with eng:
        f, r, quiet_until = _closed_conn(eng, d1, 0)
        dropped = nic_counters(eng, d2)["drop_wrong_pdc"]
        g = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192, start_psn=0)   # its start again
        nic_post(eng, d1, g, b"dup" * 1000)
        eng.run_until(quiet_until + 10_000_000, stop_idle=False)
        c2 = nic_counters(eng, d2)
        assert c2["drop_wrong_pdc"] > dropped and c2["pdc_open"] == 1, c2
        use = nic_table_use(eng)
        assert use["pdcs"] == 0 and use["pdcs_closed"] == 1, use
        assert nic_delivered(eng, d2, IP1, g) == b""


def test_a_new_row_starts_at_psn_0_in_virtual_time_and_from_the_clock_on_the_wall_clock():
    """setup.first_psn: a run in virtual time repeats exactly; on the wall
    clock each engine (a sender process) takes its rows' first PSN from the
    system clock's microseconds, so a later engine starts later."""
    starts = []
    for clock in ("virtual", "wall", "wall"):
        eng = Engine(clock=clock, max_flows=4)
        with eng:
            eng.reserve_nics(max_flows=2, tx_bytes=1 << 16, rx_bytes=1 << 16)
            a, _ = eng.add_mem_link("h1", "h2")
            d = add_nic(eng, a, MAC1, IP1)
            f = add_flow(eng, d, MAC2, IP2, buf_bytes=4096)
            starts.append(int(eng.E.nic.fl[f, FL_START]))
    assert starts[0] == 0
    assert all(0 <= s < 1 << 31 for s in starts)
    assert 0 < (starts[2] - starts[1]) % (1 << 31) < 60_000_000   # later, by under a minute


def test_a_sinks_freed_rows_take_a_ring_before_another_nic_uses_them():
    """A sink (nic_sink) keeps no bytes, so its receive PDC rows have no
    ring.  When such a row is freed and taken by a NIC that keeps bytes,
    it gets a ring of its own: two connections to that NIC, each in a
    former sink row, deliver their bytes exactly, in rings that do not
    overlap."""
    eng, d1, d2 = _pair(2)
    with eng:
        nic_sink(eng, d2, window=8192)            # d1's ring size: the rows fit either NIC
        _closed_flows(eng, d1, 2)
        assert nic_table_use(eng)["pdc_rows"] == 2
        eng.run_until(eng.now() + 2_000_000, stop_idle=False)   # past the linger
        gs = [add_flow(eng, d2, MAC1, IP1, buf_bytes=8192) for _ in range(2)]
        for k, g in enumerate(gs):
            nic_post(eng, d2, g, bytes([48 + k]) * 3000)
        eng.run_for(200_000)
        for k, g in enumerate(gs):
            assert flow_done(eng, g) and nic_delivered(eng, d1, IP2, g) == bytes([48 + k]) * 3000
        N = eng.E.nic
        rows = [r for r in range(1, int(N.meta[M_NRP]) + 1) if N.rp[r, RP_NIC] != 0]
        spans = sorted((int(N.rp[r, RP_BUFOFF]), int(N.rp[r, RP_BUFCAP])) for r in rows)
        assert len(spans) == 2 and spans[0][0] >= 0
        assert spans[0][0] + spans[0][1] <= spans[1][0], spans
        assert nic_table_use(eng)["pdc_rows"] == 2
