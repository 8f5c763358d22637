"""Signal collection: the one call site per transport event (DESIGN.md step 4).

Today each signal only updates per-flow accumulators in ``N.sig`` (tests and
``flow_stats`` read them).  The TAURUS report engine will hook in here: every
function below is where an Accumulable / Coalescent / Raw aggregator gets the
event, with ``now`` as its first-arrival timestamp.
"""
import numba as nb

from .nic_state import (SG_ACKED_BYTES, SG_ACKS, SG_CREDIT, SG_CSIG_D, SG_CSIG_LM, SG_CSIG_N,
                        SG_CSIG_S, SG_CSIG_T, SG_ECN, SG_NACK, SG_OOO, SG_RETX, SG_RTO,
                        SG_RTT_LAST, SG_RTT_MIN, SG_RTT_N, SG_RTT_SUM, SG_TRIM, SG_TX_BYTES,
                        SG_TX_PKTS)
from ..wire import spec as S


@nb.njit(cache=True, inline="always")
def signal_ack(N, f, acked_bytes, now):
    """Cumulative or selective ACK freed `acked_bytes` of payload (ACK signal)."""
    N.sig[f, SG_ACKS] += 1
    N.sig[f, SG_ACKED_BYTES] += acked_bytes


@nb.njit(cache=True, inline="always")
def signal_ecn(N, f, now):
    """The receiver echoed CE (ACK M flag)."""
    N.sig[f, SG_ECN] += 1


@nb.njit(cache=True, inline="always")
def signal_ooo(N, f, count, now):
    """The receiver saw `count` more out-of-order packets (ACK ooo_count)."""
    N.sig[f, SG_OOO] += count


@nb.njit(cache=True, inline="always")
def signal_nack(N, f, psn, code, now):
    """A NACK; TRIMMED codes are also the trim signal."""
    N.sig[f, SG_NACK] += 1
    if code == S.NACK_TRIMMED or code == S.NACK_TRIMMED_LASTHOP:
        N.sig[f, SG_TRIM] += 1


@nb.njit(cache=True, inline="always")
def signal_rto(N, f, now):
    N.sig[f, SG_RTO] += 1


@nb.njit(cache=True, inline="always")
def signal_rtt(N, f, rtt, now):
    """One RTT sample (ns) from an echoed per-packet timestamp."""
    N.sig[f, SG_RTT_LAST] = rtt
    if N.sig[f, SG_RTT_N] == 0 or rtt < N.sig[f, SG_RTT_MIN]:
        N.sig[f, SG_RTT_MIN] = rtt
    N.sig[f, SG_RTT_N] += 1
    N.sig[f, SG_RTT_SUM] += rtt


@nb.njit(cache=True, inline="always")
def signal_credit(N, f, credit_bytes, now):
    """New cumulative credit from the receiver (ACK_CC CREDIT)."""
    N.sig[f, SG_CREDIT] = credit_bytes


@nb.njit(cache=True, inline="always")
def signal_csig(N, f, t, s, lm, d, now):
    """A reflected CSIG tag (ACK_CCX)."""
    N.sig[f, SG_CSIG_N] += 1
    N.sig[f, SG_CSIG_T] = t
    N.sig[f, SG_CSIG_S] = s
    N.sig[f, SG_CSIG_LM] = lm
    N.sig[f, SG_CSIG_D] = d


@nb.njit(cache=True, inline="always")
def signal_tx(N, f, nbytes, retx, now):
    """A data packet left (TX counters)."""
    N.sig[f, SG_TX_PKTS] += 1
    N.sig[f, SG_TX_BYTES] += nbytes
    if retx:
        N.sig[f, SG_RETX] += 1
