"""The reset exchange (ours; docs/PROTOCOLS.md): a sender process that
restarted reconnects at once to a receiver still holding its
predecessor's receive PDC on the same PDC id.

1. The receiver gets a SYN for a PDC of another connection whose start PSN
   it cannot take (an earlier one, while that PDC is not yet silent long
   enough: rx._pdc_of).  It could be a late copy of an older connection's
   packet or a restarted sender; it drops the SYN (drop_wrong_pdc) and
   asks (reset_ask): a NACK INVALID_SYN, vendor_code RESET_ASK, to the
   SYN's source, nack_psn = the SYN's PSN, nack_payload = the PDC's cookie
   (at most one per PDC per quarter of an initial RTO).
2. The sender (rx_reset_ask) answers only for a flow still in SYN (it has
   heard nothing from that receiver, FL_RPDC 0) that sent that PSN: the
   PDC the receiver holds cannot be its connection.  It sends a CONTROL
   RESET echoing PSN and cookie to the PDC, and resends everything in
   flight (the receiver dropped it all), so its SYN follows the RESET.
   Any other ask (a live connection's, whose old copy met its new PDC; or a
   spoofed one) is ignored and counted (drop_reset).
3. The receiver (rx_reset) frees the PDC when the RESET comes from its
   peer's address and PDC id and carries its cookie; otherwise it counts
   drop_reset.  The sender's SYN then opens the new connection: the
   restart costs about one round trip.

The cookie is a keyed hash of the PDC (the engine's secret M_SECRET, the
row, its generation, start PSN, peer and peer PDC id), so nobody who did
not see the ask can reset a PDC except by guessing 32 bits.  Whoever sees
the fabric's packets can (docs/SECURITY.md): without UET's TSS nothing
authenticates a packet.
"""
import numpy as np

from ...hot import hot, hot_stage
from ...wire import spec as S
from ...wire.codec import get_field, set_field, write_prologue
from ...wire.desc import D_DPDCID, D_IP_SRC, D_PDS_OFF, D_PSN, D_SPDCID
from .close import pdc_free
from .frame import ECN_ECT0, PDS_OFF, frame_l2l4, frame_new, send_control, tx_emit
from .state import (C_DROP_RESET, C_PDC_RESET, C_TX_RESET, C_TX_RESET_ASK, FL_EV, FL_INFL,
                    FL_NIC, FL_NLOST, FL_NXT, FL_PEER_IP, FL_PEER_MAC, FL_RETX_SCAN, FL_RPDC,
                    FL_START, FL_STATE, FL_UNA, FS_ACTIVE, M_NRP, M_SECRET, NR_RTO_INIT,
                    NR_RTO_MIN, RP_ASK_T, RP_GEN, RP_NIC, RP_PEER_IP, RP_PEER_PDC, RP_START,
                    SL_INFL, SL_LOST, psn_recon)

_K = np.int64(-7046029254386353131)     # 0x9E3779B97F4A7C15: an odd 64-bit constant


@hot_stage
def _mix(h, v):
    h = (h ^ v) * _K
    return h ^ ((h >> 29) & np.int64(0x7FFFFFFFF))


@hot
def pdc_cookie(N, r):
    """The 32-bit cookie of receive PDC r (changes with each connection on
    the row)."""
    rp = N.rp
    h = _mix(N.meta[M_SECRET], np.int64(r))
    h = _mix(h, rp[r, RP_GEN])
    h = _mix(h, rp[r, RP_START])
    h = _mix(h, rp[r, RP_PEER_IP])
    h = _mix(h, rp[r, RP_PEER_PDC])
    h = _mix(h, N.meta[M_SECRET])
    return (h >> 16) & 0xFFFFFFFF


@hot
def reset_ask(E, n, i, r, now):
    """Receive PDC r met a SYN (frame i, parsed into N.desc) of another
    connection it cannot take: ask the SYN's sender, answering where the
    SYN came from (its MAC and entropy)."""
    N = E.nic
    d = N.desc
    gap = max(N.nr[n, NR_RTO_INIT], N.nr[n, NR_RTO_MIN], 4) // 4
    if N.rp[r, RP_ASK_T] != 0 and now - N.rp[r, RP_ASK_T] < gap:
        return                                  # one ask per PDC per gap: no amplifier
    buf = E.pool.data[i]
    mac = get_field(buf, 0, S.ETH_SRC)
    ev = get_field(buf, d[D_PDS_OFF] - S.UDP_SIZE, S.UDP_SPORT)
    total = PDS_OFF + S.NACK_SIZE
    k = frame_new(E, n, total)
    if k < 0:
        return
    frame_l2l4(E, n, k, mac, d[D_IP_SRC], ev, 0, total)
    out = E.pool.data[k]
    write_prologue(out, PDS_OFF, S.T_NACK, S.NH_NONE, 0)
    set_field(out, PDS_OFF, S.NACK_NACK_CODE, S.NACK_INVALID_SYN)
    set_field(out, PDS_OFF, S.NACK_VENDOR_CODE, S.NACK_VC_RESET_ASK)
    set_field(out, PDS_OFF, S.NACK_NACK_PSN, d[D_PSN] & 0xFFFFFFFF)
    set_field(out, PDS_OFF, S.NACK_SPDCID, r)
    set_field(out, PDS_OFF, S.NACK_DPDCID, d[D_SPDCID])
    set_field(out, PDS_OFF, S.NACK_NACK_PAYLOAD, pdc_cookie(N, r))
    tx_emit(E, n, k, now)
    N.rp[r, RP_ASK_T] = max(now, 1)
    N.ncnt[n, C_TX_RESET_ASK] += 1


@hot
def rx_reset_ask(E, n, i, now):
    """A reset ask (NACK INVALID_SYN / RESET_ASK; frame i parsed into
    N.desc); returns the flow to wake, or 0."""
    N = E.nic
    d = N.desc
    f = d[D_DPDCID]
    if (f <= 0 or f >= N.fl.shape[0] or N.fl[f, FL_NIC] != n + 1
            or N.fl[f, FL_STATE] != FS_ACTIVE or N.fl[f, FL_PEER_IP] != d[D_IP_SRC]
            or N.fl[f, FL_RPDC] != 0):
        N.ncnt[n, C_DROP_RESET] += 1            # not ours, or our connection is live
        return 0
    p = psn_recon(d[D_PSN], N.fl[f, FL_UNA])
    if p < N.fl[f, FL_START] or p >= N.fl[f, FL_NXT]:
        N.ncnt[n, C_DROP_RESET] += 1            # a PSN we never sent on this connection
        return 0
    buf = E.pool.data[i]
    cookie = get_field(buf, d[D_PDS_OFF], S.NACK_NACK_PAYLOAD)
    if not send_control(E, n, N.fl[f, FL_PEER_MAC], N.fl[f, FL_PEER_IP], N.fl[f, FL_EV],
                        ECN_ECT0, S.CTL_RESET, d[D_PSN], f, d[D_SPDCID], cookie, now):
        return 0                                # no frame: the next SYN is asked again
    N.ncnt[n, C_TX_RESET] += 1
    msk = N.sl_state.shape[1] - 1               # the receiver dropped all of it: resend
    for q in range(N.fl[f, FL_UNA], N.fl[f, FL_NXT]):
        if N.sl_state[f, q & msk] == SL_INFL:
            N.sl_state[f, q & msk] = SL_LOST
            N.fl[f, FL_INFL] -= N.sl_len[f, q & msk]
            N.fl[f, FL_NLOST] += 1
            if q < N.fl[f, FL_RETX_SCAN]:
                N.fl[f, FL_RETX_SCAN] = q
    return f


@hot
def rx_reset(E, n, i, now):
    """A CONTROL RESET (frame i, parsed into N.desc): free the receive PDC it names
    if it comes from that PDC's peer and carries its cookie."""
    N = E.nic
    d = N.desc
    r = d[D_DPDCID]
    if (r <= 0 or r > N.meta[M_NRP] or N.rp[r, RP_NIC] != n + 1
            or N.rp[r, RP_PEER_IP] != d[D_IP_SRC] or N.rp[r, RP_PEER_PDC] != d[D_SPDCID]
            or get_field(E.pool.data[i], d[D_PDS_OFF], S.CONTROL_CTL_PAYLOAD)
            != pdc_cookie(N, r)):
        N.ncnt[n, C_DROP_RESET] += 1
        return
    pdc_free(E, n, r, now)
    N.ncnt[n, C_PDC_RESET] += 1
