"""App -> NIC submissions: the per-NIC SQ, polled once per NIC poll.

An app (another process, or Python in the engine's process) writes message
bytes into its flow's tx ring, then submits OP_SEND (the stream now ends
at SQ_END); after consuming received bytes it submits OP_READ (the PDC's
stream is consumed up to SQ_END), which frees receive ring space.
OP_CLOSE closes a flow once its data is acknowledged, OP_REQ_CLOSE asks a
receive PDC's sender to close (close.py).  Entries that break the contract (unknown flow, a stream end going backwards, more
than the ring or the message queue holds) are counted as ``sq_bad`` and
ignored; a head more than the ring's size ahead is garbage: everything up
to it is skipped, counted once.  An empty SQ costs one acquire load.
"""
from ...hot import hot  # compiled without reference counting (the hot path)
import numpy as np

from ...lowlevel import load_acquire_u64, store_release_u64
from ...wire import spec as S
from .close import flow_free, send_req_close
from .rx import send_nack
from .state import (FS_CLOSED, FS_FAILED, CL_NONE, CL_WANTED, FL_CLOSING, FS_ACTIVE, OP_CLOSE, OP_REQ_CLOSE, C_SQ_BAD, C_TX_WINDOW_UPDATE, FL_ACKED_OFF, FL_MQ_DONE, FL_MQ_TAIL,
                        FL_NIC, FL_POSTED, FL_STATE, FL_TXCAP, FS_FREE, M_NFL, M_NRP, N_QC,
                        OP_READ, OP_SEND, QC_SQ_HEAD, QC_SQ_TAIL, RP_BUFCAP, RP_DELIV, RP_NIC,
                        RP_NXT, RP_READ, RP_WADV, RP_WBLOCK, SQ_END, SQ_ID, SQ_MSG, SQ_OP)
from .tx import flow_wake

SQ_BUDGET = 64   # entries per poll: the SQ cannot starve the packet path


@hot
def app_send(E, n, f, end, msg, now):
    """Flow f's stream now ends at `end`: one more message.  False = refused."""
    N = E.nic
    if (f <= 0 or f > N.meta[M_NFL] or N.fl[f, FL_NIC] != n + 1 or N.fl[f, FL_STATE] == FS_FREE
            or N.fl[f, FL_STATE] == FS_CLOSED or N.fl[f, FL_CLOSING] != CL_NONE):
        return False
    M = N.mq.shape[1]
    tail = N.fl[f, FL_MQ_TAIL]
    if (end <= N.fl[f, FL_POSTED] or end - N.fl[f, FL_ACKED_OFF] > N.fl[f, FL_TXCAP]
            or tail - N.fl[f, FL_MQ_DONE] >= M):
        return False
    N.mq[f, tail % M, 0] = end
    N.mq[f, tail % M, 1] = msg & 0xFFFF
    N.fl[f, FL_POSTED] = end
    N.fl[f, FL_MQ_TAIL] = tail + 1
    flow_wake(E, f, now)
    return True


@hot
def app_read(E, n, r, pos, now):
    """The app consumed PDC r's stream up to `pos`.  If we refused data for
    want of space, tell the sender the new window edge once half the ring
    is free again or the app has caught up (a NACK NO_PKT_BUFFER marked as
    an update; a lost update is repaired by the sender's RTO probe)."""
    N = E.nic
    if r <= 0 or r > N.meta[M_NRP] or N.rp[r, RP_NIC] != n + 1:
        return False
    if pos < N.rp[r, RP_READ] or pos > N.rp[r, RP_DELIV]:
        return False
    N.rp[r, RP_READ] = pos
    cap = N.rp[r, RP_BUFCAP]
    edge = pos + cap
    if N.rp[r, RP_WBLOCK] != 0 and (edge - N.rp[r, RP_WADV] >= cap // 2
                                    or pos == N.rp[r, RP_DELIV]):
        send_nack(E, n, r, N.rp[r, RP_NXT], S.NACK_NO_PKT_BUFFER, S.NACK_VC_WINDOW_UPDATE,
                  edge, now)
        N.ncnt[n, C_TX_WINDOW_UPDATE] += 1
        N.rp[r, RP_WADV] = edge
        if pos == N.rp[r, RP_DELIV]:
            N.rp[r, RP_WBLOCK] = 0
    return True


@hot
def app_close(E, n, f, now):
    """Close flow f once everything posted is acknowledged (close.py); a
    failed one (retransmissions exhausted: no CLOSE would be acknowledged)
    is freed at once, its peer's PDC left to the idle rules (rx._pdc_of)."""
    N = E.nic
    if f <= 0 or f > N.meta[M_NFL] or N.fl[f, FL_NIC] != n + 1:
        return False
    if N.fl[f, FL_STATE] == FS_FAILED:
        flow_free(E, n, f)
        return True
    if N.fl[f, FL_STATE] != FS_ACTIVE:
        return False
    if N.fl[f, FL_CLOSING] == CL_NONE:
        N.fl[f, FL_CLOSING] = CL_WANTED
    flow_wake(E, f, now)
    return True


@hot
def app_req_close(E, n, r, now):
    """Ask the sender of receive PDC r to close (REQ_CLOSE)."""
    N = E.nic
    if r <= 0 or r > N.meta[M_NRP] or N.rp[r, RP_NIC] != n + 1:
        return False
    send_req_close(E, n, r, now)
    return True


@hot
def sq_poll(E, n, now):
    """Serve up to SQ_BUDGET submissions of NIC n; returns how many."""
    N = E.nic
    b = n * N_QC
    tail = N.qc[b + QC_SQ_TAIL]
    head = load_acquire_u64(N.qc, b + QC_SQ_HEAD)
    k = np.int64(head - tail)
    if k <= 0:
        return 0
    msk = N.sq.shape[1] - 1
    if k > msk + 1:                  # more than the ring holds: the head is garbage
        N.ncnt[n, C_SQ_BAD] += 1     # skip it all (else every poll has "work" forever)
        store_release_u64(N.qc, b + QC_SQ_TAIL, head)
        return 1
    k = min(k, SQ_BUDGET)
    for j in range(k):
        s = (np.int64(tail) + j) & msk
        op = N.sq[n, s, SQ_OP]
        ok = False
        if op == OP_SEND:
            ok = app_send(E, n, N.sq[n, s, SQ_ID], N.sq[n, s, SQ_END], N.sq[n, s, SQ_MSG], now)
        elif op == OP_READ:
            ok = app_read(E, n, N.sq[n, s, SQ_ID], N.sq[n, s, SQ_END], now)
        elif op == OP_CLOSE:
            ok = app_close(E, n, N.sq[n, s, SQ_ID], now)
        elif op == OP_REQ_CLOSE:
            ok = app_req_close(E, n, N.sq[n, s, SQ_ID], now)
        if not ok:
            N.ncnt[n, C_SQ_BAD] += 1
    store_release_u64(N.qc, b + QC_SQ_TAIL, tail + np.uint64(k))
    return k
