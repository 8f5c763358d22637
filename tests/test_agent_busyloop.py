"""The agent's compiled busy loop (busyloop.py): ``Agent.run`` with jit and
one algorithm class steps and naps inside Numba while reports keep coming;
every record is still accounted for, decisions reach the table, a handler
that raises is contained, and the agent stops on request.  Without jit, or
with overrides of another class, there is no loop and the same run works
from Python."""
import itertools
import threading
import time

import pytest

from taurus.agent.agent import Agent
from taurus.agent.config import parse
from taurus.testing.fake_datapath import FakeDatapath, record
from taurus.agent.doorbell import ring_bell
from taurus.datapath import ccshm as C

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

MSS = 1024
_n = itertools.count()


def run_agent(dp, algorithm, batches, gap_s=0.0005, nap_us=2000, loop=True, jit=True,
              override=()):
    """Run the agent in this thread while another pushes ``batches`` (lists
    of (flow, V0) ACKs) every ``gap_s`` (by default more often than the
    agent naps, so it stays busy), then stops it."""
    cfg = parse({"agent": {"algorithm": algorithm, "mss": MSS, "line_rate_bps": 10 ** 10,
                           "sleep_min_us": nap_us, "sleep_max_us": max(nap_us, 2000),
                           "busy_loop": loop, "jit": jit},
                 "bounds": {"cwnd_max_bytes": 1 << 20}, "override": list(override)})
    a = Agent(dp.name, cfg, cc=dp.cc, stats_dir=None)
    t = itertools.count(1000, 100)
    errors = []

    def producer():
        try:
            end = time.monotonic() + 120
            while dp.cc.ctl[C.CTL_AGENT_PID] == 0:          # started (compiled, announced)
                assert time.monotonic() < end, "the agent never started"
                time.sleep(0.01)
            for b in batches:
                dp.push([record(f, C.EV_ACK, next(t), (v, 1, 0, 0)) for f, v in b])
                time.sleep(gap_s)
            while dp.cc.ring.pending():
                assert time.monotonic() < end, "records left waiting"
                time.sleep(0.001)
            time.sleep(0.02)
        except AssertionError as e:
            errors.append(e)
        finally:
            a.stopping = True
            ring_bell(dp.cc.ring.ring)

    th = threading.Thread(target=producer)
    th.start()
    a.run()
    th.join()
    assert not errors, errors
    return a


def test_a_busy_compiled_agent_steps_inside_the_loop_and_loses_nothing():
    with FakeDatapath(f"bl{next(_n)}", max_flows=16) as dp:
        batches = [[(f, 3 * MSS) for f in range(8)] for _ in range(200)]
        a = run_agent(dp, "dctcp-jit", batches)
        st = a.stats()
        assert st["busy_loop"]["steps"] > 50                  # most steps ran compiled
        m = st["messages"]
        assert m["drained"] == m["delivered"] == 1600 and m["invalid"] == m["gaps"] == 0
        assert a.handler.c["flows"] == 8
        assert all(dp.cc.version[:8] > 0) and all(dp.cc.cwnd[:8] > 10 * MSS)   # slow start
        assert a.torn_down


def test_a_handler_that_raises_inside_the_loop_is_contained():
    with FakeDatapath(f"bl{next(_n)}", max_flows=16) as dp:
        batches = ([[(3, 50_000), (4, 60_000)]] * 20 + [[(3, 70_000), (4, -1)]] * 20
                   + [[(3, 90_000), (4, 95_000)]] * 20)
        a = run_agent(dp, "agent_algs:Scripted", batches)
        raised = a.handler.stats()["faults"]["scripted: handler raised"]
        busy = a.stats()["busy_loop"]
        assert raised >= 1 and busy["steps"] > 5               # contained inside the loop
        assert (dp.cc.cwnd[3], dp.cc.cwnd[4]) == (90_000, 95_000)    # and it went on
        m = a.stats()["messages"]
        assert m["drained"] == m["delivered"] == 120 == a.handler.c["calls"]


def test_sparse_reports_are_waited_for_on_the_doorbell_inside_the_loop():
    with FakeDatapath(f"bl{next(_n)}", max_flows=16) as dp:
        batches = [[(f, 3 * MSS) for f in range(4)] for _ in range(60)]
        a = run_agent(dp, "dctcp-jit", batches, gap_s=0.003, nap_us=100)
        m, bell = a.stats()["messages"], a.stats()["doorbell"]
        assert m["drained"] == m["delivered"] == 240
        assert a.stats()["busy_loop"]["steps"] > 20 and bell["woken"] > 20
        assert all(dp.cc.version[:4] > 0)


def test_the_loop_can_be_turned_off():
    with FakeDatapath(f"bl{next(_n)}", max_flows=16) as dp:
        batches = [[(f, 3 * MSS) for f in range(4)] for _ in range(40)]
        a = run_agent(dp, "dctcp-jit", batches, loop=False)
        assert a.stats()["busy_loop"] is None and a.stats()["messages"]["delivered"] == 160


def test_without_jit_or_with_two_classes_there_is_no_loop_and_nothing_is_lost():
    for kw in ({"jit": False}, {"override": [{"flows": [1], "algorithm": "agent_algs:Scripted"}]}):
        with FakeDatapath(f"bl{next(_n)}", max_flows=16) as dp:
            batches = [[(f, 3 * MSS) for f in range(4)] for _ in range(40)]
            a = run_agent(dp, "dctcp", batches, **kw)
            assert a.stats()["busy_loop"] is None and a.stats()["messages"]["delivered"] == 160
            assert all(dp.cc.version[:4] > 0)
