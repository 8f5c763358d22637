"""Message handler: batch drain, gaps, ordering, back-pressure, eviction, and
conservation (nothing lost silently), driven step by step by a fake datapath;
what was delivered is what a recording algorithm (agent_algs.Recorder, run
compiled and as plain Python) kept, per flow in delivery order."""
import itertools
import os

import numpy as np
import pytest

from agent_algs import recorded
from taurus.agent.agent import Agent
from taurus.agent.config import parse
from taurus.testing.fake_datapath import FakeDatapath, record
from taurus.datapath import ccshm as C

_n = itertools.count()


@pytest.fixture(params=[True, False], ids=["jit", "python"])
def dp(request):
    d = FakeDatapath(f"t{os.getpid()}-{next(_n)}", max_flows=16, ring_capacity=256)
    d.jit = request.param
    yield d
    d.close()


def agent(dp, **sections):
    a = sections.setdefault("agent", {})
    a.setdefault("algorithm", "agent_algs:Recorder")
    a.setdefault("jit", dp.jit)
    a = Agent(dp.name, parse(sections), cc=dp.cc, stats_dir=None)
    a.start()
    return a


def seen(a):
    """What the Recorder was given: (flow, event, T_FIRST, (V0, V1, V2)), flow by flow."""
    return recorded(a.handler.algs[0].S)


def forget(a):
    a.handler.algs[0].S.n[:] = 0


def acks(n, flow=0, t0=0):
    return np.array([record(flow, C.EV_ACK, t0 + i, (100, 1, i)) for i in range(n)])


def test_batch_drain_and_default_mask(dp):
    a = agent(dp)
    assert dp.cc.ctl[C.CTL_DEFAULT_MASK] == sum(1 << e for e in (C.EV_ACK, C.EV_ECN, C.EV_RTT, C.EV_OOO))
    dp.push(acks(100, flow=2))
    assert a.step() == 100 and len(seen(a)) == 100 and dp.cc.ring.pending() == 0
    assert dp.cc.event_mask[2] == dp.cc.ctl[C.CTL_DEFAULT_MASK]
    assert dp.cc.flags[2] & C.FL_CC_ACTIVE
    assert a.step() == 0
    assert a.messages.c["gaps"] == 0


def test_gaps_are_counted(dp):
    a = agent(dp)
    dp.push(acks(10))
    r = dp.cc.ring.ring
    r.rec[5:10, C.SEQ] += 3               # the producer lost SEQ 5, 6, 7
    a.step()
    assert a.messages.c["gaps"] == 3 and dp.cc.ctl[C.CTL_GAPS] == 3
    assert len(seen(a)) == 10             # what did arrive is still delivered


def test_garbage_sequence_numbers_are_no_gaps(dp):
    """A jump past more numbers than the ring holds is no loss from it:
    garbage numbers (either sign, any size) count as gone wrong, never as
    gaps, and numbering goes on from the last plausible one."""
    a = agent(dp)
    dp.push(acks(10))
    r = dp.cc.ring.ring
    r.rec[3, C.SEQ], r.rec[4, C.SEQ], r.rec[6, C.SEQ] = 2**63 - 1, -2**63, 2**62
    a.step()
    # 3, 4, 5 (after -2^63), 6 and 7 (below 2^62) went wrong; 8 and 9 follow 7
    assert a.messages.c["gaps"] == 0 and a.messages.c["seq_back"] == 5
    assert len(seen(a)) == 10
    dp.push(acks(5))
    r.rec[12, C.SEQ] += 2                    # and a real gap is still counted
    r.rec[13:15, C.SEQ] += 2
    a.step()
    assert a.messages.c["gaps"] == 2 and dp.cc.ctl[C.CTL_GAPS] == 2


def test_a_batch_is_copied_out_of_the_ring_before_its_checks(dp):
    """Another process may rewrite the ring's rows at any time: what the
    checks passed is what the algorithms get (a copy), never the ring's
    rows read again."""
    a = agent(dp)
    dp.push(acks(8, flow=2))
    b = a.messages.poll(0)
    dp.cc.ring.ring.rec[:, C.FLOW] = 10**9            # rewritten after the checks
    assert (b.rec[b.rows, C.FLOW] == 2).all() and list(b.flows) == [2]
    a.handler.dispatch(b, 0)
    a.messages.release()
    dp.push(acks(8, flow=3))
    m, h = a.messages, a.handler
    h.step(m, 0)                                       # the compiled poll's copy
    dp.cc.ring.ring.rec[:, C.FLOW] = 10**9
    m.release()
    assert (m.copy[:8, C.FLOW] == 3).all() and len(seen(a)) == 16
    assert {f for f, *_ in seen(a)} == {2, 3}


def test_a_tail_past_the_head_is_resynchronised_and_counted(dp):
    a = agent(dp)
    dp.push(acks(4))
    r = dp.cc.ring.ring
    r.cons[0] = 9                         # a ring rewritten under the agent
    assert a.step() == 0 and int(r.cons[0]) == 4 and a.messages.c["seq_back"] == 1
    dp.push(acks(3))
    assert a.step() == 3                  # and it goes on from the head


def test_ordering_by_t_first_within_a_batch_and_late_records(dp):
    a = agent(dp)
    ts = [50, 10, 40, 20, 30]
    dp.push([record(1, C.EV_RTT, t, (t * 100, 0, -1, -1)) for t in ts])
    a.step()
    assert [s[2] for s in seen(a)] == sorted(ts)
    # one flow's groups come in order of first arrival (ECN first here)
    forget(a)
    dp.push([record(3, C.EV_ACK, 200, (1, 1, 1)), record(3, C.EV_ECN, 100, (1, 1))])
    a.step()
    assert [s[1] for s in seen(a)] == [C.EV_ECN, C.EV_ACK]
    dp.push([record(1, C.EV_RTT, 5, (1, 0, -1, -1))])      # older than delivered ones
    a.step()
    assert a.messages.c["late"] == 1


def test_invalid_records_are_dropped_and_counted(dp):
    a = agent(dp)
    dp.cc.owner[7] = 1                            # another NIC slot's flow
    dp.push([record(99, C.EV_ACK, 1, (1, 1, 1)), record(1, 42, 1), record(1, C.EV_HOST, 1),
             record(1, C.EV_CUSTOM, 1, (1, 999)), record(7, C.EV_ACK, 1, (1, 1, 1)),
             record(1, C.EV_ACK, 2, (1, 1, 1))])
    a.step()
    # HOST is valid from the engine too (the NIC's host model raises it); unbound here
    assert a.messages.c["invalid"] == 4 and len(seen(a)) == 1 and not a.handler.known[7]


def test_unbound_events_are_not_delivered(dp):
    a = agent(dp)
    dp.push([record(1, C.EV_TX, 1, (1, 1, 1)), record(1, C.EV_ACK, 2, (1, 1, 1))])
    a.step()
    assert len(seen(a)) == 1 and a.handler.c["unbound"] == 1


def test_slow_agent_backpressure_and_conservation(dp):
    a = agent(dp, backpressure={"calm_steps": 2, "max_factor": 8})
    cap = dp.cc.ring.capacity
    dp.push(acks(cap + 100))                     # the agent slept through a burst
    assert dp.cc.ctl[C.CTL_RING_FULL] == 100
    a.step()
    assert dp.cc.ctl[C.CTL_BACKPRESSURE] == 2     # full ring and refusals: raise
    for _ in range(3):                            # still behind: keeps raising, capped
        dp.push(acks(cap, t0=10_000))
        a.step()
    assert dp.cc.ctl[C.CTL_BACKPRESSURE] == 8 and a.messages.c["bp_raised"] == 3
    for _ in range(6):                            # caught up: lowers with hysteresis
        a.step()
    assert dp.cc.ctl[C.CTL_BACKPRESSURE] == 1 and a.messages.c["bp_lowered"] == 3
    m = a.messages.c
    refused = int(dp.cc.ctl[C.CTL_RING_FULL])
    assert dp.attempts == m["drained"] + refused + dp.cc.ring.pending()
    assert m["drained"] == m["delivered"] + m["merged"] + m["evicted"] + m["invalid"]
    assert m["delivered"] == a.handler.algs[0].S.n.sum() == a.handler.c["calls"]


def test_lag_raises_backpressure(dp):
    a = agent(dp, backpressure={"lag_high_us": 100})
    dp.push(acks(4, t0=1_000_000))
    a.step(now_ns=1_000_000 + 500_000)            # records waited 500 us
    assert dp.cc.ctl[C.CTL_BACKPRESSURE] == 2


def test_lag_counts_from_when_a_record_was_ready_not_its_first_signal(dp):
    """An aggregated record carries its window's first signal time; a long
    window is not the agent's lag (else a raised factor would keep itself
    raised)."""
    a = agent(dp, backpressure={"lag_high_us": 100})
    dp.push(acks(4, t0=0), ready_ns=1_450_000)        # windows from t=0, ready at 1.45 ms
    a.step(now_ns=1_500_000)
    assert dp.cc.ctl[C.CTL_BACKPRESSURE] == 1
    dp.push(acks(4, t0=1_600_000))                    # ready 1.6 ms, taken at 1.8 ms
    a.step(now_ns=1_800_000)
    assert dp.cc.ctl[C.CTL_BACKPRESSURE] == 2


def test_overload_merges_accumulable_and_evicts_oldest_raw(dp):
    a = agent(dp, backpressure={"evict": 0.75, "raw_keep": 4})
    rows = []
    for i in range(100):
        rows.append(record(1, C.EV_ACK, 1000 + i, (100, 1, i)))
        rows.append(record(1, C.EV_RTT, 1000 + i, (i, i, -1, -1)))
    rows.append(record(2, C.EV_OOO, 5, (3,)))
    rows.append(record(2, C.EV_OOO, 6, (4,)))
    dp.push(np.array(rows))                       # 202 of 256: above the watermark
    a.step()
    m = a.messages.c
    SEEN = seen(a)
    acks_seen = [s for s in SEEN if s[1] == C.EV_ACK]
    assert len(acks_seen) == 1 and acks_seen[0][3] == (100 * 100, 100, 99)  # sums, max PSN
    assert acks_seen[0][2] == 1000                                          # first arrival kept
    rtts = [s[3][0] for s in SEEN if s[1] == C.EV_RTT]
    assert rtts == [96, 97, 98, 99]                                         # newest kept
    ooo = [s for s in SEEN if s[1] == C.EV_OOO]
    assert ooo[0][3][0] == 7
    assert m["evicted"] == 96 and dp.cc.ctl[C.CTL_EVICTED] == 96
    assert m["merged"] == 99 + 1
    assert m["drained"] == m["delivered"] + m["merged"] + m["evicted"] + m["invalid"] == 202


def test_ring_wrap_is_drained_in_two_steps_without_loss(dp):
    a = agent(dp)
    dp.push(acks(120))
    a.step()
    dp.push(acks(150, t0=1000))                   # wraps around the 256-slot ring
    assert a.step() == 256 - 120 and a.step() == 150 - 136
    SEEN = seen(a)
    assert len(SEEN) == 270 and a.messages.c["gaps"] == 0 and a.messages.c["merged"] == 0
    assert [s[3][2] for s in SEEN[120:]] == list(range(150))


def test_more_is_waiting_only_when_a_drain_was_capped(dp):
    """The agent steps again at once only if its drain left published
    records behind (batch_max or the ring's end), not for records that
    arrived while it worked: those wait for the next nap."""
    a = agent(dp, agent={"batch_max": 4})
    dp.push([record(1, C.EV_ACK, 100 + i, (10, 1, i)) for i in range(6)])
    assert a.step(1000) == 4 and a.messages.more
    dp.push([record(1, C.EV_ACK, 200, (10, 1, 9))])      # arrives meanwhile: all taken
    assert a.step(2000) == 3 and not a.messages.more
    a.teardown()


def test_one_record_per_step_is_delivered_and_late_ones_counted(dp):
    """A per-event agent's steps mostly hold one record (handled without
    ordering): each is delivered with its values, and one older than what
    its (flow, event) already delivered is counted late."""
    a = agent(dp)
    for flow, ev, t in [(2, C.EV_ACK, 100), (2, C.EV_ACK, 300), (2, C.EV_ECN, 200),
                        (5, C.EV_ACK, 150), (2, C.EV_ACK, 250)]:
        dp.push([record(flow, ev, t, (t, 1, 7) if ev == C.EV_ACK else (t, 1))])
        a.step()
    got = seen(a)
    assert sorted((s[0], s[1], s[2]) for s in got) == sorted(
        [(2, C.EV_ACK, 100), (2, C.EV_ACK, 300), (2, C.EV_ECN, 200), (5, C.EV_ACK, 150),
         (2, C.EV_ACK, 250)])
    assert all(s[3][0] == s[2] for s in got)
    assert a.messages.c["late"] == 1          # (2, ACK, 250) after (2, ACK, 300)
