"""A receiver algorithm, native: the receiving NIC's algorithm sees each of
its senders join and their data, and its credit grants are what the
senders' credit gates let through (virtual time, memory link)."""
from dataclasses import dataclass

import numpy as np
import pytest

from taurus.cc_algorithms.algorithm import Algorithm, kernel, param, set_credit
from taurus.cc_algorithms.dctcp import Dctcp
from taurus.cc_algorithms.native import NativeTable
from taurus.cc_algorithms.params import ConfigError, Params
from taurus.datapath.devices.nic.setup import (add_flow, add_nic, flow_done, flow_stats,
                                               nic_delivered, nic_post)
from taurus.datapath.engine import Engine

MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"
IP1, IP2 = "10.0.0.1", "10.0.0.2"
MSS = 1024
SENDERS = 64


@dataclass
class WindowParams(Params):
    window: int = param(6 * 1024, "bytes", "credit granted beyond what arrived")


@kernel
def win_on_join(s, p, ev, d):
    s.joins += 1
    s.joined[ev.flow] += 1
    s.backlog[ev.flow] = ev.backlog
    set_credit(d, p.window)


@kernel
def win_on_leave(s, p, ev, d):
    s.leaves += 1
    s.joined[ev.flow] -= 1


@kernel
def win_on_data(s, p, ev, d):
    s.rcvd[ev.flow] += ev.bytes
    s.backlog[ev.flow] = ev.backlog
    s.granted[ev.flow] = s.rcvd[ev.flow] + p.window
    set_credit(d, s.granted[ev.flow])


class Window(Algorithm):
    """Grants each sender a fixed window beyond what arrived from it."""
    name = "test-window"
    role = "receiver"
    Params = WindowParams
    state = ("joins", "leaves", ("joined", SENDERS), ("rcvd", SENDERS), ("granted", SENDERS),
             ("backlog", SENDERS))
    binds = ("JOIN", "DATA", "LEAVE")
    on_join = staticmethod(win_on_join)
    on_leave = staticmethod(win_on_leave)
    on_data = staticmethod(win_on_data)


def test_receiver_sees_its_senders_and_its_grants_gate_them():
    tab = NativeTable(16)
    win = tab.add(Window)
    eng = Engine(clock="virtual", max_flows=16, n_frames=32768, native=tab.native)
    a, b = eng.add_mem_link("h1", "h2", delay_ns=5000, rate_bps=10_000_000_000)
    d1 = add_nic(eng, a, MAC1, IP1, line_rate_bps=10_000_000_000, mss=MSS, init_credit=2048)
    d2 = add_nic(eng, b, MAC2, IP2, line_rate_bps=10_000_000_000, mss=MSS, init_credit=2048)
    with eng:
        tab.start_receiver(eng, d2, win, {"window": 6 * 1024}, idle_ns=200_000)
        flows = [add_flow(eng, d1, MAC2, IP2, credit=True, init_credit=2048) for _ in range(2)]
        data = [bytes([k + 1]) * (200_000 + 1000 * k) for k in range(2)]
        for f, x in zip(flows, data):
            nic_post(eng, d1, f, x)
        S = tab.state(win)[int(eng.E.devs.regs[d2, 0])]
        while not all(flow_done(eng, f) for f in flows):
            eng.run_for(20_000)
        assert S["joins"] == 2 and S["leaves"] == 0          # each sender joined once
        rs = np.flatnonzero(S["joined"])
        assert len(rs) == 2 and (S["joined"][rs] == 1).all()
        eng.run_for(1_000_000)                               # silent past the idle timeout
        assert S["leaves"] == 2 and (S["joined"][rs] == 0).all()
        assert sorted(S["rcvd"][rs]) == [len(x) for x in data]      # every byte, as DATA
        assert (S["backlog"][rs] > 0).all()
        for f, x in zip(flows, data):
            st = flow_stats(eng, f)
            assert flow_done(eng, f) and nic_delivered(eng, d2, IP1, f) == x
            # the credit gate is the receiver's grant: at most the window in flight
            assert st["credit"] >= len(x)
            assert st["max_inflight"] <= 6 * 1024 + MSS


def test_roles_are_checked():
    tab = NativeTable(4)
    win, dctcp = tab.add(Window), tab.add(Dctcp)
    eng = Engine(clock="virtual", max_flows=4, native=tab.native)
    a, b = eng.add_mem_link("h1", "h2")
    d1 = add_nic(eng, a, MAC1, IP1, mss=MSS)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        with pytest.raises(ConfigError, match="receiver algorithm"):
            tab.start(eng, f, win)
        with pytest.raises(ConfigError, match="not a receiver"):
            tab.start_receiver(eng, d1, dctcp)


def _experiment(cc: dict):
    from taurus.experiment import schema
    return schema.from_dict({
        "experiment": {"name": "rx", "duration": "3ms"},
        "topology": {"name": "t", "hosts": [{"name": "h1"}, {"name": "h2"}, {"name": "h3"}],
                     "switches": [{"name": "s1"}],
                     "links": [{"endpoints": ["h1", "s1"]}, {"endpoints": ["h2", "s1"]},
                               {"endpoints": ["s1", "h3"]}]},
        "cc": cc,
        "traffic": [{"kind": "bulk", "from": ["h1", "h2"], "to": "h3", "size": "100KB"}]})


@pytest.mark.parametrize("mode", ["native", "agent"])
def test_experiment_runs_a_sender_and_a_receiver_algorithm(mode, tmp_path):
    """[cc] algorithm at the senders, [cc] receiver at the receiving host:
    the flows become credit flows the receiver's grants pace, and finish."""
    from taurus.experiment.runner import run_experiment
    x = _experiment({"algorithm": "dctcp", "mode": mode, "receiver": "test_cc_receiver:Window",
                     "receiver_params": {"window": 8192}, "receiver_idle": "100us"})
    s = run_experiment(x, str(tmp_path), "virtual")
    assert s["complete"] and not s["error"]
    assert all(f["done"] for f in s["flows"]), s["flows"]


@pytest.mark.parametrize("cc,key", [
    ({"receiver": "dctcp"}, "cc.receiver"),
    ({"receiver": "test_cc_receiver:Window", "receiver_params": {"nope": 1}},
     "cc.receiver_params"),
    ({"mode": "native", "algorithm": "test_cc_receiver:Window"}, "cc.algorithm")])
def test_a_role_mismatch_names_the_key(cc, key, tmp_path):
    from taurus.experiment.runner import run_experiment
    from taurus.errors import ConfigError as AnyConfigError
    with pytest.raises(AnyConfigError) as e:
        run_experiment(_experiment(cc), str(tmp_path), "virtual")
    assert key in str(e.value)
