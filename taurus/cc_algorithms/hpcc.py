"""HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM'19).

The switches stamp each data packet with one INT record per hop (queue
length, cumulative bytes sent, timestamp, line rate B); the receiver reflects
the stack and the sender gets one INT event per hop.  For each hop j, against
the previous record of that hop (the paper's Algorithm 1, MeasureInflight):
    u_j = min(qlen_j, qlen_j') / (B_j T) + txRate_j / B_j
    txRate_j = (tx_bytes_j - tx_bytes_j') / (ts_j - ts_j')
and when the last hop of a stack arrives, with u = max_j u_j and tau the
time between that hop's two records (at most T):
    U <- (1 - tau/T) U + (tau/T) u
then (ComputeWind), against the reference window Wc:
    if U >= eta or incStage >= maxStage:  W = Wc / (U / eta) + W_AI
    else:                                 W = Wc + W_AI
W applies at once (the paper's fast reaction); Wc and incStage take the new
value only once per RTT: when the acknowledged PSN passes lastUpdateSeq,
which then becomes the PSN the flow sends next (snd_nxt: the packets
sent, counted from TX reports).  The flow is paced at R = W / T.
W lies between min_rate x T and W_init = line rate x T (HPCC starts at
line rate).  Binding TX costs one record per data packet in native and
per-event mode (aggregated per period in agent mode).

T is the base RTT: the ``base_rtt`` parameter, or when it is 0 the least RTT the
flow measures (binds RTT; until the first sample the flow sends at line
rate).  INT fields wrap (ts every 2^24 ns, tx_bytes every 2^27 bytes:
docs/PROTOCOLS.md), so differences are taken modulo those.

eta above 1 aims at a standing queue of (eta - 1) x T x B at the worst hop
(the window stays at most W_init): the OSCAR authors' HPCC* (NASA-NJU/OSCAR
fig10 configs, TargetUtil 1.5), HPCC given OSCAR's queue target.

Defaults: eta = 0.95 (the paper; ns-3 RdmaHw TargetUtil 0.95, run.py
U_TARGET 95); maxStage = 5 (the paper; ns-3 RdmaHw MiThresh 5, while the
repository's run.py passes 0); W_AI = 0 means W_init / 2500, i.e. R_AI x T
with ns-3 run.py's RATE_AI of 10 Mbit/s per 25 Gbit/s of line rate;
min_rate 100 Mbit/s (ns-3 RdmaHw MinRate); U starts at 1
and the first record of a hop is only stored (ns-3 rdma-queue-pair.cc and
UpdateRateHp); the queue term takes the smaller of the two records' qlen as
ns-3's UpdateRateHp does.  Source of the numbers: alibaba-edu/
High-Precision-Congestion-Control (simulation/run.py, point-to-point/model/
rdma-hw.cc, rdma-queue-pair.cc).
"""
from dataclasses import dataclass

from .algorithm import Algorithm, kernel, param, set_cwnd, set_rate
from .lib import bdp, bytes_per_ns, clamp, ewma, int_hop_delta, rate_of
from .params import Params, require

MAX_HOPS = 8


@dataclass
class HpccParams(Params):
    eta: float = param(0.95, "", "target utilisation (paper, ns-3 TargetUtil); > 1: a queue")
    maxStage: int = param(5, "", "additive stages before a multiplicative increase (paper)")
    W_AI: float = param(0.0, "bytes", "additive increase per update; 0: W_init / 2500 (ns-3)")
    min_rate: float = param(100e6, "bit/s", "rate floor (ns-3 RdmaHw MinRate)")
    base_rtt: float = param(0.0, "ns", "the paper's T, base RTT; 0: the flow's least RTT")

    def check(self):
        require(0 < self.eta <= 4, "eta", "must be in (0, 4]")
        require(self.maxStage >= 0, "maxStage", "must be >= 0")
        require(self.W_AI >= 0, "W_AI", "must be >= 0")
        require(self.min_rate > 0, "min_rate", "must be > 0")
        require(self.base_rtt >= 0, "base_rtt", "must be >= 0 (0: measured)")


@kernel
def hpcc_init(s, p, d):
    s.U = 1.0
    if p.base_rtt > 0:
        start(s, p, d, p.base_rtt)
    else:
        set_rate(d, p.line_rate)           # line rate until T is known


@kernel
def start(s, p, d, T):
    s.base_rtt = T
    s.Wc = s.W = bdp(p.line_rate, T)
    publish(s, p, d)


@kernel
def hpcc_on_rtt(s, p, ev, d):
    if p.base_rtt > 0 or ev.rtt <= 0:
        return
    if s.base_rtt == 0:
        start(s, p, d, float(ev.rtt))
    elif ev.rtt < s.base_rtt:
        s.base_rtt = float(ev.rtt)


@kernel
def hpcc_on_int(s, p, ev, d):
    h = ev.hop
    if h < 0 or h >= MAX_HOPS:
        return
    if h == 0:                                 # a new stack: MeasureInflight from scratch
        s.u = s.tau = 0.0
    tau, sent, q0 = int_hop_delta(s, ev)
    if tau > 0 and s.base_rtt > 0 and ev.link_rate > 0:
        B = bytes_per_ns(ev.link_rate)
        u = min(ev.qlen, q0) / (B * s.base_rtt) + sent / tau / B
        if u > s.u:
            s.u, s.tau = u, tau
    if h == ev.nhops - 1 and s.tau > 0:
        tau = min(s.tau, s.base_rtt)
        s.U = ewma(s.U, s.u, tau / s.base_rtt)
        update_wc = ev.psn >= s.last_seq       # sent after the last update: an RTT of feedback
        compute_wind(s, p, update_wc)
        if update_wc:
            s.last_seq = s.sent                # lastUpdateSeq = snd_nxt
        publish(s, p, d)
    elif h == ev.nhops - 1 and s.last_seq == 0:
        s.last_seq = max(s.sent, 1)            # the first stack: stored, an RTT before updating


@kernel
def hpcc_on_tx(s, p, ev, d):
    s.sent += ev.packets                       # snd_nxt, as a PSN (retransmissions aside)


@kernel
def compute_wind(s, p, update_wc):
    w_init = bdp(p.line_rate, s.base_rtt)
    w_ai = p.W_AI if p.W_AI > 0 else w_init / 2500
    if s.U >= p.eta or s.stage >= p.maxStage:
        w = s.Wc / max(s.U / p.eta, 1e-9) + w_ai
        stage = 0
    else:
        w = s.Wc + w_ai
        stage = s.stage + 1
    s.W = clamp(w, bdp(p.min_rate, s.base_rtt), w_init)
    if update_wc:
        s.Wc, s.stage = s.W, stage


@kernel
def publish(s, p, d):
    set_cwnd(d, max(s.W, p.mss))
    set_rate(d, rate_of(s.W, s.base_rtt))


class Hpcc(Algorithm):
    """HPCC: INT-driven window towards eta utilisation of the worst hop."""
    name = "hpcc"
    Params = HpccParams
    state = ("U", "W", "Wc", ("stage", int), ("last_seq", int), ("sent", int), "base_rtt", "u",
             "tau", ("prev_ts", MAX_HOPS), ("prev_tx", MAX_HOPS), ("prev_q", MAX_HOPS),
             ("seen", int, MAX_HOPS))
    binds = ("INT", "TX", "RTT")
    init = hpcc_init
    on_int = hpcc_on_int
    on_tx = hpcc_on_tx
    on_rtt = hpcc_on_rtt

    @classmethod
    def bindings(cls, params):
        return cls.binds if params.base_rtt == 0 else ("INT", "TX")
