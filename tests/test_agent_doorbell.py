"""The report ring's doorbell: an idle agent blocks on it, and records
published while it sleeps end the sleep (none are left waiting for the
timer); the engine's side wakes once per sleep and never when no one sleeps."""
import itertools
import os
import threading
import time

import numpy as np
import pytest

from taurus.agent.agent import Agent
from taurus.agent.config import parse
from taurus.agent.doorbell import MOVED, Doorbell, announce, block, ring_bell
from taurus.testing.fake_datapath import FakeDatapath, record
from taurus.datapath import ccshm as C
from taurus.datapath.shmring import BELL, SLEEP, WAKES

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

_n = itertools.count()


@pytest.fixture
def dp():
    d = FakeDatapath(f"t{os.getpid()}-bell{next(_n)}", max_flows=8, ring_capacity=64)
    yield d
    d.close()


def until(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.0005)
    return True


def test_records_pushed_while_asleep_are_handled_within_the_bound(dp):
    # An idle wait lasts 50 ms unless the doorbell ends it: records pushed
    # 20 ms into it would wait >= 30 ms for the timeout.
    cfg = parse({"agent": {"algorithm": "dctcp", "sleep_min_us": 1000,
                           "sleep_max_us": 1000, "idle_max_us": 50_000}})
    a = Agent(dp.name, cfg, cc=dp.cc, stats_dir=None)
    ring = dp.cc.ring.ring
    lat, errors = [], []

    def producer():
        try:
            for i in range(3):
                # the first wait comes after the busy loop's compile; the first
                # record's handling compiles its path (66 ms with an empty
                # cache), so it is not timed
                assert until(lambda: ring.cons[SLEEP] != 0, 120), "the agent never blocked"
                time.sleep(0.02)                              # well inside its wait
                t = time.monotonic()
                dp.push([record(1, C.EV_ACK, 1 + i, (4096, 1, i, 0))])
                assert until(lambda: dp.cc.ring.pending() == 0, 120), "records left waiting"
                if i:
                    lat.append(time.monotonic() - t)
        except AssertionError as e:
            errors.append(e)
        finally:
            a.stopping = True
            ring_bell(ring)

    th = threading.Thread(target=producer)
    th.start()
    a.run()
    th.join()
    assert not errors, errors
    assert len(lat) == 2 and max(lat) < 0.025, lat
    assert a.messages.c["delivered"] == 3 and a.bell.c["woken"] >= 3
    assert ring.cons[SLEEP] == 0                               # torn down: not announced


def test_a_record_already_published_skips_the_wait(dp):
    bell = Doorbell(dp.cc.ring.ring)
    dp.push([record(1, C.EV_ACK, 1)])
    t = time.monotonic()
    assert bell.wait(1_000_000_000) and time.monotonic() - t < 0.1
    assert bell.c["skipped"] == 1 and dp.cc.ring.ring.cons[SLEEP] == 0


def test_a_moved_bell_ends_the_wait_at_once(dp):
    """The race the protocol closes: a publication lands after the wait read
    BELL; the kernel sees BELL moved and returns at once."""
    ring = dp.cc.ring.ring
    gen, ts = np.zeros(1, np.int64), np.zeros(2, np.int64)
    bell = announce(ring.prod, ring.cons, gen)
    assert bell >= 0 and ring.cons[SLEEP] == gen[0]
    ring.prod[BELL] += 1                       # the racing publication's bump
    t = time.monotonic()
    assert block(ring.prod, ring.cons, bell, 1_000_000_000, ts) == MOVED   # no 1 s wait
    assert time.monotonic() - t < 0.1 and ring.cons[SLEEP] == 0


def test_timeout_bounds_the_wait_without_a_producer(dp):
    bell = Doorbell(dp.cc.ring.ring)
    t = time.monotonic()
    assert not bell.wait(20_000_000)
    assert 0.015 < time.monotonic() - t < 0.5 and bell.c["timeouts"] == 1


def test_engine_publish_wakes_once_per_sleep(dp):
    """report_publish (compiled) rings the bell: a blocked waiter wakes; with
    nobody asleep no wake syscall is made."""
    from collections import namedtuple
    from taurus.datapath.report import make_report_state, report_publish
    R = make_report_state(dp.cc)
    E = namedtuple("E", ["rep", "ctl"])(R, np.zeros(32, np.int64))   # what it reads of an engine
    ring = dp.cc.ring.ring
    R.staged[0, 0] = 1
    report_publish(E, 0, 0)                   # compile; nobody sleeps: no wake
    assert int(ring.prod[WAKES]) == 0 and int(ring.prod[BELL]) >= 1
    dp.cc.ring.drain()
    bell = Doorbell(ring)
    got = []
    th = threading.Thread(target=lambda: got.append(bell.wait(5_000_000_000)))
    th.start()
    assert until(lambda: ring.cons[SLEEP] != 0)
    time.sleep(0.02)
    t = time.monotonic()
    R.staged[0, 0] = 1
    report_publish(E, 0, 0)
    th.join(2)
    assert got == [True] and time.monotonic() - t < 0.5
    assert int(ring.prod[WAKES]) == 1
    ring.cons[SLEEP] = bell.gen[0]            # a sleep already woken is not woken twice
    R.staged[0, 0] = 1
    report_publish(E, 0, 0)
    ring.cons[SLEEP] = 0
    assert int(ring.prod[WAKES]) == 1


def test_doorbell_can_be_turned_off(dp):
    a = Agent(dp.name, parse({"agent": {"doorbell": False}}), cc=dp.cc, stats_dir=None)
    assert a.bell is None and a.stats()["doorbell"] is None


def test_agent_stats_shows_the_doorbell(dp, capsys):
    import json

    from taurus.agent.cli import main
    dp.push([record(1, C.EV_ACK, 1)])
    assert main(["agent", "stats", dp.name]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["doorbell"] == {"rung": 1, "engine_wakes": 0, "agent_waiting": False}
