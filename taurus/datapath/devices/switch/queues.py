"""Egress queues (one ring of frame indices per port and class), the
in-flight FIFO (frames serialized onto the link, waiting for their arrival
time at the far end) and the ingress delay line (real ports: the delay of a
host's link applied on the way in)."""
import numba as nb
import numpy as np

from .state import NCLS, S_DH, S_DT, S_FH, S_FT


@nb.njit(cache=True, inline="always")
def q_bytes(sw, p):
    t = np.int64(0)
    for c in range(NCLS):
        t += sw.qb[p, c]
    return t


IP_SHIFT = 24       # qing: ingress port in the low bits, the IP header's offset above


@nb.njit(cache=True, inline="always")
def q_push(sw, p, c, i, ln, ing, ip):
    """Frame i (ln bytes, entered by port ing, its IPv4 header at byte ip)
    onto class c of p; False when the ring is full."""
    cap = sw.q.shape[2]
    t = sw.qt[p, c]
    if t - sw.qh[p, c] >= cap:
        return False
    s = t % cap
    sw.q[p, c, s] = i
    sw.qln[p, c, s] = ln
    sw.qing[p, c, s] = ing | (ip << IP_SHIFT)
    sw.qt[p, c] = t + 1
    sw.qb[p, c] += ln
    return True


@nb.njit(cache=True, inline="always")
def q_pop(sw, p, c):
    """(frame, bytes at enqueue, ingress port, IP header offset) of the head."""
    cap = sw.q.shape[2]
    h = sw.qh[p, c]
    s = h % cap
    if h + 1 == sw.qt[p, c]:        # empty: the ring starts over, in lines still cached
        sw.qh[p, c] = 0
        sw.qt[p, c] = 0
    else:
        sw.qh[p, c] = h + 1
    ln = np.int64(sw.qln[p, c, s])
    sw.qb[p, c] -= ln
    ing = np.int64(sw.qing[p, c, s])
    return np.int64(sw.q[p, c, s]), ln, ing & ((1 << IP_SHIFT) - 1), ing >> IP_SHIFT


@nb.njit(cache=True, inline="always")
def fifo_push(sw, p, i, due, delay_line):
    """Append (frame, due) to the in-flight FIFO or the delay line of p;
    False when full.  Due times along one FIFO never decrease."""
    hi, ti = (S_DH, S_DT) if delay_line else (S_FH, S_FT)
    cap = sw.fl.shape[1]
    t = sw.pst[p, ti]
    if t - sw.pst[p, hi] >= cap:
        return False
    s = t % cap
    if delay_line:
        sw.dl[p, s] = i
        sw.ddue[p, s] = due
    else:
        sw.fl[p, s] = i
        sw.fdue[p, s] = due
    sw.pst[p, ti] = t + 1
    return True


@nb.njit(cache=True, inline="always")
def fifo_full(sw, p):
    return sw.pst[p, S_FT] - sw.pst[p, S_FH] >= sw.fl.shape[1]


@nb.njit(cache=True, inline="always")
def mark_dirty(sw, p):
    """Port p has something new for switch_flush to run (dirty's last
    word counts the ports marked, so a flush with none walks nothing)."""
    if sw.dirty[p] == 0:
        sw.dirty[p] = 1
        sw.dirty[sw.dirty.shape[0] - 1] += 1
