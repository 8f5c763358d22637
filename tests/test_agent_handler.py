"""Algorithm handler: flows set up on their first record, decisions through
the filters, containment, custom and host records, probes, timers, entropy,
host actions, several algorithm classes -- each with the algorithm compiled
(jit) and as plain Python."""
import itertools
import logging
import os

import numpy as np
import pytest

from taurus.agent.agent import Agent
from taurus.agent.config import parse
from taurus.agent.host_actions import ActionResult
from taurus.datapath.ccevents import SAMPLER_IDS
from taurus.datapath import ccshm as C
from taurus.testing.fake_datapath import FakeDatapath, custom_record, record

_n = itertools.count()
MSS = 4096


@pytest.fixture(params=[True, False], ids=["jit", "python"])
def jit(request):
    return request.param


@pytest.fixture
def dp():
    d = FakeDatapath(f"t{os.getpid()}-h{next(_n)}", max_flows=16, ring_capacity=256)
    yield d
    d.close()


def agent(dp, jit, algorithm="Scripted", **sections):
    sections.setdefault("agent", {}).update(algorithm=f"agent_algs:{algorithm}", mss=MSS,
                                            jit=jit)
    a = Agent(dp.name, parse(sections), cc=dp.cc, stats_dir=None)
    a.start()
    return a


_t = itertools.count(1)


def feed(a, dp, flow, *values, event=C.EV_ACK):
    for v in values:
        dp.push([record(flow, event, next(_t), (v, 1, 0) if np.isscalar(v) else v)])
        a.step()


def test_write_bumps_version_and_duplicates_are_filtered(dp, jit):
    a = agent(dp, jit)
    feed(a, dp, 1, 50_000)
    assert dp.cc.cwnd[1] == 50_000 and dp.cc.version[1] == 1 and dp.cc.updated_ns[1] > 0
    feed(a, dp, 1, 50_000, 50_000)
    assert dp.cc.version[1] == 1
    f = a.handler.filter.c
    assert f["duplicate_cwnd"] == 2 and f["written_cwnd"] == 1
    feed(a, dp, 1, 60_000)
    assert dp.cc.cwnd[1] == 60_000 and dp.cc.version[1] == 2
    assert a.handler.c["calls"] == 4 and a.handler.c["flows"] == 1


def test_misbehaving_algorithm_is_contained(dp, jit, caplog):
    a = agent(dp, jit, bounds={"cwnd_max_bytes": 1 << 20})
    feed(a, dp, 2, 70_000)
    caplog.set_level(logging.WARNING, "taurus.agent.handler")
    feed(a, dp, 2, -1, -1, -1, -2, -2, -6, -8, -9)     # raise x3, NaN x2, inf, half-made, 1/0
    assert dp.cc.cwnd[2] == 70_000 and dp.cc.version[2] == 1      # last good kept
    faults = a.handler.stats()["faults"]
    assert faults["scripted: handler raised"] == 5
    assert faults["scripted: non-finite cwnd"] == 3
    assert a.handler.filter.c["rejected_cwnd"] == 3
    raised = [r.getMessage() for r in caplog.records if "raised" in r.getMessage()]
    assert len(raised) == 1                                         # logged once
    if jit:
        assert "jit = false" in raised[0]
    else:
        assert "on_ack" in raised[0] and "boom" in raised[0]
    feed(a, dp, 2, -3)                                    # negative: clamped to 1 MSS
    assert dp.cc.cwnd[2] == MSS
    feed(a, dp, 2, -4)                                    # absurd: clamped to the max
    assert dp.cc.cwnd[2] == 1 << 20
    assert a.handler.filter.c["clamped_cwnd"] == 2
    feed(a, dp, 2, 80_000)                                # and it recovers
    assert dp.cc.cwnd[2] == 80_000
    a.teardown()


def test_a_raising_record_costs_its_flow_that_drain_only(dp, jit):
    """Several records in one drain: the flow whose handler raised loses
    that drain's decisions, other flows keep theirs, and the next drain
    decides again."""
    a = agent(dp, jit)
    dp.push([record(3, C.EV_ACK, 10, (30_000,)), record(4, C.EV_ACK, 11, (40_000,)),
             record(3, C.EV_ACK, 12, (-1,)), record(4, C.EV_ACK, 13, (41_000,))])
    a.step()
    assert dp.cc.cwnd[3] == 0 and dp.cc.cwnd[4] == 41_000
    feed(a, dp, 3, 33_000)
    assert dp.cc.cwnd[3] == 33_000
    assert a.handler.stats()["faults"]["scripted: handler raised"] == 1


def test_per_flow_override_and_failed_setup(dp, jit):
    a = agent(dp, jit, override=[{"flows": [5], "algorithm": "agent_algs:BadSetup"}])
    feed(a, dp, 5, 1000, 1000)
    feed(a, dp, 6, 9000)
    h = a.handler
    assert h.known[5] and h.falg[5] == -1 and h.c["no_algorithm"] == 2
    assert not dp.cc.flags[5] & C.FL_CC_ACTIVE and dp.cc.event_mask[5] == 0
    assert dp.cc.cwnd[6] == 9000 and dp.cc.flags[6] & C.FL_CC_ACTIVE
    assert h.stats()["faults"]["badsetup: setup failed"] == 1
    assert [x.name for x in h.algs] == ["scripted", "badsetup"]
    assert h.busy is None


def test_unbound_events_are_counted_not_delivered(dp, jit):
    a = agent(dp, jit)
    dp.push([record(2, C.EV_TX, 1000, (1500, 1, 0)), record(2, C.EV_ACK, 1100, (MSS, 1, 1, 0)),
             record(5, C.EV_TX, 1200, (1500, 1, 0))])
    a.step(2000)
    h = a.handler
    assert h.c["unbound"] == 2 and h.c["flows"] == 2 and h.c["calls"] == 1
    assert dp.cc.event_mask[2] == dp.cc.event_mask[5] == 1 << C.EV_ACK
    assert dp.cc.cwnd[2] == MSS and dp.cc.cwnd[5] == 0
    a.teardown()


def test_custom_words_and_host_records_reach_the_handlers(dp, jit):
    a = agent(dp, jit, "Custom")
    # HOST is asked of the engine too (the NIC's host model raises it)
    assert dp.cc.ctl[C.CTL_DEFAULT_MASK] == (1 << C.EV_CUSTOM) | (1 << C.EV_HOST)
    dp.push([custom_record(3, 10, 9, bytes(range(1, 11)))])
    a.step()
    S = a.handler.algs[0].S
    assert (S.segment[3], S.length[3], S.ncustom[3]) == (9, 10, 1)
    assert S.w0[3] == int.from_bytes(bytes(range(1, 9)), "little")
    assert "cpu" in a.samplers.items                                  # the algorithm's sampler
    assert S.nhost[3] == 1 and S.source[3] == SAMPLER_IDS["cpu"]    # read in the same step
    assert 0 <= S.value[3] <= 1_000_000 and 0 <= S.aux[3] <= 1_000_000
    assert dp.cc.rate[3] == 1_000_000_000
    assert a.handler.c["host"] == 1
    a.samplers.items["cpu"][2] = 0                                   # due again
    dp.push([custom_record(4, 20, 1, b"\x05")])
    a.step()
    assert S.nhost[3] == 2 and S.nhost[4] == 1 and a.handler.c["host"] == 3


def test_host_records_only_go_to_flows_whose_algorithm_binds_host(dp, jit):
    a = agent(dp, jit, "Scripted", override=[{"flows": [2], "algorithm": "agent_algs:Custom"}])
    feed(a, dp, 1, 10_000)
    feed(a, dp, 2, (1, 1), event=C.EV_CUSTOM)
    h = a.handler
    assert h.host_flows == [2] and h.c["host"] == 1
    assert h.algs[1].S.nhost[2] == 1 and dp.cc.rate[2] == 1_000_000_000 and dp.cc.rate[1] == 0


def test_periods_at_flow_setup_and_probe_on_command(dp, jit):
    a = agent(dp, jit, "Prober")
    dp.push([record(2, C.EV_ACK, 1, (1, 1, 0))])
    a.step(10)
    assert list(dp.cc.period_ns[2]) == [-C.RTT_UNIT // 2, 30_000, C.DEFAULT_PERIOD_NS[2]]
    assert list(dp.cc.period_ns[3]) == list(C.DEFAULT_PERIOD_NS)      # not set up yet
    assert dp.cc.probe[2] == 0 and dp.cc.timer_ns[2] == 0
    dp.push([record(2, C.EV_ACK, 2, (7, 1, 0)), record(3, C.EV_ACK, 3, (7, 1, 0))])
    a.step(20)
    assert dp.cc.probe[2] == dp.cc.probe[3] == 1
    assert dp.cc.ctl[C.CTL_PROBE_DOORBELL] == 1                       # once per step
    a.teardown()


def test_a_reused_flow_row_starts_with_fresh_periods(dp, jit):
    """The last flow of a row left its periods; the new flow's algorithm
    declares two classes (Raw is never aggregated): the third goes back to
    its default."""
    dp.cc.period_ns[2] = [111, 222, 333]
    a = agent(dp, jit, "Prober")
    dp.push([record(2, C.EV_ACK, 1, (1, 1, 0))])
    a.step(10)
    assert list(dp.cc.period_ns[2]) == [-C.RTT_UNIT // 2, 30_000, C.DEFAULT_PERIOD_NS[2]]
    a.teardown()


def test_timer_period_and_timer_records(dp, jit):
    a = agent(dp, jit, "Ticker", agent={"params": {"tick_ns": 25_000}})
    feed(a, dp, 4, 1)
    assert dp.cc.timer_ns[4] == 25_000
    assert dp.cc.event_mask[4] == 1 << C.EV_ACK | 1 << C.EV_TIMER
    feed(a, dp, 4, (3, 25_000), event=C.EV_TIMER)
    assert dp.cc.cwnd[4] == 4 * 4096


def test_entropy_decisions(dp, jit):
    a = agent(dp, jit, "Entropy")
    feed(a, dp, 1, 1)
    assert (dp.cc.ev[1], dp.cc.ev_n[1], dp.cc.version[1]) == (77, 0, 1)
    feed(a, dp, 1, 1)                                 # the same: not written again
    assert dp.cc.version[1] == 1
    feed(a, dp, 1, 3)
    assert (dp.cc.ev[1], dp.cc.ev_n[1], dp.cc.version[1]) == (100, 8, 2)
    feed(a, dp, 1, 2)
    assert (dp.cc.ev[1], dp.cc.ev_n[1], dp.cc.version[1]) == (100, -1, 3)
    dp.cc.ev_n[1] = 0                                 # the NIC rotated
    feed(a, dp, 1, 2)                                 # a rotation is always written
    assert (dp.cc.ev_n[1], dp.cc.version[1]) == (-1, 4)


class FakeHost:
    def __init__(self, ok=True):
        self.calls, self.ok, self.counts = [], ok, {}

    def cpu_max(self, quota_us, period_us=100_000):
        self.calls.append(("cpu_max", quota_us, period_us))
        return ActionResult(self.ok, "fake")

    def mba(self, percent, domain=0, group="taurus-agent"):
        self.calls.append(("mba", percent))
        return ActionResult(self.ok, "fake")


def test_host_actions(dp, jit):
    a = agent(dp, jit, "HostAct")
    a.handler.host = host = FakeHost()
    feed(a, dp, 1, (250, 1, 40))                      # cpu 0.25, MBA 40 %
    assert host.calls == [("cpu_max", 25_000, 100_000), ("mba", 40)]
    feed(a, dp, 2, (250, 1, 40))                      # the same values: not again
    assert len(host.calls) == 2
    feed(a, dp, 1, (1_000_000, 1, 0))                 # 1000 CPUs: no limit
    assert host.calls[-1] == ("cpu_max", None, 100_000)
    feed(a, dp, 1, (-1, 1, 0), (0, 1, 500))           # NaN share, 500 %: faults
    faults = a.handler.stats()["faults"]
    assert faults["hostact: host_cpu: not a CPU share > 0"] == 1
    assert faults["hostact: host_mba: not a percent in (0, 100]"] == 1
    assert len(host.calls) == 3
    host.ok = False
    feed(a, dp, 1, (100, 1, 0))
    assert a.handler.stats()["faults"]["hostact: host_cpu failed"] == 1
    a.handler.host = None                             # no [host] cgroup
    feed(a, dp, 1, (300, 1, 0))
    assert a.handler.stats()["faults"]["hostact: host_cpu: no host actions ([host] cgroup "
                                       "unset)"] == 1
    assert not (a.handler.D["set"] != 0).any()        # nothing left pending


def test_a_restarted_agent_goes_on_from_the_decisions_in_force(dp, jit):
    cfg = parse({"agent": {"algorithm": "dctcp", "mss": MSS, "jit": jit}})
    dp.cc.cwnd[3] = 123 * MSS                         # a previous agent's window
    a = Agent(dp.name, cfg, cc=dp.cc, stats_dir=None)
    a.start()
    feed(a, dp, 3, (MSS, 1, 0, 0))                    # a partial window: no change
    assert dp.cc.cwnd[3] == 123 * MSS
    S = a.handler.algs[0].S
    assert S.cwnd[3] == S.ssthresh[3] == 123 * MSS
    feed(a, dp, 5, (MSS, 1, 0, 0))                    # a new flow starts at 10 MSS
    assert dp.cc.cwnd[5] == 10 * MSS


def test_several_classes_each_drain_their_flows(dp, jit):
    """Overrides of another class: each class its tables and drain; the
    records of one drain are split between them."""
    a = agent(dp, jit, "Scripted", override=[{"flows": [1, 3], "algorithm": "agent_algs:Entropy"},
                                             {"flows": [5], "algorithm": "dctcp",
                                              "params": {"init_cwnd_pkts": 4}}])
    dp.push([record(f, C.EV_ACK, 10 + f, (f * 10_000 if f % 2 == 0 else 1, 1, 0))
             for f in range(7)])
    a.step()
    h = a.handler
    assert [x.name for x in h.algs] == ["scripted", "entropy", "dctcp"]
    assert dp.cc.cwnd[[0, 2, 4, 6]].tolist() == [MSS, 20_000, 40_000, 60_000]   # 0: clamped
    assert dp.cc.ev[[1, 3]].tolist() == [77, 77] and dp.cc.cwnd[1] == dp.cc.cwnd[3] == 0
    assert dp.cc.cwnd[5] == 4 * MSS and h.c["calls"] == 7 and h.c["flows"] == 7
    assert h.falg[:7].tolist() == [0, 1, 0, 1, 0, 2, 0]


def test_the_same_class_with_other_params_shares_its_tables(dp, jit):
    a = agent(dp, jit, "Ticker", override=[{"flows": [2], "algorithm": "agent_algs:Ticker",
                                            "params": {"tick_ns": 7_000}}])
    feed(a, dp, 1, 1)
    feed(a, dp, 2, 1)
    assert len(a.handler.algs) == 1
    assert dp.cc.timer_ns[1] == 50_000 and dp.cc.timer_ns[2] == 7_000

