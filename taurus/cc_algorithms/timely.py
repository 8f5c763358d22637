"""TIMELY (Mittal et al., SIGCOMM'15), Algorithm 1: rate from the RTT gradient.

Once per RTT (on the first sample of a packet sent after the last update,
as the HPCC ns-3 model updates once per RTT of feedback; with ``segment``
also at most once per that many bytes, the paper's completion events), with
new_rtt that sample's RTT:
    new_rtt_diff = new_rtt - prev_rtt;  prev_rtt = new_rtt
    rtt_diff = (1 - alpha) * rtt_diff + alpha * new_rtt_diff
    normalized_gradient = rtt_diff / max(min_rtt, spacing)
    new_rtt < t_low:           rate += delta
    new_rtt > t_high:          rate *= 1 - beta * (1 - t_high / new_rtt)
    normalized_gradient <= 0:  rate += N * delta   (N = n_hai after n_hai
                                                    such updates in a row, else 1)
    else:                      rate *= 1 - beta * min(normalized_gradient, 1)
spacing is the time between the two samples' sends.  The paper divides by
min_rtt alone because its completion events come about one min RTT apart:
then the gradient is the RTT's growth per unit time, the rate's overshoot
over the bottleneck.  Updates once per RTT come several min RTTs apart, and
min_rtt alone would over-cut by that factor (docs/PROTOCOLS.md has the
figures); dividing by the spacing keeps the paper's meaning (ours; the
paper's formula when samples are min_rtt or less apart).
The gradient is taken at most 1, so that no update cuts by more than beta,
as the t_high rule never does (our choice: the paper leaves it open, the
HPCC ns-3 model floors the factor at 0, i.e. down to its minimum rate).
The rate stays within [min_rate, line rate]; a flow starts at line rate (as
in the HPCC ns-3 model).  The window is left as configured: TIMELY is
rate-based.  RTT is a Raw event: one record per sample in every mode, so
the agent sees every sample too (the once-per-RTT gate reads each sample's
send time).

Defaults: alpha = 0.875, beta = 0.8, t_low = 50 us, t_high = 500 us and
min_rtt = 20 us are the HPCC ns-3 model's (alibaba-edu/High-Precision-
Congestion-Control, RdmaHw TimelyAlpha / TimelyBeta / TimelyTLow /
TimelyTHigh / TimelyMinRtt); delta = 10 Mbit/s and n_hai = 5 are the
paper's (its delta and N); min_rate = 100 Mbit/s is the HPCC ns-3
model's MinRate; segment = 0 (once per RTT, as HPCC ns-3: from a line-rate
start, 64 KB segments collapse the rate to min_rate, whence +delta per
segment takes tens of ms to climb back).
"""
from dataclasses import dataclass

from .algorithm import Algorithm, kernel, param, set_rate
from .lib import clamp, ewma, resume
from .params import Params, require


@dataclass
class TimelyParams(Params):
    alpha: float = param(0.875, "", "EWMA weight of a new RTT difference (HPCC ns-3: 0.875)")
    beta: float = param(0.8, "", "multiplicative decrease factor (HPCC ns-3: 0.8)")
    t_low: float = param(50_000.0, "ns", "below it: additive increase (HPCC ns-3: 50 us)")
    t_high: float = param(500_000.0, "ns", "above it: decrease by the RTT (HPCC ns-3: 500 us)")
    min_rtt: float = param(20_000.0, "ns", "normalises the gradient (HPCC ns-3: 20 us)")
    delta: float = param(10e6, "bit/s", "additive increment (paper: 10 Mbit/s)")
    n_hai: int = param(5, "", "hyper-active increase: N x delta after N negative gradients in a row (paper: 5)")
    min_rate: float = param(100e6, "bit/s", "lowest rate (HPCC ns-3 MinRate: 100 Mbit/s)")
    segment: int = param(0, "B", "bytes between updates: one completion event (paper: 16-64 KB)")

    def check(self):
        require(0 < self.alpha <= 1, "alpha", "must be in (0, 1]")
        require(0 < self.beta <= 1, "beta", "must be in (0, 1]")
        require(0 < self.t_low < self.t_high, "t_low", "must be > 0 and below t_high")
        require(self.min_rtt > 0, "min_rtt", "must be > 0")
        require(self.delta > 0, "delta", "must be > 0")
        require(self.n_hai >= 1, "n_hai", "must be >= 1")
        require(self.min_rate > 0, "min_rate", "must be > 0")


@kernel
def timely_init(s, p, d):
    s.rate = resume(d.rate, p.line_rate)
    s.t_update = -1.0                                  # no sample yet
    set_rate(d, s.rate)


@kernel
def timely_on_rtt(s, p, ev, d):
    rtt = float(ev.rtt)
    if s.t_update < 0:                                 # the first sample: only a reference
        s.prev_rtt, s.t_update, s.t_prev = rtt, float(ev.t_last), float(ev.send_time)
        s.psn_update = ev.psn
        return
    if ev.send_time < s.t_update or (ev.psn - s.psn_update) * p.mss < p.segment:
        return                                         # feedback of an RTT already acted on
    s.psn_update = ev.psn
    s.t_update = float(ev.t_last)
    new_rtt_diff = rtt - s.prev_rtt
    spacing = float(ev.send_time) - s.t_prev           # what new_rtt_diff grew over
    s.prev_rtt, s.t_prev = rtt, float(ev.send_time)
    s.rtt_diff = ewma(s.rtt_diff, new_rtt_diff, p.alpha)
    gradient = s.rtt_diff / max(p.min_rtt, spacing)
    if rtt < p.t_low:
        s.rate += p.delta
    elif rtt > p.t_high:
        s.rate *= 1 - p.beta * (1 - p.t_high / rtt)
        s.neg = 0
    elif gradient <= 0:
        s.neg += 1                                     # hyper-active after N in a row
        s.rate += p.delta * (p.n_hai if s.neg >= p.n_hai else 1)
    else:
        s.rate *= 1 - p.beta * min(gradient, 1.0)
        s.neg = 0
    s.rate = clamp(s.rate, p.min_rate, p.line_rate)
    set_rate(d, s.rate)


class Timely(Algorithm):
    """TIMELY: rate-based control on the RTT gradient, T_low / T_high guards."""
    name = "timely"
    Params = TimelyParams
    state = ("rate", "prev_rtt", "rtt_diff", ("neg", int), "t_update", "t_prev",
             ("psn_update", int))
    binds = ("RTT",)
    periods = {}                       # RTT is Raw: one record per sample in every mode
    init = timely_init
    on_rtt = timely_on_rtt
