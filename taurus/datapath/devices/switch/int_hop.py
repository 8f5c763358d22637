"""HPCC INT: a hop record inserted before the INT trailer of a departing
frame (wire/spec.py: INT_HOP, INT_TAIL): line-rate code, timestamp, bytes
sent by the port (128 B units) and queue (80 B units)."""
import numba as nb
import numpy as np

from ...wire import spec as S
from ...wire.codec import get_field, set_field
from ...hot import hot
from .state import C_RATE, S_TXB, T_INT

_RATES = np.array(S.INT_RATES_BPS, np.int64)
TS_MASK = (1 << 24) - 1
TX_MASK = (1 << 20) - 1
QLEN_MAX = (1 << 17) - 1


@hot
def rate_code(rate):
    """The code of the closest listed line rate."""
    best = 0
    for k in range(_RATES.shape[0]):
        if abs(_RATES[k] - rate) < abs(_RATES[best] - rate):
            best = k
    return best


@hot
def int_append(sw, p, pool, i, ip_end, q, now):
    """Insert this hop when the frame ends with an INT trailer that has room."""
    ln = np.int64(pool.length[i])
    tail = ln - S.INTTAIL_SIZE
    if tail < ip_end or ln + S.INTHOP_SIZE > pool.data.shape[1]:
        return
    buf = pool.data[i]
    if get_field(buf, tail, S.INTTAIL_MAGIC) != S.INT_MAGIC:
        return
    n = get_field(buf, tail, S.INTTAIL_NHOP)
    if n >= get_field(buf, tail, S.INTTAIL_MAX_HOP):
        return
    for k in range(S.INTTAIL_SIZE - 1, -1, -1):     # move the trailer back
        buf[tail + S.INTHOP_SIZE + k] = buf[tail + k]
    set_field(buf, tail, S.INTHOP_RATE_CODE, rate_code(sw.pcfg[p, C_RATE]))
    set_field(buf, tail, S.INTHOP_TS, now & TS_MASK)
    set_field(buf, tail, S.INTHOP_TX_BYTES, (sw.pst[p, S_TXB] // S.INT_TX_UNIT) & TX_MASK)
    ql = q // S.INT_QLEN_UNIT
    set_field(buf, tail, S.INTHOP_QLEN, ql if ql < QLEN_MAX else QLEN_MAX)
    set_field(buf, tail + S.INTHOP_SIZE, S.INTTAIL_NHOP, n + 1)
    pool.length[i] = ln + S.INTHOP_SIZE
    sw.stats[p, T_INT] += 1
