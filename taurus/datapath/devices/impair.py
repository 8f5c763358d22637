"""The impairment device: sits between two ports like l2fwd and, per frame,
with a seeded generator (netem-like, deterministic): drops it, marks ECN CE
(IPv4 frames that are ECN-capable), corrupts it (one bit of an untagged
IPv4/UDP datagram flipped behind a checksum of the intact datagram, so the
UDP checksum is wrong: what a receiver that checks it sees of a corrupted
frame), duplicates it, or holds it back and
releases it after the next K frames of its direction or after a delay (a
wheel timer), whichever comes first — which reorders.  One frame per
direction is held at a time.

Probabilities are stored as 31-bit thresholds; the generator is a 64-bit
LCG (Knuth's MMIX constants), high bits used.  Counters live in the device's
registers (``impair_counters``).
"""
import numba as nb
import numpy as np

from ..mbuf import mbuf_alloc, mbuf_free
from ..ports.dispatch import port_rx_burst, port_tx_or_drop
from ..wheel import wheel_alloc, wheel_cancel, wheel_schedule
from ..wire.codec import fill_ipv4_checksum, fill_udp_checksum

(LOSS, REORDER, DUP, MARK, K, DELAY, RNG, TIMER0, TIMER1, HELD0, HELD1, LEFT0, LEFT1,
 DROPPED, REORDERED, DUPED, MARKED, FWD, NOBUF, CORRUPT, CORRUPTED) = range(21)
COUNTERS = {"dropped": DROPPED, "reordered": REORDERED, "duplicated": DUPED,
            "marked": MARKED, "forwarded": FWD, "nobuf": NOBUF, "corrupted": CORRUPTED}
P_ONE = 1 << 31


@nb.njit(cache=True, inline="always")
def _rand(regs):
    x = regs[RNG] * np.int64(6364136223846793005) + np.int64(1442695040888963407)
    regs[RNG] = x
    return (x >> 33) & 0x7FFFFFFF


@nb.njit(cache=True)
def _out(E, d, side, i, now):
    """Send frame i out of the port opposite `side`, releasing a held frame
    of that direction once K frames have passed it."""
    regs = E.devs.regs[d]
    b = E.devs.ports[d, 1 - side]
    one = E.nic.iscr[side:side + 1]
    one[0] = i
    port_tx_or_drop(E.ports, E.pool, b, now, one, 1)
    regs[FWD] += 1
    if regs[HELD0 + side] > 0:
        regs[LEFT0 + side] -= 1
        if regs[LEFT0 + side] <= 0:
            _release(E, d, side, now)


@nb.njit(cache=True)
def _release(E, d, side, now):
    regs = E.devs.regs[d]
    h = regs[HELD0 + side] - 1
    if h < 0:
        return 0
    regs[HELD0 + side] = 0
    wheel_cancel(E.wheel, regs[TIMER0 + side])
    one = E.nic.iscr[2 + side:3 + side]
    one[0] = h
    port_tx_or_drop(E.ports, E.pool, E.devs.ports[d, 1 - side], now, one, 1)
    regs[FWD] += 1
    return 1


@nb.njit(cache=True)
def _mark_ce(E, i):
    """ECT(0)/ECT(1) -> CE on an untagged IPv4 frame; True if marked."""
    buf = E.pool.data[i]
    if E.pool.length[i] < 34 or buf[12] != 0x08 or buf[13] != 0x00:
        return False
    tos = buf[15]
    if (tos & 3) == 0 or (tos & 3) == 3:
        return False
    buf[15] = tos | 3
    fill_ipv4_checksum(buf, 14)
    return True


@nb.njit(cache=True)
def _corrupt(E, regs, i):
    """Flip one bit of an untagged IPv4/UDP frame's datagram after writing the
    intact datagram's checksum; True if corrupted."""
    buf = E.pool.data[i]
    ln = E.pool.length[i]
    if ln < 42 or buf[12] != 0x08 or buf[13] != 0x00 or buf[23] != 17:
        return False
    l4 = 14 + (np.int64(buf[14]) & 0xF) * 4
    end = l4 + ((np.int64(buf[l4 + 4]) << 8) | np.int64(buf[l4 + 5])) if l4 + 8 <= ln else 0
    if end < l4 + 8 or end > ln:
        return False
    fill_udp_checksum(buf, 14, l4, end)
    bit = _rand(regs) % ((end - l4) * 8)
    buf[l4 + bit // 8] ^= np.uint8(1 << (bit % 8))
    return True


@nb.njit(cache=True, _nrt=True)   # explicit: its callers are hot
def impair_poll(E, d, now):
    regs = E.devs.regs[d]
    work = 0
    burst = E.burst
    for side in range(2):
        n = port_rx_burst(E.ports, E.pool, E.devs.ports[d, side], now, burst, burst.shape[0])
        work += n
        for k in range(n):
            i = burst[k]
            if regs[LOSS] > 0 and _rand(regs) < regs[LOSS]:
                mbuf_free(E.pool, i)
                regs[DROPPED] += 1
                continue
            if regs[MARK] > 0 and _rand(regs) < regs[MARK] and _mark_ce(E, i):
                regs[MARKED] += 1
            if regs[CORRUPT] > 0 and _rand(regs) < regs[CORRUPT] and _corrupt(E, regs, i):
                regs[CORRUPTED] += 1
            if regs[DUP] > 0 and _rand(regs) < regs[DUP]:
                j = mbuf_alloc(E.pool)
                if j < 0:
                    regs[NOBUF] += 1
                else:
                    ln = E.pool.length[i]
                    E.pool.data[j, :ln] = E.pool.data[i, :ln]
                    E.pool.length[j] = ln
                    regs[DUPED] += 1
                    _out(E, d, side, j, now)
            if regs[REORDER] > 0 and regs[HELD0 + side] == 0 and _rand(regs) < regs[REORDER]:
                regs[HELD0 + side] = i + 1
                regs[LEFT0 + side] = regs[K] if regs[K] > 0 else np.int64(1) << 62
                regs[REORDERED] += 1
                if regs[DELAY] > 0:
                    wheel_schedule(E.wheel, regs[TIMER0 + side], now + regs[DELAY])
                continue
            _out(E, d, side, i, now)
    return work


@nb.njit(cache=True, _nrt=True)   # explicit: its callers are hot
def impair_timer(E, d, timer, now):
    return _release(E, d, E.wheel.arg[timer], now)


def add_impair(eng, port_a: int, port_b: int, loss: float = 0.0, reorder: float = 0.0,
               reorder_k: int = 3, reorder_delay_ns: int = 0, dup: float = 0.0,
               ecn_mark: float = 0.0, seed: int = 1, name: str | None = None,
               corrupt: float = 0.0) -> int:
    """Impairment between two engine ports (both directions alike).  A held
    frame leaves after `reorder_k` later frames of its direction, or after
    `reorder_delay_ns` (0: no deadline; then reorder_k must be > 0).
    `corrupt`: the share of untagged IPv4/UDP frames with one bit flipped."""
    from .table import IMPAIR
    for p in (loss, reorder, dup, ecn_mark, corrupt):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"probabilities must be in [0, 1], got {p}")
    if reorder > 0 and reorder_k <= 0 and reorder_delay_ns <= 0:
        raise ValueError("reordering needs reorder_k > 0 or reorder_delay_ns > 0")
    d = eng.add_device(IMPAIR, [port_a, port_b], name)
    regs = eng.E.devs.regs[d]
    regs[LOSS], regs[REORDER], regs[DUP], regs[MARK] = (round(p * P_ONE) for p in
                                                        (loss, reorder, dup, ecn_mark))
    regs[CORRUPT] = round(corrupt * P_ONE)
    regs[K], regs[DELAY] = reorder_k, reorder_delay_ns
    regs[RNG] = (seed * 0x9E3779B97F4A7C15 + 1) & ((1 << 63) - 1)
    for side in range(2):
        t = wheel_alloc(eng.E.wheel, d, side)
        if t < 0:
            raise ValueError("timing wheel full")
        regs[TIMER0 + side] = t
    return d


def impair_counters(eng, d: int) -> dict:
    regs = eng.E.devs.regs[d]
    return {k: int(regs[v]) for k, v in COUNTERS.items()}
