"""The report engine: signal-level aggregation (Accumulable sums, Coalescent
merges, Raw forwards, per-flow periods), message batching by byte threshold
and deadline, refusals counted, back-pressure, per-event mode -- all in
virtual time, checked exactly."""
import numba as nb
import numpy as np

from taurus.datapath.byref import byref
from taurus.datapath import ccshm as C
from taurus.datapath.engine import Engine
from taurus.datapath.report import report_custom, report_signal


@nb.njit(cache=True)
def emit(state, flow, ev, now, v0, v1, v2, v3):
    report_signal(byref(state), flow, ev, now, v0, v1, v2, v3)


@nb.njit(cache=True)
def emit_custom(state, flow, now, seg, buf, n):
    report_custom(byref(state), flow, now, seg, buf, 0, n)


def make(periods=(10_000, 10_000, 0), batch=128, deadline=1_000_000, capacity=4096):
    eng = Engine(clock="virtual", max_flows=64, max_nics=2, ring_capacity=capacity)
    cc = eng.cc
    cc.owner[:4] = 0
    cc.event_mask[:4] = (1 << C.N_EVENTS) - 1
    cc.period_ns[:] = periods
    cc.ctl[C.CTL_BATCH_BYTES] = batch      # 128 B: every message is published at once
    cc.ctl[C.CTL_DEADLINE_NS] = deadline
    return eng, cc


def at(eng, t, *sig):
    eng.run_until(t, stop_idle=False)
    emit(eng.E, *sig[:2], eng.now(), *sig[2:])


def test_accumulable_sums_exactly_per_window():
    eng, cc = make()
    with eng:
        for i in range(100):                    # one ACK every 150 ns: 15 us of signals
            at(eng, 1 + 150 * i, 1, C.EV_ACK, 1000, 1, i, 0)
        eng.run_for(10**9)
        r = cc.ring.drain()
        assert list(r[:, C.FLOW]) == [1, 1] and list(r[:, C.EVENT]) == [C.EV_ACK] * 2
        # first window opens at t=1 and closes at 10001: signals 0..66
        assert list(r[:, C.COUNT]) == [67, 33]
        assert list(r[:, C.V0]) == [67_000, 33_000] and list(r[:, C.V0 + 1]) == [67, 33]
        assert list(r[:, C.V0 + 2]) == [66, 99]  # highest PSN (max)
        assert list(r[:, C.T_FIRST]) == [1, 1 + 150 * 67]
        assert list(r[:, C.T_LAST]) == [1 + 150 * 66, 1 + 150 * 99]
        assert cc.ctl[C.CTL_SIGNALS] == 100 and cc.ctl[C.CTL_REPORTED] == 2


def test_coalescent_merges_and_raw_forwards():
    eng, cc = make()
    with eng:
        for i in range(10):
            at(eng, 100 * (i + 1), 2, C.EV_OOO, 1, 0, 0, 0)
            at(eng, 100 * (i + 1), 2, C.EV_RTT, 5000 + i, i, -1, -1)
        eng.run_for(10**9)
        r = cc.ring.drain()
        rtt = r[r[:, C.EVENT] == C.EV_RTT]
        ooo = r[r[:, C.EVENT] == C.EV_OOO]
        assert list(rtt[:, C.V0]) == [5000 + i for i in range(10)]   # every sample
        assert len(ooo) == 1 and ooo[0, C.COUNT] == 10 and ooo[0, C.V0] == 10


def test_aggregation_off_is_one_message_per_signal():
    eng, cc = make()
    with eng:
        cc.ctl[C.CTL_AGGREGATE] = 0
        for i in range(50):
            at(eng, 10 * (i + 1), 3, C.EV_ACK, 100, 1, i, 0)
        eng.run_for(10**9)
        r = cc.ring.drain()
        assert len(r) == 50 and set(r[:, C.COUNT]) == {1}
        assert list(r[:, C.SEQ]) == list(range(50))


def test_batches_publish_at_byte_threshold_or_deadline():
    eng, cc = make(periods=(0, 0, 0), batch=4 * 128, deadline=5_000)
    with eng:
        for i in range(6):
            at(eng, 100 + i, 0, C.EV_RTT, i, 0, 0, 0)
        assert cc.ring.pending() == 4                 # first batch of 4 published
        eng.run_until(100 + 4 + 5_000 - 1, stop_idle=False)
        assert cc.ring.pending() == 4                 # 2 staged, deadline not yet
        eng.run_until(100 + 4 + 5_000 + 1, stop_idle=False)  # [start, until)
        assert cc.ring.pending() == 6                 # the deadline published them


def test_full_ring_refuses_and_counts_nothing_lost():
    eng, cc = make(periods=(0, 0, 0), capacity=16)
    with eng:
        for i in range(40):
            at(eng, 10 + i, 0, C.EV_RTT, i, 0, 0, 0)
        got = cc.ring.drain()
        assert len(got) == 16 and cc.ctl[C.CTL_RING_FULL] == 24
        assert cc.ctl[C.CTL_SIGNALS] == len(got) + cc.ctl[C.CTL_RING_FULL]


def test_backpressure_stretches_windows_and_unbound_events_are_silent():
    eng, cc = make()
    with eng:
        cc.ctl[C.CTL_BACKPRESSURE] = 4
        cc.event_mask[1] = 1 << C.EV_ACK               # flow 1 binds ACK only
        for i in range(100):
            at(eng, 1 + 150 * i, 1, C.EV_ACK, 1, 1, 0, 0)
            at(eng, 1 + 150 * i, 1, C.EV_ECN, 1, 1, 0, 0)
        eng.run_for(10**9)
        r = cc.ring.drain()
        assert set(r[:, C.EVENT]) == {C.EV_ACK}
        assert list(r[:, C.COUNT]) == [100]            # one 40 us window holds them all


def test_custom_segment_bytes_are_forwarded_raw():
    eng, cc = make()
    with eng:
        seg = np.arange(1, 21, dtype=np.uint8)
        eng.run_until(5, stop_idle=False)
        emit_custom(eng.E, 2, eng.now(), 7, seg, len(seg))
        r = cc.ring.drain()
        assert r[0, C.EVENT] == C.EV_CUSTOM and r[0, C.V0] == 7 and r[0, C.V0 + 1] == 20
        raw = r[0, C.V0 + 2:].astype("<i8").tobytes()[:20]
        assert raw == bytes(range(1, 21))


def test_flows_of_unknown_owner_are_ignored():
    eng, cc = make()
    with eng:
        at(eng, 5, 10, C.EV_ACK, 1, 1, 0, 0)            # owner[10] == -1
        eng.run_for(10**9)
        assert cc.ring.pending() == 0 and cc.ctl[C.CTL_SIGNALS] == 0


def test_timer_events_start_with_the_flows_first_signal_and_stop_without_a_period():
    """TIMER (Raw): one record per period, values (ticks, period), from the
    first reported signal on; gone once the period is 0."""
    eng, cc = make()
    with eng:
        cc.timer_ns[1] = 10_000
        eng.run_until(50_000, stop_idle=False)
        assert cc.ring.pending() == 0                   # not started: no signal yet
        at(eng, 51_000, 1, C.EV_OOO, 1, 0, 0, 0)
        eng.run_until(102_000, stop_idle=False)
        r = cc.ring.drain()
        t = r[r[:, C.EVENT] == C.EV_TIMER]
        assert list(t[:, C.V0]) == [1, 2, 3, 4, 5] and set(t[:, C.V0 + 1]) == {10_000}
        assert list(t[:, C.T_FIRST]) == [51_000 + 10_000 * i for i in range(1, 6)]
        assert list(t[:, C.COUNT]) == [1] * 5 and set(t[:, C.FLOW]) == {1}
        cc.timer_ns[1] = 0
        eng.run_for(100_000)
        assert cc.ring.pending() == 0


def test_csig_aggregates_keep_the_worst_value_and_its_locator():
    """Min types (ABW) keep the lowest value, max types (delay) the highest,
    each with the locator that reported it."""
    from taurus.datapath.ccevents import CSIG_ABW, CSIG_DELAY
    eng, cc = make()
    with eng:
        for i, (v, loc) in enumerate([(5, 1), (3, 2), (4, 3), (3, 4)]):
            at(eng, 100 * (i + 1), 1, C.EV_CSIG, CSIG_ABW, v * 10**9, loc, 2)
            at(eng, 100 * (i + 1), 2, C.EV_CSIG, CSIG_DELAY, v * 1000, loc, 1)
        eng.run_for(10**9)
        r = cc.ring.drain()
        abw = r[r[:, C.FLOW] == 1][0]
        delay = r[r[:, C.FLOW] == 2][0]
        assert abw[C.COUNT] == 4 and abw[C.V0] == CSIG_ABW
        assert (abw[C.V0 + 1], abw[C.V0 + 2], abw[C.V0 + 3]) == (3 * 10**9, 2, 2)
        assert (delay[C.V0 + 1], delay[C.V0 + 2]) == (5000, 1)
