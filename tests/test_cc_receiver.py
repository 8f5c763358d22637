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


# ---- the active-sender table: grants dividing a receiver among its senders ----

@dataclass
class ShareParams(Params):
    rate: float = param(3e9, "bit/s", "what the receiver grants, all senders together")
    ahead: int = param(8 * 1024, "bytes", "credit beyond each sender's share so far")
    init: int = param(4 * 1024, "bytes", "a new sender's credit")
    tick: int = param(5_000, "ns", "TIMER period: grants reach senders with nothing in flight")


@kernel
def _share_advance(s, p, ev):
    """Each sender in the table earns rate / active of credit over time."""
    if s.last_t > 0 and s.nact > 0:
        s.allow += (ev.t_last - s.last_t) * p.rate / 8e9 / s.nact
    s.last_t = ev.t_last
    s.nact = ev.active
    if ev.active > s.active_max:
        s.active_max = ev.active


@kernel
def share_on_join(s, p, ev, d):
    _share_advance(s, p, ev)
    s.since[ev.flow] = s.allow
    s.join_backlog_sum = ev.backlog_sum
    set_credit(d, p.init)


@kernel
def share_on_data(s, p, ev, d):
    _share_advance(s, p, ev)
    set_credit(d, p.init + s.allow - s.since[ev.flow] + p.ahead)


@kernel
def share_on_timer(s, p, ev, d):
    _share_advance(s, p, ev)
    set_credit(d, p.init + s.allow - s.since[ev.flow] + p.ahead)


@kernel
def share_on_leave(s, p, ev, d):
    _share_advance(s, p, ev)
    s.leaves += 1
    if ev.reason == 0:
        s.closed += 1


class EqualShare(Algorithm):
    """RCCC-style: the receiver's rate divided equally among its active
    senders (the table's `active`), granted as cumulative credit."""
    name = "test-equal-share"
    role = "receiver"
    Params = ShareParams
    state = ("last_t", "nact", "allow", "active_max", "leaves", "closed", "join_backlog_sum",
             ("since", SENDERS))
    binds = ("JOIN", "DATA", "LEAVE", "TIMER")
    timer = "tick"
    on_join = staticmethod(share_on_join)
    on_data = staticmethod(share_on_data)
    on_leave = staticmethod(share_on_leave)
    on_timer = staticmethod(share_on_timer)


def test_grants_divide_the_receiver_among_its_active_senders():
    """Two senders get half of the granted rate each; when a third joins,
    a third each: the goodputs follow the table's `active`, and each
    sender's credit gate holds it to its grant."""
    from taurus.datapath.devices.nic.state import FL_SENT_OFF, NR_RX_ACTIVE, NR_RX_BACKLOG
    tab = NativeTable(16)
    alg = tab.add(EqualShare)
    eng = Engine(clock="virtual", max_flows=16, n_frames=32768, native=tab.native)
    a, b = eng.add_mem_link("h1", "h2", delay_ns=2000, rate_bps=10_000_000_000)
    d1 = add_nic(eng, a, MAC1, IP1, line_rate_bps=10_000_000_000, mss=MSS)
    d2 = add_nic(eng, b, MAC2, IP2, line_rate_bps=10_000_000_000, mss=MSS)
    rate = 3e9
    with eng:
        tab.start_receiver(eng, d2, alg, {"rate": rate}, idle_ns=0)
        flows = [add_flow(eng, d1, MAC2, IP2, credit=True, init_credit=4096) for _ in range(3)]
        N = eng.E.nic
        n2 = int(eng.E.devs.regs[d2, 0])
        got = lambda: np.array([len(nic_delivered(eng, d2, IP1, f)) for f in flows])  # noqa: E731
        for f in flows[:2]:
            nic_post(eng, d1, f, bytes(900_000))
        T = 2_000_000
        eng.run_for(200_000)                                 # settle
        g0 = got()
        eng.run_for(T)
        g1 = got()
        share2 = rate * T / 8e9 / 2
        for k in range(2):
            assert abs((g1 - g0)[k] - share2) < 0.05 * share2, (g1 - g0, share2)
        assert g1[2] == 0
        nic_post(eng, d1, flows[2], bytes(900_000))
        eng.run_for(200_000)
        g2 = got()
        eng.run_for(T)
        g3 = got()
        share3 = rate * T / 8e9 / 3
        for k in range(3):
            assert abs((g3 - g2)[k] - share3) < 0.05 * share3, (g3 - g2, share3)
        S = tab.state(alg)[n2]
        assert S["active_max"] == 3 and int(N.nr[n2, NR_RX_ACTIVE]) == 3
        assert 0 < int(N.nr[n2, NR_RX_BACKLOG]) <= 3 * 900_000
        assert S["join_backlog_sum"] > 0
        for f in flows:                                      # the credit gate holds
            assert N.fl[f, FL_SENT_OFF] <= flow_stats(eng, f)["credit"]


def test_receiver_init_credit_key():
    """[cc] receiver_init_credit: a size, or "auto" (the default): one BDP
    of the receiver's link, RTT 4 times its delay, at least 2 MSS."""
    from taurus.experiment.traffic import receiver_init_credit
    x = _experiment({"receiver": "test_cc_receiver:Window", "receiver_init_credit": "32KiB"})
    assert x.host_cc("h3").receiver_init_credit == 32 * 1024
    assert receiver_init_credit(x, "h3") == 32 * 1024
    x = _experiment({"receiver": "test_cc_receiver:Window"})
    lk = x.topo.ifaces_of("h3")[0].link
    rate = lk.rate or 10**10
    bdp = rate * 4 * (lk.delay or 1000) // 8_000_000_000
    assert receiver_init_credit(x, "h3") == max(2 * x.host_cc("h3").mss, bdp)
    x = _experiment({"receiver": "test_cc_receiver:Window", "receiver_init_credit": "auto"})
    assert x.host_cc("h3").receiver_init_credit == 0
