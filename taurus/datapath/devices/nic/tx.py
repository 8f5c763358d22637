"""Sender side of the host NIC: scheduler, pacing, window and credit gates,
retransmission and RTO.

Scheduling (docs/DESIGN.md).  A flow is in one of three states: IDLE,
QUEUED on its NIC's ready list, or TIMED (its pacing timer is armed on the
wheel for its next eligible time, the WF2Q+ virtual start).  The NIC serves
its ready list round-robin, one packet per turn, while its line is free.
With equal weights and equal packet sizes, serving eligible flows
round-robin is what WF2Q+ does (the smallest finish time among eligible flows
is the one served longest ago), so each eligible flow gets an equal share of
the line and never more than its own rate.  A flow whose gates close (no
data, cwnd, credit) drops to IDLE and is woken by the event that reopens
them (ACK, credit, post, loss).  The ready list is intrusive (FL_RQ_NEXT),
so 10k+ flows cost O(1) per decision and no per-NIC array.

Gates, read from the CC context row (``ctx``, the future shared table):
pacing (``CX_RATE`` bit/s of frame bytes; 0 = unpaced), window
(in-flight payload + next <= ``CX_CWND``; 0 = none; one packet may always go
when nothing is in flight), credit (new bytes sent <= ``CX_CREDIT``,
cumulative; retransmissions are not charged, they replace bytes already
charged).  The NIC line (NR_LINE) caps the aggregate.
"""
import numba as nb
from ...hot import hot, hot_stage  # compiled without reference counting (the hot path)

from ...ccguard import cc_cwnd, cc_rate
import numpy as np

from ...wheel import wheel_armed, wheel_cancel, wheel_schedule
from ...ccshm import CTL_PROBE_DOORBELL, EV_INT
from ...lowlevel import copy_bytes, prefetch_bytes
from ...ports.dispatch import port_rx_pending
from ...wire import spec as S
from ...wire.codec import set_field, write_prologue, zero_bytes
from ...ccevents import EV_CNP, EV_SRC, MASK_CSIG_SHIFT
from ...wire.csig import csig_start
from .frame import ECN_ECT0, PDS_OFF, frame_csig, frame_l2l4, frame_l2l4_at, frame_new, tx_emit
from .close import flow_free, send_close
from .signals import signal_bound, signal_rto, signal_tx
from .state import (MAX_BACKOFF, C_CLOSE_FAIL, CL_SENT, CL_WANTED, FL_CLOSING, C_RTO_FAIL, C_RTO_FIRE, C_RTO_HELD, C_TX_DATA, C_TX_PROBE, C_TX_RETX, CX_CREDIT, CX_CWND,
                        CX_RATE, FL_BACKOFF, FL_INFL, FL_MAX_INFL, FL_MQ_TAIL, FL_MQ_TX,
                        FL_MSG_OFF, FL_NEXT_T, FL_NIC, FL_NLOST, FL_NXT, FL_PEER_IP,
                        FL_PEER_MAC, FL_ACKED_OFF, FL_POSTED, FL_RETRIES, FL_RETX_SCAN, FL_RPDC,
                        FL_RQ_NEXT, FL_RTO, FL_SCHED, FL_SENT_OFF, FL_START, FL_STATE, FL_EV,
                        FL_T_PACE, FL_T_RTO, FL_TXCAP, FL_TXOFF, FL_UNA, FL_RWND, FL_WBLOCK,
                        FL_WEND, FL_USES_CREDIT, FL_RTO_HELD, FL_FRTO, FL_FRTO_END, FL_EV_I,
                        FL_GEN_END, FL_GEN_ONE, FL_EV_PSN, FS_ACTIVE, FS_FAILED, NR_ACK_DELAY, NR_ACK_REQ,
                        NR_BUDGET, NR_LINE, NR_MSS, NR_PORT,
                        NR_RETRIES, NR_RQ_HEAD, NR_RQ_TAIL, NR_TXFREE, NR_TXTIMER, SCH_IDLE,
                        SCH_QUEUED, SCH_TIMED,
                        SG_FIRST_T, SL_INFL, SL_LOST, SL_RETX)

# sl_off packs the stream offset with what a retransmission must repeat.
SLO_OFF = (np.int64(1) << 46) - 1
SLO_SOM = np.int64(1) << 46
SLO_EOM = np.int64(1) << 47
PROBE_TS_MASK = (np.int64(1) << S.PROBE_TS_BITS) - 1
INT_RESERVE = S.INTTAIL_SIZE + S.INT_MAX_HOPS * S.INTHOP_SIZE
"""Bytes a flow that asks for INT leaves free below the MSS: the tail and
INT_MAX_HOPS hop records, so a frame full of them is no longer than an
MSS-sized frame without."""


@hot
def rq_push(N, n, f):
    N.fl[f, FL_RQ_NEXT] = 0
    tail = N.nr[n, NR_RQ_TAIL]
    if tail == 0:
        N.nr[n, NR_RQ_HEAD] = f
    else:
        N.fl[tail, FL_RQ_NEXT] = f
    N.nr[n, NR_RQ_TAIL] = f
    N.fl[f, FL_SCHED] = SCH_QUEUED


@hot
def rq_pop(N, n):
    f = N.nr[n, NR_RQ_HEAD]
    if f == 0:
        return f
    nx = N.fl[f, FL_RQ_NEXT]
    N.nr[n, NR_RQ_HEAD] = nx
    if nx == 0:
        N.nr[n, NR_RQ_TAIL] = 0
    N.fl[f, FL_SCHED] = SCH_IDLE
    return f


@hot
def wake_flow(N, wheel, f, now):
    """Make an idle flow eligible: queued now, or when its pacer allows.
    (Python callers use this form: handing over the whole engine state costs
    ~25 us a call in argument checks, N and the wheel ~5 us.)"""
    if N.fl[f, FL_SCHED] != SCH_IDLE or N.fl[f, FL_STATE] != FS_ACTIVE:
        return
    if N.fl[f, FL_NEXT_T] <= now:
        rq_push(N, N.fl[f, FL_NIC] - 1, f)
    else:
        wheel_schedule(wheel, N.fl[f, FL_T_PACE], N.fl[f, FL_NEXT_T])
        N.fl[f, FL_SCHED] = SCH_TIMED


@hot
def flow_wake(E, f, now):
    wake_flow(E.nic, E.wheel, f, now)


@hot
def rto_arm(E, f, now, restart):
    N = E.nic
    t = N.fl[f, FL_T_RTO]
    if restart or not wheel_armed(E.wheel, t):
        wheel_schedule(E.wheel, t, now + N.fl[f, FL_RTO] * N.fl[f, FL_BACKOFF])
        N.fl[f, FL_RTO_HELD] = 0


@hot
def _ring_get(ring, base, cap, off, dst, do, ln):
    """Copy ln bytes from stream offset off of the ring at ring[base:base+cap]."""
    s = off % cap
    a = min(ln, cap - s)
    r, d = ring.ctypes.data + base, dst.ctypes.data + do
    copy_bytes(d, r + s, a)         # memcpy: a byte loop costs ~3 cycles a byte
    copy_bytes(d + a, r, ln - a)
    # The flow's next segment, read when the scheduler comes back to it: the
    # app wrote it long ago, so fetch it now rather than stall on it then.
    nx = (off + ln) % cap
    prefetch_bytes(r + nx, min(ln, cap - nx))


@hot
def rwnd_end(N, f):
    """The receiver's window right edge as the sender sees it: optimistic
    (ACKed + the receiver's ring capacity: the app keeps up) until the
    receiver says otherwise with a NO_PKT_BUFFER NACK; then that edge, until
    a window update or an RTO probe (ack.rx_nack, rto_fire)."""
    if N.fl[f, FL_WBLOCK] != 0:
        return N.fl[f, FL_WEND]
    return N.fl[f, FL_ACKED_OFF] + N.fl[f, FL_RWND]


@hot
def csig_req(E, f):
    """The CSIG tag flow f's algorithm asks its data packets to carry (the
    request bits of its event mask, ccevents.MASK_CSIG_SHIFT): (fmt << 4) |
    wire type, 0 none."""
    return (E.rep.mask[f] >> MASK_CSIG_SHIFT) & 0x3F


@hot
def csig_bytes(req):
    """The bytes a CSIG request adds to a frame (TPID and tag)."""
    fmt = req >> 4
    if fmt == S.CSIG_COMPACT:
        return np.int64(S.CSIGC_SIZE)
    if fmt == S.CSIG_WIDE:
        return np.int64(S.CSIGW_SIZE)
    return np.int64(0)


@hot
def flow_ev(E, N, f):
    """The entropy value of f's next data packet, as its algorithm decided
    (ccshm ev, ev_n): no decision (both 0), the flow's own FL_EV; ev_n 0,
    ev from now on; ev_n > 0, ev .. ev+ev_n-1 in turn (spray); ev_n -1, a
    new value now, the next of a full-period sequence over 0xC000..0xFFFF
    (so never the one in use), after which ev holds it and ev_n is 0."""
    R = E.rep
    k = R.ev_n[f]
    if k == 0:
        if R.ev[f] != 0:
            N.fl[f, FL_EV] = R.ev[f] & 0xFFFF
        return N.fl[f, FL_EV]
    if k < 0:
        e = 0xC000 | ((N.fl[f, FL_EV] * 40501 + 11135) & 0x3FFF)
        N.fl[f, FL_EV] = e
        N.fl[f, FL_EV_PSN] = N.fl[f, FL_NXT]     # packets before it took the old path
        R.ev[f] = e
        R.ev_n[f] = 0
        return e
    j = N.fl[f, FL_EV_I] % k
    N.fl[f, FL_EV_I] = j + 1
    return (R.ev[f] + j) & 0xFFFF


@hot
def _data_frame(E, n, f, p, slo, ln, retx, now):
    """Build and queue the data packet of PSN p; returns its frame length or
    -1.  Headers in wire order: a CSIG tag if the flow's algorithm asks for
    one (started at its best value: csig_start), PDS request, probe (the
    RTT timestamp), SES, then the payload from the flow's send ring; an INT
    tail after the IP datagram when the flow's algorithm binds INT."""
    N = E.nic
    cc = N.fl[f, FL_USES_CREDIT] != 0
    plen = S.RUD_CC_REQ_SIZE if cc else S.RUD_REQ_SIZE
    req = csig_req(E, f)
    sh = csig_bytes(req)
    q = PDS_OFF + sh
    pr = q + plen
    ses = pr + S.PROBE_SIZE
    pay = ses + S.SES_STD_SIZE
    total = pay + ln
    i = frame_new(E, n, pay)
    if i < 0:
        return -1
    frame_l2l4_at(E, n, i, N.fl[f, FL_PEER_MAC], N.fl[f, FL_PEER_IP], flow_ev(E, N, f),
                  ECN_ECT0, total, sh)
    buf = E.pool.data[i]
    if sh > 0:
        t = req & 0xF
        frame_csig(N, buf, t, req >> 4, csig_start(t, req >> 4))
    off = slo & SLO_OFF
    _data_pds(E, N, n, f, buf, q, p, slo, off, ln, cc, retx)
    set_field(buf, pr, S.PROBE_MODE, S.PROBE_DATA)
    set_field(buf, pr, S.PROBE_TS, now & PROBE_TS_MASK)
    set_field(buf, pr, S.PROBE_SEQ, p & 0xFF)
    _data_ses(buf, ses, slo, off)
    _ring_get(N.txbuf, N.fl[f, FL_TXOFF], N.fl[f, FL_TXCAP], off, buf, pay, ln)
    if signal_bound(E, f, EV_INT):
        total = _int_ask(E, i, buf, total)
    tx_emit(E, n, i, now)
    return total


@hot
def _int_ask(E, i, buf, total):
    """Ask the switches for INT: an INTTail with no hops after the IP
    datagram (wire/spec.py); returns the frame's new length."""
    zero_bytes(buf, total, S.INTTAIL_SIZE)
    set_field(buf, total, S.INTTAIL_MAGIC, S.INT_MAGIC)
    set_field(buf, total, S.INTTAIL_NHOP, 0)
    set_field(buf, total, S.INTTAIL_MAX_HOP, S.INT_MAX_HOPS)
    total += S.INTTAIL_SIZE
    E.pool.length[i] = total
    return total


@hot_stage
def _data_pds(E, N, n, f, buf, q, p, slo, off, ln, cc, retx):
    """The PDS request: RUD_REQ, or RUD_CC_REQ with the backlog for a credit
    flow; SYN with pdc_info until the receiver's PDC id is known; NP when
    the flow's algorithm binds CNP (the receiver is its notification point);
    SRC when it binds SRC (switches send Bolt's SRC for it)."""
    syn = N.fl[f, FL_RPDC] == 0
    flags = S.F_TP
    if (E.rep.mask[f] >> EV_CNP) & 1:
        flags |= S.F_REQ_NP
    if (E.rep.mask[f] >> EV_SRC) & 1:
        flags |= S.F_REQ_SRC             # a congested switch may answer with SRC (Bolt)
    if retx:
        flags |= S.F_RETX
    # Ask for an immediate ACK where waiting for coalescing would stall us:
    # end of a message, a retransmission, or the last posted byte.
    if retx or _message_end(N, f, slo, off + ln) or off + ln >= N.fl[f, FL_POSTED] \
            or _ack_req(E, N, n, f, p):
        flags |= S.F_AR
    if syn:
        flags |= S.F_SYN
    write_prologue(buf, q, S.T_RUD_CC_REQ if cc else S.T_RUD_REQ, S.NH_SES_STD, flags)
    set_field(buf, q, S.RUD_REQ_PSN, p & 0xFFFFFFFF)
    set_field(buf, q, S.RUD_REQ_SPDCID, f)
    if syn:   # pdc_info: the receiver learns our start PSN from psn - psn_offset
        set_field(buf, q, S.RUD_REQ_PSN_OFFSET, (p - N.fl[f, FL_START]) & 0xFFF)
    else:
        set_field(buf, q, S.RUD_REQ_DPDCID, N.fl[f, FL_RPDC])
    if cc:    # backlog = bytes not yet acknowledged, in credit units
        backlog = N.fl[f, FL_POSTED] - N.fl[f, FL_ACKED_OFF]
        units = (backlog + S.CREDIT_UNIT_BYTES - 1) // S.CREDIT_UNIT_BYTES
        set_field(buf, q, S.RUD_CC_REQ_CCC_ID, f & 0xFF)
        set_field(buf, q, S.RUD_CC_REQ_CREDIT_TARGET, min(units, 0xFFFFFF))


@hot_stage
def _message_end(N, f, slo, end):
    """Whether the packet ending at stream offset `end` ends a message the
    app sees: an EOM, unless it ends a piece the generator cut from one
    finite transfer (gen.py, FL_GEN_ONE)."""
    if (slo & SLO_EOM) == 0:
        return False
    return N.fl[f, FL_GEN_ONE] == 0 or end >= N.fl[f, FL_GEN_END]


@hot_stage
def _ack_req(E, N, n, f, p):
    """Every (window / NR_ACK_REQ)-th packet asks for an ACK: a window-limited
    flow then gets NR_ACK_REQ ACKs per window however much the receiver
    coalesces (TCP's every-other-segment ACK, per window rather than per
    segment), so coalescing by count and delay can be coarse without
    stalling the window.  The window: the least of what bounds the bytes in
    flight, the congestion window, the receiver's (its ring), the flow's
    send ring and its PSN window."""
    k = N.nr[n, NR_ACK_REQ]
    if k <= 0:
        return False
    mss = N.nr[n, NR_MSS]
    w = min(N.fl[f, FL_TXCAP], N.sl_state.shape[1] * mss)
    cwnd = cc_cwnd(E, f, N.ctx[f, CX_CWND])
    if 0 < cwnd < w:
        w = cwnd
    if 0 < N.fl[f, FL_RWND] < w:
        w = N.fl[f, FL_RWND]
    step = max(np.int64(1), w // (k * mss))
    return (p - N.fl[f, FL_START]) % step == 0


@hot_stage
def _data_ses(buf, ses, slo, off):
    """The SES standard header: a write of the message's bytes at `off`."""
    sflags = 0
    if slo & SLO_SOM:
        sflags |= S.SF_SOM
    if slo & SLO_EOM:
        sflags |= S.SF_EOM
    set_field(buf, ses, S.SES_STD_OPCODE, S.SES_WRITE)
    set_field(buf, ses, S.SES_STD_FLAGS, sflags)
    set_field(buf, ses, S.SES_STD_MESSAGE_ID, (slo >> 48) & 0xFFFF)
    set_field(buf, ses, S.SES_STD_BUFFER_OFFSET, off)


@hot
def send_probe(E, n, f, now):
    """An independent probe packet (TAURUS §3.3, "on software-initiated
    commands"): a CONTROL PROBE with our timestamp; the receiver answers at
    once with an ACK echoing it, so an RTT sample comes back even while the
    flow has nothing to send.  Needs the receiver's PDC id (known from the
    first ACK); returns 1 if sent."""
    N = E.nic
    if N.fl[f, FL_STATE] != FS_ACTIVE or N.fl[f, FL_RPDC] == 0:
        return 0
    q = PDS_OFF
    pr = q + S.CONTROL_SIZE
    total = pr + S.PROBE_SIZE
    i = frame_new(E, n, total)
    if i < 0:
        return 0
    frame_l2l4(E, n, i, N.fl[f, FL_PEER_MAC], N.fl[f, FL_PEER_IP], N.fl[f, FL_EV], ECN_ECT0,
               total)
    buf = E.pool.data[i]
    write_prologue(buf, q, S.T_CONTROL, S.CTL_PROBE, S.F_TP)
    set_field(buf, q, S.CONTROL_PSN, N.fl[f, FL_NXT] & 0xFFFFFFFF)
    set_field(buf, q, S.CONTROL_SPDCID, f)
    set_field(buf, q, S.CONTROL_DPDCID, N.fl[f, FL_RPDC])
    set_field(buf, pr, S.PROBE_MODE, S.PROBE_REQ)
    set_field(buf, pr, S.PROBE_TS, now & PROBE_TS_MASK)
    set_field(buf, pr, S.PROBE_SEQ, N.fl[f, FL_NXT] & 0xFF)
    tx_emit(E, n, i, now)
    N.ncnt[n, C_TX_PROBE] += 1
    return 1


@hot
def probe_commands(E, n, now):
    """Probe packets the agent asked for: it sets cc.probe[flow] to 1 and
    rings ctl[CTL_PROBE_DOORBELL].  On a new ring every flagged flow of NIC n
    gets one probe packet and the flag becomes 2 (sent); report.report_rtt
    clears it when the echoed sample goes to the agent.  A flow that cannot
    be probed yet (no ACK seen) keeps 1 and waits for its next RTT sample."""
    R = E.rep
    bell = R.ctls[n, CTL_PROBE_DOORBELL]
    if bell == R.probe_seen[n]:
        return 0
    R.probe_seen[n] = bell
    N = E.nic
    sent = 0
    for f in range(1, N.fl.shape[0]):
        if R.probe[f] == 1 and N.fl[f, FL_NIC] == n + 1 and send_probe(E, n, f, now):
            R.probe[f] = 2
            sent += 1
    return sent


@hot
def _window_ok(E, N, f, ln):
    cwnd = cc_cwnd(E, f, N.ctx[f, CX_CWND])   # the agent's window, else the flow's
    infl = N.fl[f, FL_INFL]
    return cwnd <= 0 or infl == 0 or infl + ln <= cwnd


@hot
def send_one(E, n, f, now):
    """One packet of flow f if its gates allow: a lost packet first, else
    new data.  Returns 1 when a packet left.  The stages are hot_stage
    (inlined: this is still one function); they take what is loaded here
    rather than load it again after a call."""
    N = E.nic
    if N.fl[f, FL_STATE] != FS_ACTIVE:
        return 0
    W = N.sl_state.shape[1]
    msk = W - 1
    una = N.fl[f, FL_UNA]
    nxt = N.fl[f, FL_NXT]
    if N.fl[f, FL_NLOST] > 0:
        p = _first_lost(N, f, una, nxt, msk)
        if p < nxt:
            return _send_retx(E, N, n, f, p, msk, now)
        N.fl[f, FL_NLOST] = 0            # nothing left to repair
    if (N.fl[f, FL_CLOSING] == CL_WANTED and una >= nxt
            and N.fl[f, FL_ACKED_OFF] >= N.fl[f, FL_POSTED]):
        return _close_now(E, N, n, f, nxt, now)
    return _send_new(E, N, n, f, una, nxt, W, now)


@hot_stage
def _close_now(E, N, n, f, nxt, now):
    """Everything is acknowledged and the app asked to close: CLOSE (close.py),
    repeated by the RTO until acknowledged; a flow that never sent is freed
    at once.  1 if a packet left."""
    if N.fl[f, FL_RPDC] == 0 and nxt == N.fl[f, FL_START]:
        flow_free(E, n, f)
        return 0
    if send_close(E, n, f, now) == 0:
        return 0
    N.fl[f, FL_CLOSING] = CL_SENT
    N.fl[f, FL_RETRIES] = 0
    rto_arm(E, f, now, True)
    return 1


@hot_stage
def _first_lost(N, f, una, nxt, msk):
    """The first lost PSN from the retransmission scan on (nxt: none)."""
    p = max(N.fl[f, FL_RETX_SCAN], una)
    while p < nxt and N.sl_state[f, p & msk] != SL_LOST:
        p += 1
    N.fl[f, FL_RETX_SCAN] = p
    return p


@hot_stage
def _send_retx(E, N, n, f, p, msk, now):
    """Resend lost PSN p if the window gates allow; 1 if it left.  The one
    packet a timeout resends (rto_fire) passes the congestion window, as
    TCP's does: the window an algorithm cut on the timeout may be smaller
    than what is still counted in flight, which only the reply to that
    packet sorts out (F-RTO)."""
    ln = np.int64(N.sl_len[f, p & msk])
    if p + 1 != N.fl[f, FL_FRTO] and not _window_ok(E, N, f, ln):
        return 0
    if (N.sl_off[f, p & msk] & SLO_OFF) + ln > rwnd_end(N, f):
        return 0
    total = _data_frame(E, n, f, p, N.sl_off[f, p & msk], ln, True, now)
    if total < 0:
        return 0
    N.sl_state[f, p & msk] = SL_RETX
    N.fl[f, FL_NLOST] -= 1
    N.fl[f, FL_INFL] += ln
    N.ncnt[n, C_TX_RETX] += 1
    _sent(E, n, f, ln, total, True, now)
    return 1


@hot_stage
def _send_new(E, N, n, f, una, nxt, W, now):
    """New data, cut at the MSS and at the end of the current message, if
    the gates allow; 1 if it left."""
    off = N.fl[f, FL_SENT_OFF]
    if off >= N.fl[f, FL_POSTED] or nxt - una >= W:
        return 0
    M = N.mq.shape[1]
    k = _message_at(N, f, off, M)
    end = N.mq[f, k % M, 0]
    # a CSIG tag takes its bytes from the payload, and so does room for the
    # INT records switches add: frames stay within the MTU
    mss = N.nr[n, NR_MSS] - csig_bytes(csig_req(E, f))
    if signal_bound(E, f, EV_INT):
        mss -= INT_RESERVE
    ln = min(mss, end - off)
    if not _new_gates(E, N, f, off, ln, una, nxt, now):
        return 0
    slo = _new_slo(N, f, off, ln, end, N.mq[f, k % M, 1])
    total = _data_frame(E, n, f, nxt, slo, ln, False, now)
    if total < 0:
        return 0
    _new_slot(N, n, f, nxt & (W - 1), nxt, slo, off, ln, now)
    _sent(E, n, f, ln, total, False, now)
    return 1


@hot_stage
def _message_at(N, f, off, M):
    """The message queue entry (of M per flow) holding stream offset off:
    FL_MQ_TX moves up to it, FL_MSG_OFF is where it starts."""
    k = N.fl[f, FL_MQ_TX]
    while k < N.fl[f, FL_MQ_TAIL] and N.mq[f, k % M, 0] <= off:
        N.fl[f, FL_MSG_OFF] = N.mq[f, k % M, 0]
        k += 1
    N.fl[f, FL_MQ_TX] = k
    return k


@hot_stage
def _new_gates(E, N, f, off, ln, una, nxt, now):
    """Window, receiver window and credit allow ln new bytes at off."""
    if not _window_ok(E, N, f, ln):
        return False
    if off + ln > rwnd_end(N, f):
        if N.fl[f, FL_WBLOCK] != 0 and una >= nxt:
            rto_arm(E, f, now, False)    # persist: the RTO probes a closed window
        return False
    if N.fl[f, FL_USES_CREDIT] != 0 and off + ln > N.ctx[f, CX_CREDIT]:
        return False
    return True


@hot_stage
def _new_slo(N, f, off, ln, end, msg_id):
    """The slot's sl_off: offset, message id, start and end of message."""
    slo = off | ((msg_id & 0xFFFF) << 48)
    if off == N.fl[f, FL_MSG_OFF]:
        slo |= SLO_SOM
    if off + ln == end:
        slo |= SLO_EOM
    return slo


@hot_stage
def _new_slot(N, n, f, s, nxt, slo, off, ln, now):
    """Account a new packet sent as PSN nxt (slot s)."""
    N.sl_state[f, s] = SL_INFL
    N.sl_off[f, s] = slo
    N.sl_len[f, s] = ln
    N.sl_t[f, s] = now           # per-packet RTT (ack.py: _rtt_packet)
    N.fl[f, FL_NXT] = nxt + 1
    N.fl[f, FL_SENT_OFF] = off + ln
    N.fl[f, FL_INFL] += ln
    if N.fl[f, FL_INFL] > N.fl[f, FL_MAX_INFL]:
        N.fl[f, FL_MAX_INFL] = N.fl[f, FL_INFL]
    N.ncnt[n, C_TX_DATA] += 1
    if off == 0:
        N.sig[f, SG_FIRST_T] = now


@hot
def _sent(E, n, f, ln, total, retx, now):
    """After any data packet: pacing account, RTO, signal."""
    N = E.nic
    rate = cc_rate(E, f, N.ctx[f, CX_RATE])  # the agent's rate, else the flow's; fallback caps
    if rate > 0:
        start = max(N.fl[f, FL_NEXT_T], now)
        N.fl[f, FL_NEXT_T] = start + (np.int64(total) * 8_000_000_000 + rate // 2) // rate
    rto_arm(E, f, now, False)
    signal_tx(E, N, f, ln, retx, N.fl[f, FL_INFL], now)


@hot
def tx_schedule(E, n, now):
    """Serve the ready list while the line is free; returns packets sent."""
    N = E.nic
    sent = 0
    while sent < N.nr[n, NR_BUDGET]:
        if N.nr[n, NR_LINE] > 0 and N.nr[n, NR_TXFREE] > now:
            if N.nr[n, NR_RQ_HEAD] != 0:
                wheel_schedule(E.wheel, N.nr[n, NR_TXTIMER], N.nr[n, NR_TXFREE])
            break
        f = rq_pop(N, n)
        if f == 0:
            break
        if send_one(E, n, f, now):
            sent += 1
            flow_wake(E, f, now)
    return sent


@hot
def rto_expired(E, n, f, timer, now):
    """f's retransmission timer expired.  If feedback already waits unread at
    the port, the loop was held up past the deadline (on the wall clock: the
    app's Python between run chunks); hold the timeout for one pass so that
    feedback is read first, as a NIC would have read it on arrival.  If it
    fired after its deadline (wall clock: the loop was away, and so was a
    peer in this engine, whose delayed ACK is due now too and leaves at the
    end of this pass), hold it one ACK delay (NR_ACK_DELAY: NICs are
    configured alike), as QUIC's PTO allows the peer's max_ack_delay.
    Held at most once per arming, so a port that never drains cannot defer
    it.  (The virtual clock fires timers on time: no hold.)"""
    N = E.nic
    if N.fl[f, FL_RTO_HELD] == 0:
        late = now > E.wheel.due[timer]
        if late or port_rx_pending(E.ports, N.nr[n, NR_PORT], now):
            N.fl[f, FL_RTO_HELD] = 1
            N.ncnt[n, C_RTO_HELD] += 1
            wheel_schedule(E.wheel, timer, now + (N.nr[n, NR_ACK_DELAY] if late else 0))
            return 1
    N.fl[f, FL_RTO_HELD] = 0
    return rto_fire(E, n, f, now)


@hot
def rto_fire(E, n, f, now):
    """Retransmission timeout: resend the oldest packet in flight, back off
    exponentially, give up (counted) after NR_RETRIES in a row.  As in
    F-RTO (RFC 5682) the rest is not resent yet: the first ACK to advance
    tells a peer that was only late (it acknowledges more than the resent
    packet, or SACKs more) from a lost tail, which rx_ack then resends.  A
    peer that is a process on a shared CPU is often late by more than the
    RTO; resending the whole window each time would double the traffic."""
    N = E.nic
    if N.fl[f, FL_STATE] != FS_ACTIVE:
        return 0
    if N.fl[f, FL_CLOSING] == CL_SENT:
        return _close_retry(E, N, n, f, now)
    if N.fl[f, FL_UNA] >= N.fl[f, FL_NXT]:
        if N.fl[f, FL_WBLOCK] != 0:     # persist timer of a closed window
            N.fl[f, FL_WBLOCK] = 0
            N.fl[f, FL_BACKOFF] = min(N.fl[f, FL_BACKOFF] * 2, MAX_BACKOFF)
            flow_wake(E, f, now)
            return 1
        return 0
    probe = N.fl[f, FL_WBLOCK] != 0
    N.fl[f, FL_WBLOCK] = 0              # probe the receiver's window optimistically
    N.ncnt[n, C_RTO_FIRE] += 1
    signal_rto(E, N, f, N.fl[f, FL_UNA], now)
    if not probe:                       # a full receiver is alive: not a failure
        N.fl[f, FL_RETRIES] += 1
    if N.fl[f, FL_RETRIES] > N.nr[n, NR_RETRIES]:
        N.fl[f, FL_STATE] = FS_FAILED
        N.ncnt[n, C_RTO_FAIL] += 1
        wheel_cancel(E.wheel, N.fl[f, FL_T_PACE])
        return 1
    msk = N.sl_state.shape[1] - 1
    una = N.fl[f, FL_UNA]
    st = N.sl_state[f, una & msk]
    if st == SL_INFL or st == SL_RETX:
        N.sl_state[f, una & msk] = SL_LOST
        N.fl[f, FL_INFL] -= N.sl_len[f, una & msk]
        N.fl[f, FL_NLOST] += 1
    N.fl[f, FL_RETX_SCAN] = una
    if N.fl[f, FL_FRTO] == 0:
        N.fl[f, FL_FRTO] = una + 1                  # the resent packet, + 1
        N.fl[f, FL_FRTO_END] = N.fl[f, FL_NXT]      # what was in flight then
    N.fl[f, FL_BACKOFF] = min(N.fl[f, FL_BACKOFF] * 2, MAX_BACKOFF)
    rto_arm(E, f, now, True)
    flow_wake(E, f, now)
    return 1



@hot
def _close_retry(E, N, n, f, now):
    """Flow f's CLOSE went unanswered for an RTO: again, backed off; after
    NR_RETRIES the flow is freed anyway (counted)."""
    N.fl[f, FL_RETRIES] += 1
    if N.fl[f, FL_RETRIES] > N.nr[n, NR_RETRIES]:
        N.ncnt[n, C_CLOSE_FAIL] += 1
        flow_free(E, n, f)
        return 1
    send_close(E, n, f, now)
    N.fl[f, FL_BACKOFF] = min(N.fl[f, FL_BACKOFF] * 2, MAX_BACKOFF)
    rto_arm(E, f, now, True)
    return 1
