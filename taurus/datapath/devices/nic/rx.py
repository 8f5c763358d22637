"""Receiver side of the host NIC: PSN tracking per receive PDC, payload
placement, cumulative ACK + SACK bitmap, ACK coalescing, NACK on a gap,
ECN echo (M flag for CE, UE flag for TCD's UE), per-packet timestamp echo
(RTT), CSIG reflection, credit, CNPs (the notification point of a sender
that asks: spec.F_REQ_NP, at most one per NR_CNP_GAP per sender), and
last-hop trims (NACK TRIMMED_LASTHOP).

Coalescing: one ACK per NR_ACK_EVERY data packets or NR_ACK_DELAY ns after
the first unacknowledged one (a wheel timer per PDC), and at once on CE, on
an out-of-order or duplicate packet, on CE or UE, or when the sender sets AR.

With a host model (host.py) a packet the host buffer cannot take is
dropped (counted) before placement, and every ACK_CC (NSCC) / ACK_CCX
echoes the host's last sampled delivery delay in service_time.

ACK format (ours, docs/PROTOCOLS.md): ACK_CC (NSCC state: rcvd_bytes,
ooo_count) by default; ACK_CC with cc_type CREDIT for a PDC opened by
RUD_CC_REQ; ACK_CCX (ccx_type CSIG) when a CSIG tag arrived since the last
ACK (a credit PDC keeps ACK_CC: credit wins).  cack_psn = the last PSN of the
in-order prefix; the SACK base is the first missing PSN, or later if the
triggering packet lies beyond 64 PSNs.  Every ACK echoes, in a Taurus probe
field, the send timestamp of the last data packet that arrived and its
switch hops (64 - its TTL; ours).  INT (ours): when the last data packet
since the previous ACK asked for INT, the ACK carries that packet's hop
stack as the same trailer after its IP datagram, with max_hop = nhop so
that switches on the way back add nothing.
"""
from ...hot import hot, hot_stage  # compiled without reference counting (the hot path)
import numpy as np

from ... import ccevents as V
from ...wheel import wheel_alloc, wheel_armed, wheel_cancel, wheel_schedule
from ...lowlevel import copy_bytes
from ...wire import spec as S
from ...wire.codec import get_field, set_field, write_prologue
from ...wire.desc import (D_CSIG_D, D_CSIG_FMT, D_CSIG_LM, D_CSIG_S, D_CSIG_T, D_DPDCID,
                         D_IP_DSCP, D_IP_ECN, D_IP_LEN, D_IP_OFF, D_IP_SRC, D_IP_TTL, D_PAYLOAD_LEN, D_PAYLOAD_OFF, D_PDS_FLAGS,
                         D_PDS_NEXT, D_PDS_OFF, D_PDS_TYPE, D_PROBE_MODE, D_PROBE_OFF, D_PROBE_SEQ,
                         D_PROBE_TS, D_PSN, D_SES_FLAGS, D_SES_MSG_ID, D_SES_OFF, D_SES_TYPE,
                         D_SPDCID)
from .close import pdc_free, pdc_reclaim, pdc_wait_ns
from .frame import ECN_CE, ECN_ECT1, PDS_OFF, frame_l2l4, frame_new, send_control, tx_emit
from .host import host_admit
from .reset import reset_ask
from .rxcc import rx_cc_data, rx_cc_event
from ...ctlblock import YIELD
from .state import (C_RX_UE, C_TX_CNP, C_TX_WINDOW_ADV, NR_CNP_GAP, NR_LASTHOP_DSCP, RP_CNP_MARKS, RP_CNP_T,
                    RP_NP, RP_UE, C_DROP_BAD_TYPE, C_RX_PROBE, C_DROP_RX_WINDOW, RP_READ, RP_WADV, RP_WBLOCK, C_DROP_BAD_OFFSET, C_DROP_BAD_SES, C_DROP_NO_PDC, C_DROP_PSN_OOR,
                        C_DROP_WRONG_PDC, C_PDC_OPEN, C_RX_CE, C_RX_DATA, C_RX_DUP, C_RX_OOO,
                        C_RX_TRIMMED, C_TX_ACK, C_TX_NACK, CQ_RX, M_NRP, NR_ACK_DELAY, NR_ACK_EVERY,
                        NR_CREDIT_WIN, NR_SINK, NR_DEV, NR_INIT_CREDIT, RP_BUFCAP, RP_BUFOFF, RP_CC,
                        RP_CREDIT, RP_CSIG_D, RP_CSIG_FMT, RP_CSIG_LM, RP_CSIG_S, RP_CSIG_T,
                        RP_DELIV, RP_ECN, RP_EV, RP_HAS_TS, RP_NACKED, RP_NIC, RP_NXT, RP_OOO,
                        RP_PEER_IP, RP_PEER_MAC, RP_PEER_PDC, RP_PEND, RP_RCVD, RP_T_ACK,
                        RP_TARGET, RP_TRIG, RP_TS, RP_TSSEQ, RP_GEN, TK_ACK, TK_SHIFT, cq_push,
                        RP_HOPS, RP_INT_H0, RP_INT_N,
                        M_YIELD_RX, NR_HOST_BW, NR_HOST_DELAY, NR_RX_TICK, NR_RX_TICKS,
                        NR_RX_TTIMER, RP_JOINED, RP_LAST_T, RP_START, RP_CLOSED, RP_EST, psn_recon,
                        rx_lookup)


@hot
def _ring_put(ring, base, cap, off, src, so, ln):
    """Copy ln bytes to stream offset off of the ring at ring[base:base+cap]."""
    s = off % cap
    a = min(ln, cap - s)
    r, q = ring.ctypes.data + base, src.ctypes.data + so
    copy_bytes(r + s, q, a)         # memcpy: a byte loop costs ~3 cycles a byte
    copy_bytes(r, q + a, ln - a)


@hot
def rx_grant_credit(N, n, r, now, decided):
    """Cumulative credit for an RCCC sender (bytes).  ``decided``: the NIC
    has a receiver algorithm, whose grants (rxcc.py) are the credit.
    Otherwise the default policy (no active-sender table, each sender on its
    own): a static window (add_nic credit_window) beyond what has arrived,
    bounded by the sender's backlog, at least the initial credit (add_nic
    init_credit); never decreasing."""
    if decided:
        return N.rp[r, RP_CREDIT]
    g = N.rp[r, RP_RCVD] + min(N.nr[n, NR_CREDIT_WIN], N.rp[r, RP_TARGET])
    g = max(g, N.nr[n, NR_INIT_CREDIT])
    if g > N.rp[r, RP_CREDIT]:
        N.rp[r, RP_CREDIT] = g
    return N.rp[r, RP_CREDIT]


@hot
def send_ack(E, n, r, now):
    """One ACK for receive PDC r: ACK_CC (NSCC state, or credit for a PDC
    opened by RUD_CC_REQ), or ACK_CCX when a CSIG tag arrived since the last
    ACK; with a timestamp echo when the sender asked for one.  The stages
    are hot_stage (inlined: this is still one function)."""
    N = E.nic
    rp = N.rp
    cc = rp[r, RP_CC] != 0
    t = S.T_ACK_CCX if (rp[r, RP_CSIG_FMT] != 0 and not cc) else S.T_ACK_CC
    has_ts = rp[r, RP_HAS_TS] != 0
    total = PDS_OFF + S.ACK_CC_SIZE + (S.PROBE_SIZE if has_ts else 0)
    nh = rp[r, RP_INT_N] - 1
    if nh >= 0 and total + S.INTTAIL_SIZE + nh * S.INTHOP_SIZE > E.pool.data.shape[1]:
        nh = -1                         # no room (a tiny pool): no reflection
    i = frame_new(E, n, total)
    if i < 0:
        return
    frame_l2l4(E, n, i, rp[r, RP_PEER_MAC], rp[r, RP_PEER_IP], rp[r, RP_EV], 0, total)
    buf = E.pool.data[i]
    q = PDS_OFF
    cack = _ack_header(rp, r, buf, q, t, has_ts)
    _ack_sack(N, rp, r, buf, q, cack)
    if t == S.T_ACK_CC:
        _ack_cc_state(N, rp, n, r, buf, q, cc, E.alg.nic_alg[n] >= 0, now)
    else:
        _ack_csig_echo(rp, r, buf, q)
        set_field(buf, q, S.ACK_CCX_SERVICE_TIME, _host_echo(N, n))
    if has_ts:
        _ack_ts_echo(rp, r, buf, q + S.ACK_CC_SIZE)
    if nh >= 0:
        _ack_int_reflect(E, rp, r, i, buf, total, nh)
    tx_emit(E, n, i, now)
    N.ncnt[n, C_TX_ACK] += 1
    _ack_sent(E, rp, r)


@hot_stage
def _ack_header(rp, r, buf, q, t, has_ts):
    """The PDS prologue and the ACK's PSNs and PDC ids; returns cack, the
    last PSN received in order."""
    flags = 0
    if rp[r, RP_ECN]:
        flags |= S.F_ACK_M
    if rp[r, RP_UE]:
        flags |= S.F_ACK_UE
    if has_ts:
        flags |= S.F_TP
    write_prologue(buf, q, t, S.NH_NONE, flags)
    cack = rp[r, RP_NXT] - 1
    trig = rp[r, RP_TRIG]
    set_field(buf, q, S.ACK_ACK_PSN_OFFSET, max(-32768, min(32767, trig - cack)))
    set_field(buf, q, S.ACK_CACK_PSN, cack & 0xFFFFFFFF)
    set_field(buf, q, S.ACK_SPDCID, r)
    set_field(buf, q, S.ACK_DPDCID, rp[r, RP_PEER_PDC])
    return cack


@hot_stage
def _ack_sack(N, rp, r, buf, q, cack):
    """The SACK bitmap: 64 PSNs from the next expected one, or ending at the
    packet that triggered this ACK when that lies further on."""
    nxt = cack + 1
    trig = rp[r, RP_TRIG]
    W = N.rs_bits.shape[1]
    base = nxt
    if trig >= base + 64:
        base = trig - 63
    bm = np.int64(0)
    for k in range(64):
        x = base + k
        if x - nxt < W and N.rs_bits[r, x & (W - 1)] != 0:
            bm |= np.int64(1) << k
    set_field(buf, q, S.ACK_CC_SACK_PSN_OFFSET, base - cack)
    set_field(buf, q, S.ACK_CC_SACK_BITMAP, bm)


@hot_stage
def _ack_cc_state(N, rp, n, r, buf, q, cc, decided, now):
    """ACK_CC's congestion state: a credit grant (RCCC) or the bytes received
    (NSCC, 256 B units), and the out-of-order count."""
    if cc:
        set_field(buf, q, S.ACK_CC_CC_TYPE, S.CC_CREDIT)
        g = rx_grant_credit(N, n, r, now, decided)
        set_field(buf, q, S.ACK_CC_CREDIT, (g // S.CREDIT_UNIT_BYTES) & 0xFFFFFF)
    else:
        set_field(buf, q, S.ACK_CC_CC_TYPE, S.CC_NSCC)
        set_field(buf, q, S.ACK_CC_RCVD_BYTES, (rp[r, RP_RCVD] >> 8) & 0xFFFFFF)
        set_field(buf, q, S.ACK_CC_SERVICE_TIME, _host_echo(N, n))
    set_field(buf, q, S.ACK_CC_OOO_COUNT, rp[r, RP_OOO] & 0xFFFF)


@hot_stage
def _host_echo(N, n):
    """service_time: this host's last sampled delivery delay (host.py), in
    SERVICE_TIME_UNIT_NS, saturating."""
    return min(N.nr[n, NR_HOST_DELAY] // S.SERVICE_TIME_UNIT_NS, 0xFFFF)


@hot_stage
def _ack_csig_echo(rp, r, buf, q):
    """ACK_CCX: the CSIG tag of the last data packet, reflected to the sender."""
    set_field(buf, q, S.ACK_CCX_CCX_TYPE, S.CCX_CSIG)
    set_field(buf, q, S.ACK_CCX_RCSIG_FMT, rp[r, RP_CSIG_FMT])
    set_field(buf, q, S.ACK_CCX_RCSIG_T, rp[r, RP_CSIG_T])
    set_field(buf, q, S.ACK_CCX_RCSIG_D, rp[r, RP_CSIG_D])
    set_field(buf, q, S.ACK_CCX_RCSIG_LM, rp[r, RP_CSIG_LM])
    set_field(buf, q, S.ACK_CCX_RCSIG_S, rp[r, RP_CSIG_S])


@hot_stage
def _ack_ts_echo(rp, r, buf, pr):
    """The probe trailer echoing the sender's timestamp (its RTT sample)."""
    set_field(buf, pr, S.PROBE_MODE, S.PROBE_ECHO)
    set_field(buf, pr, S.PROBE_TS, rp[r, RP_TS])
    set_field(buf, pr, S.PROBE_SEQ, rp[r, RP_TSSEQ])
    set_field(buf, pr, S.PROBE_HOPS, rp[r, RP_HOPS])


@hot_stage
def _ack_int_reflect(E, rp, r, i, buf, end, nh):
    """The INT trailer of the last data packet, after the ACK's datagram."""
    for k in range(nh):
        w = rp[r, RP_INT_H0 + k]
        o = end + k * S.INTHOP_SIZE
        for b in range(S.INTHOP_SIZE):
            buf[o + b] = (w >> (8 * (S.INTHOP_SIZE - 1 - b))) & 0xFF
    t = end + nh * S.INTHOP_SIZE
    set_field(buf, t, S.INTTAIL_MAGIC, S.INT_MAGIC)
    set_field(buf, t, S.INTTAIL_NHOP, nh)
    set_field(buf, t, S.INTTAIL_MAX_HOP, nh)
    E.pool.length[i] = t + S.INTTAIL_SIZE


@hot_stage
def _ack_sent(E, rp, r):
    """Nothing is pending for PDC r any more: clear what this ACK carried and
    the coalescing timer."""
    rp[r, RP_PEND] = 0
    rp[r, RP_ECN] = 0
    rp[r, RP_UE] = 0
    rp[r, RP_CSIG_FMT] = 0
    rp[r, RP_HAS_TS] = 0
    rp[r, RP_INT_N] = 0
    if rp[r, RP_T_ACK] > 0:
        wheel_cancel(E.wheel, rp[r, RP_T_ACK] - 1)


@hot
def send_nack(E, n, r, psn, code, vendor, payload, now):
    N = E.nic
    total = PDS_OFF + S.NACK_SIZE
    i = frame_new(E, n, total)
    if i < 0:
        return
    frame_l2l4(E, n, i, N.rp[r, RP_PEER_MAC], N.rp[r, RP_PEER_IP], N.rp[r, RP_EV], 0, total)
    buf = E.pool.data[i]
    write_prologue(buf, PDS_OFF, S.T_NACK, S.NH_NONE, 0)
    set_field(buf, PDS_OFF, S.NACK_NACK_CODE, code)
    set_field(buf, PDS_OFF, S.NACK_NACK_PSN, psn & 0xFFFFFFFF)
    set_field(buf, PDS_OFF, S.NACK_SPDCID, r)
    set_field(buf, PDS_OFF, S.NACK_DPDCID, N.rp[r, RP_PEER_PDC])
    set_field(buf, PDS_OFF, S.NACK_VENDOR_CODE, vendor)
    set_field(buf, PDS_OFF, S.NACK_NACK_PAYLOAD, payload & 0xFFFFFFFF)
    tx_emit(E, n, i, now)
    N.ncnt[n, C_TX_NACK] += 1


@hot
def send_cnp(E, n, r, psn, marks, now):
    """A CNP to the sender of PDC r (CONTROL, ctl_type CNP, ours): the PSN
    that triggered it, and in ctl_payload the marks it notifies (CNP_CE,
    CNP_UE)."""
    rp = E.nic.rp
    if send_control(E, n, rp[r, RP_PEER_MAC], rp[r, RP_PEER_IP], rp[r, RP_EV], 0, S.CTL_CNP,
                    psn, r, rp[r, RP_PEER_PDC], marks, now):
        E.nic.ncnt[n, C_TX_CNP] += 1


@hot
def rx_control(E, n, i, now):
    """CONTROL: a probe request (tx.send_probe) is answered at once by an
    ACK echoing its timestamp; other control types are not this NIC's
    business (counted as drop_bad_type)."""
    N = E.nic
    d = N.desc
    if d[D_PDS_NEXT] != S.CTL_PROBE or d[D_PROBE_OFF] < 0 or d[D_PROBE_MODE] != S.PROBE_REQ:
        N.ncnt[n, C_DROP_BAD_TYPE] += 1
        return
    r = _pdc_of(E, n, i, now)            # an open PDC of this peer, or dropped (counted)
    if r == 0 or d[D_PDS_FLAGS] & S.F_SYN:
        return
    N.ncnt[n, C_RX_PROBE] += 1
    rp = N.rp
    rp[r, RP_TS] = d[D_PROBE_TS]
    rp[r, RP_TSSEQ] = d[D_PROBE_SEQ]
    rp[r, RP_HAS_TS] = 1
    send_ack(E, n, r, now)


@hot
def _pdc_of(E, n, i, now):
    """The receive PDC of a request, opening one on SYN; 0 = drop (counted)."""
    N = E.nic
    d = N.desc
    src = d[D_IP_SRC]
    if d[D_PDS_FLAGS] & S.F_SYN:
        r = rx_lookup(N, n, src, d[D_SPDCID], True)
        if r == 0 and pdc_reclaim(E, n, now):    # full: an idle PDC makes room
            r = rx_lookup(N, n, src, d[D_SPDCID], True)
        if r == 0:
            N.ncnt[n, C_DROP_NO_PDC] += 1
            return 0
        start = (d[D_PSN] - (d[D_DPDCID] & 0xFFF)) & 0xFFFFFFFF
        if N.rp[r, RP_NIC] != 0 and (start != N.rp[r, RP_START] or N.rp[r, RP_CLOSED] != 0):
            # a closed connection, or another on the sender's PDC id (state.py: RP_START)
            later = (start - N.rp[r, RP_START]) & 0xFFFFFFFF
            # The same start: a copy of the connection's packets, however late.
            # An earlier one on a PDC silent past its linger (closed), 8
            # RTOs (half-open) or the idle limit (open: the sender died
            # without closing): a sender that restarted with another first
            # PSN (setup.first_psn).  Before that, the reset exchange asks.
            gone = now - N.rp[r, RP_LAST_T] >= pdc_wait_ns(N, n, r)
            if later == 0 or (later >= 0x80000000 and not gone):
                if later != 0:                     # an old copy, or a restarted sender:
                    reset_ask(E, n, i, r, now)     # ask it (reset.py)
                N.ncnt[n, C_DROP_WRONG_PDC] += 1     # a late packet of a closed or older one
                return 0
            pdc_free(E, n, r, now)                 # a newer one: the old PDC is stale
            r = rx_lookup(N, n, src, d[D_SPDCID], True)
            if r == 0:
                N.ncnt[n, C_DROP_NO_PDC] += 1
                return 0
        if N.rp[r, RP_NIC] == 0:             # new: our start is psn - psn_offset
            rp = N.rp
            buf = E.pool.data[i]
            rp[r, RP_NIC] = n + 1
            rp[r, RP_PEER_MAC] = get_field(buf, 0, S.ETH_SRC)
            rp[r, RP_PEER_IP] = src
            rp[r, RP_PEER_PDC] = d[D_SPDCID]
            rp[r, RP_EV] = get_field(buf, d[D_PDS_OFF] - S.UDP_SIZE, S.UDP_SPORT)
            rp[r, RP_NXT] = d[D_PSN] - (d[D_DPDCID] & 0xFFF)
            rp[r, RP_CREDIT] = N.nr[n, NR_INIT_CREDIT]
            rp[r, RP_GEN] += 1
            rp[r, RP_LAST_T] = now
            rp[r, RP_START] = start
            if rp[r, RP_T_ACK] > 0:          # a reused row keeps its timer (close.py)
                E.wheel.owner[rp[r, RP_T_ACK] - 1] = N.nr[n, NR_DEV]
            else:
                t = wheel_alloc(E.wheel, N.nr[n, NR_DEV], (np.int64(TK_ACK) << TK_SHIFT) | r)
                rp[r, RP_T_ACK] = t + 1      # 0: no timer, ACK every packet
            N.ncnt[n, C_PDC_OPEN] += 1
        else:
            # A second packet: a flood sends one per spoofed source, and a
            # short connection sends all its packets with SYN (state.py: RP_EST)
            N.rp[r, RP_EST] = 1
        return r
    r = d[D_DPDCID]
    if (r <= 0 or r > N.meta[M_NRP] or N.rp[r, RP_NIC] != n + 1
            or N.rp[r, RP_PEER_IP] != src or N.rp[r, RP_PEER_PDC] != d[D_SPDCID]
            or N.rp[r, RP_CLOSED] != 0):
        N.ncnt[n, C_DROP_WRONG_PDC] += 1
        return 0
    N.rp[r, RP_EST] = 1                      # its sender knew our PDC id: it heard us
    return r


@hot
def rx_data(E, n, i, now):
    """A RUD request (data) arrived: frame i, already parsed into N.desc.  The
    stages (hot_stage: inlined) take d and rp rather than load them again."""
    N = E.nic
    d = N.desc
    r = _pdc_of(E, n, i, now)
    if r == 0:
        return
    if d[D_SES_TYPE] != S.NH_SES_STD:
        N.ncnt[n, C_DROP_BAD_SES] += 1
        return
    W = N.rs_bits.shape[1]
    msk = W - 1
    rp = N.rp
    nxt = rp[r, RP_NXT]
    p = psn_recon(d[D_PSN], nxt)
    if p - nxt >= W:
        N.ncnt[n, C_DROP_PSN_OOR] += 1
        return
    if d[D_PAYLOAD_LEN] == 0:
        _rx_trimmed(E, n, r, p, nxt, msk, now)
        return
    now_ack = (d[D_PDS_FLAGS] & S.F_AR) != 0
    if p < nxt or N.rs_bits[r, p & msk] != 0:
        N.ncnt[n, C_RX_DUP] += 1              # re-ACK: our last ACK may be lost
        now_ack = True
    elif not _rx_place(E, N, d, rp, n, r, i, p, msk, now):
        return
    elif p == nxt:
        _rx_deliver(E, N, rp, n, r, nxt, msk, now)
    else:
        _rx_ooo(E, N, rp, n, r, nxt, now)
        now_ack = True
    if _rx_echo(N, d, rp, n, r):
        now_ack = True
    if rp[r, RP_NP] != 0:
        _rx_np(E, N, d, rp, n, r, p, now)
    _rx_int(E, d, rp, r, i)
    _rx_ack_due(E, N, rp, n, r, p, now_ack, now)


@hot_stage
def _rx_trimmed(E, n, r, p, nxt, msk, now):
    """Our senders never send an empty data packet: a switch trimmed this
    one.  NACK it so the sender retransmits it at once: TRIMMED_LASTHOP
    when it carries the last-hop trim DSCP (its last switch trimmed it),
    else TRIMMED."""
    N = E.nic
    N.ncnt[n, C_RX_TRIMMED] += 1
    if p >= nxt and N.rs_bits[r, p & msk] == 0:
        last = N.desc[D_IP_DSCP] == N.nr[n, NR_LASTHOP_DSCP]
        send_nack(E, n, r, p, S.NACK_TRIMMED_LASTHOP if last else S.NACK_TRIMMED, 0, 0, now)


@hot_stage
def _rx_place(E, N, d, rp, n, r, i, p, msk, now):
    """Copy the payload of PSN p into the PDC's ring and mark it received;
    False if it cannot be (dropped, counted; a full ring NACKs)."""
    buf = E.pool.data[i]
    off = get_field(buf, d[D_SES_OFF], S.SES_STD_BUFFER_OFFSET)
    ln = d[D_PAYLOAD_LEN]
    cap = rp[r, RP_BUFCAP]
    edge = rp[r, RP_READ] + cap       # the ring holds [READ, READ + cap)
    if off < rp[r, RP_DELIV] or off + ln > edge + cap or ln > cap:
        N.ncnt[n, C_DROP_BAD_OFFSET] += 1  # no sender we answer could send this
        return False
    if off + ln > edge:                    # the app is behind: no room
        N.ncnt[n, C_DROP_RX_WINDOW] += 1
        rp[r, RP_WBLOCK] = 1
        rp[r, RP_WADV] = edge
        send_nack(E, n, r, p, S.NACK_NO_PKT_BUFFER, 0, edge, now)
        return False
    if N.nr[n, NR_HOST_BW] > 0 and not host_admit(N, n, ln, now):
        return False                       # the host buffer is full: a loss (host.py)
    if N.nr[n, NR_SINK] == 0:
        _ring_put(N.rxbuf, rp[r, RP_BUFOFF], cap, off, buf, d[D_PAYLOAD_OFF], ln)
    s = p & msk
    N.rs_bits[r, s] = 1
    N.rs_end[r, s] = off + ln
    N.rs_msg[r, s] = d[D_SES_MSG_ID] + 1 if (d[D_SES_FLAGS] & S.SF_EOM) else 0
    rp[r, RP_RCVD] += ln
    rp[r, RP_LAST_T] = now                 # idle since (close.pdc_reclaim, rxcc.py)
    N.ncnt[n, C_RX_DATA] += 1
    if rp[r, RP_WBLOCK] == 0 and edge - (off + ln) < cap >> 2:
        # Under a quarter of the ring left (the app is behind): tell the
        # sender where the ring ends before it sends past it (an update:
        # nothing lost); app_read advertises the new edge as the app reads.
        rp[r, RP_WBLOCK] = 1
        rp[r, RP_WADV] = edge
        send_nack(E, n, r, p, S.NACK_NO_PKT_BUFFER, S.NACK_VC_WINDOW_UPDATE, edge, now)
        N.ncnt[n, C_TX_WINDOW_ADV] += 1
    if d[D_PDS_TYPE] == S.T_RUD_CC_REQ:
        rp[r, RP_CC] = 1
        rp[r, RP_TARGET] = get_field(buf, d[D_PDS_OFF], S.RUD_CC_REQ_CREDIT_TARGET) \
            * S.CREDIT_UNIT_BYTES
    rx_cc_data(E, rp, n, r, p, ln, d[D_IP_ECN] == ECN_CE, now)
    return True


@hot_stage
def _rx_deliver(E, N, rp, n, r, nxt, msk, now):
    """Deliver the in-order prefix from nxt: a completion per message end."""
    while N.rs_bits[r, nxt & msk] != 0:
        s = nxt & msk
        N.rs_bits[r, s] = 0
        rp[r, RP_DELIV] = N.rs_end[r, s]
        if N.rs_msg[r, s] != 0:
            cq_push(N, n, CQ_RX, r, N.rs_msg[r, s] - 1, N.rs_end[r, s], now)
            N.rs_msg[r, s] = 0
            if N.meta[M_YIELD_RX] != 0:
                E.ctl[YIELD] = 1    # an app between chunks answers it
        nxt += 1
    rp[r, RP_NXT] = nxt
    if N.nr[n, NR_SINK] != 0:
        rp[r, RP_READ] = rp[r, RP_DELIV]      # a sink consumes as it receives (gen.py)


@hot_stage
def _rx_ooo(E, N, rp, n, r, nxt, now):
    """A packet beyond a hole at nxt: counted, and one NACK per hole."""
    rp[r, RP_OOO] += 1
    N.ncnt[n, C_RX_OOO] += 1
    if rp[r, RP_NACKED] != nxt + 1:
        rp[r, RP_NACKED] = nxt + 1
        send_nack(E, n, r, nxt, S.NACK_RCVR_INFER_LOSS, 0, 0, now)


@hot_stage
def _rx_echo(N, d, rp, n, r):
    """What the next ACK echoes (CE, UE, CSIG, the send timestamp); True on
    CE or UE, which are acknowledged at once.  UE (TCD's undetermined) is
    ECT(1), the switches' default UE codepoint: our senders send ECT(0)."""
    ce = d[D_IP_ECN] == ECN_CE
    if ce:
        rp[r, RP_ECN] = 1
        N.ncnt[n, C_RX_CE] += 1
    ue = d[D_IP_ECN] == ECN_ECT1
    if ue:
        rp[r, RP_UE] = 1
        N.ncnt[n, C_RX_UE] += 1
    rp[r, RP_NP] = 1 if d[D_PDS_FLAGS] & S.F_REQ_NP else 0
    if d[D_CSIG_FMT] != 0:
        rp[r, RP_CSIG_FMT] = d[D_CSIG_FMT]
        rp[r, RP_CSIG_T] = d[D_CSIG_T]
        rp[r, RP_CSIG_S] = d[D_CSIG_S]
        rp[r, RP_CSIG_LM] = d[D_CSIG_LM]
        rp[r, RP_CSIG_D] = d[D_CSIG_D]
    if d[D_PROBE_OFF] >= 0 and d[D_PROBE_MODE] == S.PROBE_DATA:
        rp[r, RP_TS] = d[D_PROBE_TS]
        rp[r, RP_TSSEQ] = d[D_PROBE_SEQ]
        rp[r, RP_HAS_TS] = 1
    rp[r, RP_HOPS] = max(0, 64 - d[D_IP_TTL])    # our senders start at 64 (frame.py)
    return ce or ue


@hot_stage
def _rx_np(E, N, d, rp, n, r, p, now):
    """The notification point (DCQCN) for a sender that asked (NP): a CE or
    UE mark is noted, and a CNP carrying the marks noted goes out unless
    one went to this sender less than NR_CNP_GAP ago."""
    e = d[D_IP_ECN]
    if e == ECN_CE:
        rp[r, RP_CNP_MARKS] |= S.CNP_CE
    elif e == ECN_ECT1:
        rp[r, RP_CNP_MARKS] |= S.CNP_UE
    else:
        return
    last = rp[r, RP_CNP_T]
    if last == 0 or now - last >= N.nr[n, NR_CNP_GAP]:
        send_cnp(E, n, r, p, rp[r, RP_CNP_MARKS], now)
        rp[r, RP_CNP_T] = max(now, 1)
        rp[r, RP_CNP_MARKS] = 0


@hot_stage
def _rx_int(E, d, rp, r, i):
    """Keep the INT hop stack of a data packet that asked for INT (a trailer
    after its IP datagram) for the next ACK to reflect."""
    ln = np.int64(E.pool.length[i])
    end = d[D_IP_OFF] + d[D_IP_LEN]
    tail = ln - S.INTTAIL_SIZE
    if tail < end:
        return
    buf = E.pool.data[i]
    if get_field(buf, tail, S.INTTAIL_MAGIC) != S.INT_MAGIC:
        return
    nh = get_field(buf, tail, S.INTTAIL_NHOP)
    if nh > S.INT_MAX_HOPS or tail - nh * S.INTHOP_SIZE < end:
        return
    for k in range(nh):
        o = tail - (nh - k) * S.INTHOP_SIZE
        w = np.int64(0)
        for b in range(S.INTHOP_SIZE):
            w = (w << 8) | np.int64(buf[o + b])
        rp[r, RP_INT_H0 + k] = w
    rp[r, RP_INT_N] = nh + 1


@hot_stage
def _rx_ack_due(E, N, rp, n, r, p, now_ack, now):
    """ACK now, or arm the coalescing timer (see the module docstring)."""
    rp[r, RP_TRIG] = p
    rp[r, RP_PEND] += 1
    t = rp[r, RP_T_ACK] - 1
    if now_ack or t < 0 or rp[r, RP_PEND] >= N.nr[n, NR_ACK_EVERY]:
        send_ack(E, n, r, now)
    elif not wheel_armed(E.wheel, t):
        wheel_schedule(E.wheel, t, now + N.nr[n, NR_ACK_DELAY])


@hot
def ack_timer(E, n, r, now):
    """The coalescing deadline of PDC r passed."""
    if E.nic.rp[r, RP_PEND] > 0:
        send_ack(E, n, r, now)
        return 1
    return 0


@hot
def rx_tick(E, n, now):
    """The receiver algorithm's TIMER (NIC timer TK_RXTICK, rxcc.py): one
    TIMER event to each sender in NIC n's table; a grant that grew goes out
    at once in an ACK (the sender may have nothing in flight to be ACKed);
    again one period later."""
    N = E.nic
    period = N.nr[n, NR_RX_TICK]
    if period <= 0 or E.alg.nic_alg[n] < 0:
        return
    N.nr[n, NR_RX_TICKS] += 1
    rp = N.rp
    for r in range(1, N.meta[M_NRP] + 1):
        if rp[r, RP_NIC] == n + 1 and rp[r, RP_JOINED] != 0:
            g = rp[r, RP_CREDIT]
            rx_cc_event(E, n, r, V.EV_TIMER, now, N.nr[n, NR_RX_TICKS], period, 0, 0, 0, 0)
            if rp[r, RP_CREDIT] > g:
                send_ack(E, n, r, now)
    wheel_schedule(E.wheel, N.nr[n, NR_RX_TTIMER], now + period)
