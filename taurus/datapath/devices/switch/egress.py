"""Egress scheduling of one switch port, driven by the timing wheel.

Each port has one timer.  When it fires (or when the ingress side queued
something), the port
  1. processes frames of its ingress delay line that are due;
  2. while the link is free: takes the head of the highest-priority class
     that is not paused, applies the egress stages (ECN/TCD marks, CSIG,
     INT), and serializes it: it departs at link_free (or now, if the link
     was idle), the link stays busy for length*8/rate, and the frame reaches
     the far end `delay` later.  On a memory link of its own (no rate or
     delay on the link, no capture) the frame goes onto the link at once,
     due at the far end at that time (memlink.mem_send_at), so the port
     needs no timer for its arrival; otherwise it waits in the in-flight
     FIFO (so does every frame after it while one waits there);
  3. hands every in-flight frame whose arrival time has come to the port,
     in one burst;
  4. re-arms its timer for the earliest of: next delay-line frame, next
     arrival, link free with a queue waiting, end of a pause, renewal of a
     PAUSE it sent (pfc.py).
So departure times come from the wheel, not from loop speed: in virtual time
rates and delays are exact; in wall time they carry the loop's jitter only.
A port whose timer comes late (the process was descheduled) keeps its
schedule, sending the backlog back to back, as long as it is less than the
port's slack late (default 2 ms; stalls: docs/PLATFORM.md); beyond that it
restarts from now and counts `late`.
"""
import numpy as np

from ...mbuf import mbuf_free
from ...ports.common import INF, MEM
from ...ports.dispatch import port_tx_burst
from ...ports.memlink import mem_send_at
from ...wheel import wheel_cancel, wheel_schedule
from ...wire.desc import D_IP_LEN
from ...wire.parse import parse_frame
from ...hot import hot
from .csig import abw_update, csig_update
from .ingress import ingress
from .int_hop import int_append
from .marks import mark_packet
from .pfc import pause_expire, pfc_refresh, pfc_refresh_due, pfc_release, ser_ns
from .queues import fifo_full, fifo_push, mark_dirty
from .queues import q_pop
from .state import (C_CSIG, C_DELAY, C_DEV, C_INT, C_RATE, C_SLACK, C_TIMER, NCLS,
                           R_SHARED_USED, S_DH, S_DT, S_FH, S_FT, S_LINK_FREE, S_TXB, T_DELAY_DROP,
                           T_LATE, T_TX, T_TX_BYTES, T_TX_RETRY)

RETRY_NS = 1_000        # a port that refused frames is retried this much later


@hot
def egress_stages(E, p, c, i, ip, now):
    """Marks and telemetry on a departing frame whose IPv4 header is at
    byte ip (ingress found it there; neither the TTL nor a trim moves it).
    A port that only marks ECN reads the frame's bytes only to mark it;
    CSIG and INT need the rest of its headers, so such a port parses it
    again."""
    sw = E.sw
    buf = E.pool.data[i]
    q = sw.qb[p, c]
    if sw.pcfg[p, C_CSIG] == 0 and sw.pcfg[p, C_INT] == 0:
        mark_packet(sw, p, c, buf, ip, q, now)
        return
    desc = sw.desc
    parse_frame(buf, 0, E.pool.length[i], sw.pcfgp, desc, sw.pcnt)
    mark_packet(sw, p, c, buf, ip, q, now)
    if sw.pcfg[p, C_CSIG] != 0:
        csig_update(sw, p, buf, desc, now)
    if sw.pcfg[p, C_INT] != 0:
        int_append(sw, p, E.pool, i, ip + desc[D_IP_LEN], q, now)


@hot
def _delay_line(E, p, now):
    sw = E.sw
    cap = sw.dl.shape[1]
    n = 0
    while sw.pst[p, S_DH] < sw.pst[p, S_DT]:
        s = sw.pst[p, S_DH] % cap
        if sw.ddue[p, s] > now:
            break
        sw.pst[p, S_DH] += 1
        ingress(E, sw.pcfg[p, C_DEV], p, np.int64(sw.dl[p, s]), now)
        n += 1
    return n


@hot
def _depart(E, p, now):
    sw = E.sw
    rate = sw.pcfg[p, C_RATE]
    delay = sw.pcfg[p, C_DELAY]
    d = sw.pcfg[p, C_DEV]
    direct = E.ports.kind[p] == MEM and E.ports.cap.on[p] == 0
    n = 0
    while sw.pst[p, S_LINK_FREE] <= now and not fifo_full(sw, p):
        c = -1
        for k in range(NCLS):
            if sw.qt[p, k] > sw.qh[p, k] and sw.pausu[p, k] <= now:
                c = k
                break
        if c < 0:
            break
        start = sw.pst[p, S_LINK_FREE]
        if start < now - sw.pcfg[p, C_SLACK]:
            start = now
            sw.stats[p, T_LATE] += 1
        i, ln0, p_in, ip = q_pop(sw, p, c)
        egress_stages(E, p, np.int64(c), i, ip, now)
        E.devs.regs[d, R_SHARED_USED] -= ln0
        pfc_release(E, p_in, c, ln0, now)
        ln = np.int64(E.pool.length[i])
        end = start + ser_ns(rate, ln)
        sw.pst[p, S_LINK_FREE] = end
        if not (direct and sw.pst[p, S_FH] == sw.pst[p, S_FT]
                and mem_send_at(E.ports, E.pool, p, now, i, end + delay)):
            fifo_push(sw, p, i, end + delay, False)
        sw.pst[p, S_TXB] += ln
        sw.stats[p, T_TX] += 1
        sw.stats[p, T_TX_BYTES] += ln
        abw_update(sw, p, now, ln)
        n += 1
    return n


@hot
def _hand_over(E, p, now):
    """Frames that reached the far end by now go to the port in one burst;
    returns (frames handed, all taken)."""
    sw = E.sw
    cap = sw.fl.shape[1]
    h = sw.pst[p, S_FH]
    t = sw.pst[p, S_FT]
    k = 0
    while h + k < t and k < sw.txb.shape[0]:
        s = (h + k) % cap
        if sw.fdue[p, s] > now:
            break
        sw.txb[k] = sw.fl[p, s]
        k += 1
    if k == 0:
        return 0, True
    sent = port_tx_burst(E.ports, E.pool, p, now, sw.txb, k)
    if h + sent == t:            # empty: the ring starts over, in lines still cached
        sw.pst[p, S_FH] = 0
        sw.pst[p, S_FT] = 0
    else:
        sw.pst[p, S_FH] = h + sent
    if sent < k:
        sw.stats[p, T_TX_RETRY] += 1
    return sent, sent == k


@hot
def _arm(E, p, now, retry):
    sw = E.sw
    t = np.int64(INF)
    if sw.pst[p, S_DH] < sw.pst[p, S_DT]:
        t = sw.ddue[p, sw.pst[p, S_DH] % sw.dl.shape[1]]
    if sw.pst[p, S_FH] < sw.pst[p, S_FT]:
        due = sw.fdue[p, sw.pst[p, S_FH] % sw.fl.shape[1]]
        if retry and due < now + RETRY_NS:
            due = now + RETRY_NS
        if due < t:
            t = due
    if not fifo_full(sw, p):
        for c in range(NCLS):
            if sw.qt[p, c] > sw.qh[p, c]:
                cand = sw.pausu[p, c]
                if cand <= now:
                    cand = sw.pst[p, S_LINK_FREE]
                if cand < t:
                    t = cand
    r = pfc_refresh_due(sw, p)
    if r <= now:                 # the renewal found no frame buffer: try again soon
        r = now + RETRY_NS
    if r < t:
        t = r
    tm = sw.pcfg[p, C_TIMER]
    if t < INF:
        wheel_schedule(E.wheel, tm, t)
    else:
        wheel_cancel(E.wheel, tm)


@hot
def port_run(E, p, now):
    """Everything port p has to do at `now`; returns work done."""
    w = _delay_line(E, p, now)
    pause_expire(E.sw, p, now)
    pfc_refresh(E, p, now)
    w += _depart(E, p, now)
    sent, ok = _hand_over(E, p, now)
    _arm(E, p, now, not ok)
    return w + sent


@hot
def delay_in(E, p, i, due):
    """Hold frame i, received on p, until `due` (ingress delay line)."""
    sw = E.sw
    if not fifo_push(sw, p, i, due, True):
        sw.stats[p, T_DELAY_DROP] += 1
        mbuf_free(E.pool, i)
        return
    mark_dirty(sw, p)
