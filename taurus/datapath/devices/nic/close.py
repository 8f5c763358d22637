"""PDC close: the CLOSE / REQ_CLOSE exchange, and freeing the rows of a
closed connection for reuse.

The initiator (sender) closes: once its app asked (OP_CLOSE, or the
target's REQ_CLOSE) and everything posted is acknowledged, tx.send_one
sends a CONTROL CLOSE carrying the next PSN (FL_NXT, never used for data).
The target answers with a plain ACK whose cack_psn is that PSN once every
PSN before it arrived, and closes its receive PDC; the ACK frees the
sender's flow (ack.rx_ack).  A lost CLOSE or ACK is repaired by the
sender's RTO (a CLOSE for a PDC already closed is answered again: closing
is idempotent); after NR_RETRIES unanswered CLOSEs the flow is freed anyway
(counted as close_fail).  A flow that never sent anything is freed at once.
The target asks the initiator to close with a CONTROL REQ_CLOSE
(OP_REQ_CLOSE); the initiator closes once its data is acknowledged.

Closed and freed rows (state.py): a closed receive PDC leaves the
active-sender table (LEAVE reason 0) and waits (RP_CLOSED), taking no more
data, with its hash entry, so late duplicates of its connection's packets
are dropped; the sender's next connection on the same PDC id (a later
start PSN, or an earlier one once the PDC has been silent for
pdc_linger_ns: a restarted sender; rx._pdc_of) frees it: it leaves the
PDC hash (backward-shift delete) and goes on the free list M_RP_FREE,
keeping its receive ring and ACK timer.  A flow becomes FS_CLOSED, keeping its send ring and timers,
until setup.add_flow reuses it.  So a host opening and closing connections
keeps every per-connection table bounded by the connections open at once
(a receiver: by the PDC ids its senders use).

Idle receive PDCs (pdc_reclaim): a SYN from a new source opens a PDC, and
one that nobody closes would hold its row for ever (a SYN flood from random
sources fills the tables); a closed PDC whose sender never opens another
connection on its PDC id would wait for ever too.  When the tables are
full, a new PDC takes the row of the PDC silent longest among those silent
for at least ``pdc_idle_ns`` (open: no data), ``pdc_linger_ns`` (closed:
nothing since its CLOSE) or HALFOPEN_RTOS initial RTOs (half-open: one
packet, with SYN, so its source never showed it heard our ACK: a flood's
spoofed address, or a sender that has timed out by then; state.py:
RP_EST), counted as pdc_idle_close (and the half-open ones as pdc_halfopen_close); otherwise
the new one is refused (drop_no_pdc) and its sender's RTO repeats the SYN.
So a flood holds the tables only while it sends faster than rows / (8 RTOs)
(docs/SECURITY.md), and established connections keep their rows.

pdc_idle_ns = NR_RETRIES x MAX_BACKOFF x max(NR_RTO_INIT, NR_RTO_MIN)
(15 x 1024 x 200 us = 3.07 s by default) is longer than a sender whose RTO
is at most the initial one retransmits before it gives up (about 1.4 s),
so an open PDC silent that long has no live sender with anything in
flight, and what it holds out of order will never be completed.  Only
under pressure: a PDC whose sender was merely quiet (its app sent nothing)
keeps its row while there is room; if it was reclaimed, that sender's next
packet is refused (drop_wrong_pdc) until its RTO gives up, and delivered
bytes its app had not read are gone (the row's RP_GEN changed).

pdc_linger_ns = CLOSED_LINGER_RTOS x max(NR_RTO_INIT, NR_RTO_MIN) (8 x
200 us = 1.6 ms by default): a sender closes once every packet it sent is
acknowledged, so a late duplicate of a closed connection is a copy the
network held for longer than 8 of the sender's RTOs (which are meant to
cover the path's round trip); a receiver busy with short connections gets
its closed PDCs' rows back that soon, not after pdc_idle_ns.
"""
from ...hot import hot  # compiled without reference counting (the hot path)
from ...wheel import wheel_cancel
from ...wire import spec as S
from ...wire.codec import get_field, set_field, write_prologue
from ...wire.desc import (D_DPDCID, D_IP_SRC, D_PDS_FLAGS, D_PDS_NEXT, D_PDS_OFF, D_PSN,
                          D_SPDCID)
from .frame import ECN_ECT0, PDS_OFF, frame_l2l4, frame_new, send_control, tx_emit
from .rxcc import rx_cc_close
from .state import (C_PDC_HALFOPEN_CLOSE, C_PDC_IDLE_CLOSE, MAX_BACKOFF, NR_RETRIES,
                    NR_RTO_INIT, NR_RTO_MIN, NR_RXCAP, RP_EST, RP_LAST_T,
                    C_DROP_PSN_OOR, C_DROP_WRONG_PDC, C_FLOW_CLOSE, C_PDC_CLOSE, C_RX_CLOSE,
                    C_TX_ACK, C_TX_CLOSE, CL_NONE, CL_WANTED, FL_CLOSING, FL_NIC, FL_PEER_IP,
                    FL_PEER_MAC, FL_EV, FL_NXT, FL_RPDC, FL_SCHED, FL_STATE, FL_T_PACE, FL_T_RTO,
                    FS_ACTIVE, FS_CLOSED, M_FL_CLOSED, M_NRP, M_RP_FREE, RP_BUFCAP, RP_BUFOFF,
                    RP_EV, RP_FREE_NEXT, RP_GEN, RP_NIC, RP_NXT, RP_PEER_IP, RP_PEER_MAC,
                    RP_PEER_PDC, RP_T_ACK, RP_CLOSED, SCH_TIMED, SCH_IDLE, psn_recon, rx_forget)


@hot
def flow_free(E, n, f):
    """Sending flow f's PDC is closed: its timers stop, its algorithm sees
    no more events, its row waits for add_flow (FS_CLOSED)."""
    N = E.nic
    wheel_cancel(E.wheel, N.fl[f, FL_T_PACE])
    wheel_cancel(E.wheel, N.fl[f, FL_T_RTO])
    if N.fl[f, FL_SCHED] == SCH_TIMED:
        N.fl[f, FL_SCHED] = SCH_IDLE
    N.fl[f, FL_STATE] = FS_CLOSED
    N.fl[f, FL_CLOSING] = CL_NONE
    if f < E.alg.flow_alg.shape[0]:
        E.alg.flow_alg[f] = -1
    N.meta[M_FL_CLOSED] += 1
    N.ncnt[n, C_FLOW_CLOSE] += 1


@hot
def pdc_close(E, n, r, now):
    """Receive PDC r's CLOSE arrived: it leaves the active-sender table
    (LEAVE reason 0), its ACK timer stops, and it waits closed (RP_CLOSED,
    state.py) for the sender's next connection on its PDC id."""
    N = E.nic
    rp = N.rp
    rx_cc_close(E, n, r, now)
    if rp[r, RP_T_ACK] > 0:
        wheel_cancel(E.wheel, rp[r, RP_T_ACK] - 1)
    rp[r, RP_CLOSED] = 1
    rp[r, RP_LAST_T] = now               # silent since (pdc_reclaim)
    N.ncnt[n, C_PDC_CLOSE] += 1


@hot
def pdc_free(E, n, r, now):
    """Receive PDC r's row is freed (closed first if it is not): it leaves
    the PDC hash and goes on the free list with its ring and ACK timer."""
    N = E.nic
    rp = N.rp
    if rp[r, RP_CLOSED] == 0:
        pdc_close(E, n, r, now)
    rx_forget(N, n, rp[r, RP_PEER_IP], rp[r, RP_PEER_PDC])
    off, cap, t, gen = rp[r, RP_BUFOFF], rp[r, RP_BUFCAP], rp[r, RP_T_ACK], rp[r, RP_GEN]
    for c in range(rp.shape[1]):
        rp[r, c] = 0
    rp[r, RP_BUFOFF], rp[r, RP_BUFCAP], rp[r, RP_T_ACK], rp[r, RP_GEN] = off, cap, t, gen
    for k in range(N.rs_bits.shape[1]):
        N.rs_bits[r, k] = 0
        N.rs_msg[r, k] = 0
    rp[r, RP_FREE_NEXT] = N.meta[M_RP_FREE]
    N.meta[M_RP_FREE] = r


@hot
def pdc_idle_ns(N, n):
    """How long a receive PDC of NIC n must have received nothing before
    pdc_reclaim may free it (see the module doc)."""
    return max(N.nr[n, NR_RETRIES], 1) * MAX_BACKOFF * max(N.nr[n, NR_RTO_INIT],
                                                           N.nr[n, NR_RTO_MIN], 1)


CLOSED_LINGER_RTOS = 8
"""A closed receive PDC waits out late duplicates this many of its NIC's
initial RTOs before pdc_reclaim may take its row (see the module doc)."""

HALFOPEN_RTOS = 8
"""A half-open receive PDC keeps its row this many initial RTOs of silence:
a legitimate sender's second packet can come that late, its NIC taking
turns among many flows (256 flows of 1 KiB packets at 10 Gbit/s: 0.2 ms a
round).  A flood holds the tables if it sends more than rows / (this x
RTO) SYNs a second (docs/SECURITY.md)."""


@hot
def pdc_linger_ns(N, n):
    """How long a closed receive PDC of NIC n must have been silent before
    pdc_reclaim may free it."""
    return CLOSED_LINGER_RTOS * max(N.nr[n, NR_RTO_INIT], N.nr[n, NR_RTO_MIN], 1)


@hot
def pdc_reclaim(E, n, now):
    """The receive PDC tables are full (a SYN for NIC n found no row): free
    the PDC silent longest whose ring fits NIC n, if it has been silent for
    pdc_wait_ns of its own NIC.  True if one was freed (its row heads the
    free list).  Runs only when the tables are full: a scan of the rows in
    use."""
    N = E.nic
    rp = N.rp
    cap = N.nr[n, NR_RXCAP]
    best, oldest = 0, now
    for r in range(1, N.meta[M_NRP] + 1):
        k = rp[r, RP_NIC] - 1
        if k >= 0 and rp[r, RP_BUFCAP] == cap and rp[r, RP_LAST_T] < oldest:
            if now - rp[r, RP_LAST_T] >= pdc_wait_ns(N, k, r):
                best, oldest = r, rp[r, RP_LAST_T]
    if best == 0:
        return False
    k = rp[best, RP_NIC] - 1
    if rp[best, RP_CLOSED] == 0 and rp[best, RP_EST] == 0:
        N.ncnt[k, C_PDC_HALFOPEN_CLOSE] += 1
    pdc_free(E, k, best, now)
    N.ncnt[k, C_PDC_IDLE_CLOSE] += 1
    return True


@hot
def pdc_wait_ns(N, k, r):
    """How long receive PDC r of NIC k must have been silent before
    pdc_reclaim may take its row: pdc_linger_ns if closed; HALFOPEN_RTOS
    initial RTOs if half-open (one packet, with SYN: its sender never
    showed it heard our ACK; a flood's spoofed source, or a sender that
    timed out itself by then); pdc_idle_ns if open."""
    if N.rp[r, RP_CLOSED] != 0:
        return pdc_linger_ns(N, k)
    if N.rp[r, RP_EST] == 0:
        return HALFOPEN_RTOS * max(N.nr[k, NR_RTO_INIT], N.nr[k, NR_RTO_MIN], 1)
    return pdc_idle_ns(N, k)


@hot
def _control(E, n, mac, ip, ev, ctl, psn, spdcid, dpdcid, now):
    """A CONTROL packet (CLOSE, REQ_CLOSE); returns 1 if it left."""
    if not send_control(E, n, mac, ip, ev, ECN_ECT0, ctl, psn, spdcid, dpdcid, 0, now):
        return 0
    E.nic.ncnt[n, C_TX_CLOSE] += 1
    return 1


@hot
def send_close(E, n, f, now):
    """Flow f's CLOSE, at PSN FL_NXT; returns 1 if it left."""
    N = E.nic
    return _control(E, n, N.fl[f, FL_PEER_MAC], N.fl[f, FL_PEER_IP], N.fl[f, FL_EV],
                    S.CTL_CLOSE, N.fl[f, FL_NXT], f, N.fl[f, FL_RPDC], now)


@hot
def send_req_close(E, n, r, now):
    """Receive PDC r asks its sender to close; returns 1 if it left."""
    rp = E.nic.rp
    return _control(E, n, rp[r, RP_PEER_MAC], rp[r, RP_PEER_IP], rp[r, RP_EV],
                    S.CTL_REQ_CLOSE, rp[r, RP_NXT], r, rp[r, RP_PEER_PDC], now)


@hot
def _close_ack(E, n, mac, ip, ev, psn, spdcid, dpdcid, now):
    """The ACK of a CLOSE: cack_psn = the CLOSE's PSN."""
    total = PDS_OFF + S.ACK_SIZE
    i = frame_new(E, n, total)
    if i < 0:
        return
    frame_l2l4(E, n, i, mac, ip, ev, 0, total)
    buf = E.pool.data[i]
    write_prologue(buf, PDS_OFF, S.T_ACK, S.NH_NONE, 0)
    set_field(buf, PDS_OFF, S.ACK_ACK_PSN_OFFSET, 0)
    set_field(buf, PDS_OFF, S.ACK_CACK_PSN, psn & 0xFFFFFFFF)
    set_field(buf, PDS_OFF, S.ACK_SPDCID, spdcid)
    set_field(buf, PDS_OFF, S.ACK_DPDCID, dpdcid)
    tx_emit(E, n, i, now)
    E.nic.ncnt[n, C_TX_ACK] += 1


@hot
def rx_close(E, n, i, now):
    """CONTROL CLOSE or REQ_CLOSE arrived (frame i, parsed into N.desc);
    returns the flow that now wants to close (the caller wakes it), or 0."""
    N = E.nic
    d = N.desc
    N.ncnt[n, C_RX_CLOSE] += 1
    if d[D_PDS_FLAGS] & S.F_SYN:
        N.ncnt[n, C_DROP_WRONG_PDC] += 1
        return 0
    if d[D_PDS_NEXT] == S.CTL_CLOSE:
        _target_close(E, N, n, i, d, now)
        return 0
    return _initiator_req_close(E, N, n, d, now)


@hot
def _target_close(E, N, n, i, d, now):
    """We are the target: close the PDC once every PSN before the CLOSE's
    arrived, and acknowledge the CLOSE (again, if it is closed already)."""
    r = d[D_DPDCID]
    src = d[D_IP_SRC]
    buf = E.pool.data[i]
    mac = get_field(buf, 0, S.ETH_SRC)
    ev = get_field(buf, d[D_PDS_OFF] - S.UDP_SIZE, S.UDP_SPORT)
    open_ = (0 < r <= N.meta[M_NRP] and N.rp[r, RP_NIC] == n + 1
             and N.rp[r, RP_PEER_IP] == src and N.rp[r, RP_PEER_PDC] == d[D_SPDCID])
    if open_ and N.rp[r, RP_CLOSED] == 0:
        p = psn_recon(d[D_PSN], N.rp[r, RP_NXT])
        if p != N.rp[r, RP_NXT]:                 # data still missing: its sender repairs it
            N.ncnt[n, C_DROP_PSN_OOR] += 1
            return
        pdc_close(E, n, r, now)
    _close_ack(E, n, mac, src, ev, d[D_PSN], r, d[D_SPDCID], now)


@hot
def _initiator_req_close(E, N, n, d, now):
    """We are the initiator and the target asks us to close: flow f closes
    once everything posted is acknowledged (tx.send_one)."""
    f = d[D_DPDCID]
    if (f <= 0 or f >= N.fl.shape[0] or N.fl[f, FL_NIC] != n + 1
            or N.fl[f, FL_STATE] != FS_ACTIVE or N.fl[f, FL_PEER_IP] != d[D_IP_SRC]
            or N.fl[f, FL_RPDC] != d[D_SPDCID]):
        N.ncnt[n, C_DROP_WRONG_PDC] += 1
        return 0
    if N.fl[f, FL_CLOSING] == CL_NONE:
        N.fl[f, FL_CLOSING] = CL_WANTED
    return f
