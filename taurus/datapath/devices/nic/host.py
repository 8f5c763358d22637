"""The host behind a receiving NIC, in virtual time (host congestion: TAURUS
§5, HostCC).

Off (NR_HOST_BW = 0, the default) nothing here runs: data is placed as it
arrives.  On, the NIC delivers accepted payload into host memory at
NR_HOST_BW bit/s through a host buffer of NR_HOST_BUF bytes, a fluid queue:

- a data packet that would overflow the buffer is dropped and counted
  (``drop_host_buf``); it is not placed nor acknowledged, a loss the
  transport recovers from (SACK / NACK of the hole, or the RTO);
- a hog takes NR_HOG_SHARE (ppm) of the bandwidth during [NR_HOG_START,
  NR_HOG_STOP): the buffer drains at the rest;
- every NR_HOST_PERIOD the NIC samples the buffer's occupancy and the
  delivery delay (how long a byte arriving now waits before it reaches
  memory, counting the hog's end) and raises two HOST records
  (ccevents.HOST_SOURCES host_buffer, host_delay) for each of its sending
  flows whose algorithm binds HOST;
- the delay of the last sample rides back to the senders in every ACK
  (service_time, rx.py) and each sender raises HOST (peer_host_delay) when
  the echoed value changes (ack.py): that is how a receiving host's
  congestion reaches the sender's algorithm.

The model paces delivery into memory, not the transport: ACKs leave when
a packet enters the host buffer, so RTT samples do not include the
delivery delay; the HOST records carry it.
"""
import numba as nb
import numpy as np

from ...wheel import wheel_schedule
from .signals import signal_host
from .state import (C_DROP_HOST_BUF, FL_NIC, FL_STATE, FS_ACTIVE, M_NFL, NR_HOG_SHARE,
                    NR_HOG_START, NR_HOG_STOP, NR_HOST_BUF, NR_HOST_BW, NR_HOST_DELAY,
                    NR_HOST_DROPS, NR_HOST_PERIOD, NR_HOST_Q, NR_HOST_T, NR_HOST_TIMER)
from ... import ccevents as V

Q_UNIT = 1024           # NR_HOST_Q counts 1/1024 bytes: drains of a few ns stay exact enough
FOREVER = np.int64(1) << 62


@nb.njit(cache=True, inline="always")
def host_rate(N, n, t):
    """(bandwidth into memory at time t in bit/s, when it next changes)."""
    bw = N.nr[n, NR_HOST_BW]
    a, b = N.nr[n, NR_HOG_START], N.nr[n, NR_HOG_STOP]
    if N.nr[n, NR_HOG_SHARE] <= 0 or t >= b:
        return bw, FOREVER
    if t < a:
        return bw, a
    return bw - bw * N.nr[n, NR_HOG_SHARE] // 1_000_000, b


@nb.njit(cache=True, inline="always")
def _drained(rate, dt):
    """Q units a rate (bit/s) moves in dt ns (float: rate * dt overflows int64)."""
    return np.int64(np.float64(rate) * np.float64(dt) * (Q_UNIT / 8e9))


@nb.njit(cache=True, inline="always")
def host_drain(N, n, now):
    """Advance the host buffer to `now`, piece by piece of constant rate."""
    t = N.nr[n, NR_HOST_T]
    q = N.nr[n, NR_HOST_Q]
    while q > 0 and t < now:
        rate, nxt = host_rate(N, n, t)
        e = min(nxt, now)
        q -= _drained(rate, e - t)
        t = e
    N.nr[n, NR_HOST_Q] = max(q, np.int64(0))
    N.nr[n, NR_HOST_T] = max(now, N.nr[n, NR_HOST_T])


@nb.njit(cache=True, inline="always")
def host_admit(N, n, nbytes, now):
    """Whether nbytes of payload fit in the host buffer now (then they are
    queued for delivery); a refusal is counted as drop_host_buf."""
    host_drain(N, n, now)
    q = N.nr[n, NR_HOST_Q] + nbytes * Q_UNIT
    if q > N.nr[n, NR_HOST_BUF] * Q_UNIT:
        N.ncnt[n, C_DROP_HOST_BUF] += 1
        return False
    N.nr[n, NR_HOST_Q] = q
    return True


@nb.njit(cache=True, inline="always")
def host_wait(N, n, now):
    """How long (ns) the buffer's content takes to reach memory from `now`."""
    q = N.nr[n, NR_HOST_Q]
    t = now
    while q > 0:
        rate, nxt = host_rate(N, n, t)
        if rate > 0:
            d = _drained(rate, nxt - t) if nxt < FOREVER else q + 1
            if d >= q:
                return t - now + np.int64(np.float64(q) * (8e9 / Q_UNIT) / np.float64(rate))
            q -= d
        t = nxt
    return t - now


@nb.njit(cache=True, inline="always")
def host_tick(E, n, now):
    """The HOST sampling timer: sample the host buffer, raise HOST records
    for the NIC's flows that bind it, keep the delay for ACKs to echo, and
    sample again one period later."""
    N = E.nic
    host_drain(N, n, now)
    occ = N.nr[n, NR_HOST_Q] // Q_UNIT
    delay = host_wait(N, n, now)
    drops = N.ncnt[n, C_DROP_HOST_BUF] - N.nr[n, NR_HOST_DROPS]
    N.nr[n, NR_HOST_DROPS] = N.ncnt[n, C_DROP_HOST_BUF]
    N.nr[n, NR_HOST_DELAY] = delay
    left, _ = host_rate(N, n, now)
    for f in range(1, N.meta[M_NFL] + 1):
        if N.fl[f, FL_NIC] == n + 1 and N.fl[f, FL_STATE] == FS_ACTIVE:
            signal_host(E, f, V.HOST_SRC_BUFFER, occ, drops, now)
            signal_host(E, f, V.HOST_SRC_DELAY, delay, left, now)
    wheel_schedule(E.wheel, N.nr[n, NR_HOST_TIMER] - 1, now + N.nr[n, NR_HOST_PERIOD])
    return 1
