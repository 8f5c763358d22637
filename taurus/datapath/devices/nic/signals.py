"""Signal collection: the one call site per transport event (docs/DESIGN.md).

Each signal updates the per-flow counters in ``N.sig`` (tests and
``flow_stats`` read them) and hands the event to the TAURUS report engine
(report.py), which aggregates it for the agent if the flow's algorithm bound
it, with ``now`` as its arrival time, or hands it at once to the flow's
native algorithm (ccnative.py).
"""
import numba as nb

from ... import ccshm as C
from ...ccevents import CSIG_FROM_WIRE, W
from ...report import (report_bound, report_int, report_rtt, report_rtt_ls, report_scratch,
                       report_segments, report_values)
from ...wire.csig import csig_value
from ...wire.desc import D_PDS_FLAGS

from .state import (SG_ACKED_BYTES, SG_ACKS, SG_CREDIT, SG_CSIG_D, SG_CSIG_LM, SG_CSIG_N,
                        SG_CSIG_S, SG_CSIG_T, SG_ECN, SG_NACK, SG_OOO, SG_RETX, SG_RTO,
                        SG_RTT_LAST, SG_RTT_MIN, SG_RTT_N, SG_RTT_SUM, SG_TRIM, SG_TX_BYTES,
                        SG_TX_PKTS, SG_UE, SG_CNP, SG_ECN_BYTES, FL_HOPS, FL_RTT_MIN, FL_SRTT)
from ...wire import spec as S


@nb.njit(cache=True, inline="always")
def count_ack(N, f, acked_bytes):
    N.sig[f, SG_ACKS] += 1
    N.sig[f, SG_ACKED_BYTES] += acked_bytes


@nb.njit(cache=True, inline="always")
def signal_ack(E, N, f, acked_bytes, psn, now):
    """Cumulative or selective ACK freed `acked_bytes` of payload (ACK signal).
    It also carries how many of them the receiver echoed ECN on (the M flag
    of this ACK, still in N.desc), so DCTCP-like algorithms get the marked
    fraction from one message per window."""
    count_ack(N, f, acked_bytes)
    fl = N.desc[D_PDS_FLAGS]
    marked = acked_bytes if fl & S.F_ACK_M else 0
    ue = acked_bytes if fl & S.F_ACK_UE else 0
    if report_bound(E, f, C.EV_ACK):
        v = report_scratch(E)
        v[W.bytes], v[W.packets], v[W.psn] = acked_bytes, 1, psn
        v[W.ecn_bytes], v[W.ue_bytes] = marked, ue
        report_values(E, f, C.EV_ACK, now)


@nb.njit(cache=True, inline="always")
def signal_ecn(E, N, f, ce_bytes, ce, ue_bytes, ue, now):
    """The receiver echoed CE (ACK M flag: ce = 1) and/or UE (UE flag: ue =
    1) on an ACK covering ce_bytes / ue_bytes."""
    N.sig[f, SG_ECN] += ce
    N.sig[f, SG_ECN_BYTES] += ce_bytes
    N.sig[f, SG_UE] += ue
    if report_bound(E, f, C.EV_ECN):
        v = report_scratch(E)
        v[W.ce_bytes], v[W.ce_packets], v[W.ue_bytes], v[W.ue_packets] = ce_bytes, ce, ue_bytes, ue
        report_values(E, f, C.EV_ECN, now)


@nb.njit(cache=True, inline="always")
def signal_ooo(E, N, f, count, now):
    """The receiver saw `count` more out-of-order packets (ACK ooo_count)."""
    N.sig[f, SG_OOO] += count
    if report_bound(E, f, C.EV_OOO):
        report_scratch(E)[W.ooo] = count
        report_values(E, f, C.EV_OOO, now)


@nb.njit(cache=True, inline="always")
def signal_nack(E, N, f, psn, code, now):
    """A NACK; TRIMMED codes are also the trim signal."""
    N.sig[f, SG_NACK] += 1
    last = 1 if code == S.NACK_TRIMMED_LASTHOP else 0
    trimmed = 1 if code == S.NACK_TRIMMED or last else 0
    N.sig[f, SG_TRIM] += trimmed
    if report_bound(E, f, C.EV_NACK):
        v = report_scratch(E)
        v[W.nacks], v[W.trimmed], v[W.psn], v[W.last_hop] = 1, trimmed, psn, last
        report_values(E, f, C.EV_NACK, now)


@nb.njit(cache=True, inline="always")
def signal_rto(E, N, f, psn, now):
    N.sig[f, SG_RTO] += 1
    if report_bound(E, f, C.EV_RTO):
        v = report_scratch(E)
        v[W.timeouts], v[W.psn] = 1, psn
        report_values(E, f, C.EV_RTO, now)


@nb.njit(cache=True, inline="always")
def count_rtt(N, f, rtt):
    N.sig[f, SG_RTT_LAST] = rtt
    if N.sig[f, SG_RTT_N] == 0 or rtt < N.sig[f, SG_RTT_MIN]:
        N.sig[f, SG_RTT_MIN] = rtt
    N.sig[f, SG_RTT_N] += 1
    N.sig[f, SG_RTT_SUM] += rtt


@nb.njit(cache=True, inline="always")
def _qdelay(N, f, rtt):
    """rtt above the flow's least RTT sample so far (which rtt may lower)."""
    m = N.fl[f, FL_RTT_MIN]
    if m == 0 or rtt < m:
        m = rtt
        N.fl[f, FL_RTT_MIN] = m
    return rtt - m


@nb.njit(cache=True, inline="always")
def signal_rtt(E, N, f, rtt, psn, now):
    """One RTT sample (ns) from an echoed per-packet timestamp (the flow's
    srtt is already updated); reported at the agent's probe cadence."""
    report_rtt(E, f, rtt, psn, N.fl[f, FL_SRTT], now, now - rtt, _qdelay(N, f, rtt),
               N.fl[f, FL_HOPS] - 1)
    count_rtt(N, f, rtt)


@nb.njit(cache=True, inline="always")
def signal_rtt_packet(E, N, f, rtt, send_t, psn, now):
    """The RTT of one newly acknowledged packet (never retransmitted), from
    its own send time: an RTT event (at the probe cadence, as above) and a
    least-squares sample (RTT_LS), each if bound."""
    q = _qdelay(N, f, rtt)
    report_rtt(E, f, rtt, psn, N.fl[f, FL_SRTT], now, send_t, q, N.fl[f, FL_HOPS] - 1)
    report_rtt_ls(E, f, send_t, rtt, now)


@nb.njit(cache=True, inline="always")
def signal_int(E, f, buf, base, nh, psn, now):
    """INT: one event per hop record of buf[base:base + 8 nh] (wire/spec.py
    INT_HOP), first switch first, values in bytes, ns and bit/s."""
    for k in range(nh):
        report_int(E, f, buf, base + k * S.INTHOP_SIZE, k, nh, psn, now)


@nb.njit(cache=True, inline="always")
def signal_credit(E, N, f, credit_bytes, now):
    """New cumulative credit from the receiver (ACK_CC CREDIT)."""
    N.sig[f, SG_CREDIT] = credit_bytes
    if report_bound(E, f, C.EV_CREDIT):
        report_scratch(E)[W.credit] = credit_bytes
        report_values(E, f, C.EV_CREDIT, now)


@nb.njit(cache=True, inline="always")
def signal_csig(E, N, f, t, s, lm, d, fmt, now):
    """A reflected CSIG tag (ACK_CCX, wire type t, format fmt): counted, and
    to the flow's algorithm as EV_CSIG (ccevents' csig_type, the value
    decoded into physical units by wire/csig.py, the locator, the format)."""
    N.sig[f, SG_CSIG_N] += 1
    N.sig[f, SG_CSIG_T] = t
    N.sig[f, SG_CSIG_S] = s
    N.sig[f, SG_CSIG_LM] = lm
    N.sig[f, SG_CSIG_D] = d
    if (t <= S.CSIG_T_QDEPTH and (fmt == S.CSIG_COMPACT or fmt == S.CSIG_WIDE)
            and report_bound(E, f, C.EV_CSIG)):
        v = report_scratch(E)
        v[W.csig_type], v[W.value] = CSIG_FROM_WIRE[t], csig_value(t, fmt, s)
        v[W.locator], v[W.fmt] = lm, fmt
        report_values(E, f, C.EV_CSIG, now)


@nb.njit(cache=True, inline="always")
def signal_cnp(E, N, f, ce, ue, psn, now):
    """A CNP from the flow's receiver (its notification point): ce / ue are
    1 when it notifies CE / UE marks; psn the PSN that triggered it."""
    N.sig[f, SG_CNP] += 1
    if report_bound(E, f, C.EV_CNP):
        v = report_scratch(E)
        v[W.ce], v[W.ue], v[W.psn] = ce, ue, psn
        report_values(E, f, C.EV_CNP, now)


@nb.njit(cache=True, inline="always")
def count_tx(N, f, nbytes, retx):
    N.sig[f, SG_TX_PKTS] += 1
    N.sig[f, SG_TX_BYTES] += nbytes
    if retx:
        N.sig[f, SG_RETX] += 1


@nb.njit(cache=True, inline="always")
def signal_tx(E, N, f, nbytes, retx, inflight, now):
    """A data packet left (TX counters)."""
    count_tx(N, f, nbytes, retx)
    if report_bound(E, f, C.EV_TX):
        v = report_scratch(E)
        v[W.bytes], v[W.packets], v[W.inflight] = nbytes, 1, inflight
        report_values(E, f, C.EV_TX, now)


@nb.njit(cache=True, inline="always")
def signal_host(E, f, source, value, aux, now):
    """A host signal for flow f (host.py: the NIC's host model, or the
    receiving host's delay echoed in an ACK): source id, value, aux."""
    if report_bound(E, f, C.EV_HOST):
        v = report_scratch(E)
        v[W.source], v[W.value], v[W.aux] = source, value, aux
        report_values(E, f, C.EV_HOST, now)


@nb.njit(cache=True, inline="always")
def signal_custom(E, f, buf, pds_off, length, ptype, now):
    """A feedback packet for flow f: the custom segments the agent asked for."""
    report_segments(E, f, buf, pds_off, length, ptype, now)
