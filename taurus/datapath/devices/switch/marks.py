"""Congestion marks on departing packets: ECN (step K or RED-like
Kmin/Kmax/Pmax) and TCD's ternary detection on lossless ports (TCD,
SIGCOMM'21).

TCD, per egress port of a lossless class, at dequeue, with q the bytes still
queued in the class:
  q <= K                                   -> non-congested (no mark)
  q > K and the port was paused by PFC and has been ON for less than
        max(T_on) since the last resume     -> undetermined: UE
  q > K after an undetermined period while the queue keeps shrinking (it
        has not grown more than one frame, DRAIN_SLACK, above its least
        length since)                       -> non-congested (it is draining)
  otherwise                                 -> congested: CE
CE wins over UE; UE never overwrites CE.  UE is a configurable ECN codepoint
(default ECT(1) = 01, senders use ECT(0) = 10).
"""
import numba as nb
import numpy as np

from ...wire import spec as S
from ...wire.codec import fill_ipv4_checksum, get_field, set_field
from ...hot import hot
from .state import (C_ECN, C_K, C_KMAX, C_KMIN, C_PFC, C_PMAX, C_TCD, C_TCD_K,
                           C_TON_MAX, C_UE_CP, ECN_RED, ECN_STEP, PMAX_ONE, S_AFTER_UNDET,
                           S_EVER_PAUSED, S_LAST_RESUME, S_PREVQ, T_ECN, T_UE)

CE = 3
NO_MARK, MARK_UE, MARK_CE = 0, 1, 2
DRAIN_SLACK = 1514      # a frame that arrived between two dequeues does not end a drain


@nb.njit(cache=True, inline="always")
def rand_u16(sw):
    """xorshift64*: 16 random bits (seeded per engine: runs repeat exactly)."""
    x = sw.rng[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    sw.rng[0] = x
    return np.int64(((x * np.uint64(0x2545F4914F6CDD1D)) >> np.uint64(48)) & np.uint64(0xFFFF))


@hot
def ecn_decide(sw, p, q):
    """Plain ECN: CE when the queue behind the packet exceeds K (step), or
    with probability rising from 0 at Kmin to Pmax at Kmax, 1 above (RED)."""
    mode = sw.pcfg[p, C_ECN]
    if mode == ECN_STEP:
        return MARK_CE if q > sw.pcfg[p, C_K] else NO_MARK
    if mode == ECN_RED:
        lo = sw.pcfg[p, C_KMIN]
        hi = sw.pcfg[p, C_KMAX]
        if q <= lo:
            return NO_MARK
        if q > hi:
            return MARK_CE
        prob = sw.pcfg[p, C_PMAX] * (q - lo) // (hi - lo)   # in 1/65536
        return MARK_CE if rand_u16(sw) < prob else NO_MARK
    return NO_MARK


@hot
def tcd_decide(sw, p, q, now):
    if q <= sw.pcfg[p, C_TCD_K]:
        sw.pst[p, S_AFTER_UNDET] = 0
        return NO_MARK
    if sw.pst[p, S_EVER_PAUSED] != 0 and \
            now - sw.pst[p, S_LAST_RESUME] < sw.pcfg[p, C_TON_MAX]:
        sw.pst[p, S_AFTER_UNDET] = 1
        sw.pst[p, S_PREVQ] = q
        return MARK_UE
    if sw.pst[p, S_AFTER_UNDET] != 0:
        if q <= sw.pst[p, S_PREVQ] + DRAIN_SLACK:
            sw.pst[p, S_PREVQ] = min(q, sw.pst[p, S_PREVQ])
            return NO_MARK
        sw.pst[p, S_AFTER_UNDET] = 0
    if sw.pcfg[p, C_ECN] == ECN_RED:
        return ecn_decide(sw, p, q)
    return MARK_CE


@hot
def mark_packet(sw, p, c, buf, ip_off, q, now):
    """Decide and write the mark of a departing IPv4 packet of class c."""
    if sw.pcfg[p, C_TCD] != 0 and ((sw.pcfg[p, C_PFC] >> c) & 1) != 0:
        m = tcd_decide(sw, p, q, now)
    else:
        m = ecn_decide(sw, p, q)
    if m == NO_MARK:
        return
    ecn = get_field(buf, ip_off, S.IPV4_ECN)
    if ecn == 0 or ecn == CE:          # not ECN-capable, or already CE
        return
    if m == MARK_CE:
        set_field(buf, ip_off, S.IPV4_ECN, CE)
        sw.stats[p, T_ECN] += 1
    else:
        ue = sw.pcfg[p, C_UE_CP]
        if ecn == ue:
            return
        set_field(buf, ip_off, S.IPV4_ECN, ue)
        sw.stats[p, T_UE] += 1
    fill_ipv4_checksum(buf, ip_off)
