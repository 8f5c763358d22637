"""Out-of-line calls into nic_signal for the NIC's hot path.

The NIC's packet functions are compiled without reference counting
(``wire.codec.hot``), but the signal path inlines the report engine, which
allocates; so it is called through these small reference-counted functions.
"""
import numba as nb

from . import nic_signal as sg


@nb.njit(cache=True, _nrt=True)   # explicit: callees inherit it
def signal_ack(E, N, f, acked_bytes, psn, now):
    sg.signal_ack(E, N, f, acked_bytes, psn, now)


@nb.njit(cache=True, _nrt=True)   # explicit: callees inherit it
def signal_ecn(E, N, f, nbytes, now):
    sg.signal_ecn(E, N, f, nbytes, now)


@nb.njit(cache=True, _nrt=True)   # explicit: callees inherit it
def signal_ooo(E, N, f, count, now):
    sg.signal_ooo(E, N, f, count, now)


@nb.njit(cache=True, _nrt=True)   # explicit: callees inherit it
def signal_nack(E, N, f, psn, code, now):
    sg.signal_nack(E, N, f, psn, code, now)


@nb.njit(cache=True, _nrt=True)   # explicit: callees inherit it
def signal_rto(E, N, f, psn, now):
    sg.signal_rto(E, N, f, psn, now)


@nb.njit(cache=True, _nrt=True)   # explicit: callees inherit it
def signal_rtt(E, N, f, rtt, psn, now):
    sg.signal_rtt(E, N, f, rtt, psn, now)


@nb.njit(cache=True, _nrt=True)   # explicit: callees inherit it
def signal_credit(E, N, f, credit_bytes, now):
    sg.signal_credit(E, N, f, credit_bytes, now)


@nb.njit(cache=True, _nrt=True)   # explicit: callees inherit it
def signal_csig(E, N, f, t, s, lm, d, now):
    sg.signal_csig(E, N, f, t, s, lm, d, now)


@nb.njit(cache=True, _nrt=True)   # explicit: callees inherit it
def signal_tx(E, N, f, nbytes, retx, inflight, now):
    sg.signal_tx(E, N, f, nbytes, retx, inflight, now)
