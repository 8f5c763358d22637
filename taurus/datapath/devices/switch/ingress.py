"""Ingress pipeline of the switch: parse once, honour PFC, route (ECMP),
decrement the TTL (an IP router: receivers count hops from it), classify by
DSCP, answer with Bolt's SRC (src.py), trim, then enqueue at the egress
port (drop-tail in a shared buffer; PFC ingress accounting)."""
import numba as nb
import numpy as np

from ...mbuf import mbuf_free
from ...wire import spec as S
from ...wire.codec import get_field, set_field
from ...hot import hot
from ...wire.desc import (D_CSIG_FMT, D_IP_DSCP, D_IP_DST, D_IP_OFF, D_IP_TTL, D_PDS_TYPE,
                         P_BAD_FRAME_BOUNDS,
                         P_OK, P_TRUNCATED_CSIG, P_TRUNCATED_ETH)
from ...wire.parse import parse_frame
from .pfc import pfc_hold, pfc_receive
from .queues import mark_dirty, q_bytes, q_push
from .route import ecmp_pick, flow_hash, route_lookup
from .src import SRC_IP, src_due, src_make
from .state import (C_CTL_HIGH, C_QLIM, C_TRIM, HIGH, R_DEFAULT_GRP, R_SEED,
                           R_SHARED_LIMIT, R_SHARED_USED, S_LINK_FREE, T_DROP,
                           T_DROP_BYTES, T_ENQ, T_ENQ_BYTES, T_NONIP, T_NOROUTE, T_PARSE_ERR,
                           T_RX, T_RX_BYTES, T_TTL_DROP)
from .trim import is_data, trim


@nb.njit(cache=True, inline="always")
def _is_control(t):
    return t == S.T_ACK or t == S.T_ACK_CC or t == S.T_ACK_CCX or t == S.T_NACK \
        or t == S.T_NACK_CCX or t == S.T_CONTROL


@nb.njit(cache=True, inline="always")
def ttl_decrement(buf, ip):
    """TTL - 1, and the header checksum updated for it (RFC 1624: the
    16-bit word TTL|proto fell by 0x100)."""
    set_field(buf, ip, S.IPV4_TTL, get_field(buf, ip, S.IPV4_TTL) - 1)
    c = (~get_field(buf, ip, S.IPV4_CHKSUM)) & 0xFFFF
    c += 0xFEFF                          # + ~0x0100 (one's complement)
    c = (c & 0xFFFF) + (c >> 16)
    set_field(buf, ip, S.IPV4_CHKSUM, (~c) & 0xFFFF)


@hot
def enqueue(E, d, e, c, i, p_in, ip, now):
    """Queue frame i (class c, entered by p_in, its IPv4 header at byte ip)
    at egress e, or drop it."""
    sw = E.sw
    regs = E.devs.regs[d]
    ln = np.int64(E.pool.length[i])
    if sw.qb[e, c] + ln > sw.pcfg[e, C_QLIM] or \
            regs[R_SHARED_USED] + ln > regs[R_SHARED_LIMIT]:
        sw.stats[e, T_DROP] += 1
        sw.stats[e, T_DROP_BYTES] += ln
        mbuf_free(E.pool, i)
        return
    if q_bytes(sw, e) == 0 and sw.pst[e, S_LINK_FREE] < now:
        sw.pst[e, S_LINK_FREE] = now     # an idle link starts the frame on arrival
    if not q_push(sw, e, c, i, ln, p_in, ip):
        sw.stats[e, T_DROP] += 1
        sw.stats[e, T_DROP_BYTES] += ln
        mbuf_free(E.pool, i)
        return
    regs[R_SHARED_USED] += ln
    sw.stats[e, T_ENQ] += 1
    sw.stats[e, T_ENQ_BYTES] += ln
    pfc_hold(E, p_in, c, ln, now)
    mark_dirty(sw, e)


@hot
def ingress(E, d, p, i, now):
    """Process frame i received on port p of switch d (the frame is consumed)."""
    sw = E.sw
    pool = E.pool
    buf = pool.data[i]
    ln = np.int64(pool.length[i])
    sw.stats[p, T_RX] += 1
    sw.stats[p, T_RX_BYTES] += ln
    desc = sw.desc
    st = parse_frame(buf, 0, ln, sw.pcfgp, desc, sw.pcnt)
    if st == P_BAD_FRAME_BOUNDS or st == P_TRUNCATED_ETH or st == P_TRUNCATED_CSIG:
        sw.stats[p, T_PARSE_ERR] += 1
        mbuf_free(pool, i)
        return
    if desc[D_CSIG_FMT] == 0 and get_field(buf, 0, S.ETH_TYPE) == S.ETH_P_MAC_CONTROL:
        pfc_receive(E, p, buf, ln, now)
        mbuf_free(pool, i)
        return
    if desc[D_IP_OFF] < 0:
        sw.stats[p, T_NONIP] += 1     # ARP and the like: hosts use static ARP
        mbuf_free(pool, i)
        return
    regs = E.devs.regs[d]
    g = route_lookup(sw, d, desc[D_IP_DST])
    if g < 0:
        g = regs[R_DEFAULT_GRP]
    if g < 0:
        sw.stats[p, T_NOROUTE] += 1
        mbuf_free(pool, i)
        return
    if desc[D_IP_TTL] <= 1:
        sw.stats[p, T_TTL_DROP] += 1
        mbuf_free(pool, i)
        return
    ttl_decrement(buf, desc[D_IP_OFF])
    e = ecmp_pick(sw, g, flow_hash(buf, desc, regs[R_SEED]))
    c = np.int64(sw.dscp[e, desc[D_IP_DSCP]])
    if sw.pcfg[e, C_CTL_HIGH] != 0 and st == P_OK and _is_control(desc[D_PDS_TYPE]):
        c = HIGH
    k = src_make(E, e, i, desc) if src_due(sw, e, desc, st) else np.int64(-1)
    th = sw.pcfg[e, C_TRIM]
    if c != HIGH and th > 0 and sw.qb[e, c] + ln > th and is_data(desc, st):
        trim(sw, e, pool, i, desc)
        c = HIGH
    enqueue(E, d, e, c, i, p, desc[D_IP_OFF], now)
    if k >= 0:
        src_send(E, d, p, k, now)


@hot
def src_send(E, d, p, k, now):
    """Route the SRC frame k (src.py) built for a packet that entered by p
    back towards its sender, in the high class."""
    sw = E.sw
    desc = sw.desc
    parse_frame(E.pool.data[k], 0, np.int64(E.pool.length[k]), sw.pcfgp, desc, sw.pcnt)
    regs = E.devs.regs[d]
    g = route_lookup(sw, d, desc[D_IP_DST])
    if g < 0:
        g = regs[R_DEFAULT_GRP]
    if g < 0:
        sw.stats[p, T_NOROUTE] += 1
        mbuf_free(E.pool, k)
        return
    e = ecmp_pick(sw, g, flow_hash(E.pool.data[k], desc, regs[R_SEED]))
    enqueue(E, d, e, np.int64(HIGH), k, p, np.int64(SRC_IP), now)
