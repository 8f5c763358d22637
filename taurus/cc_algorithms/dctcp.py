"""DCTCP (Alizadeh et al., SIGCOMM'10; Linux net/ipv4/tcp_dctcp.c).

Once per window of acknowledged data (cwnd bytes), with F the fraction of
its bytes the receiver echoed CE on:
    alpha <- (1 - g) * alpha + g * F
    if F > 0:  cwnd <- cwnd * (1 - alpha / 2);  ssthresh <- cwnd
    else:      cwnd doubles below ssthresh (slow start), else grows 1 MSS
               per whole window of bytes acknowledged
On a retransmission timeout: ssthresh <- max(cwnd / 2, 2 MSS); cwnd <- 1 MSS.
A window closes at the first ACK that completes it, however many bytes
that ACK covers, and the window is cut at most once, when it closes: the
paper's once-per-window update.  Linux differs there: it cuts at the first
ECE of a window (through TCP's CWR) and updates alpha when the window
closes.  In agent mode one ACK record sums an RTT of ACKs (``periods``) and
may cover k >= 1 windows: alpha then moves as k windows of fraction F
would, (1 - g)^k, and the additive increase counts whole windows (k MSS;
Linux's tcp_cong_avoid_ai adds whole windows too).  In native mode each
ACK is one record, so k is 1.  With ``pace`` the flow is
also paced at cwnd / srtt.

Defaults: g = 1/16 and alpha starting at 1 are Linux's (dctcp_shift_g = 4,
dctcp_alpha_on_init = 1024); the initial window of 10 packets is RFC 6928's.
"""
from dataclasses import dataclass

from .algorithm import Algorithm, kernel, param, set_cwnd, set_rate
from .lib import additive_increase, ewma_n, rate_of, resume, slow_start, srtt_sample
from .params import Params, require


@dataclass
class DctcpParams(Params):
    g: float = param(1 / 16, "", "EWMA gain of alpha (Linux: 1/16)")
    alpha_init: float = param(1.0, "", "alpha of a new flow (Linux: 1)")
    init_cwnd_pkts: int = param(10, "packets", "initial window (RFC 6928)")
    slow_start: bool = param(True, "", "double the window per RTT until the first mark")
    pace: bool = param(False, "", "also pace at cwnd / srtt (binds RTT)")

    def check(self):
        require(0 < self.g <= 1, "g", "must be in (0, 1]")
        require(0 <= self.alpha_init <= 1, "alpha_init", "must be in [0, 1]")
        require(self.init_cwnd_pkts >= 1, "init_cwnd_pkts", "must be >= 1")


@kernel
def dctcp_init(s, p, d):
    s.alpha = p.alpha_init
    s.cwnd = resume(d.cwnd, p.init_cwnd_pkts * p.mss)
    s.ssthresh = resume(d.cwnd, 1e300 if p.slow_start else s.cwnd)
    publish(s, p, d)


@kernel
def dctcp_on_ack(s, p, ev, d):
    s.acked += ev.bytes
    s.marked += ev.ecn_bytes
    if dctcp_window(s, p):
        publish(s, p, d)


@kernel
def dctcp_window(s, p):
    """Once cwnd bytes are acknowledged: alpha, then cut or grow; True if
    the window closed (hostcc.py reuses it with its own marks)."""
    if s.acked < s.cwnd:
        return False                                 # the window is not over yet
    f = min(s.marked / s.acked, 1.0)
    s.alpha = ewma_n(s.alpha, f, p.g, s.acked // s.cwnd)   # k windows of fraction f
    if s.marked > 0:
        s.cwnd = max(s.cwnd * (1 - s.alpha / 2), p.mss)
        s.ssthresh = s.cwnd
    elif s.cwnd < s.ssthresh:
        s.cwnd = slow_start(s.cwnd, s.acked, s.ssthresh)
    else:
        s.cwnd = additive_increase(s.cwnd, s.acked, p.mss)
    s.cwnd = min(s.cwnd, p.max_cwnd)
    s.acked = s.marked = 0.0
    return True


@kernel
def dctcp_on_rto(s, p, ev, d):
    dctcp_timeout(s, p)
    publish(s, p, d)


@kernel
def dctcp_timeout(s, p):
    s.ssthresh = max(s.cwnd / 2, 2 * p.mss)
    s.cwnd = p.mss
    s.acked = s.marked = 0.0


@kernel
def dctcp_on_rtt(s, p, ev, d):
    s.srtt = srtt_sample(s.srtt, ev.rtt)


@kernel
def publish(s, p, d):
    set_cwnd(d, s.cwnd)
    if p.pace and s.srtt > 0:
        set_rate(d, rate_of(s.cwnd, s.srtt))


class Dctcp(Algorithm):
    """DCTCP: ECN-fraction window control, once per window (Linux's)."""
    name = "dctcp"
    Params = DctcpParams
    state = ("alpha", "cwnd", "ssthresh", "acked", "marked", "srtt")
    binds = ("ACK", "RTO", "RTT")
    periods = {"ACK": "rtt", "RTO": 0}      # one ACK record per RTT; a timeout at once
    init = dctcp_init
    on_ack = dctcp_on_ack
    on_rto = dctcp_on_rto
    on_rtt = dctcp_on_rtt

    @classmethod
    def bindings(cls, params):
        return cls.binds if params.pace else ("ACK", "RTO")
