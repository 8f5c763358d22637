"""PowerTCP and theta-PowerTCP on synthetic events (plain-Python handlers;
tests/test_cc_replay.py checks that every mode decides the same): the
window at one BDP, the power of a hop from its INT records, the smoothed
update against the window of an RTT ago, and theta-PowerTCP's power from
the RTT gradient."""
import pytest

from taurus.cc_algorithms.algorithm import FlowContext
from taurus.cc_algorithms.powertcp import PowerTcp, PowerTcpParams, ThetaPowerTcp
from taurus.testing.replay import records, replay

LINE = 100e9
B = LINE / 8e9                 # bytes per ns
TAU = 10_000                   # ns
BDP = B * TAU                  # 125 KB
CTX = FlowContext(mss=4096, line_rate=LINE, max_cwnd=float(1 << 30))


def run(evs, cls=PowerTcp, **params):
    """Replay [(event, t_ns, {field: value})] for one flow: (decisions of
    each record, the flow's final state)."""
    dec, S = replay(cls, cls.Params(base_rtt=TAU, **params), records(evs), "python", CTX,
                    flows=1)
    return dec[1:], S[0]


def hop(t, qlen, tx, psn=0):
    """One hop's INT record: queue qlen bytes, tx bytes sent so far, at t."""
    return ("INT", t, {"hop": 0, "nhops": 1, "qlen": qlen, "tx_bytes": tx, "ts": t,
                       "link_rate": int(LINE), "psn": psn})


def test_a_flow_starts_at_one_bdp_paced_at_line_rate():
    dec, s = run([("TX", 1, {"packets": 1})])
    assert s.W == s.w_old == BDP and s.power == 1.0
    assert PowerTcpParams().gamma == 0.9 and PowerTcpParams().expected_flows == 10


def test_power_of_a_standing_queue_cuts_the_window_towards_one_bdp():
    """qlen = 1 BDP, not growing, the hop sending at line rate: power
    (0 + B)(BDP + B tau) / (B^2 tau) = 2; over a whole tau the smoothed power
    is 2, and W = 0.9 (BDP / 2 + BDP / 10) + 0.1 BDP = 0.64 BDP."""
    dt = TAU
    dec, s = run([("TX", 1, {"packets": 10}), hop(100, BDP, 0), hop(100 + dt, BDP, int(B * dt), 5)])
    assert s.power == pytest.approx(2.0)
    assert s.W == pytest.approx(0.64 * BDP)
    assert s.w_old == s.W and s.last_seq == 10          # a new RTT starts at snd_nxt
    assert dec[-1]["cwnd"] == pytest.approx(0.64 * BDP, abs=1)
    assert dec[-1]["rate"] == pytest.approx(0.64 * LINE, rel=1e-6)


def test_an_idle_hop_grows_the_window_by_beta_up_to_one_bdp():
    """No queue, half the line rate sent: power 0.5 smoothed over half a tau
    (0.75); the window rises, never above one BDP."""
    dt = TAU // 2
    dec, s = run([hop(100, 0, 0), hop(100 + dt, 0, int(B * dt / 2))])
    assert s.power == pytest.approx(0.75)
    assert s.W == BDP                                     # clamped at line rate x tau


def test_the_reference_window_moves_once_per_rtt():
    dt = TAU // 10
    evs = [("TX", 1, {"packets": 100}), hop(100, BDP, 0)]
    evs += [hop(100 + k * dt, BDP, int(B * dt * k), psn=k) for k in range(1, 4)]
    dec, s = run(evs)
    assert s.last_seq == 100 and s.w_old > s.W           # updated at the first, not since


def test_theta_powertcp_takes_power_from_the_rtt_gradient():
    """RTT 2 tau and rising 0.5 ns per ns over a whole tau: power
    (0.5 + 1) x 2 = 3; W = 0.9 (BDP / 3 + BDP / 10) + 0.1 BDP."""
    evs = [("TX", 1, {"packets": 5}), ("RTT", 100, {"rtt": 2 * TAU - TAU // 2, "psn": 1}),
           ("RTT", 100 + TAU, {"rtt": 2 * TAU, "psn": 1})]
    dec, s = run(evs, cls=ThetaPowerTcp)
    assert s.power == pytest.approx(3.0)
    assert s.W == pytest.approx(0.9 * (BDP / 3 + BDP / 10) + 0.1 * BDP)
    assert ThetaPowerTcp.bindings(ThetaPowerTcp.Params()) == ("RTT", "TX")
