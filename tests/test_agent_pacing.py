"""The doorbell's stand-in for the timer: the empty steps an idle agent
sleeps through count for back-pressure exactly as if it had taken them."""
import itertools
import os

import pytest

from taurus.agent.agent import Agent
from taurus.agent.config import parse
from taurus.testing.fake_datapath import FakeDatapath, record
from taurus.agent.pacing import Cadence, TimerSchedule, rtt_nap
from taurus.datapath import ccshm as C

_n = itertools.count()


def test_span_and_fit_agree():
    t = TimerSchedule(20_000, 200_000, slack_ns=50_000)
    assert [t.next(s) for s in (20_000, 100_000, 200_000)] == [40_000, 200_000, 200_000]
    sleep = 20_000
    for k in range(12):
        span = t.span(20_000, k)
        assert t.fit(20_000, span) == (k, sleep)
        assert t.fit(20_000, span + 1)[0] == k                  # not yet the next one
        sleep = t.next(sleep)
    assert t.fit(20_000, 0) == (0, 20_000)


def test_the_nap_after_work_follows_the_flows_rtt():
    import numpy as np
    srtt = np.array([0, 400_000, 500_000, 600_000, 90_000_000], np.int64)
    active = np.array([True, True, True, True, False])
    assert rtt_nap(srtt, active, 0.5, 20_000, 1_000_000) == 250_000    # half the median
    assert rtt_nap(srtt, active, 0.0, 20_000, 1_000_000) == 20_000     # off
    assert rtt_nap(srtt, active, 4.0, 20_000, 1_000_000) == 1_000_000  # within the bounds
    assert rtt_nap(srtt, ~active, 0.01, 20_000, 1_000_000) == 900_000  # only active flows
    assert rtt_nap(srtt[:1], active[:1], 0.5, 20_000, 1_000_000) == 20_000   # no RTT yet
    with FakeDatapath(f"pn{next(_n)}", max_flows=8) as dp:
        a = Agent(dp.name, parse({"agent": {"algorithm": "dctcp-jit", "nap_rtt": 0.5,
                                            "sleep_min_us": 20}}), cc=dp.cc, stats_dir=None)
        dp.cc.srtt[:3] = (300_000, 400_000, 700_000)
        assert a.work_nap() == 20_000                   # no flow of ours yet
        dp.cc.flags[:3] |= C.FL_CC_ACTIVE
        assert a.work_nap() == 200_000 and a.stats()["nap_us"] == 200


def test_cadence_tells_sparse_publications_from_a_stream():
    c = Cadence()
    assert not c.sparse(100_000)                     # nothing seen yet
    for i in range(1, 20):                           # one publication every 500 us
        c.update(i * 500_000, i)
    assert c.gap == 500_000 and c.sparse(250_000) and not c.sparse(600_000)
    t, n = 20 * 500_000, 19
    for _ in range(40):                              # then 10 per 100 us step
        t, n = t + 100_000, n + 10
        c.update(t, n)
    assert abs(c.gap - 10_000) < 1_000 and not c.sparse(250_000)
    c.update(t + 50_000, n)                          # a step with none: the span goes on
    c.update(t + 100_000, n + 1)
    assert c.gap > 10_000


@pytest.fixture
def pair():
    """Two identical agents on two fake datapaths."""
    dps = [FakeDatapath(f"t{os.getpid()}-pace{next(_n)}", max_flows=8, ring_capacity=16)
           for _ in range(2)]
    cfg = parse({"agent": {"algorithm": "dctcp"}, "backpressure": {"calm_steps": 3}})
    agents = [Agent(d.name, cfg, cc=d.cc, stats_dir=None) for d in dps]
    for a in agents:
        a.start()
    yield dps, agents
    for d in dps:
        d.close()


def state(dp, a):
    m = a.messages
    return (int(dp.cc.ctl[C.CTL_BACKPRESSURE]), m.calm, m.c["bp_lowered"], m.c["bp_raised"])


@pytest.mark.parametrize("k", [0, 1, 2, 5, 7, 40])
def test_idle_steps_equal_empty_steps(pair, k):
    (d0, d1), (a0, a1) = pair
    for d, a in ((d0, a0), (d1, a1)):
        for _ in range(4):                    # refusals: the factor climbs to 16
            d.push([record(1, C.EV_ACK, 1)] * 20)
            a.step()
        a.step()
    assert state(d0, a0) == state(d1, a1) and state(d0, a0)[0] == 16
    for _ in range(k):
        a0.step()                             # the timer's empty steps
    a1.messages.idle_steps(k)                 # the doorbell's account of them
    assert state(d0, a0) == state(d1, a1)
    assert a1.messages.c["idle_steps"] == k
    assert a1.messages.steps_to_lower() == (None if state(d1, a1)[0] == 1 else
                                           3 - a1.messages.calm)
