"""DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA
Deployments", SIGCOMM'15): the reaction point (RP) of a rate-based flow.

The receiver is the notification point: binding CNP makes it send a CNP on
CE (or UE) marks, at most one per NIC ``cnp_gap_ns`` (50 us, the CNP
interval).  The sender keeps a current rate R_C, a target rate R_T and
alpha:

    on a CNP (at most one cut per N):
        alpha <- (1 - g) alpha + g
        R_T <- R_C;  R_C <- max(R_C (1 - alpha/2), R_min);  T = BC = 0
    every K without a cut:  alpha <- (1 - g) alpha
    on each expiry of the rate timer T and of the byte counter B (T and BC
    count them since the last cut):
        max(T, BC) <= F             fast recovery (stage 0)
        min(T, BC) <= F < max       additive increase (1):  R_T += R_AI
        min(T, BC) > F              hyper increase (2):     R_T += (min - F) R_HAI
        then R_C <- (R_T + R_C) / 2, R_T at most the line rate
    in hyper increase the next expiry comes after T/2 and B/2 (the
    authors' qbb-net-device.cc, rpr_hyper_time / rpr_hyper_byte)

A CNP less than N after the last cut is not lost: the cut happens at the
first TIMER tick N after the last (HPCC's ns-3 model checks every 4 us).
One TIMER of period ``tick`` drives K, T and that deferred cut by time
(ours); TX reports feed the byte counter.  A flow starts at line rate (the
reference code's) or at the rate configured for it.

TCD ("Congestion Detection in Lossless Networks", §5.2.1): with ``tcd`` a
CNP that notifies only UE marks (ev.ue > 0, ev.ce == 0: the port was
undetermined, paused by PFC) leaves
the rate alone -- no cut, no alpha -- and a cut on CE is R_C (1 -
tcd_factor alpha) with TCD's factor 1.2 instead of 1/2, floored at R_min.

Defaults: the DCQCN authors' public ns-3 code (bobzhuyb/ns3-rdma): its
sample configuration (windows/ns-3-dev/x64/Release/mix/config.txt) gives
g = 1/256 (DCTCP_GAIN), K = 55 us (ALPHA_RESUME_INTERVAL), T = 60 us
(RP_TIMER), F = 5 (FAST_RECOVERY_TIMES), R_AI = 40 Mbit/s, R_HAI = 200
Mbit/s, N = 50 us (CNP_INTERVAL) and R_T clamped to R_C on every cut
(CLAMP_TARGET_RATE 1); its qbb-net-device.cc gives R_min = 100 Mbit/s
(MinRate), alpha = 0.5 for a new flow, the alpha update on each cut and
its decay every K without one, and the halved T and B in hyper increase.
B = 10 MB is the paper's (as used by sc20anonymous/DCQCN-validation with
the authors' code; the sample config's BYTE_COUNTER is 300,000,000
bytes, the byte counter all but off): a
small B lets a fast flow increase more often than a slow one (a 300 KB B
left two flows at 40 Gbit/s at a 0.75 share for 90 ms).  TCD's factor 1.2
is TCD's.  The timer T is the parameter ``T_timer`` (a numpy
record's ``.T`` is its transpose).

Not taken from the authors' code: its AdjustRates divides R_T by 8 on
the first increase after a cut when R_T > 10 R_C; with R_T clamped to R_C
on every cut (their configuration, ours) and the paper's cut, R_T <=
R_C / (1 - alpha/2) <= 2 R_C, so that branch never runs (only TCD's
deeper cut could reach it).
"""
from dataclasses import dataclass

from .algorithm import Algorithm, kernel, param, set_rate
from .lib import due, ewma, resume
from .params import Params, require


@dataclass
class DcqcnParams(Params):
    g: float = param(1 / 256, "", "EWMA gain of alpha (authors' config: 1/256)")
    K: int = param(55_000, "ns", "alpha update period (authors' config: 55 us)")
    T_timer: int = param(60_000, "ns", "the paper's T: rate timer (authors' config: 60 us)")
    B: int = param(10_000_000, "bytes", "rate-increase byte counter (paper: 10 MB)")
    F: int = param(5, "", "fast-recovery rounds (authors' config: 5)")
    N: int = param(50_000, "ns", "at most one rate cut per N (the CNP interval: 50 us)")
    R_AI: float = param(40e6, "bit/s", "additive increase step (authors' config: 40 Mbit/s)")
    R_HAI: float = param(200e6, "bit/s", "hyper increase step (authors' config: 200 Mbit/s)")
    R_min: float = param(100e6, "bit/s", "lowest rate (ns-3 MinRate: 100 Mbit/s)")
    alpha_init: float = param(0.5, "", "alpha of a new flow (authors' code: 0.5)")
    tick: int = param(5_000, "ns", "TIMER period driving K, T and deferred cuts (ours)")
    tcd: bool = param(False, "", "TCD: no cut on UE-only CNPs, cut by tcd_factor alpha on CE")
    tcd_factor: float = param(1.2, "", "with tcd, the cut is R_C (1 - tcd_factor alpha) (TCD: 1.2)")

    def check(self):
        require(0 < self.g <= 1, "g", "must be in (0, 1]")
        require(0 <= self.alpha_init <= 1, "alpha_init", "must be in [0, 1]")
        for k in ("K", "T_timer", "B", "F", "N", "tick"):
            require(getattr(self, k) > 0, k, "must be > 0")
        require(self.R_AI >= 0 and self.R_HAI >= 0, "R_AI", "increase steps must be >= 0")
        require(self.R_min > 0, "R_min", "must be > 0")
        require(self.tcd_factor > 0, "tcd_factor", "must be > 0")


@kernel
def dcqcn_init(s, p, d):
    s.rc = s.rt = resume(d.rate, p.line_rate)
    s.alpha = p.alpha_init
    s.t_cut = -1e18
    s.t_alpha = s.t_inc = -1.0           # the timers start at the first event
    set_rate(d, s.rc)


@kernel
def start_clock(s, now):
    if s.t_alpha < 0:
        s.t_alpha = s.t_inc = now


@kernel
def cut(s, p, now, d):
    s.alpha = ewma(s.alpha, 1.0, p.g)                  # binary feedback: a CNP
    s.t_alpha = now                                   # its timer restarts
    s.rt = s.rc
    f = p.tcd_factor if p.tcd else 0.5
    s.rc = max(s.rc * (1 - f * s.alpha), p.R_min)
    s.tc = s.bc = s.stage = 0
    s.bytes, s.pending = 0.0, False
    s.t_cut = s.t_inc = now                           # the increase timer restarts
    s.cuts += 1
    set_rate(d, s.rc)


@kernel
def increase(s, p, d):
    hi, lo = max(s.tc, s.bc), min(s.tc, s.bc)
    if hi <= p.F:
        s.stage = 0                                   # fast recovery towards R_T
    elif lo <= p.F:
        s.stage = 1
        s.rt += p.R_AI
    else:
        s.stage = 2
        s.rt += (lo - p.F) * p.R_HAI
    s.rt = min(s.rt, p.line_rate)
    s.rc = (s.rt + s.rc) / 2
    set_rate(d, s.rc)


@kernel
def dcqcn_on_cnp(s, p, ev, d):
    now = ev.t_last
    start_clock(s, now)
    if ev.ce == 0 and (p.tcd or ev.ue == 0):
        return                                        # TCD: undetermined, not congested
    if due(now, s.t_cut, p.N):
        cut(s, p, now, d)
    else:
        s.pending = True                              # cut once N has passed


@kernel
def dcqcn_on_timer(s, p, ev, d):
    now = ev.t_last
    start_clock(s, now)
    if due(now, s.t_alpha, p.K):                      # K without a cut: alpha decays
        s.alpha = (1 - p.g) * s.alpha
        s.t_alpha = now
    if s.pending and due(now, s.t_cut, p.N):
        cut(s, p, now, d)
    elif due(now, s.t_inc, p.T_timer / 2 if s.stage == 2 else p.T_timer):
        s.t_inc = now
        s.tc += 1
        increase(s, p, d)


@kernel
def dcqcn_on_tx(s, p, ev, d):
    s.bytes += ev.bytes
    while s.bytes >= (p.B / 2 if s.stage == 2 else p.B):   # hyper: B/2
        s.bytes -= p.B / 2 if s.stage == 2 else p.B
        s.bc += 1
        increase(s, p, d)


class Dcqcn(Algorithm):
    """DCQCN: CNP-driven rate control with fast recovery, additive and hyper increase."""
    name = "dcqcn"
    Params = DcqcnParams
    state = ("rc", "rt", "alpha", ("pending", bool), "t_cut", "t_alpha", "t_inc",
             ("tc", int), ("bc", int), "bytes", ("stage", int), ("cuts", int))
    binds = ("CNP", "TIMER", "TX")
    periods = {"CNP": 0, "TX": "rtt"}       # a CNP at once; sent bytes summed per RTT
    timer = "tick"
    init = dcqcn_init
    on_cnp = dcqcn_on_cnp
    on_timer = dcqcn_on_timer
    on_tx = dcqcn_on_tx
