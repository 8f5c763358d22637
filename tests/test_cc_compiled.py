"""Compiled algorithms (the agent's fast path): the compiled DCTCP decides
exactly as the Python one on the same reports, a compiled algorithm that
misbehaves is contained like a Python one, and what the fast path cannot do
is a config error."""
import itertools
import logging

import numba as nb
import numpy as np
import pytest

from taurus.agent.agent import Agent
from taurus.agent.config import parse
from taurus.testing.fake_datapath import FakeDatapath, record
from taurus.agent.messages import MessageHandler
from taurus.cc_algorithms.compiled import CWND, CompiledAlgorithm, result_update
from taurus.cc_algorithms.params import ConfigError
from taurus.datapath import ccshm as C

MSS = 1024
_n = itertools.count()


def agent(dp, algorithm, **extra):
    cfg = parse({"agent": {"algorithm": algorithm, "mss": MSS, "line_rate_bps": 10 ** 10,
                           **extra.pop("agent", {})}, **extra})
    a = Agent(dp.name, cfg, cc=dp.cc, stats_dir=None)
    a.start()
    return a


def reports(seed, steps=60, flows=12):
    """Random report batches like the engine's: per step, records of a few
    flows (ACKs with some ECN-echoed bytes, RTT samples, now and then an
    RTO), sometimes more than the handler's small-batch size."""
    rng = np.random.default_rng(seed)
    t = 1_000
    out = []
    for _ in range(steps):
        rows = []
        for _ in range(int(rng.choice([1, 5, 40, 200]))):
            t += int(rng.integers(1, 500))
            t0 = t - 20_000 if rng.random() < 0.05 else t      # late: behind the last batch
            f = int(rng.integers(0, flows))
            kind = rng.random()
            if kind < 0.75:
                acked = int(rng.integers(1, 40)) * MSS
                marked = int(acked * rng.choice([0, 0, 0.25, 1.0]))
                rows.append(record(f, C.EV_ACK, t0, (acked, acked // MSS, 7, marked)))
            elif kind < 0.97:
                rows.append(record(f, C.EV_RTT, t0, (int(rng.integers(5_000, 90_000)), 7, -1, -1)))
            else:
                rows.append(record(f, C.EV_RTO, t0, (1, 7)))
        # the engine publishes in batch order, not always by T_FIRST
        out.append([rows[i] for i in rng.permutation(len(rows))] if rng.random() < 0.3 else rows)
    return out


def table(dp):
    cc = dp.cc
    return {k: getattr(cc, k).copy() for k in ("rate", "cwnd", "credit", "version", "event_mask",
                                               "flags")} | {"period": cc.period_ns.copy()}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("pace", [False, True])
def test_compiled_dctcp_decides_exactly_as_the_python_one(seed, pace):
    got = {}
    for algorithm in ("dctcp", "dctcp-jit"):
        with FakeDatapath(f"cj{next(_n)}", max_flows=32, ring_capacity=4096) as dp:
            a = agent(dp, algorithm, agent={"params": {"pace": pace}})
            for k, rows in enumerate(reports(seed)):
                dp.push(rows)
                a.step(10_000 * (k + 1))
            h = a.handler
            got[algorithm] = (table(dp), h.filter.c, a.messages.stats()["late"],
                              {k: h.c[k] for k in ("flows", "unbound", "no_algorithm")})
            a.teardown()
    py, jit = got["dctcp"], got["dctcp-jit"]
    for k in py[0]:
        assert np.array_equal(py[0][k], jit[0][k]), k
    assert py[1:] == jit[1:]
    assert py[1]["written_cwnd"] > 50 and (py[1]["written_rate"] > 0) == pace
    assert py[2] > 0 and (py[3]["unbound"] > 0) != pace     # RTT is bound only to pace


def test_record_batches_deliver_in_the_order_of_python_batches():
    rows = [r for batch in reports(7, steps=4) for r in batch]
    order = {}
    for as_records in (False, True):
        with FakeDatapath(f"cj{next(_n)}", max_flows=32, ring_capacity=4096) as dp:
            m = MessageHandler(dp.cc, parse({}).backpressure)
            m.as_records = as_records
            dp.push(rows)
            b = m.poll(1)
            if as_records:
                order[as_records] = [(int(b.flows[g]), int(b.events[g]),
                                      b.rec[b.rows[b.bounds[g]:b.bounds[g + 1]], C.SEQ].tolist())
                                     for g in range(len(b))]
            else:
                order[as_records] = [(f, e, ev.rec[:, C.SEQ].tolist()) for f, _, e, ev in b.groups]
            m.release()
    assert order[True] == order[False] and len(order[True]) > 10


# ---- a compiled algorithm that misbehaves on cue ---------------------------
@nb.njit
def _scripted_setup(S, P, f, cwnd, rate):
    S[f, 0] = 0.0


@nb.njit
def _scripted_drain(S, P, rec, rows, bounds, val, isset):
    """cwnd = the ACK's V0; 0 divides by zero (raises), 1 is NaN, 2 is absurd."""
    for g in range(len(bounds) - 1):
        i = rows[bounds[g + 1] - 1]
        f, v = rec[i, C.FLOW], rec[i, C.V0]
        if v == 0:
            S[f, 0] = 1 / S[f, 0]
        result_update(val[f], isset[f], CWND, np.nan if v == 1 else 1e30 if v == 2 else v)


class Scripted(CompiledAlgorithm):
    name = "scripted-jit"
    binds = ("ACK",)
    flow_setup = staticmethod(_scripted_setup)
    drain = staticmethod(_scripted_drain)

    def make_state(self, max_flows):
        return np.zeros((max_flows, 1)), np.zeros(1)


def test_a_misbehaving_compiled_algorithm_is_contained(caplog):
    with FakeDatapath(f"cj{next(_n)}", max_flows=16) as dp:
        a = agent(dp, f"{__name__}:Scripted", bounds={"cwnd_max_bytes": 1 << 20})
        caplog.set_level(logging.WARNING, "taurus.agent.handler")
        t = itertools.count(1000, 100)

        def feed(*pairs):
            dp.push([record(f, C.EV_ACK, next(t), (v,)) for f, v in pairs])
            a.step(next(t))
        feed((3, 50_000), (4, 60_000))
        assert dp.cc.cwnd[3] == 50_000 and dp.cc.cwnd[4] == 60_000
        feed((3, 70_000), (4, 0))              # raises: the whole drain is discarded
        feed((3, 0), (4, 80_000))
        assert (dp.cc.cwnd[3], dp.cc.cwnd[4]) == (50_000, 60_000)
        assert dp.cc.version[3] == dp.cc.version[4] == 1
        feed((3, 1), (4, 1))                   # NaN: rejected, last good kept
        assert (dp.cc.cwnd[3], dp.cc.cwnd[4]) == (50_000, 60_000)
        feed((3, 2))                           # absurd: clamped
        assert dp.cc.cwnd[3] == 1 << 20
        feed((3, 90_000), (4, 95_000))         # and it recovers
        assert (dp.cc.cwnd[3], dp.cc.cwnd[4]) == (90_000, 95_000)
        faults = a.handler.stats()["faults"]
        assert faults["scripted-jit: drain raised"] == 2
        assert faults["scripted-jit: non-finite or non-numeric cwnd"] == 2
        assert a.handler.filter.c["rejected_cwnd"] == 2 and a.handler.filter.c["clamped_cwnd"] == 1
        raised = [r for r in caplog.records if "drain raised" in r.getMessage()]
        assert len(raised) == 1 and "ZeroDivisionError" in raised[0].getMessage()
        a.teardown()


def test_unbound_events_are_counted_not_delivered():
    with FakeDatapath(f"cj{next(_n)}", max_flows=16) as dp:
        a = agent(dp, "dctcp-jit")
        dp.push([record(2, C.EV_TX, 1000, (1500, 1, 0)), record(2, C.EV_ACK, 1100, (MSS, 1, 1, 0)),
                 record(5, C.EV_TX, 1200, (1500, 1, 0))])
        a.step(2000)
        assert a.handler.c["unbound"] == 2 and a.handler.c["flows"] == 2
        assert dp.cc.event_mask[2] == dp.cc.event_mask[5] == 1 << C.EV_ACK | 1 << C.EV_RTO
        a.teardown()


def test_what_the_fast_path_cannot_do_is_a_config_error():
    with pytest.raises(ConfigError, match="override"):
        parse({"agent": {"algorithm": "dctcp-jit"}, "override": [{"flows": [1],
                                                                  "algorithm": "dctcp"}]})
    with pytest.raises(ConfigError, match="only be the default"):
        parse({"override": [{"flows": [1], "algorithm": "dctcp-jit"}]})

    class HostJit(Scripted):
        binds = ("ACK", "HOST")
    from taurus.cc_algorithms.base import event_mask
    with pytest.raises(ConfigError, match="HOST"):
        event_mask(HostJit)
    with pytest.raises(ConfigError, match="lacks drain"):
        parse({"agent": {"algorithm": f"{__name__}:NoDrain"}})


class NoDrain(CompiledAlgorithm):
    name = "nodrain"
    binds = ("ACK",)
