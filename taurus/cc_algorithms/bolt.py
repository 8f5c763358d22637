"""Bolt (Arslan et al., "Bolt: Sub-RTT Congestion Control for Ultra-Low
Latency", NSDI'23).

A switch whose egress queue holds at least its threshold when a data packet
arrives sends that packet's sender an SRC packet at once (the software
switch: devices/switch/src.py; one per packet, and one per packet along its
path).  The SRC carries the queue q, the port's rate C and, here, the time
since the packet left (rtt_src: Bolt's rttBts, the reflected send time).
Per SRC, with cwnd the window, rtt the last RTT sample and MSS the payload:
    if cwnd <= MSS:   cwnd <- cwnd (1 - max_md)
    else:             share = (cwnd / rtt) / C         (the flow's part of C)
                      q_pkts = (q - target_q) / MSS
                      cwnd <- cwnd - MSS, at most once per rtt_src / (q_pkts share)
so the flows crossing a queue together take one MSS out of it per packet
queued, sooner than an RTT (sub-RTT reaction).  Once per RTT an ACK adds
ai x MSS (ns-3 flags one packet in flight for it); a NACK cuts the window
by max_md, at most once per RTT.  The window lies between min_cwnd and
max_cwnd; below one MSS the flow is paced at cwnd / rtt.

Proactive ramp-up (PRU) and supply matching (SM) are not modelled: in
Bolt they ride on per-packet flags (INCWIN, FIRST, LAST) that senders set,
switches clear as their tokens run out and receivers reflect in ACKs, each
reflected INCWIN adding one MSS; our data packets and ACKs carry no such
flags.

Defaults from the authors' ns-3 code (serhatarslan-hub/bolt_cc_ns3,
src/internet/model/bolt-l4-protocol.cc and scratch/bolt-*-fattree.cc):
ai 1.0 (AiFactor), max_md 0.5 (MaxMd), target_q 0 (TargetQ), min_cwnd 15
bytes (MinCwnd); the first window and the largest are the BDP (the
experiments' BandwidthDelayProduct and maxCwnd), here line rate x base_rtt.
The switches' threshold is their own (src = { threshold }, 10 KB: the
experiments' ccThreshold).
"""
from dataclasses import dataclass

from .algorithm import Algorithm, kernel, param, set_cwnd, set_rate
from .lib import bdp, clamp, due, rate_of, resume
from .params import Params, require


@dataclass
class BoltParams(Params):
    ai: float = param(1.0, "MSS", "additive increase per RTT (ns-3 AiFactor)")
    max_md: float = param(0.5, "", "cut at cwnd <= 1 MSS and on a NACK (ns-3 MaxMd)")
    target_q: float = param(0.0, "bytes", "queue an SRC leaves alone (ns-3 TargetQ)")
    min_cwnd: float = param(15.0, "bytes", "window floor (ns-3 MinCwnd)")
    base_rtt: float = param(10_000.0, "ns", "first and largest window: line rate x base_rtt (BDP)")

    def check(self):
        require(self.ai >= 0, "ai", "must be >= 0")
        require(0 < self.max_md < 1, "max_md", "must be in (0, 1)")
        require(self.target_q >= 0, "target_q", "must be >= 0")
        require(self.min_cwnd > 0, "min_cwnd", "must be > 0")
        require(self.base_rtt > 0, "base_rtt", "must be > 0")


@kernel
def bolt_init(s, p, d):
    s.wmax = min(bdp(p.line_rate, p.base_rtt), p.max_cwnd)
    s.cwnd = resume(d.cwnd, s.wmax)
    publish(s, p, d)


@kernel
def bolt_on_rtt(s, p, ev, d):
    if ev.rtt > 0:
        s.rtt = float(ev.rtt)                  # Bolt keeps the last sample (m_rtt)


@kernel
def bolt_on_ack(s, p, ev, d):
    now = ev.t_last
    if s.rtt > 0 and due(now, s.t_ai, s.rtt):
        s.cwnd += p.ai * p.mss
        s.t_ai = now
        publish(s, p, d)


@kernel
def bolt_on_src(s, p, ev, d):
    now = ev.t_last
    if s.cwnd <= p.mss:
        s.cwnd *= 1 - p.max_md
    else:
        rtt = s.rtt if s.rtt > 0 else p.base_rtt
        rate = rate_of(s.cwnd, rtt)
        share = rate / ev.link_rate if ev.link_rate > 0 else 1.0
        q_pkts = (ev.qlen - p.target_q) / p.mss
        rtt_src = ev.rtt if ev.rtt > 0 else rtt
        if q_pkts * share > 0 and due(now, s.t_dec, rtt_src / (q_pkts * share)):
            s.cwnd -= p.mss
            s.t_dec = now
    publish(s, p, d)


@kernel
def bolt_on_nack(s, p, ev, d):
    now = ev.t_last
    rtt = s.rtt if s.rtt > 0 else p.base_rtt
    if due(now, s.t_dec, rtt):
        s.cwnd *= 1 - p.max_md
        s.t_dec = now
        publish(s, p, d)


@kernel
def publish(s, p, d):
    s.cwnd = clamp(s.cwnd, p.min_cwnd, s.wmax)
    set_cwnd(d, max(s.cwnd, p.mss))
    if s.cwnd < p.mss:                         # under one packet: paced (ns-3 SendDown)
        set_rate(d, rate_of(s.cwnd, s.rtt if s.rtt > 0 else p.base_rtt))
    else:
        set_rate(d, p.line_rate)


class Bolt(Algorithm):
    """Bolt: switch SRC feedback, one MSS off per queued packet, sub-RTT."""
    name = "bolt"
    Params = BoltParams
    state = ("cwnd", "wmax", "rtt", "t_ai", "t_dec")
    binds = ("SRC", "ACK", "RTT", "NACK")
    periods = {"NACK": 0}                      # a loss at once (an SRC, Raw, always is)
    init = bolt_init
    on_src = bolt_on_src
    on_ack = bolt_on_ack
    on_rtt = bolt_on_rtt
    on_nack = bolt_on_nack
