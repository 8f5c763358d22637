"""DCTCP (agent mode) against hand-computed alpha and cwnd sequences."""
import numpy as np
import pytest

from taurus.cc_algorithms.base import Events, FlowContext, class_periods
from taurus.cc_algorithms.dctcp import Dctcp, DctcpParams
from taurus.cc_algorithms.params import ConfigError, build
from taurus.datapath.ccshm import (CLS_ACCUMULABLE, CLS_COALESCENT, EV_ACK, EV_ECN, EV_RTO,
                                   EV_RTT, RTT_UNIT)
from taurus.testing.fake_datapath import record

MSS = 4096


def make(**p):
    a = Dctcp(FlowContext(0, MSS, 100_000_000_000, max_cwnd=1 << 30), build(DctcpParams, p, "p"))
    a.setup()
    return a


def ev(event, *values):
    return Events.of(0, event, np.array([record(0, event, 0, values)]))


def window(a, acked, marked):
    """One window as the engine reports it: an ACK message summing the ECN-echoed bytes."""
    a.on_ack(ev(EV_ACK, acked, acked // MSS, 0, marked))
    a.decide()
    r, a._result = a._result, None
    return r


def test_one_all_marked_window_from_alpha_zero():
    a = make(alpha_init=0.0)
    w0 = a.cwnd
    assert w0 == 10 * MSS
    r = window(a, int(w0), int(w0))
    assert a.alpha == pytest.approx(1 / 16)
    assert a.cwnd == pytest.approx(w0 * (1 - 1 / 32))
    assert r[1] == pytest.approx(w0 * (1 - 1 / 32))


def test_alpha_sequence_half_marked_then_clean():
    a = make(alpha_init=0.0, slow_start=False)
    w, alpha = a.cwnd, 0.0
    for marked_frac in (0.5, 0.5, 0.0, 1.0):
        acked = int(np.ceil(w))
        window(a, acked, int(acked * marked_frac))
        alpha = 15 / 16 * alpha + 1 / 16 * (int(acked * marked_frac) / acked)
        w = w * (1 - alpha / 2) if marked_frac else w + MSS
        assert a.alpha == pytest.approx(alpha)
        assert a.cwnd == pytest.approx(w)


def test_linux_default_alpha_halves_on_first_marked_window():
    a = make()
    w0 = a.cwnd
    window(a, int(w0), int(w0))
    assert a.alpha == 1.0 and a.cwnd == pytest.approx(w0 / 2)


def test_partial_window_does_nothing_and_cut_is_once_per_window():
    a = make(alpha_init=0.0)
    w0 = a.cwnd
    assert window(a, int(w0) // 2, int(w0) // 2) is None       # window not over
    assert a.cwnd == w0
    # the second half closes the window: one cut, with F over the whole window
    window(a, int(w0) // 2, int(w0) // 2)
    assert a.cwnd == pytest.approx(w0 * (1 - 1 / 32))


def test_slow_start_doubles_then_additive_increase():
    a = make()
    w0 = a.cwnd
    window(a, int(w0), 0)
    assert a.cwnd == 2 * w0
    window(a, int(a.cwnd), int(a.cwnd) // 10)      # first mark ends slow start
    w = a.cwnd
    window(a, int(w), 0)
    assert a.cwnd == w + MSS


def test_multi_window_step_applies_alpha_update_per_window():
    a = make(alpha_init=0.0, slow_start=False)
    w0 = a.cwnd
    window(a, 3 * int(w0), 3 * int(w0))
    alpha = 1 - (15 / 16) ** 3
    assert a.alpha == pytest.approx(alpha)
    assert a.cwnd == pytest.approx(w0 * (1 - alpha / 2))


def test_separate_ecn_records_count_too_and_periods_are_per_rtt():
    a = make(alpha_init=0.0)
    w0 = a.cwnd
    a.on_ack(ev(EV_ACK, int(w0), int(w0) // MSS))
    a.on_ecn(ev(EV_ECN, int(w0), int(w0) // MSS))
    a.decide()
    assert a.cwnd == pytest.approx(w0 * (1 - 1 / 32))
    assert class_periods(a) == {CLS_ACCUMULABLE: -RTT_UNIT, CLS_COALESCENT: 0}
    assert "ECN" not in a.bindings()          # the ACK message carries the marks


def test_rto_collapses_to_one_mss_and_pace_publishes_rate():
    a = make(pace=True)
    assert "RTT" in a.bindings()
    a.on_rtt(ev(EV_RTT, 20_000, 1, -1, -1))
    a.on_rto(ev(EV_RTO, 1, 5))
    rate, cwnd, _ = a._result
    assert cwnd == MSS and rate == pytest.approx(MSS * 8e9 / 20_000)
    assert "RTT" not in make().bindings()


@pytest.mark.parametrize("bad, key", [({"g": 0.0}, "g"), ({"g": "x"}, "g"),
                                      ({"alpha_init": 2.0}, "alpha_init"),
                                      ({"gain": 1.0}, "gain")])
def test_bad_params_name_the_parameter(bad, key):
    with pytest.raises(ConfigError, match=key):
        build(DctcpParams, bad, "[agent.params]")
