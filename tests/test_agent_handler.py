"""Algorithm handler: instances per flow, filters, containment, custom and host events."""
import itertools
import logging
import os

import numpy as np
import pytest

from taurus.agent.agent import Agent
from taurus.agent.config import parse
from taurus.testing.fake_datapath import FakeDatapath, custom_record, record
from taurus.cc_algorithms.base import Algorithm
from taurus.datapath import ccshm as C
from taurus.datapath.wire import spec
from taurus.datapath.wire.codec import set_field

_n = itertools.count()
MSS = 4096


class Scripted(Algorithm):
    """Publishes cwnd = the ACK's V0 as given; special values misbehave."""
    name = "scripted"
    binds = ("ACK",)

    def on_ack(self, ev):
        v = ev.last("bytes")
        if v == -1:
            raise RuntimeError("boom")
        self.result_update(cwnd={-2: float("nan"), -3: -5.0, -4: 1e30, -5: "x",
                                 -6: float("inf")}.get(v, v))


class BadSetup(Algorithm):
    name = "badsetup"
    binds = ("ACK",)

    def setup(self):
        raise ValueError("no")

    def on_ack(self, ev):
        pass


GOT = []


class Custom(Algorithm):
    name = "custom"
    binds = ("CUSTOM", "HOST")
    samplers = {"cpu": 1}

    def on_custom(self, ev):
        GOT.append(("custom", int(ev.col("segment")[0]), ev.parsed))

    def on_host(self, sample):
        GOT.append(("host", sample.source, sample.values))
        self.result_update(rate=1_000_000_000)


@pytest.fixture
def dp():
    d = FakeDatapath(f"t{os.getpid()}-h{next(_n)}", max_flows=16, ring_capacity=256)
    GOT.clear()
    yield d
    d.close()


def agent(dp, algorithm="Scripted", **sections):
    sections.setdefault("agent", {}).update(algorithm=f"{__name__}:{algorithm}", mss=MSS)
    a = Agent(dp.name, parse(sections), cc=dp.cc, stats_dir=None)
    a.start()
    return a


_t = itertools.count(1)


def feed(a, dp, flow, *values):
    for v in values:
        dp.push([record(flow, C.EV_ACK, next(_t), (v, 1, 0))])
        a.step()


def test_write_bumps_version_and_duplicates_are_filtered(dp):
    a = agent(dp)
    feed(a, dp, 1, 50_000)
    assert dp.cc.cwnd[1] == 50_000 and dp.cc.version[1] == 1 and dp.cc.updated_ns[1] > 0
    feed(a, dp, 1, 50_000, 50_000)
    assert dp.cc.version[1] == 1
    f = a.handler.filter.c
    assert f["duplicate_cwnd"] == 2 and f["written_cwnd"] == 1
    feed(a, dp, 1, 60_000)
    assert dp.cc.cwnd[1] == 60_000 and dp.cc.version[1] == 2


def test_misbehaving_algorithm_is_contained(dp, caplog):
    a = agent(dp, bounds={"cwnd_max_bytes": 1 << 20})
    feed(a, dp, 2, 70_000)
    caplog.set_level(logging.WARNING, "taurus.agent.handler")
    feed(a, dp, 2, -1, -1, -1, -2, -2, -5, -6)          # raise x3, NaN x2, junk, inf
    assert dp.cc.cwnd[2] == 70_000 and dp.cc.version[2] == 1      # last good kept
    faults = a.handler.stats()["faults"]
    assert faults["scripted: on_ack raised"] == 3
    assert faults["scripted: non-finite or non-numeric cwnd"] == 4
    assert a.handler.filter.c["rejected_cwnd"] == 4
    raised = [r for r in caplog.records if "raised" in r.getMessage()]
    assert len(raised) == 1 and "boom" in raised[0].getMessage()    # logged once
    feed(a, dp, 2, -3)                                    # negative: clamped to 1 MSS
    assert dp.cc.cwnd[2] == MSS
    feed(a, dp, 2, -4)                                    # absurd: clamped to the max
    assert dp.cc.cwnd[2] == 1 << 20
    assert a.handler.filter.c["clamped_cwnd"] == 2
    feed(a, dp, 2, 80_000)                                # and it recovers
    assert dp.cc.cwnd[2] == 80_000
    a.teardown()


def test_per_flow_override_and_failed_setup(dp):
    a = agent(dp, override=[{"flows": [5], "algorithm": f"{__name__}:BadSetup"}])
    feed(a, dp, 5, 1000, 1000)
    feed(a, dp, 6, 9000)
    assert 5 not in a.handler.inst and a.handler.c["no_algorithm"] == 2
    assert not dp.cc.flags[5] & C.FL_CC_ACTIVE and dp.cc.event_mask[5] == 0
    assert dp.cc.cwnd[6] == 9000
    assert a.handler.stats()["faults"]["badsetup: setup failed"] == 1


def test_custom_segments_are_parsed_and_host_samples_delivered(dp):
    a = agent(dp, "Custom")
    assert dp.cc.ctl[C.CTL_DEFAULT_MASK] == 1 << C.EV_CUSTOM      # HOST is not the engine's
    state = np.zeros(8, np.uint8)
    base = -spec.ACK_CCX_CCX_STATE[0]
    for loc, v in ((spec.ACK_CCX_RCSIG_FMT, spec.CSIG_WIDE), (spec.ACK_CCX_RCSIG_T, spec.CSIG_T_DELAY),
                   (spec.ACK_CCX_RCSIG_S, 12345), (spec.ACK_CCX_RCSIG_LM, 77)):
        set_field(state, base, loc, v)
    dp.push([custom_record(3, 10, 1, state.tobytes()), custom_record(3, 11, 9, b"\x01\x02")])
    a.step()
    (_, seg, parsed), (_, seg2, unparsed) = [g for g in GOT if g[0] == "custom"]
    assert seg == 1 and parsed["valid"][0] and parsed["s"][0] == 12345 and parsed["lm"][0] == 77
    assert parsed["t"][0] == spec.CSIG_T_DELAY
    assert seg2 == 9 and unparsed is None and a.handler.c["custom_unparsed"] == 1
    hosts = [g for g in GOT if g[0] == "host"]
    assert hosts and hosts[0][1] == "cpu" and 0 <= hosts[0][2]["busy"] <= 1
    assert dp.cc.rate[3] == 1_000_000_000


class Prober(Algorithm):
    """Declares its periods; asks for an RTT probe when an ACK says so."""
    name = "prober"
    binds = ("ACK", "OOO", "RTT")
    periods = {"ACK": "0.5rtt", "OOO": 30_000, "RTT": "rtt"}    # RTT is Raw: ignored

    def on_ack(self, ev):
        if ev.last("bytes") == 7:
            self.request_probe()

    def on_rtt(self, ev):
        pass

    def on_ooo(self, ev):
        pass


def test_periods_at_flow_setup_and_probe_on_command():
    cfg = parse({"agent": {"algorithm": f"{__name__}:Prober"}})
    with FakeDatapath(f"t{os.getpid()}-{next(_n)}", max_flows=8) as dp:
        a = Agent(dp.name, cfg, cc=dp.cc, stats_dir=None)
        a.start()
        dp.push([record(2, C.EV_ACK, 1, (1, 1, 0))])
        a.step(10)
        assert list(dp.cc.period_ns[2]) == [-C.RTT_UNIT // 2, 30_000, C.DEFAULT_PERIOD_NS[2]]
        assert list(dp.cc.period_ns[3]) == list(C.DEFAULT_PERIOD_NS)      # no instance yet
        assert dp.cc.probe[2] == 0
        dp.push([record(2, C.EV_ACK, 2, (7, 1, 0))])
        a.step(20)
        assert dp.cc.probe[2] == 1 and dp.cc.ctl[C.CTL_PROBE_DOORBELL] == 1
        a.teardown()
