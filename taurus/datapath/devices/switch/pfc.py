"""PFC (802.1Qbb) for lossless classes.

Ingress accounting: bytes that entered by port i and still sit in the switch
are counted per class; above X_off the switch sends PAUSE (quanta 0xFFFF) out
of i, and once they fall to X_on it sends RESUME (quanta 0).  PFC frames go
out at the next frame boundary of the link, ahead of any queue.  A PAUSE
only lasts 0xFFFF quanta (3.4 ms at 10 Gbit/s), so while the class stays
above X_on the port re-sends it every half pause time (its egress timer
wakes for that): congestion that outlives one pause stays lossless.

Honouring: a PAUSE received on a port stops that port's egress queues of the
paused classes until the pause time (quanta x 512 bit times at the port's
rate) runs out or a RESUME arrives.  The switch keeps the port's paused time
and the time of its last resume: TCD's ON/OFF history.
"""
import numba as nb
import numpy as np

from ...mbuf import mbuf_alloc, mbuf_free
from ...ports.common import INF
from ...wire import spec as S
from ...wire.codec import get_field, set_field
from ...hot import hot
from .queues import fifo_push, mark_dirty
from .state import (C_DELAY, C_MAC, C_PFC, C_RATE, C_XOFF, C_XON, NCLS, S_EVER_PAUSED,
                           S_LAST_RESUME, S_LINK_FREE, S_PAUSE_START, S_UP_PAUSED, S_XOFF_T, T_PFC_RX,
                           T_PAUSED_NS, T_XOFF, T_XON)

PFC_FRAME_LEN = 60
QUANTA_MAX = 0xFFFF
_Q = (S.PFC_QUANTA0, S.PFC_QUANTA1, S.PFC_QUANTA2, S.PFC_QUANTA3,
      S.PFC_QUANTA4, S.PFC_QUANTA5, S.PFC_QUANTA6, S.PFC_QUANTA7)


@hot
def ser_ns(rate, ln):
    if rate <= 0:
        return np.int64(0)
    return (np.int64(ln) * 8 * 1_000_000_000 + rate - 1) // rate


@hot
def pfc_send(E, p, c, quanta, now):
    """Queue a PFC frame for class c on port p's link; False if no room."""
    sw = E.sw
    i = mbuf_alloc(E.pool)
    if i < 0:
        return False
    buf = E.pool.data[i]
    for k in range(PFC_FRAME_LEN):
        buf[k] = 0
    set_field(buf, 0, S.ETH_DST, S.PFC_DMAC)
    set_field(buf, 0, S.ETH_SRC, sw.pcfg[p, C_MAC])
    set_field(buf, 0, S.ETH_TYPE, S.ETH_P_MAC_CONTROL)
    set_field(buf, S.ETH_SIZE, S.PFC_OPCODE, S.PFC_PAUSE_OPCODE)
    set_field(buf, S.ETH_SIZE, S.PFC_CLASS_ENABLE, 1 << c)
    set_field(buf, S.ETH_SIZE, _Q[c], quanta)
    E.pool.length[i] = PFC_FRAME_LEN
    start = sw.pst[p, S_LINK_FREE]
    if start < now:
        start = now
    end = start + ser_ns(sw.pcfg[p, C_RATE], PFC_FRAME_LEN)
    if not fifo_push(sw, p, i, end + sw.pcfg[p, C_DELAY], False):
        mbuf_free(E.pool, i)
        return False
    sw.pst[p, S_LINK_FREE] = end
    mark_dirty(sw, p)
    return True


@hot
def pfc_hold(E, p, c, ln, now):
    """A frame of class c that entered by p is now held by the switch."""
    sw = E.sw
    if ((sw.pcfg[p, C_PFC] >> c) & 1) == 0:
        return
    sw.ing[p, c] += ln
    bit = np.int64(1) << c
    if sw.ing[p, c] > sw.pcfg[p, C_XOFF] and (sw.pst[p, S_UP_PAUSED] & bit) == 0:
        if pfc_send(E, p, c, QUANTA_MAX, now):
            sw.pst[p, S_UP_PAUSED] |= bit
            sw.pst[p, S_XOFF_T + c] = now
            sw.stats[p, T_XOFF] += 1


@hot
def pause_ns(sw, p):
    """How long a full PAUSE (QUANTA_MAX) holds the sender on p's link."""
    rate = sw.pcfg[p, C_RATE]
    if rate <= 0:
        rate = 1_000_000_000
    return np.int64(QUANTA_MAX) * S.PFC_QUANTUM_BIT_TIMES * 1_000_000_000 // rate


@hot
def pfc_refresh_due(sw, p):
    """When the PAUSE we hold on p's link next needs renewing (INF: none)."""
    t = np.int64(INF)
    for c in range(NCLS):
        if (sw.pst[p, S_UP_PAUSED] >> c) & 1:
            due = sw.pst[p, S_XOFF_T + c] + pause_ns(sw, p) // 2
            if due < t:
                t = due
    return t


@hot
def pfc_refresh(E, p, now):
    """Re-send the PAUSEs on p that are half-way to expiring."""
    sw = E.sw
    if sw.pst[p, S_UP_PAUSED] == 0:
        return
    half = pause_ns(sw, p) // 2
    for c in range(NCLS):
        if (sw.pst[p, S_UP_PAUSED] >> c) & 1 and now >= sw.pst[p, S_XOFF_T + c] + half:
            if pfc_send(E, p, c, QUANTA_MAX, now):
                sw.pst[p, S_XOFF_T + c] = now
                sw.stats[p, T_XOFF] += 1


@hot
def pfc_release(E, p, c, ln, now):
    """A frame of class c that entered by p has left the switch."""
    sw = E.sw
    if ((sw.pcfg[p, C_PFC] >> c) & 1) == 0:
        return
    sw.ing[p, c] -= ln
    bit = np.int64(1) << c
    if (sw.pst[p, S_UP_PAUSED] & bit) != 0 and sw.ing[p, c] <= sw.pcfg[p, C_XON]:
        if pfc_send(E, p, c, 0, now):
            sw.pst[p, S_UP_PAUSED] &= ~bit
            sw.stats[p, T_XON] += 1


@nb.njit(cache=True, inline="always")
def paused_until(sw, p):
    t = np.int64(0)
    for c in range(NCLS):
        if sw.pausu[p, c] > t:
            t = sw.pausu[p, c]
    return t


@hot
def pause_expire(sw, p, now):
    """Close the paused interval of p once no class is paused any more."""
    if sw.pst[p, S_PAUSE_START] < 0:
        return
    end = paused_until(sw, p)
    if end <= now:
        sw.stats[p, T_PAUSED_NS] += end - sw.pst[p, S_PAUSE_START]
        sw.pst[p, S_PAUSE_START] = -1
        sw.pst[p, S_LAST_RESUME] = end
        if sw.pst[p, S_LINK_FREE] < end:
            sw.pst[p, S_LINK_FREE] = end     # nothing left while paused


@hot
def pfc_receive(E, p, buf, ln, now):
    """Honour a PFC frame received on p."""
    sw = E.sw
    sw.stats[p, T_PFC_RX] += 1
    if ln < S.ETH_SIZE + S.PFC_SIZE or get_field(buf, S.ETH_SIZE, S.PFC_OPCODE) != S.PFC_PAUSE_OPCODE:
        return
    cev = get_field(buf, S.ETH_SIZE, S.PFC_CLASS_ENABLE)
    rate = sw.pcfg[p, C_RATE]
    if rate <= 0:
        rate = 1_000_000_000
    pause_expire(sw, p, now)
    for c in range(NCLS):
        if ((cev >> c) & 1) == 0:
            continue
        quanta = get_field(buf, S.ETH_SIZE, _Q[c])
        if quanta == 0:
            sw.pausu[p, c] = now
        else:
            sw.pausu[p, c] = now + quanta * S.PFC_QUANTUM_BIT_TIMES * 1_000_000_000 // rate
    if paused_until(sw, p) > now:
        if sw.pst[p, S_PAUSE_START] < 0:
            sw.pst[p, S_PAUSE_START] = now
            sw.pst[p, S_EVER_PAUSED] = 1
    else:
        pause_expire(sw, p, now)
    mark_dirty(sw, p)
