"""OSCAR's mechanisms on crafted RTT_LS streams (plain-Python handlers; the
replay cross-test holds the other modes to the same decisions): the batched
least-squares gradient, the unify rule, the reference state at send time."""
import numpy as np
import pytest

from taurus.cc_algorithms.algorithm import FlowContext
from taurus.cc_algorithms.oscar import Oscar, OscarParams, bls_slope, unify
from taurus.datapath.ccevents import EV_RTT_LS, LS_SCALE
from taurus.datapath.ccshm import REC_WIDTH
from taurus.cc_algorithms.runtime import events
from taurus.testing.replay import replay

CTX = FlowContext(mss=4096, line_rate=100e9, max_cwnd=float(1 << 24))
BASE = 10_000.0                     # ns: D_target = 10 us + 75 KB / 100 Gbit/s = 16 us
W0 = 125_000 / 200_000              # window ratio at u = 1: BDP / (BDP + target queue)


def _stream(samples, aggregate=False):
    """RTT_LS records of (send, rtt, arrival) samples: one per sample (native,
    per-event) or, with ``aggregate``, all summed in one record (agent)."""
    groups = [samples] if aggregate else [[s] for s in samples]
    rec = np.zeros((len(groups), REC_WIDTH), np.int64)
    ev = events(rec)
    for i, g in enumerate(groups):
        send = np.array([s[0] for s in g], np.int64)
        rtt = np.array([s[1] for s in g], np.int64)
        x = send - send[0]
        r = ev[i]
        r.seq, r.flow, r.event, r.count = i, 0, EV_RTT_LS, len(g)
        r.t_first, r.t_last = int(g[0][2]), int(g[-1][2])
        r.n, r.sx, r.sy, r.x0 = len(g), x.sum(), rtt.sum(), send[0]
        r.sxx, r.sxy = (x * x // LS_SCALE).sum(), (x * rtt // LS_SCALE).sum()
    return rec


def _batch(send0, arrive0, mean_delay, slope, n=51, gap=100):
    """n samples gap ns apart whose delay has this mean and slope over send time."""
    x = gap * np.arange(n)
    y = mean_delay - slope * x.mean() + slope * x
    return [(send0 + xi, yi, arrive0 + xi) for xi, yi in zip(x, y)]


def _run(samples, params=None, aggregate=False):
    params = params or OscarParams(base_rtt=BASE)
    dec, state = replay(Oscar, params, _stream(samples, aggregate), "python", CTX, flows=1)
    return dec, state[0]


@pytest.mark.parametrize("aggregate", [False, True])
def test_bls_recovers_a_known_slope_through_noise(aggregate):
    rng = np.random.default_rng(7)
    k = 0.3
    x = 100 * np.arange(51)
    y = 20_000 + k * x + rng.normal(0, 300, x.size)           # 300 ns noise per sample
    samples = [(xi, round(yi), 30_000 + xi) for xi, yi in zip(x, y)]
    _, s = _run(samples, aggregate=aggregate)
    assert s.N == 0, "the batch closed"
    assert abs(s.g - k) < 0.05, s.g
    assert abs(s.delay - y.mean()) < 2
    # the per-pair division the slides call noisy is far off on the same samples
    pair = np.diff(np.round(y)) / np.diff(x)
    assert np.std(pair) > 3.0
    assert bls_slope(3, 3.0, 9.0, 5.0, 13.0) == pytest.approx(2.0)   # (0,1),(1,3),(2,5)
    assert bls_slope(1, 1.0, 1.0, 1.0, 1.0) == 0.0


def test_per_sample_and_aggregated_batches_agree():
    samples = _batch(0, 30_000, 20_000, 0.25)
    _, a = _run(samples)
    _, b = _run(samples, aggregate=True)
    assert a.g == pytest.approx(b.g, abs=1e-3) and a.g == pytest.approx(0.25, abs=1e-3)
    assert a.u == pytest.approx(b.u, abs=1e-3)


def test_unify_takes_max_accelerating_min_decelerating():
    assert unify(0.4, 0.7, True) == 0.7 and unify(0.4, 0.7, False) == 0.4
    ai = OscarParams().ai
    # delay 14 us < D_target 16 us: accelerate; u_r = 1 / 1.25 = 0.8 > u_w = W0 16/14
    _, s = _run(_batch(0, 30_000, 14_000, 0.25))
    assert s.u == pytest.approx(max(1 / 1.25, W0 * 16 / 14) + ai, rel=1e-3)
    # delay 20 us > D_target: decelerate; u_w = W0 16/20 = 0.5 < u_r
    _, s = _run(_batch(0, 30_000, 20_000, 0.25))
    assert s.u == pytest.approx(W0 * 16 / 20 + ai, rel=1e-3)
    # a falling delay (u_r = 1 / 0.5 = 2) does not lift a decelerating flow
    _, s = _run(_batch(0, 30_000, 20_000, -0.5))
    assert s.u == pytest.approx(W0 * 16 / 20 + ai, rel=1e-3)


def test_hyper_increase_near_base_rtt():
    p = OscarParams(base_rtt=BASE)
    # decelerate to ~0.5, then a batch at the base RTT adds linear_start at once
    first = _batch(0, 30_000, 20_000, 0.0)
    _, s1 = _run(first, p)
    _, s2 = _run(first + _batch(40_000, 50_000, BASE + 200, 0.0), p)
    assert s2.u == pytest.approx(s1.u + p.linear_start, rel=1e-6)


def test_reference_state_is_the_one_in_force_at_send_time():
    ai = OscarParams().ai
    first = _batch(0, 30_000, 20_000, 0.25)                 # closes at t = 35 us: u -> ~0.505
    _, s1 = _run(first)
    u1 = W0 * 16 / 20 + ai
    assert s1.u == pytest.approx(u1, rel=1e-3)
    # sent at 10..15 us, before that cut, acknowledged after it: the reference
    # is u = 1 and the window in force then, not the cut ones
    early = _batch(10_000, 36_000, 14_000, 0.25)
    _, s2 = _run(first + early)
    assert s2.u == pytest.approx(1 / 1.25 + ai, rel=1e-3)
    # the same batch sent after the cut takes the cut state as reference
    late = _batch(36_000, 50_000, 14_000, 0.25)
    _, s3 = _run(first + late)
    w1 = min(u1 * 200_000, 125_000) / 200_000
    assert s3.u == pytest.approx(max(u1 / 1.25, w1 * 16 / 14) + ai, rel=1e-3)
    assert s3.u < 0.7 < s2.u


def test_decisions_only_when_a_batch_closes():
    dec, _ = _run(_batch(0, 30_000, 20_000, 0.0) + _batch(40_000, 45_100, 20_000, 0.0, n=10))
    assert (dec["set"][1:] != 0).sum() == 1        # init, then one decision for 61 samples
    assert _run(_batch(0, 30_000, 20_000, 0.0), OscarParams(base_rtt=BASE, tau=50_000))[1].N == 51


def test_additive_increase_per_batch_period():
    """ai_per_tau: a slow flow whose batch needs 2 tau to hold min_batch samples
    gains 2 ai, as a fast flow closing one batch per tau does (at most
    max_span ai: wider batches are idle gaps); by default (the authors') ai
    once per batch, whatever its span."""
    cut = W0 * 16 / 20                      # decelerating at 20 us, no slope: u_w
    for per_tau in (True, False):
        p = OscarParams(base_rtt=BASE, ai_per_tau=per_tau)
        for gap, periods in ((2_500, 1), (5_000, 2), (10_000, 3)):
            _, s = _run(_batch(0, 30_000, 20_000, 0.0, n=3, gap=gap), p)
            assert s.N == 0, "the batch closed"
            steps = periods if per_tau else 1
            assert s.u == pytest.approx(cut + steps * p.ai, rel=1e-6), (per_tau, gap)
