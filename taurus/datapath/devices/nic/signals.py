"""Signal collection: the one call site per transport event (docs/DESIGN.md).

Each ``signal_*`` is inlined into the NIC's packet code: it counts the
event in the flow's counters (``N.sig``: tests and ``flow_stats`` read
them) and, only if the flow's algorithm bound the event (one mask test),
writes the event's value words by name into the report engine's scratch
record and hands it to the report engine (datapath/report.py) with ``now``
as its arrival time.  The report engine aggregates it for the agent or
calls the flow's native algorithm (ccnative.py); its functions are compiled
out of line, without reference counting like the packet code
(datapath/hot.py), so a flow nobody watches costs a few counter adds and a
test.

Two layers, each with its own state: the NIC's (``E``, ``N``) here, the
report engine's (``report_engine(E)``: report.ReportEngine) there.
"""
import numba as nb

from ... import ccshm as C
from ...ccevents import CSIG_FROM_WIRE, W
from ...hot import hot
from ...report import (report_bound, report_engine, report_int, report_rtt, report_rtt_ls,
                       report_scratch, report_segments, report_values)
from ...wire.csig import csig_value
from ...wire.desc import D_PDS_FLAGS

from .state import (SG_ACKED_BYTES, SG_ACKS, SG_CREDIT, SG_CSIG_D, SG_CSIG_LM, SG_CSIG_N,
                        SG_CSIG_S, SG_CSIG_T, SG_ECN, SG_NACK, SG_OOO, SG_RETX, SG_RTO,
                        SG_RTT_LAST, SG_RTT_MIN, SG_RTT_N, SG_RTT_SUM, SG_TRIM, SG_TX_BYTES,
                        SG_TX_PKTS, SG_UE, SG_CNP, SG_ECN_BYTES, FL_HOPS, FL_RTT_MIN, FL_SRTT)
from ...wire import spec as S


@nb.njit(cache=True, inline="always")
def signal_bound(E, f, ev):
    """Whether flow f's algorithm bound event ev (the NIC does extra work,
    e.g. INT or per-packet RTT, only for such flows)."""
    return report_bound(report_engine(E), f, ev)


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
    RE = report_engine(E)
    if report_bound(RE, f, C.EV_ACK):
        fl = N.desc[D_PDS_FLAGS]
        v = report_scratch(RE)
        v[W.bytes], v[W.packets], v[W.psn] = acked_bytes, 1, psn
        v[W.ecn_bytes] = acked_bytes if fl & S.F_ACK_M else 0
        v[W.ue_bytes] = acked_bytes if fl & S.F_ACK_UE else 0
        report_values(RE, f, C.EV_ACK, now)


@nb.njit(cache=True, inline="always")
def signal_ecn(E, N, f, ce_bytes, ce, ue_bytes, ue, now):
    """The receiver echoed CE (ACK M flag: ce = 1) and/or UE (UE flag: ue =
    1) on an ACK covering ce_bytes / ue_bytes."""
    N.sig[f, SG_ECN] += ce
    N.sig[f, SG_ECN_BYTES] += ce_bytes
    N.sig[f, SG_UE] += ue
    RE = report_engine(E)
    if report_bound(RE, f, C.EV_ECN):
        v = report_scratch(RE)
        v[W.ce_bytes], v[W.ce_packets], v[W.ue_bytes], v[W.ue_packets] = ce_bytes, ce, ue_bytes, ue
        report_values(RE, f, C.EV_ECN, now)


@nb.njit(cache=True, inline="always")
def signal_ooo(E, N, f, count, now):
    """The receiver saw `count` more out-of-order packets (ACK ooo_count)."""
    N.sig[f, SG_OOO] += count
    RE = report_engine(E)
    if report_bound(RE, f, C.EV_OOO):
        report_scratch(RE)[W.ooo] = count
        report_values(RE, f, C.EV_OOO, now)


@nb.njit(cache=True, inline="always")
def signal_nack(E, N, f, psn, code, now):
    """A NACK; TRIMMED codes are also the trim signal."""
    N.sig[f, SG_NACK] += 1
    last = 1 if code == S.NACK_TRIMMED_LASTHOP else 0
    trimmed = 1 if code == S.NACK_TRIMMED or last else 0
    N.sig[f, SG_TRIM] += trimmed
    RE = report_engine(E)
    if report_bound(RE, f, C.EV_NACK):
        v = report_scratch(RE)
        v[W.nacks], v[W.trimmed], v[W.psn], v[W.last_hop] = 1, trimmed, psn, last
        report_values(RE, f, C.EV_NACK, now)


@nb.njit(cache=True, inline="always")
def signal_rto(E, N, f, psn, now):
    N.sig[f, SG_RTO] += 1
    RE = report_engine(E)
    if report_bound(RE, f, C.EV_RTO):
        v = report_scratch(RE)
        v[W.timeouts], v[W.psn] = 1, psn
        report_values(RE, f, C.EV_RTO, now)


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
def signal_rtt(E, N, f, rtt, psn, now, report):
    """One RTT sample (ns) from an echoed per-packet timestamp (the flow's
    srtt is already updated), reported at the agent's probe cadence;
    ``report`` False: this ACK's per-packet samples went to the algorithm
    instead (the sample still counts, and the srtt is published for every
    flow)."""
    count_rtt(N, f, rtt)
    RE = report_engine(E)
    if report and report_bound(RE, f, C.EV_RTT):
        report_rtt(RE, f, rtt, psn, N.fl[f, FL_SRTT], now, now - rtt, _qdelay(N, f, rtt),
                   N.fl[f, FL_HOPS] - 1)
    else:
        RE.rep.srtt[f] = N.fl[f, FL_SRTT]


@nb.njit(cache=True, inline="always")
def signal_rtt_packet(E, N, f, rtt, send_t, psn, now):
    """The RTT of one newly acknowledged packet (never retransmitted), from
    its own send time: an RTT event (at the probe cadence, as above) and a
    least-squares sample (RTT_LS), each if bound.  Call only for flows that
    bind RTT or RTT_LS."""
    q = _qdelay(N, f, rtt)
    RE = report_engine(E)
    report_rtt(RE, f, rtt, psn, N.fl[f, FL_SRTT], now, send_t, q, N.fl[f, FL_HOPS] - 1)
    report_rtt_ls(RE, f, send_t, rtt, now)


@nb.njit(cache=True, inline="always")
def signal_int(E, f, i, base, nh, psn, now):
    """INT: the nh hop records reflected in frame i from byte ``base`` on,
    one event each (call only for flows that bind INT)."""
    _int_hops(report_engine(E), f, E.pool.data, i, base, nh, psn, now)


@hot
def _int_hops(RE, f, data, i, base, nh, psn, now):
    """The hop records of data[i] (wire/spec.py INT_HOP), first switch
    first, values in bytes, ns and bit/s.  Takes the pool and an index, so
    no array view crosses an out-of-line call."""
    buf = data[i]
    for k in range(nh):
        report_int(RE, f, buf, base + k * S.INTHOP_SIZE, k, nh, psn, now)


@nb.njit(cache=True, inline="always")
def signal_credit(E, N, f, credit_bytes, now):
    """New cumulative credit from the receiver (ACK_CC CREDIT)."""
    N.sig[f, SG_CREDIT] = credit_bytes
    RE = report_engine(E)
    if report_bound(RE, f, C.EV_CREDIT):
        report_scratch(RE)[W.credit] = credit_bytes
        report_values(RE, f, C.EV_CREDIT, now)


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
    RE = report_engine(E)
    if (t <= S.CSIG_T_QDEPTH and (fmt == S.CSIG_COMPACT or fmt == S.CSIG_WIDE)
            and report_bound(RE, f, C.EV_CSIG)):
        v = report_scratch(RE)
        v[W.csig_type], v[W.value] = CSIG_FROM_WIRE[t], csig_value(t, fmt, s)
        v[W.locator], v[W.fmt] = lm, fmt
        report_values(RE, f, C.EV_CSIG, now)


@nb.njit(cache=True, inline="always")
def signal_cnp(E, N, f, ce, ue, psn, now):
    """A CNP from the flow's receiver (its notification point): ce / ue are
    1 when it notifies CE / UE marks; psn the PSN that triggered it."""
    N.sig[f, SG_CNP] += 1
    RE = report_engine(E)
    if report_bound(RE, f, C.EV_CNP):
        v = report_scratch(RE)
        v[W.ce], v[W.ue], v[W.psn] = ce, ue, psn
        report_values(RE, f, C.EV_CNP, now)


@nb.njit(cache=True, inline="always")
def signal_src(E, f, qlen, rate, psn, rtt, hops, now):
    """An SRC from a congested switch (Bolt): the queue the data packet psn
    met there, the port's rate, the time since that packet left (-1
    unknown) and the switch hops to that switch."""
    RE = report_engine(E)
    if report_bound(RE, f, C.EV_SRC):
        v = report_scratch(RE)
        v[W.qlen], v[W.link_rate], v[W.psn], v[W.rtt], v[W.hops] = qlen, rate, psn, rtt, hops
        report_values(RE, f, C.EV_SRC, now)


@nb.njit(cache=True, inline="always")
def signal_tx(E, N, f, nbytes, retx, inflight, now):
    """A data packet left (TX counters)."""
    N.sig[f, SG_TX_PKTS] += 1
    N.sig[f, SG_TX_BYTES] += nbytes
    if retx:
        N.sig[f, SG_RETX] += 1
    RE = report_engine(E)
    if report_bound(RE, f, C.EV_TX):
        v = report_scratch(RE)
        v[W.bytes], v[W.packets], v[W.inflight] = nbytes, 1, inflight
        report_values(RE, f, C.EV_TX, now)


@nb.njit(cache=True, inline="always")
def signal_host(E, f, source, value, aux, now):
    """A host signal for flow f (host.py: the NIC's host model, or the
    receiving host's delay echoed in an ACK): source id, value, aux."""
    RE = report_engine(E)
    if report_bound(RE, f, C.EV_HOST):
        v = report_scratch(RE)
        v[W.source], v[W.value], v[W.aux] = source, value, aux
        report_values(RE, f, C.EV_HOST, now)


@nb.njit(cache=True, inline="always")
def signal_custom(E, f, i, pds_off, length, ptype, now):
    """A feedback packet (frame i) for flow f: the custom segments the agent
    asked for, if its algorithm binds CUSTOM."""
    RE = report_engine(E)
    if report_bound(RE, f, C.EV_CUSTOM):
        _custom_segments(RE, f, E.pool.data, i, pds_off, length, ptype, now)


@hot
def _custom_segments(RE, f, data, i, pds_off, length, ptype, now):
    """report_segments on data[i] (a pool index, like _int_hops)."""
    report_segments(RE, f, data[i], pds_off, length, ptype, now)
