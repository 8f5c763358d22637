"""Native mode: algorithms compiled into the engine, handed to it as a table
(cc_algorithms/native.py), several side by side with per-flow parameters;
every event a flow's algorithm binds reaches it (one record each), TIMER
included, and its decisions reach the context columns through the bounds.
All in virtual time."""
import math
from dataclasses import dataclass

import numba as nb
import numpy as np
import pytest

from taurus.datapath.byref import byref
from taurus.cc_algorithms.algorithm import Algorithm, kernel, param, set_cwnd, set_rate
from taurus.cc_algorithms.dctcp import Dctcp
from taurus.cc_algorithms.native import NativeTable
from taurus.cc_algorithms.params import ConfigError, Params, require
from taurus.datapath import ccnative as CN
from taurus.datapath import ccshm as C
from taurus.datapath.devices.nic.setup import (add_flow, add_nic, flow_done, nic_post,
                                               set_flow_mode)
from taurus.datapath.engine import Engine
from taurus.datapath.report import report_signal

MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"
IP1, IP2 = "10.0.0.1", "10.0.0.2"
MSS = 1024
LINE = 10_000_000_000


# ---- two tiny algorithms of the test's own -------------------------------------
@dataclass
class FixedParams(Params):
    pkts: int = param(4, "packets", "the window")
    fault_at: int = param(0, "", "the ACK record whose handler raises (0: none)")
    nan_at: int = param(0, "", "the ACK record whose handler decides NaN (0: none)")

    def check(self):
        require(self.pkts >= 1, "pkts", "must be >= 1")


@kernel
def fixed_init(s, p, d):
    set_cwnd(d, p.pkts * p.mss)


@kernel
def fixed_on_ack(s, p, ev, d):
    s.acks += 1
    s.bytes += ev.bytes
    if s.acks == p.fault_at:
        raise ValueError("boom")
    if s.acks == p.nan_at:
        set_cwnd(d, math.nan)
        return
    set_cwnd(d, (p.pkts + s.acks) * p.mss)          # a window that says how many ACKs came


class Fixed(Algorithm):
    """A window of pkts + (ACK records seen) packets."""
    name = "test-fixed"
    Params = FixedParams
    state = ("acks", "bytes")
    binds = ("ACK",)
    init = staticmethod(fixed_init)
    on_ack = staticmethod(fixed_on_ack)


@dataclass
class TickParams(Params):
    period_ns: int = param(50_000, "ns", "TIMER period")


@kernel
def tick_on_timer(s, p, ev, d):
    s.n += 1
    s.ticks = ev.ticks
    s.period = ev.period
    set_rate(d, 1e9 + 1e6 * ev.ticks)


class Ticker(Algorithm):
    """A rate that grows by 1 Mbit/s per TIMER tick."""
    name = "test-ticker"
    Params = TickParams
    state = ("n", "ticks", "period")
    binds = ("TIMER",)
    timer = "period_ns"
    on_timer = staticmethod(tick_on_timer)


# ---- helpers -----------------------------------------------------------------------
def engine(tab=None, max_flows=16):
    eng = Engine(clock="virtual", max_flows=max_flows, n_frames=32768,
                 native=tab.native if tab is not None else None)
    a, b = eng.add_mem_link("h1", "h2", delay_ns=2000, rate_bps=LINE)
    d1 = add_nic(eng, a, MAC1, IP1, line_rate_bps=LINE, mss=MSS, rx_buf_bytes=4 << 20)
    d2 = add_nic(eng, b, MAC2, IP2, line_rate_bps=LINE, mss=MSS, rx_buf_bytes=4 << 20)
    return eng, d1, d2


@nb.njit(cache=True)
def emit(state, flow, ev, now, v0, v1, v2, v3):
    report_signal(byref(state), flow, ev, now, v0, v1, v2, v3)


def counters(eng, k=0):
    c = eng.cc.ctls[k]
    return {n: int(c[w]) for n, w in (("calls", C.CTL_NATIVE_CALLS),
                                      ("faults", C.CTL_NATIVE_FAULTS),
                                      ("rejected", C.CTL_NATIVE_REJECTED),
                                      ("clamped", C.CTL_NATIVE_CLAMPED),
                                      ("reported", C.CTL_REPORTED),
                                      ("signals", C.CTL_SIGNALS))}


# ---- tests ------------------------------------------------------------------------
def test_an_engine_runs_the_native_algorithm_it_is_handed():
    """A memory-link transfer under native DCTCP: init publishes its first
    window, each ACK reaches it (one record each), its window is the
    flow's; no message goes to any agent."""
    tab = NativeTable(16)
    dctcp = tab.add(Dctcp)
    assert tab.add(Dctcp) == dctcp                        # each class once
    eng, d1, d2 = engine(tab)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=4 * MSS, buf_bytes=4 << 20)
        tab.start(eng, f, dctcp)
        assert eng.cc.flags[f] == C.FL_NATIVE
        assert eng.cc.event_mask[f] == (1 << C.EV_ACK) | (1 << C.EV_RTO)   # pace off: no RTT
        assert eng.cc.cwnd[f] == 10 * MSS                 # init: RFC 6928's window
        S = tab.state(dctcp)
        assert S[f]["alpha"] == 1.0 and S[f]["ssthresh"] == 1e300
        assert tab.params(dctcp)[f]["mss"] == MSS and tab.params(dctcp)[f]["line_rate"] == LINE
        seen = []
        nic_post(eng, d1, f, bytes(2 << 20))
        while not flow_done(eng, f):
            eng.run_for(20_000)
            seen.append(int(eng.cc.cwnd[f]))
        c = counters(eng)
        assert c["calls"] > 100 and c["faults"] == 0 and c["rejected"] == 0
        assert c["reported"] == 0 and c["signals"] == 0 and eng.cc.ring.drain().shape[0] == 0
        assert seen[-1] > 10 * MSS and sorted(seen) == seen     # slow start, no marks
        assert eng.cc.cwnd[f] == round(S[f]["cwnd"])
        assert S[f]["alpha"] < 0.8                        # windows without marks decay alpha


def test_warm_compiles_what_a_flows_start_runs_and_changes_nothing():
    """NativeTable.warm (taurus perf -s calls it before serving): every
    array the table and the engine share is as it was, and a flow started
    afterwards runs as without it."""
    tab = NativeTable(16)
    dctcp = tab.add(Dctcp)
    eng, d1, d2 = engine(tab)
    with eng:
        A = tab.native
        before = [x.copy() for x in (A.st, A.par, A.dec, A.flow_alg, A.lim, eng.cc.cwnd,
                                     eng.cc.rate, eng.cc.flags, eng.cc.ctls)]
        tab.warm(eng)
        after = (A.st, A.par, A.dec, A.flow_alg, A.lim, eng.cc.cwnd, eng.cc.rate,
                 eng.cc.flags, eng.cc.ctls)
        assert all(np.array_equal(x, y) for x, y in zip(before, after))
        # the start compiles nothing more: no new specialization of its calls
        calls = (tab.algs[dctcp].rt.setup, CN.native_apply)
        sigs = [len(c.signatures) for c in calls]
        f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=4 * MSS, buf_bytes=4 << 20)
        tab.start(eng, f, dctcp)
        assert eng.cc.cwnd[f] == 10 * MSS
        assert [len(c.signatures) for c in calls] == sigs
        with pytest.raises(ValueError, match="not built with this table"):
            NativeTable(4).warm(eng)


def test_native_rto_and_per_flow_parameters():
    """Each flow its own parameter row (the MSS too); RTO goes to the
    algorithm through the report path like every bound event."""
    tab = NativeTable(16)
    dctcp = tab.add(Dctcp)
    eng, d1, d2 = engine(tab)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        g = add_flow(eng, d1, MAC2, IP2)
        tab.start(eng, f, dctcp, {"init_cwnd_pkts": 4, "alpha_init": 0.0})
        tab.start(eng, g, dctcp, {"init_cwnd_pkts": 20, "g": 1.0, "slow_start": False})
        assert (eng.cc.cwnd[f], eng.cc.cwnd[g]) == (4 * MSS, 20 * MSS)
        P = tab.params(dctcp)
        assert (P[f]["g"], P[g]["g"]) == (1 / 16, 1.0)
        now = eng.now()
        emit(eng.E, f, C.EV_ACK, now, 4 * MSS, 4, 3, 4 * MSS)     # a window, all marked
        emit(eng.E, g, C.EV_ACK, now, 20 * MSS, 20, 19, 20 * MSS)
        assert eng.cc.cwnd[f] == round(4 * MSS * (1 - (1 / 16) / 2))
        assert eng.cc.cwnd[g] == 10 * MSS                       # alpha = 1 at once: halved
        emit(eng.E, g, C.EV_RTO, now, 1, 0, 20, 0)
        assert eng.cc.cwnd[g] == MSS and eng.cc.cwnd[f] == round(4 * MSS * (1 - 1 / 32))
        with pytest.raises(ConfigError, match=r"params\.g: must be in"):
            tab.start(eng, f, dctcp, {"g": 2.0})
        with pytest.raises(ConfigError, match="unknown key 'x'"):
            tab.start(eng, f, dctcp, {"x": 1})


def test_two_algorithms_side_by_side_and_a_timer():
    """DCTCP, a fixed window and a TIMER-driven rate in one engine: each flow
    gets its own algorithm's decisions; the ticker ticks at its period in
    virtual time though its flow sends nothing."""
    tab = NativeTable(16)
    dctcp, fixed, ticker = tab.add(Dctcp), tab.add(Fixed), tab.add(Ticker)
    eng, d1, d2 = engine(tab)
    with eng:
        fd = add_flow(eng, d1, MAC2, IP2)
        ff = add_flow(eng, d1, MAC2, IP2)
        ft = add_flow(eng, d1, MAC2, IP2)
        tab.start(eng, fd, dctcp)
        tab.start(eng, ff, fixed, {"pkts": 3})
        tab.start(eng, ft, ticker, {"period_ns": 40_000})
        assert eng.cc.timer_ns[ft] == 40_000 and eng.cc.event_mask[ft] == 1 << C.EV_TIMER
        assert eng.cc.cwnd[ff] == 3 * MSS and eng.cc.rate[ft] == 0
        t0 = eng.now()
        for f in (fd, ff):
            nic_post(eng, d1, f, bytes(256 << 10))
        eng.run_until(t0 + 1_010_000, stop_idle=False)
        assert flow_done(eng, fd) and flow_done(eng, ff)
        T = tab.state(ticker)[ft]
        assert (T["n"], T["ticks"], T["period"]) == (25, 25, 40_000)   # 1 ms / 40 us
        assert eng.cc.rate[ft] == 1e9 + 25e6
        F = tab.state(fixed)[ff]
        assert F["bytes"] == 256 << 10 and eng.cc.cwnd[ff] == (3 + F["acks"]) * MSS
        D = tab.state(dctcp)[fd]
        assert eng.cc.cwnd[fd] == round(D["cwnd"]) and eng.cc.cwnd[fd] != eng.cc.cwnd[ff]
        assert tab.state(fixed)[fd]["acks"] == 0 and tab.state(dctcp)[ff]["cwnd"] == 0
        eng.run_until(t0 + 1_210_000, stop_idle=False)
        assert tab.state(ticker)[ft]["ticks"] == 30
        set_flow_mode(eng, ft, "static")                  # the timer stops at its next expiry
        eng.run_until(t0 + 1_410_000, stop_idle=False)
        assert tab.state(ticker)[ft]["ticks"] == 30


def test_a_raising_handler_is_counted_and_nan_rejected():
    tab = NativeTable(8)
    fixed = tab.add(Fixed)
    eng, d1, d2 = engine(tab, max_flows=8)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        tab.start(eng, f, fixed, {"pkts": 2, "nan_at": 2, "fault_at": 3})
        now = eng.now()
        emit(eng.E, f, C.EV_ACK, now, MSS, 1, 0, 0)
        assert eng.cc.cwnd[f] == 3 * MSS
        v = int(eng.cc.version[f])
        emit(eng.E, f, C.EV_ACK, now, MSS, 1, 1, 0)       # NaN: rejected, the window stays
        assert eng.cc.cwnd[f] == 3 * MSS and eng.cc.version[f] == v
        emit(eng.E, f, C.EV_ACK, now, MSS, 1, 2, 0)       # raises: counted, the window stays
        assert eng.cc.cwnd[f] == 3 * MSS
        emit(eng.E, f, C.EV_ACK, now, MSS, 1, 3, 0)       # and the flow goes on
        assert eng.cc.cwnd[f] == 6 * MSS
        assert counters(eng) == {"calls": 4, "faults": 1, "rejected": 1, "clamped": 0,
                                 "reported": 0, "signals": 0}


def test_decisions_are_clamped_to_the_flow_bounds():
    tab = NativeTable(8)
    fixed, ticker = tab.add(Fixed), tab.add(Ticker)
    eng, d1, d2 = engine(tab, max_flows=8)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        tab.start(eng, f, fixed, {"pkts": 1 << 21})       # 2 GiB: above max_cwnd
        assert eng.cc.cwnd[f] == 1 << 30 and counters(eng)["clamped"] == 1
        g = add_flow(eng, d1, MAC2, IP2)
        tab.start(eng, g, ticker, {"period_ns": 1000})
        assert tab.native.lim[g, 1] == LINE               # the rate bound: the NIC's line
        tab.native.lim[g, 1] = 1.005e9
        eng.run_for(10_000)
        assert eng.cc.rate[g] == 1.005e9


def test_an_engine_without_a_table_refuses_native_flows():
    eng, d1, d2 = engine(None, max_flows=8)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        assert not eng.has_native
        with pytest.raises(ValueError, match="no native algorithm"):
            set_flow_mode(eng, f, "native", alg=0, event_mask=1)
    tab = NativeTable(8)
    tab.add(Fixed)
    other = NativeTable(8)
    other.add(Fixed)
    eng, d1, d2 = engine(tab, max_flows=8)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        with pytest.raises(ValueError, match="no algorithm 3"):
            set_flow_mode(eng, f, "native", alg=3, event_mask=1)
        with pytest.raises(ValueError, match="not built with this table"):
            other.start(eng, f, 0)
    with pytest.raises(ValueError, match="before taking .native"):
        tab.add(Ticker)


def test_an_engine_refuses_a_native_table_of_other_array_types():
    """It would otherwise compile the loop anew for them, for minutes."""
    tab = NativeTable(4)
    tab.add(Fixed)
    bad = tab.native._replace(st=tab.native.st.astype(np.float32))
    with pytest.raises(TypeError, match="NativeCC"):
        Engine(clock="virtual", max_flows=4, native=bad)


# ---- experiments: `[cc]` of the file, natively ---------------------------------------
def dumbbell(tmp_path, *sets):
    """The demo dumbbell (2 senders, 2 Gbit/s ECN bottleneck) in native mode:
    the summary, the bottleneck's queue samples and the cwnd samples."""
    import csv
    import os

    from taurus.experiment import schema
    from taurus.experiment.runner import run_experiment
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    x = schema.load(os.path.join(root, "examples", "dctcp_dumbbell.toml"),
                    ["cc.mode=native", "outputs.plots=false", *sets])
    out = str(tmp_path / "_".join(s.replace(".", "-").replace("=", "-") for s in sets))
    s = run_experiment(x, out, "virtual")
    with open(os.path.join(out, "queue_series.csv")) as f:
        rows = list(csv.DictReader(f))
    q = {}
    for r in rows:
        q.setdefault(r["port"], []).append(int(r["queue_bytes"]))
    queue = np.array(max(q.values(), key=lambda v: sum(v)))
    with open(os.path.join(out, "flow_series.csv")) as f:
        cwnd = np.array([int(r["cwnd_bytes"]) for r in csv.DictReader(f)])
    return s, queue, cwnd


def test_cc_params_reach_the_native_algorithm(tmp_path):
    """`--set cc.params.g=1.0` changes native DCTCP's decisions (and so the
    queue), as it does the agent's; runs are labelled with the algorithm."""
    s1, q1, w1 = dumbbell(tmp_path)
    s2, q2, w2 = dumbbell(tmp_path, "cc.params.g=1.0")
    print(f"queue mean: g=1/16 {q1.mean() / 1e3:.1f} KB, g=1 {q2.mean() / 1e3:.1f} KB")
    assert s1["complete"] and s2["complete"]
    assert {r["algorithm"] for r in s1["flows"]} == {"dctcp"}
    assert {r["mode"] for r in s1["flows"]} == {"native"}
    assert not np.array_equal(w1, w2) and not np.array_equal(q1, q2)
    assert abs(q1.mean() - q2.mean()) > 500


@pytest.mark.parametrize("sets, key", [
    (["cc.params.bogus=1"], "cc.params.bogus"),
    (["cc.params.g=2.0"], "cc.params.g"),
    (["cc.algorithm=nosuch"], "cc.algorithm"),
    (["cc.hosts.h2.params.g=0"], "cc.hosts.h2.params.g"),
])
def test_native_parameters_are_checked_with_their_key(tmp_path, sets, key):
    import os

    from taurus.errors import ConfigError as AnyConfigError
    from taurus.experiment import schema
    from taurus.experiment.runner import run_experiment
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    x = schema.load(os.path.join(root, "examples", "dctcp_dumbbell.toml"),
                    ["cc.mode=native", "outputs.plots=false", *sets])
    with pytest.raises(AnyConfigError) as e:
        run_experiment(x, str(tmp_path), "virtual")
    assert e.value.key == key


def test_agent_flows_get_timer_records_once_the_doorbell_rings():
    """An agent-owned flow's TIMER goes into the ring; the agent's doorbell
    starts it (the engine does not watch the columns)."""
    eng, d1, d2 = engine(None, max_flows=8)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        set_flow_mode(eng, f, "agent")
        cc = eng.cc
        cc.ctl[C.CTL_BATCH_BYTES] = 1                     # publish every record at once
        cc.event_mask[f] = 1 << C.EV_TIMER
        cc.timer_ns[f] = 25_000
        eng.run_until(eng.now() + 100_000, stop_idle=False)
        assert cc.ring.pending() == 0
        cc.ctl[C.CTL_TIMER_DOORBELL] += 1
        t1 = eng.now()
        eng.run_until(t1 + 110_000, stop_idle=False)
        r = cc.ring.drain()
        assert list(r[:, C.EVENT]) == [C.EV_TIMER] * 4 and list(r[:, C.V0]) == [1, 2, 3, 4]
        assert list(r[:, C.T_FIRST]) == [t1 + 25_000 * i for i in range(1, 5)]
        assert set(r[:, C.V0 + 1]) == {25_000} and set(r[:, C.FLOW]) == {f}


def test_a_table_whose_entries_share_one_body_is_refused(monkeypatch):
    """Two algorithms whose compiled entries resolve to one address (symbols
    clashing in Numba's cache: taurus/numba_uids.py) would run one's code on
    the other's rows: the table refuses them."""
    from taurus.cc_algorithms.runtime import Runtime
    from taurus.cc_algorithms.swift import Swift
    tab = NativeTable(4)
    tab.add(Dctcp)
    tab.add(Swift)
    monkeypatch.setattr(Runtime, "entry_address", lambda self: 1234)
    with pytest.raises(RuntimeError, match="share one address"):
        tab.native
