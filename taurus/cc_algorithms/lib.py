"""The pieces most algorithms share, in the papers' terms, after Linux's
tcp_cong.c (tcp_slow_start, tcp_cong_avoid_ai): units, averages, window
growth, resuming in init, once-per-RTT gates.

Each is a ``@kernel``: plain Python when a handler runs uncompiled,
compiled into the handler otherwise.  Each computes its formula in the one
order written here (``nbytes * 8e9 / ns``, never ``nbytes / ns * 8e9``), so
a handler that calls it decides to the bit what the formula written out in
that order decides.

Units are the framework's: bytes, ns, bit/s (8e9: 8 bits a byte times 1e9
ns a second).
"""
from .algorithm import kernel

# ---- units --------------------------------------------------------------------


@kernel
def rate_of(nbytes, ns):
    """bit/s of nbytes per ns: a window over an RTT (pacing at cwnd / srtt)."""
    return nbytes * 8e9 / ns


@kernel
def time_of(nbytes, bps):
    """ns that nbytes take at bps: a queue's delay, a threshold in bytes as time."""
    return nbytes * 8e9 / bps


@kernel
def bdp(bps, ns):
    """Bytes that bps carries in ns: the bandwidth-delay product."""
    return bps * ns / 8e9


@kernel
def bytes_per_ns(bps):
    """A rate in bytes per ns (bit/s over 8e9), for byte counts over timestamps."""
    return bps / 8e9


# ---- averages -------------------------------------------------------------------


@kernel
def ewma(avg, x, g):
    """Exponentially weighted moving average with gain g: (1 - g) avg + g x."""
    return (1 - g) * avg + g * x


@kernel
def ewma_n(avg, x, g, n):
    """n updates of ewma by one sample x at once: keep = (1 - g)^n, then
    keep avg + (1 - keep) x (DCTCP's alpha over k windows of fraction F)."""
    keep = (1 - g) ** n
    return keep * avg + (1 - keep) * x


@kernel
def ewma_step(avg, x, g):
    """The same average written as a step towards x: avg + g (x - avg)."""
    return avg + g * (x - avg)


@kernel
def srtt_sample(srtt, rtt):
    """The smoothed RTT after one sample (RFC 6298: gain 1/8); the first
    sample sets it (srtt 0: none yet)."""
    return rtt if srtt == 0 else srtt + (rtt - srtt) / 8


# ---- window growth ----------------------------------------------------------------


@kernel
def slow_start(cwnd, acked, ssthresh):
    """Slow start: cwnd grows by the bytes acknowledged, up to ssthresh
    (tcp_slow_start): it doubles per window."""
    return min(cwnd + acked, ssthresh)


@kernel
def additive_increase(cwnd, acked, step):
    """Additive increase: step per whole window of bytes acknowledged
    (tcp_cong_avoid_ai; step 1 MSS is congestion avoidance)."""
    return cwnd + step * (acked // cwnd)


@kernel
def clamp(x, lo, hi):
    """x within [lo, hi]."""
    return min(max(x, lo), hi)


# ---- INT -------------------------------------------------------------------------
INT_TS_WRAP = float(1 << 24)      # INT ts, ns (docs/PROTOCOLS.md)
INT_TX_WRAP = float(1 << 27)      # INT tx_bytes, bytes


@kernel
def int_hop_delta(s, ev):
    """What one hop's INT record says since that hop's previous one, in a
    state with per-hop arrays prev_ts, prev_tx, prev_q and seen (HPCC's
    MeasureInflight, PowerTCP's power): (dt ns, tx bytes, previous qlen),
    dt = 0 for a hop not seen before; the counters wrap.  The record
    becomes the hop's previous one."""
    h = ev.hop
    dt, tx, q0 = 0.0, 0.0, 0.0
    if s.seen[h]:
        dt = (ev.ts - s.prev_ts[h]) % INT_TS_WRAP
        tx = (ev.tx_bytes - s.prev_tx[h]) % INT_TX_WRAP
        q0 = s.prev_q[h]
    s.prev_ts[h], s.prev_tx[h], s.prev_q[h], s.seen[h] = ev.ts, ev.tx_bytes, ev.qlen, 1
    return dt, tx, q0


# ---- init and gates ---------------------------------------------------------------


@kernel
def resume(held, fresh, per=1.0):
    """In init: the decision in force, ``d.cwnd`` or ``d.rate`` (> 0 after an
    agent restart), in units of ``per``; else fresh, a new flow's value."""
    return held / per if held > 0 else fresh


@kernel
def due(now, last, period):
    """True once period has passed since last: with period the srtt the
    handler keeps, a step taken at most once per RTT."""
    return now - last >= period
