"""Hostile shared memory: garbage in the report ring, the CC context rows
and the app queues of one NIC, written by another process while the engine
and the agents run; the engine keeps its indices in bounds (an owner that
is no NIC slot means none; a TIMER period that would wrap is refused; a
submission head far ahead is skipped; FL_NATIVE on a flow the native table
does not cover calls nothing)."""
import os
import sys
import time

import numpy as np
import pytest

from taurus.datapath import ccshm as C
from taurus.datapath.devices.nic.setup import add_flow, flow_done, nic_post, set_flow_mode
from test_transport_transfer import IP2, MAC2, payload, two_hosts

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import reliab_shm  # noqa: E402


def test_an_owner_that_is_no_slot_is_no_owner():
    eng, d1, d2, _ = two_hosts()
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=64 << 10)
        set_flow_mode(eng, f, "agent", event_mask=(1 << C.EV_ACK) | (1 << C.EV_RTT))
        signals = eng.cc.ctls[:, C.CTL_SIGNALS].copy()
        for k, bad in enumerate((1 << 40, -(1 << 40), eng.cc.ctls.shape[0], 2**63 - 1)):
            eng.cc.owner[f] = bad          # would index the slots' rings and counters
            data = payload(50_000, k)
            nic_post(eng, d1, f, data)
            eng.run_for(10**7)
            assert flow_done(eng, f)
        assert (eng.cc.ctls[:, C.CTL_SIGNALS] == signals).all()     # reported to no one


def test_a_timer_period_that_would_wrap_is_refused():
    eng, d1, d2, _ = two_hosts()
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        set_flow_mode(eng, f, "agent", event_mask=1 << C.EV_TIMER, timer_ns=1000)
        eng.run_for(100_000)
        assert eng.E.rep.tm_ticks[f] >= 90
        eng.cc.timer_ns[f] = 2**63 - 5              # now + period wraps below now
        t0 = time.monotonic()
        eng.run_for(10**7)
        ticks = int(eng.E.rep.tm_ticks[f])
        eng.run_for(10**7)
        assert eng.E.rep.tm_ticks[f] == ticks and time.monotonic() - t0 < 30
        nic_post(eng, d1, f, payload(20_000, 1))
        eng.run_for(10**7)
        assert flow_done(eng, f)


def test_a_submission_head_far_ahead_is_skipped_once():
    """A head more than the ring's size ahead would give every poll work
    forever (and stop virtual time): it is counted once and skipped."""
    from taurus.datapath.devices.nic.setup import nic_counters
    from taurus.datapath.devices.nic.state import N_QC, QC_SQ_HEAD
    eng, d1, d2, _ = two_hosts()
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        n = int(eng.E.devs.regs[d1, 0])
        qc = eng.E.nic.qc
        qc[n * N_QC + QC_SQ_HEAD] += np.uint64(1 << 40)
        t0 = time.monotonic()
        eng.run_for(10**6)
        assert time.monotonic() - t0 < 30
        assert nic_counters(eng, d1)["sq_bad"] == 1
        nic_post(eng, d1, f, payload(30_000, 2))          # the queue works on
        eng.run_for(10**7)
        assert flow_done(eng, f)


def test_a_native_flag_from_another_process_calls_nothing():
    """FL_NATIVE is a context-table flag: set on agent flows of an engine
    built without native algorithms, it made the engine index its
    one-row native table with the flow (a call through a garbage address)."""
    eng, d1, d2, _ = two_hosts()
    with eng:
        fs = [add_flow(eng, d1, MAC2, IP2, cwnd_bytes=64 << 10) for _ in range(4)]
        for f in fs:
            set_flow_mode(eng, f, "agent", event_mask=(1 << C.EV_ACK) | (1 << C.EV_RTT))
            eng.cc.flags[f] |= C.FL_NATIVE
        for k, f in enumerate(fs):
            nic_post(eng, d1, f, payload(30_000, k))
        eng.run_for(10**7)
        assert all(flow_done(eng, f) for f in fs)
        assert (eng.cc.ctls[:, C.CTL_NATIVE_CALLS] == 0).all()


def test_garbage_from_another_process_harms_no_other_nic():
    """Every kind of garbage at once (records, ring indices, context rows,
    periods, submissions, queue indices)."""
    r = reliab_shm.run(seconds=2.0, nbytes=1 << 20)
    assert r["agent_faults"] == 0 and r["others_intact"] == "2/2"
    assert r["writes"] > 1000 and r["sq_bad"] > 0 and r["engine_slices"] > 10   # ran under it
