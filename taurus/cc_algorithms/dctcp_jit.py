"""DCTCP compiled for the agent's fast path: the same algorithm, line for
line, as cc_algorithms/dctcp.py (cross-tested against it), with each flow's
state a row of one array (compiled.py explains the contract).

Per drain and flow: ACK records add to the window's acked/marked bytes, an
RTO cuts to 1 MSS, RTT samples feed srtt (with ``pace``); then, once the
window's worth of data is ACKed:
    F = marked / acked;  alpha <- (1 - g)^k alpha + (1 - (1 - g)^k) F   (k windows)
    marks:    cwnd <- max(cwnd (1 - alpha / 2), 1 MSS);  ssthresh <- cwnd
    no marks: slow start below ssthresh, else cwnd += k MSS
"""
import numba as nb
import numpy as np

from taurus.datapath.ccshm import EV_ACK, EV_RTO, EV_RTT, EVENT, FLOW, V0

from .compiled import CWND, RATE, CompiledAlgorithm, result_update
from .dctcp import DctcpParams

ALPHA, CW, SSTHRESH, ACKED, MARKED, SRTT = range(6)              # state of a flow: S[f]
G, MSS, MAX_CWND, INIT_CWND, ALPHA_INIT, SLOW_START, PACE = range(7)    # parameters: P


@nb.njit(cache=True)
def flow_setup(S, P, f, cwnd_now, rate_now):
    s = S[f]
    s[:] = 0.0
    s[ALPHA] = P[ALPHA_INIT]
    s[CW] = P[INIT_CWND]
    s[SSTHRESH] = np.inf if P[SLOW_START] else s[CW]
    if cwnd_now > 0:            # a window already in force (agent restart): go on from it
        s[CW] = s[SSTHRESH] = float(cwnd_now)


@nb.njit(cache=True)
def publish(s, P, val, isset):
    result_update(val, isset, CWND, s[CW])
    if P[PACE] and s[SRTT]:
        result_update(val, isset, RATE, s[CW] * 8e9 / s[SRTT])


@nb.njit(cache=True)
def on_rto(s, P, val, isset):
    s[SSTHRESH] = max(s[CW] / 2, 2 * P[MSS])
    s[CW] = P[MSS]
    s[ACKED] = s[MARKED] = 0.0
    publish(s, P, val, isset)


@nb.njit(cache=True)
def decide(s, P, val, isset):
    if s[ACKED] < s[CW]:
        return                                      # window not over yet
    windows = s[ACKED] // s[CW]
    frac = min(s[MARKED] / s[ACKED], 1.0)
    keep = (1 - P[G]) ** windows
    s[ALPHA] = keep * s[ALPHA] + (1 - keep) * frac
    if s[MARKED]:
        s[CW] = max(s[CW] * (1 - s[ALPHA] / 2), P[MSS])
        s[SSTHRESH] = s[CW]
    elif s[CW] < s[SSTHRESH]:
        s[CW] = min(s[CW] + s[ACKED], s[SSTHRESH])  # doubles per window
    else:
        s[CW] += windows * P[MSS]
    s[CW] = min(s[CW], P[MAX_CWND])                 # no growth past the bound
    s[ACKED] = s[MARKED] = 0.0
    publish(s, P, val, isset)


@nb.njit(cache=True)
def drain(S, P, rec, rows, bounds, val, isset):
    for g in range(len(bounds) - 1):
        a, b = bounds[g], bounds[g + 1]
        f, e = rec[rows[a], FLOW], rec[rows[a], EVENT]
        s = S[f]
        if e == EV_ACK:
            for i in range(a, b):
                s[ACKED] += rec[rows[i], V0]            # bytes
                s[MARKED] += rec[rows[i], V0 + 3]       # ECN-echoed bytes
        elif e == EV_RTO:
            on_rto(s, P, val[f], isset[f])
        elif e == EV_RTT and P[PACE]:
            rtt = 0.0
            for i in range(a, b):
                rtt += rec[rows[i], V0]
            rtt /= b - a
            s[SRTT] = rtt if not s[SRTT] else s[SRTT] + (rtt - s[SRTT]) / 8
        if b == len(rows) or rec[rows[b], FLOW] != f:
            decide(s, P, val[f], isset[f])              # after the flow's last group


class DctcpJit(CompiledAlgorithm):
    name = "dctcp-jit"
    Params = DctcpParams
    binds = ("ACK", "RTO", "RTT")
    periods = {"ACK": "rtt", "RTO": 0}
    flow_setup = staticmethod(flow_setup)
    drain = staticmethod(drain)

    def bindings(self):
        return self.binds if self.params.pace else ("ACK", "RTO")

    def make_state(self, max_flows: int):
        p = self.params
        P = np.array([p.g, self.mss, self.ctx.max_cwnd, p.init_cwnd_pkts * self.mss,
                      p.alpha_init, p.slow_start, p.pace], np.float64)
        return np.zeros((max_flows, 6)), P
