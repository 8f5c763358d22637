"""Swift (Kumar et al., SIGCOMM'20), Algorithm 1 with the paper's scaled target delay.

Windows are in packets (fractions allowed).  Per RTT sample (one per
acknowledged packet; RTT is a Raw event, so one record per sample in every
mode, agent included):
    target = base_target + hops * h_per_hop + clamp(fs_alpha / sqrt(fcwnd) + fs_beta, 0, fs_range)
      with fs_alpha = fs_range / (1/sqrt(fs_min_cwnd) - 1/sqrt(fs_max_cwnd)),
           fs_beta  = -fs_alpha / sqrt(fs_max_cwnd)
    delay < target:  fcwnd += ai / fcwnd   (ai when fcwnd < 1)         (AI)
    else, at most once per RTT:
        fcwnd *= max(1 - beta * (delay - target) / delay, 1 - max_mdf) (MD)
    cwnd = min(fcwnd, ecwnd), clamped to [min_cwnd, max_cwnd]
Fabric delay: the sample's RTT, NIC to NIC (the datapath's RTT holds no host
stack time).  Endpoint delay: the receiving host's delivery delay its ACKs
echo (HOST ``peer_host_delay``, present when the receiver has a host model);
the latest one drives ecwnd by the same AI / MD against ``endpoint_target``
on every RTT sample; both windows start at the initial window.  Until
an endpoint delay arrives (without a host model: never) the fabric
window alone decides.
A NACK is Swift's fast recovery: retransmit count reset, fcwnd *= 1 - max_mdf
at most once per RTT.  A timeout: the count grows; at retx_reset timeouts in
a row fcwnd falls to min_cwnd, else fcwnd *= 1 - max_mdf at most once per
RTT; any RTT sample resets the count.  Below one packet the window is
1 MSS and the flow is paced at cwnd * MSS / srtt (Swift's pacing delay
srtt / cwnd); above it at line rate.

Fast Ramp-Up (``fru = true``; CSIG, "Fast and Safe CC Ramp-Up for
Swift with CSIG min(ABW/C)"): the flow binds CSIG with an ``abw_c`` tag and,
below target, grows per RTT by fcwnd += ai + lam * fcwnd * min(ABW/C), the
latest reflected min(ABW/C) (0 before the first): per RTT sample
(ai + lam * fcwnd * abw_c) / max(fcwnd, 1), so a flow claims a share of the
path's spare capacity in a few RTTs instead of one packet per RTT.  The seed
asks for lam < 1 (the senders' proportional increases together stay within
the spare capacity) and gives no value; lam = 0.5 is our choice.

Defaults: ai = 1 packet, beta = 0.8, max_mdf = 0.5, base_target = 20 us,
h_per_hop = base_target / 6.55, fs_range = 5 * base_target, fs_min_cwnd = 0.1
and fs_max_cwnd = 100 packets, retx_reset = 5 and min_cwnd = 10 bytes are
the htsim Swift model's (csg-htsim sim/swift.cpp, SwiftSrc constructor);
fs_min_cwnd / fs_max_cwnd are also the paper's.  The paper
gives no endpoint target; endpoint_target defaults to base_target (our
choice).  init_cwnd_pkts = 10 as DCTCP's (RFC 6928).
"""
import math
from dataclasses import dataclass

from taurus.datapath.ccevents import HOST_SRC_PEER_DELAY

from .algorithm import Algorithm, kernel, param, set_cwnd, set_rate
from .lib import clamp, due, rate_of, resume, srtt_sample
from .params import Params, require


@dataclass
class SwiftParams(Params):
    ai: float = param(1.0, "packets", "additive increment per RTT (htsim: 1)")
    beta: float = param(0.8, "", "multiplicative decrease constant (htsim: 0.8)")
    max_mdf: float = param(0.5, "", "maximum multiplicative decrease factor (htsim: 0.5)")
    base_target: float = param(20_000.0, "ns", "base target delay (htsim: 20 us)")
    h_per_hop: float = param(20_000.0 / 6.55, "ns", "target added per switch hop (htsim: base/6.55)")
    fs_range: float = param(100_000.0, "ns", "flow-scaling range (htsim: 5 x base_target)")
    fs_min_cwnd: float = param(0.1, "packets", "window where flow scaling reaches fs_range")
    fs_max_cwnd: float = param(100.0, "packets", "window where flow scaling reaches 0")
    endpoint_target: float = param(20_000.0, "ns", "endpoint (receiving host) delay target")
    retx_reset: int = param(5, "", "timeouts in a row that reset the window to min_cwnd")
    min_cwnd: float = param(10.0, "bytes", "smallest window (htsim: 10 bytes)")
    init_cwnd_pkts: float = param(10.0, "packets", "initial window (RFC 6928)")
    fru: bool = param(False, "", "CSIG Fast Ramp-Up: below target also + lam * fcwnd * min(ABW/C)")
    lam: float = param(0.5, "", "FRU's lambda (< 1; the CSIG seed gives none: ours)")

    def check(self):
        require(self.ai > 0, "ai", "must be > 0")
        require(0 < self.beta <= 1, "beta", "must be in (0, 1]")
        require(0 < self.max_mdf < 1, "max_mdf", "must be in (0, 1)")
        require(self.base_target > 0, "base_target", "must be > 0")
        require(self.h_per_hop >= 0, "h_per_hop", "must be >= 0")
        require(self.fs_range >= 0, "fs_range", "must be >= 0")
        require(0 < self.fs_min_cwnd < self.fs_max_cwnd, "fs_min_cwnd",
                "must be > 0 and below fs_max_cwnd")
        require(self.endpoint_target > 0, "endpoint_target", "must be > 0")
        require(self.retx_reset >= 1, "retx_reset", "must be >= 1")
        require(self.min_cwnd > 0, "min_cwnd", "must be > 0")
        require(self.init_cwnd_pkts > 0, "init_cwnd_pkts", "must be > 0")
        require(0 <= self.lam < 1, "lam", "must be in [0, 1)")


@kernel
def target_delay(p, cwnd, hops):
    """Swift's fabric target (ns) for a window of cwnd packets over hops switches."""
    fs_alpha = p.fs_range / (1 / math.sqrt(p.fs_min_cwnd) - 1 / math.sqrt(p.fs_max_cwnd))
    fs_beta = -fs_alpha / math.sqrt(p.fs_max_cwnd)
    fs = clamp(fs_alpha / math.sqrt(cwnd) + fs_beta, 0.0, p.fs_range)
    return p.base_target + max(hops, 0) * p.h_per_hop + fs


@kernel
def aimd(p, cwnd, delay, target, can_decrease, abw_c=0.0):
    if delay < target:                # abw_c > 0 only with FRU: its proportional part
        return cwnd + (p.ai + p.lam * cwnd * abw_c) / max(cwnd, 1.0)
    if can_decrease:
        return cwnd * max(1 - p.beta * (delay - target) / delay, 1 - p.max_mdf)
    return cwnd


@kernel
def swift_init(s, p, d):
    s.fcwnd = resume(d.cwnd, p.init_cwnd_pkts, p.mss)
    s.ecwnd = s.fcwnd
    s.t_last_decrease = -1e300
    publish(s, p, d, 0.0)


@kernel
def swift_on_rtt(s, p, ev, d):
    now = ev.t_last
    s.delay = ev.rtt
    s.srtt = srtt_sample(s.srtt, ev.rtt)
    can_decrease = due(now, s.t_last_decrease, s.srtt)
    s.retx_cnt = 0
    s.target = target_delay(p, s.fcwnd, ev.hops)
    s.fcwnd = aimd(p, s.fcwnd, ev.rtt, s.target, can_decrease, s.abw_c if p.fru else 0.0)
    if s.edelay > 0:
        s.ecwnd = aimd(p, s.ecwnd, s.edelay, p.endpoint_target, can_decrease)
    publish(s, p, d, now)


@kernel
def swift_on_host(s, p, ev, d):
    if ev.source == HOST_SRC_PEER_DELAY:
        s.edelay = ev.value


@kernel
def swift_on_csig(s, p, ev, d):
    s.abw_c = ev.value / 1e6          # ppm of the bottleneck's rate


@kernel
def swift_on_nack(s, p, ev, d):
    s.retx_cnt = 0
    if due(ev.t_last, s.t_last_decrease, s.srtt):
        s.fcwnd *= 1 - p.max_mdf
    publish(s, p, d, ev.t_last)


@kernel
def swift_on_rto(s, p, ev, d):
    s.retx_cnt += max(ev.timeouts, 1)
    if s.retx_cnt >= p.retx_reset:
        s.fcwnd = p.min_cwnd / p.mss
    elif due(ev.t_last, s.t_last_decrease, s.srtt):
        s.fcwnd *= 1 - p.max_mdf
    publish(s, p, d, ev.t_last)


@kernel
def publish(s, p, d, now):
    lo, hi = p.min_cwnd / p.mss, p.max_cwnd / p.mss
    s.fcwnd = clamp(s.fcwnd, lo, hi)
    s.ecwnd = clamp(s.ecwnd, lo, hi)
    cwnd = min(s.fcwnd, s.ecwnd) if s.edelay > 0 else s.fcwnd   # no endpoint signal yet: fabric only
    if cwnd < s.cwnd:
        s.t_last_decrease = now
    s.cwnd = cwnd
    set_cwnd(d, max(cwnd, 1.0) * p.mss)
    if cwnd < 1 and s.srtt > 0:
        set_rate(d, rate_of(cwnd * p.mss, s.srtt))     # less than a packet per RTT: pace
    else:
        set_rate(d, p.line_rate)


class Swift(Algorithm):
    """Swift: delay-based AIMD window against a hop- and flow-scaled target."""
    name = "swift"
    Params = SwiftParams
    state = ("fcwnd", "ecwnd", "cwnd", "srtt", "delay", "target", "edelay",
             "t_last_decrease", ("retx_cnt", int), "abw_c")
    binds = ("RTT", "RTO", "NACK", "HOST")
    periods = {"RTO": 0, "NACK": 0, "CSIG": 0}   # RTT and HOST are Raw: one record per sample
    csig = ("abw_c", "compact")             # with fru: min(ABW/C) along the path
    init = swift_init
    on_rtt = swift_on_rtt
    on_host = swift_on_host
    on_nack = swift_on_nack
    on_rto = swift_on_rto
    on_csig = swift_on_csig

    @classmethod
    def bindings(cls, params):
        return cls.binds + ("CSIG",) if params.fru else cls.binds
