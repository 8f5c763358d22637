"""Out-of-line calls into signals.py for the NIC's hot path.

The signal path reaches the report engine (report.py), which is large, so
the NIC's packet functions call it out of line rather than inline it.
Like them it is compiled without reference counting (``datapath/hot.py``):
the report engine and the native calls it makes never allocate, and with
counting each array read through the engine's state would be an atomic
incref / decref pair per signal.
The calls receive only what signals use: the report state, the wheel, the
native algorithms (native flows' events go to them from the report
engine), the engine's ctl words (a publish may end its chunk: report.py)
and the per-flow signal, descriptor and flow tables.  The per-packet and
per-ACK signals first ask, inline, whether the report engine takes the
event (report.py's own first test), and for flows nobody watches only
count it.
"""
from collections import namedtuple

import numba as nb

from ... import ccshm as C
from ...hot import hot
from . import signals as sg
from .state import FL_SRTT

SigE = namedtuple("SigE", ["rep", "wheel", "alg", "ctl"])
SigN = namedtuple("SigN", ["sig", "desc", "fl"])


@hot
def _ack(E, N, f, a, psn, now):
    sg.signal_ack(E, N, f, a, psn, now)


@hot
def _ecn(E, N, f, ce_bytes, ce, ue_bytes, ue, now):
    sg.signal_ecn(E, N, f, ce_bytes, ce, ue_bytes, ue, now)


@hot
def _ooo(E, N, f, count, now):
    sg.signal_ooo(E, N, f, count, now)


@hot
def _nack(E, N, f, psn, code, now):
    sg.signal_nack(E, N, f, psn, code, now)


@hot
def _rto(E, N, f, psn, now):
    sg.signal_rto(E, N, f, psn, now)


@hot
def _rtt(E, N, f, rtt, psn, now):
    sg.signal_rtt(E, N, f, rtt, psn, now)


@hot
def _rtt_packet(E, N, f, rtt, send_t, psn, now):
    sg.signal_rtt_packet(E, N, f, rtt, send_t, psn, now)


@hot
def _int(E, f, data, i, base, nh, psn, now):
    sg.signal_int(E, f, data[i], base, nh, psn, now)


@hot
def _credit(E, N, f, credit_bytes, now):
    sg.signal_credit(E, N, f, credit_bytes, now)


@hot
def _csig(E, N, f, t, s, lm, d, fmt, now):
    sg.signal_csig(E, N, f, t, s, lm, d, fmt, now)


@hot
def _cnp(E, N, f, ce, ue, psn, now):
    sg.signal_cnp(E, N, f, ce, ue, psn, now)


@hot
def _tx(E, N, f, nbytes, retx, inflight, now):
    sg.signal_tx(E, N, f, nbytes, retx, inflight, now)


@hot
def _host(E, f, source, value, aux, now):
    sg.signal_host(E, f, source, value, aux, now)


@hot
def _custom(E, f, data, i, pds_off, length, ptype, now):
    sg.signal_custom(E, f, data[i], pds_off, length, ptype, now)


@nb.njit(cache=True, inline="always")
def _reported(E, f, ev):
    """Whether the report engine takes event ev of flow f: its algorithm (in
    an agent, or native) bound it."""
    R = E.rep
    return R.owner[f] >= 0 and ((R.mask[f] >> ev) & 1) != 0


@nb.njit(cache=True, inline="always")
def signal_ack(E, N, f, acked_bytes, psn, now):
    if _reported(E, f, C.EV_ACK):
        _ack(SigE(E.rep, E.wheel, E.alg, E.ctl), SigN(N.sig, N.desc, N.fl), f, acked_bytes, psn, now)
    else:
        sg.count_ack(N, f, acked_bytes)


@nb.njit(cache=True, inline="always")
def signal_ecn(E, N, f, ce_bytes, ce, ue_bytes, ue, now):
    _ecn(SigE(E.rep, E.wheel, E.alg, E.ctl), SigN(N.sig, N.desc, N.fl), f, ce_bytes, ce, ue_bytes, ue,
         now)


@nb.njit(cache=True, inline="always")
def signal_ooo(E, N, f, count, now):
    _ooo(SigE(E.rep, E.wheel, E.alg, E.ctl), SigN(N.sig, N.desc, N.fl), f, count, now)


@nb.njit(cache=True, inline="always")
def signal_nack(E, N, f, psn, code, now):
    _nack(SigE(E.rep, E.wheel, E.alg, E.ctl), SigN(N.sig, N.desc, N.fl), f, psn, code, now)


@nb.njit(cache=True, inline="always")
def signal_rto(E, N, f, psn, now):
    _rto(SigE(E.rep, E.wheel, E.alg, E.ctl), SigN(N.sig, N.desc, N.fl), f, psn, now)


@nb.njit(cache=True, inline="always")
def signal_bound(E, f, ev):
    """Whether flow f's algorithm bound event ev (the NIC does extra work,
    e.g. INT or per-packet RTT, only for such flows)."""
    return _reported(E, f, ev)


@nb.njit(cache=True, inline="always")
def signal_rtt(E, N, f, rtt, psn, now, report):
    """The echoed sample; ``report`` False: this ACK's per-packet samples
    went to the algorithm instead (it still counts and moves the srtt)."""
    if report and _reported(E, f, C.EV_RTT):
        _rtt(SigE(E.rep, E.wheel, E.alg, E.ctl), SigN(N.sig, N.desc, N.fl), f, rtt, psn, now)
    else:
        E.rep.srtt[f] = N.fl[f, FL_SRTT]      # published for every flow (as report_rtt does)
        sg.count_rtt(N, f, rtt)


@nb.njit(cache=True, inline="always")
def signal_rtt_packet(E, N, f, rtt, send_t, psn, now):
    """One acknowledged packet's RTT (call only for flows binding RTT or RTT_LS)."""
    _rtt_packet(SigE(E.rep, E.wheel, E.alg, E.ctl), SigN(N.sig, N.desc, N.fl), f, rtt, send_t, psn, now)


@nb.njit(cache=True, inline="always")
def signal_int(E, f, i, base, nh, psn, now):
    """The nh INT hop records reflected in frame i from byte `base` on."""
    _int(SigE(E.rep, E.wheel, E.alg, E.ctl), f, E.pool.data, i, base, nh, psn, now)


@nb.njit(cache=True, inline="always")
def signal_credit(E, N, f, credit_bytes, now):
    _credit(SigE(E.rep, E.wheel, E.alg, E.ctl), SigN(N.sig, N.desc, N.fl), f, credit_bytes, now)


@nb.njit(cache=True, inline="always")
def signal_csig(E, N, f, t, s, lm, d, fmt, now):
    _csig(SigE(E.rep, E.wheel, E.alg, E.ctl), SigN(N.sig, N.desc, N.fl), f, t, s, lm, d, fmt, now)


@nb.njit(cache=True, inline="always")
def signal_cnp(E, N, f, ce, ue, psn, now):
    _cnp(SigE(E.rep, E.wheel, E.alg, E.ctl), SigN(N.sig, N.desc, N.fl), f, ce, ue, psn, now)


@nb.njit(cache=True, inline="always")
def signal_tx(E, N, f, nbytes, retx, inflight, now):
    if _reported(E, f, C.EV_TX):
        _tx(SigE(E.rep, E.wheel, E.alg, E.ctl), SigN(N.sig, N.desc, N.fl), f, nbytes, retx, inflight, now)
    else:
        sg.count_tx(N, f, nbytes, retx)


@nb.njit(cache=True, inline="always")
def signal_host(E, N, f, source, value, aux, now):
    if _reported(E, f, C.EV_HOST):
        _host(SigE(E.rep, E.wheel, E.alg, E.ctl), f, source, value, aux, now)


@nb.njit(cache=True, inline="always")
def signal_custom(E, f, i, pds_off, length, ptype, now):
    """Custom feedback segments of frame i (pool index: no view crosses over)."""
    if _reported(E, f, C.EV_CUSTOM):
        _custom(SigE(E.rep, E.wheel, E.alg, E.ctl), f, E.pool.data, i, pds_off, length, ptype, now)
