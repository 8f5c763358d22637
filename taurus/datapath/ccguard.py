"""What the engine does with the agent's decisions: read them, and survive a
silent agent (docs/DESIGN.md, "The datapath <-> agent contract").

``cc_watch`` runs once per NIC poll.  Once an agent has shown a heartbeat,
silence past CTL_HB_TIMEOUT_NS puts its NIC in fallback: every flow it owns
sends at most CTL_FALLBACK_RATE (counted once per episode in CTL_FALLBACKS).
A fresh heartbeat ends the episode and the last decisions written to the
context table are in force again -- nothing the agent decided is forgotten.
Native flows (decided inside the engine) are never in fallback.
"""
import numba as nb
import numpy as np

from . import ccshm as C


@nb.njit(cache=True)
def cc_watch(E, k, now):
    """Update NIC slot k's fallback state; returns 1 while in fallback."""
    R = E.rep
    ctl = R.ctls[k]
    hb = ctl[C.CTL_HEARTBEAT_NS]
    silent = 1 if hb > 0 and now - hb > ctl[C.CTL_HB_TIMEOUT_NS] else 0
    if silent and not R.fallback[k]:
        ctl[C.CTL_FALLBACKS] += 1
    R.fallback[k] = silent
    return silent


@nb.njit(cache=True)
def cc_rate(E, flow, default_rate):
    """The pacing rate (bit/s) in force for `flow`: the agent's decision, or
    `default_rate` while it has made none; capped by the fallback rate while
    the owning agent is silent (not a native flow's: its algorithm is the
    engine's).  0 means unpaced."""
    R = E.rep
    r = R.rate[flow]
    if r <= 0:
        r = default_rate
    k = R.owner[flow]        # shared memory: checked before it indexes anything
    if 0 <= k < R.fallback.shape[0] and R.fallback[k] and (R.flags[flow] & C.FL_NATIVE) == 0:
        fb = R.ctls[k, C.CTL_FALLBACK_RATE]
        if r <= 0 or r > fb:
            r = fb
    return r


@nb.njit(cache=True)
def cc_cwnd(E, flow, default_cwnd):
    """The window (bytes) in force for `flow` (0: no window limit)."""
    w = E.rep.cwnd[flow]
    return w if w > 0 else default_cwnd
