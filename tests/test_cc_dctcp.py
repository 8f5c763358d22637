"""DCTCP (v2, cc_algorithms/dctcp.py) against hand-computed alpha and cwnd
sequences: its handlers driven through Runtime.setup / Runtime.drain with
report records, compiled and as plain Python."""
import numpy as np
import pytest

from taurus.cc_algorithms.algorithm import (D_CWND, D_RATE, FlowContext, class_periods,
                                            param_row)
from taurus.cc_algorithms.dctcp import Dctcp, DctcpParams
from taurus.cc_algorithms.params import ConfigError, build
from taurus.cc_algorithms.runtime import Runtime
from taurus.datapath.ccshm import (CLS_ACCUMULABLE, CLS_COALESCENT, EV_ACK, EV_ECN, EV_RTO, EVENT,
                                   EV_RTT, RTT_UNIT)
from taurus.testing.fake_datapath import record

MSS = 4096


@pytest.fixture(params=[True, False], ids=["jit", "python"])
def jit(request):
    return request.param


class Flow:
    """One DCTCP flow (row 0 of its tables)."""

    def __init__(self, jit, cwnd_in_force=0.0, **p):
        self.params = build(DctcpParams, p, "p")
        self.rt = Runtime(Dctcp, jit=jit)
        self.S, self.P, self.D = self.rt.tables(1)
        self.P[0] = param_row(Dctcp, self.params, FlowContext(MSS, 100e9, float(1 << 30)))[0]
        self.D["cwnd"][0] = cwnd_in_force
        self.rt.setup(self.S, self.P, self.D, 0)
        self.init = self.decision()

    @property
    def alpha(self):
        return float(self.S.alpha[0])

    @property
    def cwnd(self):
        return float(self.S.cwnd[0])

    def decision(self):
        """(rate or None, cwnd or None) decided since the last call."""
        d = self.D[0]
        out = (float(d.rate) if d.set & D_RATE else None,
               float(d.cwnd) if d.set & D_CWND else None)
        self.D["set"][0] = 0
        return out

    def deliver(self, *recs):
        rec = np.array(recs, np.int64)
        faults = np.zeros(len(rec), np.int64)
        assert self.rt.drain(self.S, self.P, self.D, rec, np.arange(len(rec)), faults) == 0
        return self.decision()

    def window(self, acked, marked):
        """One ACK record as the engine reports it: the ECN-echoed bytes in it."""
        return self.deliver(record(0, EV_ACK, 0, (acked, acked // MSS, 0, marked)))[1]


def test_init_publishes_the_initial_window_or_the_one_in_force(jit):
    a = Flow(jit)
    assert a.init == (None, 10 * MSS) and a.alpha == 1.0
    b = Flow(jit, cwnd_in_force=123 * MSS)             # an agent restart: go on from it
    assert b.init == (None, 123 * MSS) and b.S.ssthresh[0] == 123 * MSS


def test_one_all_marked_window_from_alpha_zero(jit):
    a = Flow(jit, alpha_init=0.0)
    w0 = a.cwnd
    assert w0 == 10 * MSS
    c = a.window(int(w0), int(w0))
    assert a.alpha == pytest.approx(1 / 16)
    assert a.cwnd == pytest.approx(w0 * (1 - 1 / 32))
    assert c == pytest.approx(w0 * (1 - 1 / 32))


def test_alpha_sequence_half_marked_then_clean(jit):
    a = Flow(jit, alpha_init=0.0, slow_start=False)
    w, alpha = a.cwnd, 0.0
    for marked_frac in (0.5, 0.5, 0.0, 1.0):
        acked = int(np.ceil(w))
        a.window(acked, int(acked * marked_frac))
        alpha = 15 / 16 * alpha + 1 / 16 * (int(acked * marked_frac) / acked)
        w = w * (1 - alpha / 2) if marked_frac else w + MSS * (acked // w)
        assert a.alpha == pytest.approx(alpha)
        assert a.cwnd == pytest.approx(w)


def test_linux_default_alpha_halves_on_first_marked_window(jit):
    a = Flow(jit)
    w0 = a.cwnd
    a.window(int(w0), int(w0))
    assert a.alpha == 1.0 and a.cwnd == pytest.approx(w0 / 2)


def test_partial_window_does_nothing_and_cut_is_once_per_window(jit):
    a = Flow(jit, alpha_init=0.0)
    w0 = a.cwnd
    assert a.window(int(w0) // 2, int(w0) // 2) is None       # window not over: no decision
    assert a.cwnd == w0
    # the second half closes the window: one cut, with F over the whole window
    a.window(int(w0) // 2, int(w0) // 2)
    assert a.cwnd == pytest.approx(w0 * (1 - 1 / 32))


def test_slow_start_doubles_then_additive_increase(jit):
    a = Flow(jit)
    w0 = a.cwnd
    a.window(int(w0), 0)
    assert a.cwnd == 2 * w0
    a.window(int(a.cwnd), int(a.cwnd) // 10)      # first mark ends slow start
    w = a.cwnd
    a.window(int(np.ceil(w)), 0)
    assert a.cwnd == pytest.approx(w + MSS)


def test_additive_increase_follows_the_bytes_acknowledged(jit):
    """Beyond slow start a clean record covering three windows grows the
    window by three MSS (Linux's tcp_cong_avoid_ai adds whole windows),
    one covering one and a half windows by one MSS."""
    a = Flow(jit, slow_start=False)
    w = a.cwnd
    a.window(3 * int(w), 0)
    assert a.cwnd == pytest.approx(w + 3 * MSS)
    w = a.cwnd
    a.window(int(1.5 * w), 0)
    assert a.cwnd == pytest.approx(w + MSS)


def test_a_record_covering_several_windows_closes_one(jit):
    """A window closes at the first record that completes it, however many
    bytes it covers; F is over all of them, the window is cut once, the
    excess does not carry into the next window, and alpha moves as k
    windows of fraction F would (in native mode each ACK is a record, so k
    is 1, as in Linux)."""
    a = Flow(jit, alpha_init=0.0, slow_start=False)
    w0 = a.cwnd
    a.window(3 * int(w0), 3 * int(w0))
    alpha = 1 - (15 / 16) ** 3
    assert a.alpha == pytest.approx(alpha)
    assert a.cwnd == pytest.approx(w0 * (1 - alpha / 2))
    assert a.S.acked[0] == a.S.marked[0] == 0
    w1 = a.cwnd
    assert a.window(int(w1) // 2, 0) is None             # a new window starts from zero


def test_marks_come_in_the_ack_record_and_periods_are_per_rtt(jit):
    a = Flow(jit, alpha_init=0.0)
    w0 = a.cwnd
    assert a.deliver(record(0, EV_ECN, 0, (int(w0), int(w0) // MSS))) == (None, None)  # not bound
    a.window(int(w0), 0)
    assert a.alpha == 0.0 and a.cwnd == 2 * w0
    assert class_periods(Dctcp) == {CLS_ACCUMULABLE: -RTT_UNIT, CLS_COALESCENT: 0}
    assert "ECN" not in Dctcp.bindings(a.params)          # the ACK record carries the marks


def test_rto_collapses_to_one_mss_and_pace_publishes_rate(jit):
    a = Flow(jit, pace=True)
    assert "RTT" in Dctcp.bindings(a.params)
    assert a.deliver(record(0, EV_RTT, 0, (20_000, 1, -1, -1))) == (None, None)
    rate, cwnd = a.deliver(record(0, EV_RTO, 0, (1, 0, 5)))
    assert cwnd == MSS and rate == pytest.approx(MSS * 8e9 / 20_000)
    assert a.S.ssthresh[0] == 5 * MSS
    assert "RTT" not in Dctcp.bindings(DctcpParams())


def test_the_window_never_exceeds_max_cwnd(jit):
    a = Flow(jit, slow_start=False)
    a.P.max_cwnd[0] = 10.5 * MSS
    a.window(int(a.cwnd), 0)
    assert a.cwnd == 10.5 * MSS


@pytest.mark.parametrize("bad, key", [({"g": 0.0}, "g"), ({"g": "x"}, "g"),
                                      ({"alpha_init": 2.0}, "alpha_init"),
                                      ({"gain": 1.0}, "gain")])
def test_bad_params_name_the_parameter(bad, key):
    with pytest.raises(ConfigError, match=key):
        build(DctcpParams, bad, "[agent.params]")


def test_a_record_with_an_unknown_event_id_is_a_counted_fault(jit):
    """A corrupt record's event id reaches no handler: the drain counts it as
    that record's fault, and the next record is handled as usual."""
    f = Flow(jit)
    bad = record(0, EV_ACK, 0, (MSS, 1, 0, 0))
    bad[EVENT] = 99
    rec = np.array([bad, record(0, EV_RTO, 0, (1, 0))], np.int64)
    faults = np.zeros(2, np.int64)
    assert f.rt.drain(f.S, f.P, f.D, rec, np.arange(2), faults) == 1
    assert faults[0] == 0 and f.cwnd == MSS                # the RTO still collapsed the window
