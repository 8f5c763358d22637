"""OSCAR (Zhang et al., "OSCAR: O(1)-Step Convergence And Readily-deployable
Congestion Control"; the authors' ns-3 code NASA-NJU/OSCAR,
src/dcb/model/rocev2-oscar.{h,cc}).

One ratio u (of the line rate C) drives both the pacing rate and the window:
    rate = u C,   cwnd = min(u (BDP + target_queue), BDP),   BDP = C x base RTT
Per batch of RTT samples (batched least squares, BLS: n, Sx, Sy, Sxx, Sxy over
(send time, RTT), batch period tau) with mean delay d and gradient
g = (n Sxy - Sx Sy) / (n Sxx - Sx^2), clamped >= grad_floor:
    D_target = base + target_queue / C
    u_ref, w_ref = the rate ratio and window ratio (cwnd / (D_target C)) in
                   force when the batch's packets were sent (mean send time;
                   a short history of decisions indexed by time; before the
                   first window, the BDP-capped window of u_ref)
    if d < base + hyper_gap:        u = u + linear_start      (hyper increase)
    else:
        u_r = u_ref / (1 + g)                      (gradient loop: rate)
        u_w = w_ref x D_target / d                 (delay loop: window)
        u = max(u_r, u_w) if d < D_target - accel_margin else min(u_r, u_w)
        u = u + ai                                 (fairness: AIMD around the target;
                                                    ai x periods with ai_per_tau)
    u clamped to [min_rate_ratio, 1]
A batch closes once it spans tau of arrivals (or is an engine aggregate of at
least tau / 2: in agent mode the engine sums RTT_LS over 5 us, the class's
period whatever tau, one record per batch; in native and per-event mode
every sample comes alone and the batch is summed here) and holds >=
min_batch samples; its gradient is discarded (0) when it spans more than
max_span x tau (idle gaps), as the authors do.
The authors add ai once per batch (DoRateUpdate), whatever the batch's
span.  ``ai_per_tau`` (ours, off by default) adds ai x periods instead,
periods = the batch's span in tau clamped to [1, max_span]: a flow too slow
to bring min_batch samples in one tau (fewer packets per tau than on the
authors' 40 Gbit/s testbed) otherwise gains less per unit time than a fast
one, and the MIMD steps, which keep the rate ratios, do not close that gap
(oscar-fairness shows both).
The base RTT is ``base_rtt`` or, when 0, the least batch-mean RTT seen (in
native mode the least sample).  The authors' sockets are given it; a flow
that starts into a queue measures it too high, aims at a higher D_target and
takes bandwidth from the flows already there: give it when it is known.  Until it is known the flow sends at line
rate under the configured initial window.

Defaults, from the authors' code (RoCEv2Oscar attributes and
OscarBatchedEstimator): target_queue 75 KB (TargetQueueLength), tau 5 us
(BlsDuration; the slides: tau about half the base RTT), ai 0.005
(RateAIRatio), linear_start 0.25 (RateLinearStart), min_batch 3
(m_nMinWindowSize), max_span 3 (windows wider than 3 tau dropped),
grad_floor -0.9 (DoRateUpdate's clamp), accel_margin 0.5 us and hyper_gap
1 us (DoRateUpdate, UpdateStateWithRcvACK), start at u = 1 (line rate).
min_rate_ratio 0.001 is ours (the authors' socket floor is not in the
public model files).
"""
from dataclasses import dataclass

from taurus.datapath.ccevents import LS_SCALE

from .algorithm import Algorithm, kernel, param, set_cwnd, set_rate
from .lib import bdp, clamp, resume, time_of
from .params import Params, require

HIST = 32          # decisions remembered for the reference state (>= RTT / tau)


@dataclass
class OscarParams(Params):
    target_queue: float = param(75_000.0, "bytes", "target queue (authors: 75 KB)")
    tau: float = param(5_000.0, "ns", "BLS batch period (authors: 5 us)")
    ai: float = param(0.005, "", "additive increase of u per batch period tau (authors: 0.005)")
    linear_start: float = param(0.25, "", "hyper increase of u near the base RTT (authors: 1/4)")
    min_rate_ratio: float = param(0.001, "", "floor of u (ours)")
    min_batch: int = param(3, "samples", "fewest samples in a batch (authors: 3)")
    max_span: float = param(3.0, "tau", "batches wider than this drop their gradient (authors: 3)")
    grad_floor: float = param(-0.9, "", "lowest gradient used (authors: -0.9)")
    accel_margin: float = param(500.0, "ns", "accelerate below D_target minus this (authors: 0.5us)")
    hyper_gap: float = param(1_000.0, "ns", "hyper increase below base plus this (authors: 1 us)")
    base_rtt: float = param(0.0, "ns", "base RTT; 0: the least RTT measured")
    ai_per_tau: bool = param(False, "", "ai x the batch's span in tau (ours); off: ai per batch")

    def check(self):
        require(self.target_queue >= 0, "target_queue", "must be >= 0")
        require(self.tau > 0, "tau", "must be > 0")
        require(self.ai >= 0, "ai", "must be >= 0")
        require(self.linear_start >= 0, "linear_start", "must be >= 0")
        require(0 < self.min_rate_ratio <= 1, "min_rate_ratio", "must be in (0, 1]")
        require(self.min_batch >= 2, "min_batch", "must be >= 2 (a slope needs two points)")
        require(self.max_span >= 1, "max_span", "must be >= 1")
        require(-1 < self.grad_floor <= 0, "grad_floor", "must be in (-1, 0]")
        require(self.accel_margin >= 0, "accel_margin", "must be >= 0")
        require(self.hyper_gap >= 0, "hyper_gap", "must be >= 0")
        require(self.base_rtt >= 0, "base_rtt", "must be >= 0 (0: measured)")


@kernel
def bls_slope(n, sx, sy, sxx, sxy):
    """The least-squares slope of y over x from the five sums (0 if undetermined)."""
    den = n * sxx - sx * sx
    return (n * sxy - sx * sy) / den if n >= 2 and den > 0 else 0.0


@kernel
def unify(u_w, u_r, accelerate):
    """One ratio from the two loops: the larger when accelerating, else the smaller."""
    return max(u_w, u_r) if accelerate else min(u_w, u_r)


@kernel
def oscar_init(s, p, d):
    s.u = resume(d.rate, 1.0, p.line_rate)
    s.rtt_min = p.base_rtt
    remember(s, -1e300, s.u, -1.0)                    # -1: no window of ours yet
    set_rate(d, s.u * p.line_rate)
    if s.rtt_min > 0:
        publish(s, p, d, 0.0)


@kernel
def oscar_on_rtt_ls(s, p, ev, d):
    if ev.n <= 0:
        return
    n = float(ev.n)
    if p.base_rtt == 0 and (s.rtt_min == 0 or ev.sy / n < s.rtt_min):
        s.rtt_min = ev.sy / n
    if s.N == 0:
        s.X0, s.T0 = float(ev.x0), float(ev.t_first)
    dx = float(ev.x0) - s.X0                           # this record's x origin, in the batch's
    s.SXX += ev.sxx * LS_SCALE + 2 * dx * ev.sx + n * dx * dx
    s.SXY += ev.sxy * LS_SCALE + dx * ev.sy
    s.SX += ev.sx + n * dx
    s.SY += ev.sy
    s.N += n
    span = ev.t_last - s.T0
    if s.N < p.min_batch or not (span >= p.tau or (ev.count > 1 and span >= p.tau / 2)):
        return
    s.g = bls_slope(s.N, s.SX, s.SY, s.SXX, s.SXY) if span <= p.max_span * p.tau else 0.0
    s.delay = s.SY / s.N
    update(s, p, s.X0 + s.SX / s.N, clamp(span / p.tau, 1.0, p.max_span))
    s.N = s.SX = s.SY = s.SXX = s.SXY = 0.0
    publish(s, p, d, float(ev.t_last))


@kernel
def update(s, p, sent_at, periods):
    """One OSCAR step from the closed batch (s.g, s.delay) sent around sent_at,
    spanning ``periods`` batch periods tau."""
    d_target = s.rtt_min + time_of(p.target_queue, p.line_rate)
    if s.delay < s.rtt_min + p.hyper_gap:
        u = s.u + p.linear_start
    else:
        u_ref, w_ref = reference(s, sent_at)
        bdp_bytes = bdp(p.line_rate, s.rtt_min)
        if w_ref < 0:
            w_ref = min(u_ref * (bdp_bytes + p.target_queue), bdp_bytes)
        u_r = u_ref / (1 + max(s.g, p.grad_floor))
        u_w = w_ref / (bdp_bytes + p.target_queue) * d_target / s.delay
        # ai_per_tau: a slow flow whose batch waits several tau for min_batch
        # samples gains as much per unit time as a fast one
        steps = periods if p.ai_per_tau else 1.0
        u = unify(u_w, u_r, s.delay < d_target - p.accel_margin) + p.ai * steps
    s.u = clamp(u, p.min_rate_ratio, 1.0)


@kernel
def remember(s, t, u, w):
    i = s.h_i % HIST
    s.h_t[i], s.h_u[i], s.h_w[i] = t, u, w
    s.h_i = (i + 1) % HIST
    s.h_n = min(s.h_n + 1, HIST)


@kernel
def reference(s, t):
    """(rate ratio, window bytes or -1) in force at time t: the newest decision made
    at or before t (the oldest remembered if all are later)."""
    i = (s.h_i - 1) % HIST
    for _ in range(s.h_n - 1):
        if s.h_t[i] <= t:
            break
        i = (i - 1) % HIST
    return s.h_u[i], s.h_w[i]


@kernel
def publish(s, p, d, now):
    set_rate(d, s.u * p.line_rate)
    if s.rtt_min <= 0:
        remember(s, now, s.u, -1.0)
        return
    bdp_bytes = bdp(p.line_rate, s.rtt_min)
    cwnd = min(s.u * (bdp_bytes + p.target_queue), bdp_bytes)
    set_cwnd(d, max(cwnd, float(p.mss)))
    remember(s, now, s.u, cwnd)


class Oscar(Algorithm):
    """OSCAR: MIMD on delay (window) and BLS delay gradient (rate), unified, O(1)-step."""
    name = "oscar"
    Params = OscarParams
    state = ("u", "rtt_min", "g", "delay", "N", "X0", "T0", "SX", "SY", "SXX", "SXY",
             ("h_i", int), ("h_n", int), ("h_t", HIST), ("h_u", HIST), ("h_w", HIST))
    binds = ("RTT_LS",)
    periods = {"RTT_LS": 5_000}       # the engine sums one batch per tau (default) in agent mode
    init = oscar_init
    on_rtt_ls = oscar_on_rtt_ls
