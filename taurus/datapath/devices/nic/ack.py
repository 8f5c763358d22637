"""Sender side, feedback: ACK (cumulative + SACK), NACK, credit, ECN echo
(CE and UE), RTT samples, CSIG and INT reflections, CNPs, switches' SRCs
(Bolt) and the receiving host's echoed delay.

RTT: every ACK's echoed timestamp (the newest data packet's) feeds the srtt
and RTO.  For a flow whose algorithm binds RTT or RTT_LS, each packet the
ACK newly acknowledges (cumulatively or in the SACK bitmap) also gives a
sample from its own send time (``sl_t``), except packets ever retransmitted
or marked lost (Karn: ambiguous); those samples replace the echoed one as
the ACK's RTT events.

Loss inference from SACK: a packet still in flight with at least
NR_DUPTHRESH SACKed packets above it is lost (TCP's dupthresh rule, RFC
6675 in spirit); a NACK marks its PSN lost at once.  Lost packets leave the
in-flight count and wait in the flow's slots for ``send_one``; each is
retransmitted once per loss event (the RTO covers a lost retransmission).
A packet that may have been overtaken is lost only once it is also
overdue: sent more than 2 srtt + 4 rttvar ago (srtt is the paths'
mean; the longest of unequal paths can take twice it, and the ACKs' echo
of the newest packet shows their spread little in rttvar).  That is
every packet of a flow that sprays over several EVs (ccshm ev_n > 0: its
packets pass one another on unequal paths), and every packet a flow sent
before its EV last moved (FL_EV_PSN: a later, maybe shorter, path
overtakes it).  Such a flow's RCVR_INFER_LOSS NACKs (the receiver sends
one per hole) are not losses and do not reach its algorithm; the SACK rule
and trims' NACKs still find its losses.
"""
import numba as nb
from ...hot import hot, hot_stage  # compiled without reference counting (the hot path)

import numpy as np

from ...wheel import wheel_cancel
from ...wire import spec as S
from ...wire.codec import get_field
from ... import ccevents as V
from ...ccshm import EV_INT, EV_RTT, EV_RTT_LS
from ...wire.desc import (D_DGRAM_END, D_DPDCID, D_IP_LEN, D_IP_OFF, D_IP_SRC, D_NACK_CODE, D_PDS_FLAGS,
                         D_PDS_OFF, D_PDS_TYPE, D_PROBE_MODE, D_PROBE_OFF, D_PROBE_TS, D_PSN,
                         D_PSN_OFFSET, D_SPDCID)
from .close import flow_free
from .gen import gen_completes, gen_refill
from .reset import rx_reset_ask
from .signals import (signal_ack, signal_bound, signal_cnp, signal_credit, signal_csig,
                      signal_custom, signal_ecn, signal_host, signal_int, signal_nack,
                      signal_ooo, signal_rtt, signal_rtt_packet, signal_src)
from .state import (C_RX_SRC, C_RTO_UNSENT, CL_SENT, FL_CLOSING, C_RX_CNP, C_RX_WINDOW_NACK, FL_RWND, FL_WBLOCK, FL_WEND, C_DROP_ACK_OOR, C_DROP_WRONG_PDC, C_RETX_NACK, C_RETX_SACK, C_RX_ACK,
                        C_RX_NACK, CQ_TX, CX_CREDIT, FL_ACKED_OFF, FL_BACKOFF, FL_INFL,
                        FL_LOST_SCAN, FL_MQ_DONE, FL_MQ_TAIL, FL_NIC, FL_NLOST, FL_NXT,
                        FL_OOO_LAST, FL_PEER_IP, FL_POSTED, FL_RETRIES, FL_RETX_SCAN, FL_RPDC,
                        FL_FRTO, FL_FRTO_END, FL_RTO, FL_RTTVAR, FL_SRTT, FL_STATE, FL_T_RTO,
                        FL_UNA, FS_ACTIVE, FL_HOST_ECHO, FL_HOPS,
                        NR_DUPTHRESH, NR_RTO_MIN, FL_EV_PSN, SG_DONE_T, SL_EMPTY, SL_INFL, SL_LOST,
                        SL_RETX, SL_SACKED, cq_push, psn_recon, unit_recon)
from .tx import PROBE_TS_MASK, SLO_OFF, flow_wake, rto_arm


@hot
def _flow_of(N, n):
    """The flow an ACK/NACK is for; 0 = not ours (counted as wrong PDC).
    A flow still in SYN takes any receiver PDC id here; the caller learns
    it (_learn_rpdc) only once the PSN is in the window."""
    f = _match_flow(N, n)
    if f == 0:
        N.ncnt[n, C_DROP_WRONG_PDC] += 1
    return f


@hot
def _match_flow(N, n):
    d = N.desc
    f = d[D_DPDCID]
    if (f <= 0 or f >= N.fl.shape[0] or N.fl[f, FL_NIC] != n + 1
            or N.fl[f, FL_STATE] != FS_ACTIVE or N.fl[f, FL_PEER_IP] != d[D_IP_SRC]):
        return 0
    if N.fl[f, FL_RPDC] == 0:
        if d[D_SPDCID] == 0:
            return 0
    elif N.fl[f, FL_RPDC] != d[D_SPDCID]:
        return 0
    return f


@hot
def _learn_rpdc(N, f):
    """The first ACK/NACK/CNP in the window tells a flow the receiver's PDC
    id (ends SYN).  Not before the window check: a late one from the PDC of
    an older process on the same flow row (a restart) would tie the new
    connection to that stale PDC, and it would never reset it (reset.py)."""
    if N.fl[f, FL_RPDC] == 0:
        N.fl[f, FL_RPDC] = N.desc[D_SPDCID]


@hot
def _mark_lost(N, f, p, msk):
    N.sl_state[f, p & msk] = SL_LOST
    N.fl[f, FL_INFL] -= N.sl_len[f, p & msk]
    N.fl[f, FL_NLOST] += 1
    if p < N.fl[f, FL_RETX_SCAN]:
        N.fl[f, FL_RETX_SCAN] = p


@hot
def _frto_ack(N, f, cack, hi, msk):
    """The first ACK to advance after an RTO (rto_fire): if it acknowledges
    only the resent packet and SACKs nothing above, what was in flight at
    the timeout is lost; otherwise it was late, and SACK holes (if any) are
    found as usual."""
    if cack + 1 <= N.fl[f, FL_FRTO] and hi == 0:
        for p in range(cack + 1, N.fl[f, FL_FRTO_END]):
            if N.sl_state[f, p & msk] == SL_INFL:
                _mark_lost(N, f, p, msk)
    N.fl[f, FL_FRTO] = 0


@hot
def _rtt_sample(E, n, f, ts, now, report):
    """RFC 6298 smoothing, in ns; as in Linux, rto_min floors the variance
    margin, not the RTO: RTO = srtt + max(4 rttvar, rto_min).  With RFC
    6298's max(rto_min, srtt + 4 rttvar), a steady queue (rttvar near 0,
    many flows at 1 MSS each) gave a spurious timeout nearly every RTT."""
    N = E.nic
    rtt = (now - ts) & PROBE_TS_MASK
    if N.fl[f, FL_SRTT] == 0:
        N.fl[f, FL_SRTT] = rtt
        N.fl[f, FL_RTTVAR] = rtt // 2
    else:
        N.fl[f, FL_RTTVAR] = (3 * N.fl[f, FL_RTTVAR] + abs(N.fl[f, FL_SRTT] - rtt)) // 4
        N.fl[f, FL_SRTT] = (7 * N.fl[f, FL_SRTT] + rtt) // 8
    N.fl[f, FL_RTO] = N.fl[f, FL_SRTT] + max(N.nr[n, NR_RTO_MIN], 4 * N.fl[f, FL_RTTVAR])
    signal_rtt(E, N, f, rtt, N.fl[f, FL_UNA], now, report)


@hot
def rx_ack(E, n, i, now):
    """An ACK, ACK_CC or ACK_CCX: frame i, already parsed into N.desc.  The
    stages are hot_stage (inlined: this is still one function)."""
    N = E.nic
    d = N.desc
    f = _flow_of(N, n)
    if f == 0:
        return
    if N.fl[f, FL_CLOSING] == CL_SENT and d[D_PDS_TYPE] == S.T_ACK:
        if psn_recon(d[D_PSN], N.fl[f, FL_NXT]) == N.fl[f, FL_NXT]:
            flow_free(E, n, f)                 # our CLOSE is acknowledged (close.py)
            return
    W = N.sl_state.shape[1]
    msk = W - 1
    una = N.fl[f, FL_UNA]
    nxt = N.fl[f, FL_NXT]
    cack = psn_recon(d[D_PSN], una - 1)
    if cack + 1 > nxt or cack + 1 < una - W:   # acks what we never sent
        N.ncnt[n, C_DROP_ACK_OOR] += 1
        return
    _learn_rpdc(N, f)
    N.ncnt[n, C_RX_ACK] += 1
    buf = E.pool.data[i]
    q = d[D_PDS_OFF]
    t = d[D_PDS_TYPE]
    signal_custom(E, f, i, q, E.pool.length[i], t, now)   # segments the agent asked for
    advanced = cack + 1 > una
    if d[D_PROBE_OFF] >= 0 and d[D_PROBE_MODE] == S.PROBE_ECHO:   # the path's hops, first
        N.fl[f, FL_HOPS] = get_field(buf, d[D_PROBE_OFF], S.PROBE_HOPS) + 1
    per_pkt = signal_bound(E, f, EV_RTT) or signal_bound(E, f, EV_RTT_LS)
    samples = _rtt_packets(E, N, f, una, cack, msk, now) if per_pkt and advanced else 0
    freed = _ack_cumulative(N, n, f, una, cack, msk)
    if advanced:
        una = _ack_advance(N, f, cack)
    if t == S.T_ACK and advanced and N.fl[f, FL_FRTO] != 0:
        _frto_ack(N, f, cack, 0, msk)
    if t != S.T_ACK:                           # ACK_CC / ACK_CCX carry a SACK bitmap
        sacked, k = _ack_cc(E, N, n, f, buf, q, t, cack, una, nxt, advanced, msk, per_pkt, now)
        freed += sacked
        samples += k
    if signal_bound(E, f, EV_INT):
        _ack_int(E, f, i, cack, now)
    _ack_signals(E, N, n, f, freed, samples == 0, now)
    if advanced:
        _ack_timers(E, N, n, f, una, nxt, now)
    flow_wake(E, f, now)


@hot_stage
def _rtt_packets(E, N, f, una, cack, msk, now):
    """Per-packet RTT samples of PSNs una..cack sent once and still in
    flight; returns how many."""
    k = 0
    for p in range(una, cack + 1):
        s = p & msk
        if N.sl_state[f, s] == SL_INFL:
            signal_rtt_packet(E, N, f, now - N.sl_t[f, s], N.sl_t[f, s], p, now)
            k += 1
    return k


@hot_stage
def _ack_int(E, f, i, cack, now):
    """The INT hop stack the receiver reflected (a trailer after the ACK's
    IP datagram, as on data): one INT event per hop, for the data packet
    that triggered the ACK (cack + ack_psn_offset)."""
    d = E.nic.desc
    ln = np.int64(E.pool.length[i])
    end = d[D_IP_OFF] + d[D_IP_LEN]
    tail = ln - S.INTTAIL_SIZE
    buf = E.pool.data[i]
    if tail < end or get_field(buf, tail, S.INTTAIL_MAGIC) != S.INT_MAGIC:
        return
    nh = get_field(buf, tail, S.INTTAIL_NHOP)
    if nh > S.INT_MAX_HOPS or tail - nh * S.INTHOP_SIZE < end:
        return
    o = d[D_PSN_OFFSET]
    if o >= 1 << 15:
        o -= 1 << 16
    signal_int(E, f, i, tail - nh * S.INTHOP_SIZE, nh, cack + o, now)


@hot_stage
def _ack_cumulative(N, n, f, una, cack, msk):
    """Free the slots up to cack; returns the bytes that left flight.  The
    packet a timeout marked lost, acknowledged before it was resent, counts
    as rto_unsent."""
    freed = np.int64(0)
    for p in range(una, cack + 1):
        s = p & msk
        st = N.sl_state[f, s]
        if st == SL_INFL or st == SL_RETX:
            N.fl[f, FL_INFL] -= N.sl_len[f, s]
            freed += N.sl_len[f, s]
        elif st == SL_LOST:
            N.fl[f, FL_NLOST] -= 1
            if p + 1 == N.fl[f, FL_FRTO]:
                N.ncnt[n, C_RTO_UNSENT] += 1
        N.fl[f, FL_ACKED_OFF] = (N.sl_off[f, s] & SLO_OFF) + N.sl_len[f, s]
        N.sl_state[f, s] = SL_EMPTY
    return freed


@hot_stage
def _ack_advance(N, f, cack):
    """The cumulative ACK moved: new una (returned), and proof of life."""
    una = cack + 1
    N.fl[f, FL_UNA] = una
    N.fl[f, FL_RETRIES] = 0
    N.fl[f, FL_BACKOFF] = 1
    if N.fl[f, FL_ACKED_OFF] + N.fl[f, FL_RWND] <= N.fl[f, FL_WEND]:
        N.fl[f, FL_WBLOCK] = 0
    return una


@hot_stage
def _ack_cc(E, N, n, f, buf, q, t, cack, una, nxt, advanced, msk, per_pkt, now):
    """ACK_CC / ACK_CCX: the SACK bitmap, the losses it reveals, then the CC
    fields; returns the bytes the bitmap took out of flight and the
    per-packet RTT samples it gave."""
    sacked, hi, k = _sack_bitmap(E, N, f, buf, q, cack, una, nxt, msk, per_pkt, now)
    _sack_losses(N, n, f, una, hi, msk, E.rep.ev_n[f] > 0, now)
    if advanced and N.fl[f, FL_FRTO] != 0:
        _frto_ack(N, f, cack, hi, msk)
    _ack_cc_fields(E, N, f, buf, q, t, now)
    return sacked, k


@hot_stage
def _sack_bitmap(E, N, f, buf, q, cack, una, nxt, msk, per_pkt, now):
    """Mark what the SACK bitmap covers; returns (bytes that left flight,
    1 + the highest PSN SACKed, or 0, per-packet RTT samples raised)."""
    base = cack + get_field(buf, q, S.ACK_CC_SACK_PSN_OFFSET)
    bm = get_field(buf, q, S.ACK_CC_SACK_BITMAP)
    freed = np.int64(0)
    hi = np.int64(0)
    ns = 0
    for k in range(64):
        if (bm >> k) & 1:
            p = base + k
            if una <= p < nxt:
                s = p & msk
                st = N.sl_state[f, s]
                if st == SL_INFL or st == SL_RETX:
                    if per_pkt and st == SL_INFL:
                        signal_rtt_packet(E, N, f, now - N.sl_t[f, s], N.sl_t[f, s], p, now)
                        ns += 1
                    N.fl[f, FL_INFL] -= N.sl_len[f, s]
                    freed += N.sl_len[f, s]
                    N.sl_state[f, s] = SL_SACKED
                elif st == SL_LOST:
                    N.fl[f, FL_NLOST] -= 1
                    N.sl_state[f, s] = SL_SACKED
                hi = p + 1
    return freed, hi, ns


@hot_stage
def _sack_losses(N, n, f, una, hi, msk, sprays, now):
    """SACK holes more than NR_DUPTHRESH below the highest SACKed PSN are
    lost; one that may have been overtaken (module doc) only when overdue,
    so the scan comes back to it."""
    lim = hi - N.nr[n, NR_DUPTHRESH]
    p = max(una, N.fl[f, FL_LOST_SCAN])
    b = N.fl[f, FL_EV_PSN]
    due = now - 2 * N.fl[f, FL_SRTT] - 4 * N.fl[f, FL_RTTVAR]  # sent before it: overdue
    scan = lim
    while p < lim:
        s = p & msk
        if N.sl_state[f, s] == SL_INFL:
            if (sprays or p < b) and N.sl_t[f, s] > due:
                scan = min(scan, p)
            else:
                _mark_lost(N, f, p, msk)
                N.ncnt[n, C_RETX_SACK] += 1
        p += 1
    if scan > N.fl[f, FL_LOST_SCAN]:
        N.fl[f, FL_LOST_SCAN] = scan


@hot_stage
def _ack_cc_fields(E, N, f, buf, q, t, now):
    """ACK_CC: out-of-order count and credit; ACK_CCX: a reflected CSIG;
    both (but a credit ACK_CC): the receiving host's delay."""
    cct = get_field(buf, q, S.ACK_CC_CC_TYPE)
    if t == S.T_ACK_CC:
        if cct != S.CC_CREDIT:
            _host_echo(E, N, f, get_field(buf, q, S.ACK_CC_SERVICE_TIME), now)
        o = unit_recon(get_field(buf, q, S.ACK_CC_OOO_COUNT), N.fl[f, FL_OOO_LAST], 16)
        if o > N.fl[f, FL_OOO_LAST]:
            signal_ooo(E, N, f, o - N.fl[f, FL_OOO_LAST], now)
            N.fl[f, FL_OOO_LAST] = o
        if cct == S.CC_CREDIT:
            cur = N.ctx[f, CX_CREDIT] // S.CREDIT_UNIT_BYTES
            c = unit_recon(get_field(buf, q, S.ACK_CC_CREDIT), cur, 24) \
                * S.CREDIT_UNIT_BYTES
            if c > N.ctx[f, CX_CREDIT]:
                N.ctx[f, CX_CREDIT] = c
                signal_credit(E, N, f, c, now)
    elif cct == S.CCX_CSIG:
        _host_echo(E, N, f, get_field(buf, q, S.ACK_CCX_SERVICE_TIME), now)
        if get_field(buf, q, S.ACK_CCX_RCSIG_FMT) != 0:
            signal_csig(E, N, f, get_field(buf, q, S.ACK_CCX_RCSIG_T),
                        get_field(buf, q, S.ACK_CCX_RCSIG_S),
                        get_field(buf, q, S.ACK_CCX_RCSIG_LM),
                        get_field(buf, q, S.ACK_CCX_RCSIG_D),
                        get_field(buf, q, S.ACK_CCX_RCSIG_FMT), now)


@hot_stage
def _host_echo(E, N, f, st, now):
    """service_time: the receiving host's delivery delay (host.py); a change
    is a HOST record (peer_host_delay, ns) for the flow's algorithm."""
    v = st * S.SERVICE_TIME_UNIT_NS
    if v != N.fl[f, FL_HOST_ECHO]:
        N.fl[f, FL_HOST_ECHO] = v
        signal_host(E, f, V.HOST_SRC_PEER_DELAY, v, 0, now)


@hot_stage
def _ack_signals(E, N, n, f, freed, report_echo, now):
    """ECN echo (CE and UE apart), the RTT sample (and the hop count echoed
    with it), the ACK itself: to the flow's algorithm."""
    d = N.desc
    ce = 1 if d[D_PDS_FLAGS] & S.F_ACK_M else 0
    ue = 1 if d[D_PDS_FLAGS] & S.F_ACK_UE else 0
    if ce or ue:
        signal_ecn(E, N, f, freed * ce, ce, freed * ue, ue, now)
    if d[D_PROBE_OFF] >= 0 and d[D_PROBE_MODE] == S.PROBE_ECHO:
        _rtt_sample(E, n, f, d[D_PROBE_TS], now, report_echo)
    signal_ack(E, N, f, freed, N.fl[f, FL_UNA], now)


@hot_stage
def _ack_timers(E, N, n, f, una, nxt, now):
    """After una advanced: send completions, then the RTO restarts or stops."""
    _complete(N, n, f, now)
    gen_refill(E, f, now)
    if una < nxt:
        rto_arm(E, f, now, True)
    else:
        wheel_cancel(E.wheel, N.fl[f, FL_T_RTO])


@hot
def _complete(N, n, f, now):
    """Send completions: every message whose last byte is cumulatively ACKed."""
    M = N.mq.shape[1]
    k = N.fl[f, FL_MQ_DONE]
    while k < N.fl[f, FL_MQ_TAIL] and N.mq[f, k % M, 0] <= N.fl[f, FL_ACKED_OFF]:
        if gen_completes(N, f, N.mq[f, k % M, 0]):
            cq_push(N, n, CQ_TX, f, N.mq[f, k % M, 1], N.mq[f, k % M, 0], now)
        k += 1
    N.fl[f, FL_MQ_DONE] = k
    if N.fl[f, FL_ACKED_OFF] >= N.fl[f, FL_POSTED]:
        N.sig[f, SG_DONE_T] = now


@hot
def rx_cnp(E, n, i, now):
    """A CNP (CONTROL, ctl_type CNP) from a flow's receiver: counted, and to
    the flow's algorithm as EV_CNP."""
    N = E.nic
    f = _flow_of(N, n)
    if f == 0:
        return
    d = N.desc
    p = psn_recon(d[D_PSN], N.fl[f, FL_UNA])
    if p >= N.fl[f, FL_NXT] or p < N.fl[f, FL_UNA] - N.sl_state.shape[1]:
        N.ncnt[n, C_DROP_ACK_OOR] += 1         # marks a PSN we never sent: forged
        return
    _learn_rpdc(N, f)
    N.ncnt[n, C_RX_CNP] += 1
    marks = get_field(E.pool.data[i], d[D_PDS_OFF], S.CONTROL_CTL_PAYLOAD)
    signal_cnp(E, N, f, 1 if marks & S.CNP_CE else 0, 1 if marks & S.CNP_UE else 0, p, now)


@hot
def rx_src(E, n, i, now):
    """Bolt's SRC (CONTROL, ctl_type SRC) from a congested switch: to the
    flow its dpdcid names, as EV_SRC.  A switch knows only that PDC id, not
    the receiver's, so the flow is matched on its id, NIC and peer alone;
    the time since the packet left comes from its send slot, while the
    slot still holds it."""
    N = E.nic
    d = N.desc
    f = d[D_DPDCID]
    base = d[D_PDS_OFF] + S.CONTROL_SIZE
    if (f <= 0 or f >= N.fl.shape[0] or N.fl[f, FL_NIC] != n + 1
            or N.fl[f, FL_STATE] != FS_ACTIVE or N.fl[f, FL_PEER_IP] != d[D_IP_SRC]
            or base + S.SRC_SIZE > d[D_DGRAM_END]):
        N.ncnt[n, C_DROP_WRONG_PDC] += 1
        return
    N.ncnt[n, C_RX_SRC] += 1
    buf = E.pool.data[i]
    p = psn_recon(d[D_PSN], N.fl[f, FL_UNA])
    s = p & (N.sl_state.shape[1] - 1)
    rtt = now - N.sl_t[f, s] if N.sl_state[f, s] == SL_INFL and p < N.fl[f, FL_NXT] else -1
    signal_src(E, f, get_field(buf, base, S.SRC_QLEN),
               get_field(buf, base, S.SRC_RATE_MBPS) * 1_000_000, p, rtt,
               get_field(buf, base, S.SRC_HOPS), now)


@hot
def rx_nack(E, n, i, now):
    N = E.nic
    d = N.desc
    if d[D_NACK_CODE] == S.NACK_INVALID_SYN and get_field(
            E.pool.data[i], d[D_PDS_OFF], S.NACK_VENDOR_CODE) == S.NACK_VC_RESET_ASK:
        N.ncnt[n, C_RX_NACK] += 1
        f = rx_reset_ask(E, n, i, now)        # an ask names no PDC to learn
        if f != 0:
            flow_wake(E, f, now)
        return
    f = _flow_of(N, n)
    if f == 0:
        return
    msk = N.sl_state.shape[1] - 1
    p = psn_recon(d[D_PSN], N.fl[f, FL_UNA])
    if p > N.fl[f, FL_NXT] or p < N.fl[f, FL_UNA] - msk - 1:
        N.ncnt[n, C_DROP_ACK_OOR] += 1         # beyond what we sent (or long acked): forged
        return
    _learn_rpdc(N, f)
    N.ncnt[n, C_RX_NACK] += 1
    code = d[D_NACK_CODE]
    if code == S.NACK_NO_PKT_BUFFER:
        _rx_window(E, n, f, i, p, msk, now)
        return
    if code == S.NACK_RCVR_INFER_LOSS and (E.rep.ev_n[f] > 0 or p < N.fl[f, FL_EV_PSN]):
        return                              # maybe reordering: the SACK rule decides
    signal_nack(E, N, f, p, code, now)
    if N.fl[f, FL_UNA] <= p < N.fl[f, FL_NXT]:
        st = N.sl_state[f, p & msk]
        trimmed = code == S.NACK_TRIMMED or code == S.NACK_TRIMMED_LASTHOP
        if st == SL_INFL or (trimmed and st == SL_RETX):
            _mark_lost(N, f, p, msk)
            N.ncnt[n, C_RETX_NACK] += 1
            flow_wake(E, f, now)


@hot
def _rx_window(E, n, f, i, p, msk, now):
    """The receiver refused PSN p for want of ring space (or, vendor code
    WINDOW_UPDATE, says its window opened): adopt its window edge; the
    refused packet waits as lost until the window covers it.  Not a loss
    signal for CC, and proof the receiver is alive (retries reset)."""
    N = E.nic
    N.ncnt[n, C_RX_WINDOW_NACK] += 1
    buf = E.pool.data[i]
    q = N.desc[D_PDS_OFF]
    edge = unit_recon(get_field(buf, q, S.NACK_NACK_PAYLOAD), N.fl[f, FL_ACKED_OFF], 32)
    # The receiver's edge (its app's read point + its ring) only grows, and
    # covers all it has acknowledged: an edge below one we took or below our
    # ACKed bytes is from an older NACK, e.g. a refusal overtaken by the
    # window update after it.  Taking it would close a window the receiver
    # has reopened, and the receiver sends no second update.
    if edge >= N.fl[f, FL_WEND] and edge >= N.fl[f, FL_ACKED_OFF]:
        N.fl[f, FL_WEND] = edge
        N.fl[f, FL_WBLOCK] = 1
        if edge >= N.fl[f, FL_ACKED_OFF] + N.fl[f, FL_RWND]:
            N.fl[f, FL_WBLOCK] = 0       # fully open again
    N.fl[f, FL_RETRIES] = 0
    if get_field(buf, q, S.NACK_VENDOR_CODE) != S.NACK_VC_WINDOW_UPDATE:
        if N.fl[f, FL_UNA] <= p < N.fl[f, FL_NXT]:
            st = N.sl_state[f, p & msk]
            if st == SL_INFL or st == SL_RETX:
                _mark_lost(N, f, p, msk)
    flow_wake(E, f, now)
