"""PowerTCP (Addanki, Michel, Schmid, "PowerTCP: Pushing the Performance
Limits of Datacenter Networks", NSDI'22) and its RTT-only variant
theta-PowerTCP.

Window control on power, the product of the bottleneck's current (the rate
it is offered, queue growth plus what it sends) and voltage (the queue plus
its BDP).  With INT (the paper's Algorithm 1), per hop j against the
previous record of that hop, dt_j the time between them:
    qdot_j = (qlen_j - qlen_j') / dt_j        mu_j = (tx_j - tx_j') / dt_j
    Gamma_j = (qdot_j + mu_j) (qlen_j + B_j tau) / (B_j^2 tau)
and when a stack's last hop arrives, with Gamma the largest Gamma_j and
dt its hop's interval (at most tau), the normalized power is smoothed
    Gamma_s <- (Gamma_s (tau - dt) + Gamma dt) / tau
and the window updated against cwnd_old, the window of an RTT ago:
    W <- gamma (cwnd_old / Gamma_s + beta) + (1 - gamma) W
theta-PowerTCP (``theta``, Algorithm 2) takes the power from the RTT
alone, Gamma = (dRTT/dt + 1) RTT / tau, and updates once per RTT.  W lies
within [min_rate tau, line rate tau]; the flow is paced at W / tau.
cwnd_old advances once per RTT, when the acknowledged PSN passes the PSN
sent at the last advance (as HPCC's reference window: hpcc.py).

tau is the base RTT: ``base_rtt``, or the least RTT the flow measures (until
the first sample it sends at line rate).  Defaults are the authors' (inet-
tub/powertcp-linux tcp_powertcp.c): gamma 0.9; beta, the additive increase,
line rate x tau / expected_flows with expected_flows 10; a flow starts at
one BDP and never slow-starts.  INT fields wrap as in hpcc.py.
"""
from dataclasses import dataclass

from .algorithm import Algorithm, kernel, param, set_cwnd, set_rate
from .hpcc import MAX_HOPS
from .lib import bdp, bytes_per_ns, clamp, int_hop_delta, rate_of
from .params import Params, require


@dataclass
class PowerTcpParams(Params):
    gamma: float = param(0.9, "", "EWMA weight of the window update (authors: 0.9)")
    expected_flows: float = param(10.0, "", "flows expected on the host link: beta = BDP / it")
    min_rate: float = param(100e6, "bit/s", "rate floor")
    base_rtt: float = param(0.0, "ns", "tau, the base RTT; 0: the flow's least RTT")
    theta: bool = param(False, "", "theta-PowerTCP: power from the RTT alone (no INT)")

    def check(self):
        require(0 < self.gamma <= 1, "gamma", "must be in (0, 1]")
        require(self.expected_flows >= 1, "expected_flows", "must be >= 1")
        require(self.min_rate > 0, "min_rate", "must be > 0")
        require(self.base_rtt >= 0, "base_rtt", "must be >= 0 (0: measured)")


@kernel
def powertcp_init(s, p, d):
    s.power = 1.0
    if p.base_rtt > 0:
        start(s, p, d, p.base_rtt)
    else:
        set_rate(d, p.line_rate)               # line rate until tau is known


@kernel
def start(s, p, d, tau):
    s.tau = tau
    s.w_old = s.W = bdp(p.line_rate, tau)
    publish(s, p, d)


@kernel
def powertcp_on_rtt(s, p, ev, d):
    if ev.rtt <= 0:
        return
    if s.tau == 0:
        start(s, p, d, float(p.base_rtt if p.base_rtt > 0 else ev.rtt))
    elif p.base_rtt == 0 and ev.rtt < s.tau:
        s.tau = float(ev.rtt)
    if p.theta:
        dt = ev.t_last - s.t_prev
        if s.t_prev > 0 and dt > 0:
            grad = (ev.rtt - s.prev_rtt) / dt
            smooth(s, (grad + 1) * ev.rtt / s.tau, dt)
            if ev.psn >= s.last_seq:          # once per RTT
                update(s, p, d, True)
        s.prev_rtt, s.t_prev = float(ev.rtt), float(ev.t_last)


@kernel
def powertcp_on_int(s, p, ev, d):
    h = ev.hop
    if h < 0 or h >= MAX_HOPS:
        return
    if h == 0:                                 # a new stack
        s.g, s.dt = 0.0, 0.0
    dt, tx, q0 = int_hop_delta(s, ev)
    if dt > 0 and s.tau > 0 and ev.link_rate > 0:
        B = bytes_per_ns(ev.link_rate)
        current = (ev.qlen - q0) / dt + tx / dt
        g = current * (ev.qlen + B * s.tau) / (B * B * s.tau)
        if g > s.g:
            s.g, s.dt = g, dt
    if h == ev.nhops - 1 and s.dt > 0:
        smooth(s, s.g, s.dt)
        update(s, p, d, ev.psn >= s.last_seq)


@kernel
def powertcp_on_tx(s, p, ev, d):
    s.sent += ev.packets                       # snd_nxt, as a PSN


@kernel
def smooth(s, g, dt):
    dt = min(dt, s.tau)
    s.power = (s.power * (s.tau - dt) + g * dt) / s.tau


@kernel
def update(s, p, d, new_rtt):
    """The window update; with new_rtt, cwnd_old takes the new window and
    the next RTT starts at the PSN sent now."""
    beta = bdp(p.line_rate, s.tau) / p.expected_flows
    w = p.gamma * (s.w_old / max(s.power, 1e-9) + beta) + (1 - p.gamma) * s.W
    s.W = clamp(w, bdp(p.min_rate, s.tau), bdp(p.line_rate, s.tau))
    if new_rtt:
        s.w_old, s.last_seq = s.W, max(s.sent, 1)
    publish(s, p, d)


@kernel
def publish(s, p, d):
    set_cwnd(d, max(s.W, p.mss))
    set_rate(d, rate_of(s.W, s.tau))


class PowerTcp(Algorithm):
    """PowerTCP: window control on the bottleneck's power, from INT."""
    name = "powertcp"
    Params = PowerTcpParams
    state = ("power", "W", "w_old", "tau", "g", "dt", "prev_rtt", "t_prev", ("last_seq", int),
             ("sent", int), ("prev_ts", MAX_HOPS), ("prev_tx", MAX_HOPS), ("prev_q", MAX_HOPS),
             ("seen", int, MAX_HOPS))
    binds = ("INT", "TX", "RTT")
    init = powertcp_init
    on_int = powertcp_on_int
    on_tx = powertcp_on_tx
    on_rtt = powertcp_on_rtt

    @classmethod
    def bindings(cls, params):
        return ("RTT", "TX") if params.theta else cls.binds


@dataclass
class ThetaPowerTcpParams(PowerTcpParams):
    theta: bool = param(True, "", "theta-PowerTCP: power from the RTT alone (no INT)")


class ThetaPowerTcp(PowerTcp):
    """theta-PowerTCP: PowerTCP on the RTT gradient, without switch support."""
    name = "theta-powertcp"
    Params = ThetaPowerTcpParams
