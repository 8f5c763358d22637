"""DCTCP (Alizadeh et al., SIGCOMM'10; Linux tcp_dctcp.c), agent mode.

Once per window of ACKed data (cwnd bytes):
    F = marked bytes / acked bytes;   alpha <- (1 - g) * alpha + g * F
    if any mark:  cwnd <- cwnd * (1 - alpha / 2)        (at most once per window)
    else:         slow start below ssthresh, else cwnd += 1 MSS
On RTO: cwnd <- 1 MSS.  The agent sees aggregated ACK counts (each ACK
message also sums the ECN-echoed bytes), reported once per RTT -- the
window DCTCP decides on (paper §3.4/§5.2) -- so the window is closed in
``decide()`` after a step's events; a step spanning k windows applies the
alpha update k times with the step's F (same F each).
With ``pace`` the RTT is bound too and rate = cwnd / srtt is published.
"""
from dataclasses import dataclass

from .base import Algorithm
from .params import Params, require


@dataclass
class DctcpParams(Params):
    g: float = 1 / 16              # EWMA gain of alpha
    alpha_init: float = 1.0        # Linux dctcp_alpha_on_init = 1024/1024
    init_cwnd_pkts: int = 10
    slow_start: bool = True
    pace: bool = False             # also bind RTT and publish rate = cwnd / srtt

    def check(self):
        require(0 < self.g <= 1, "g", "must be in (0, 1]")
        require(0 <= self.alpha_init <= 1, "alpha_init", "must be in [0, 1]")
        require(self.init_cwnd_pkts >= 1, "init_cwnd_pkts", "must be >= 1")


class Dctcp(Algorithm):
    name = "dctcp"
    Params = DctcpParams
    binds = ("ACK", "RTO", "RTT")
    periods = {"ACK": "rtt", "RTO": 0}      # sums once per RTT; a timeout at once

    def bindings(self):
        return self.binds if self.params.pace else ("ACK", "RTO")

    def setup(self):
        self.alpha = self.params.alpha_init
        self.cwnd = float(self.params.init_cwnd_pkts * self.mss)
        self.ssthresh = float("inf") if self.params.slow_start else self.cwnd
        if self.ctx.cwnd > 0:       # a window already in force (agent restart): go on from it
            self.cwnd = self.ssthresh = float(self.ctx.cwnd)
        self.acked = self.marked = 0        # bytes in the current window
        self.srtt = 0.0

    def on_ack(self, ev):
        self.acked += ev.total("bytes")
        self.marked += ev.total("ecn_bytes")

    def on_ecn(self, ev):           # ECN records, if fed separately (unbound here)
        self.marked += ev.total("bytes")

    def on_rtt(self, ev):
        rtt = float(ev.col("rtt_ns").mean())
        self.srtt = rtt if not self.srtt else self.srtt + (rtt - self.srtt) / 8

    def on_rto(self, ev):
        self.ssthresh = max(self.cwnd / 2, 2 * self.mss)
        self.cwnd = float(self.mss)
        self.acked = self.marked = 0
        self.publish()

    def decide(self):
        if self.acked < self.cwnd:
            return                                      # window not over yet
        windows = int(self.acked // self.cwnd)
        f = min(self.marked / self.acked, 1.0)
        keep = (1 - self.params.g) ** windows
        self.alpha = keep * self.alpha + (1 - keep) * f
        if self.marked:
            self.cwnd = max(self.cwnd * (1 - self.alpha / 2), float(self.mss))
            self.ssthresh = self.cwnd
        elif self.cwnd < self.ssthresh:
            self.cwnd = min(self.cwnd + self.acked, self.ssthresh)   # doubles per window
        else:
            self.cwnd += windows * self.mss
        self.cwnd = min(self.cwnd, float(self.ctx.max_cwnd))     # no growth past the bound
        self.acked = self.marked = 0
        self.publish()

    def publish(self):
        rate = self.cwnd * 8e9 / self.srtt if self.params.pace and self.srtt else None
        self.result_update(cwnd=self.cwnd, rate=rate)
