"""DCTCP compiled into the engine, per ACK (the twin of cc_algorithms/dctcp.py).

Once per window of ACKed data (cwnd bytes):
    F = marked / acked;  alpha <- (1 - g) * alpha + g * F
    marks:    cwnd <- max(cwnd * (1 - alpha / 2), 1 MSS);  ssthresh <- cwnd
    no marks: slow start below ssthresh, else cwnd += 1 MSS
On RTO: ssthresh <- max(cwnd / 2, 2 MSS); cwnd <- 1 MSS.

``native_dctcp(max_flows)`` is what ``Engine(native=...)`` takes.
"""
from collections import namedtuple

import numba as nb
import numpy as np

from ...datapath.ccnative import ACK_SIG, PAR_MSS, RTO_SIG, native_cc

NativeDctcp = namedtuple("NativeDctcp", ["alpha", "acked", "marked", "ssthresh", "cw", "par"])
"""Per flow: alpha, acked/marked bytes of the current window, ssthresh, and
cw, the exact (float) cwnd -- the int64 context column gets it truncated, and
deciding on the truncated value would drift from the agent twin.  Each is a
row of one float64 matrix (``NativeCC.st``).
par float64[4]: mss (PAR_MSS: the NIC sets it), g, max_cwnd, init_cwnd."""
MSS, G, MAX_CWND, INIT_CWND = range(4)
assert MSS == PAR_MSS
ALPHA, ACKED, MARKED, SSTHRESH, CW = range(5)


def make_native_dctcp(max_flows: int, g: float = 1 / 16, mss: int = 4096,
                      max_cwnd: float = 1 << 30, init_cwnd_pkts: int = 10,
                      alpha_init: float = 1.0, slow_start: bool = True) -> NativeDctcp:
    init = float(init_cwnd_pkts * mss)
    st = np.zeros((5, max_flows))
    st[ALPHA] = alpha_init
    st[SSTHRESH] = np.inf if slow_start else init
    return NativeDctcp(*st, par=np.array([mss, g, max_cwnd, init], np.float64))


@nb.njit(cache=True)
def _views(st, par):
    return NativeDctcp(st[ALPHA], st[ACKED], st[MARKED], st[SSTHRESH], st[CW], par)


def native_dctcp(max_flows: int, **params):
    """DCTCP for ``Engine(native=...)``; params as make_native_dctcp's."""
    S = make_native_dctcp(max_flows, **params)
    return native_cc(np.stack([S.alpha, S.acked, S.marked, S.ssthresh, S.cw]), S.par,
                     _on_ack, _on_rto)


@nb.njit(cache=True)
def dctcp_on_ack(S, cwnd, flow, acked_bytes, marked_bytes):
    """One ACK for `flow` covering acked_bytes, marked_bytes of them ECN-echoed;
    updates cwnd[flow] (bytes) at each window's end."""
    S.acked[flow] += acked_bytes
    S.marked[flow] += marked_bytes
    if S.cw[flow] == 0.0:
        S.cw[flow] = float(cwnd[flow]) if cwnd[flow] > 0 else S.par[INIT_CWND]
    c = S.cw[flow]
    if S.acked[flow] < c:
        return
    mss = S.par[MSS]
    f = min(S.marked[flow] / S.acked[flow], 1.0)
    S.alpha[flow] = (1.0 - S.par[G]) * S.alpha[flow] + S.par[G] * f
    if S.marked[flow] > 0:
        c = max(c * (1.0 - S.alpha[flow] / 2.0), mss)
        S.ssthresh[flow] = c
    elif c < S.ssthresh[flow]:
        c = min(c + S.acked[flow], S.ssthresh[flow])
    else:
        c += mss
    c = min(c, S.par[MAX_CWND])
    S.cw[flow] = c
    cwnd[flow] = np.int64(c)
    S.acked[flow] = 0
    S.marked[flow] = 0


@nb.njit(cache=True)
def dctcp_on_rto(S, cwnd, flow):
    mss = S.par[MSS]
    c = S.cw[flow] if S.cw[flow] > 0.0 else float(cwnd[flow])
    S.ssthresh[flow] = max(c / 2.0, 2.0 * mss)
    S.cw[flow] = mss
    cwnd[flow] = np.int64(mss)
    S.acked[flow] = 0
    S.marked[flow] = 0


@nb.njit(ACK_SIG, cache=True)
def _on_ack(st, par, cwnd, flow, acked_bytes, marked_bytes):
    dctcp_on_ack(_views(st, par), cwnd, flow, acked_bytes, marked_bytes)


@nb.njit(RTO_SIG, cache=True)
def _on_rto(st, par, cwnd, flow):
    dctcp_on_rto(_views(st, par), cwnd, flow)
