"""CSIG compare-and-replace (OCP CSIG specification; CSIG tutorial, SIGCOMM 2025).

Each egress port knows its local value for the four signal types:
  ABW    available bandwidth C - departure rate over the ABW interval (Mbit/s)  min
  ABW_C  ABW / C (1/2**20)                                                     min
  DELAY  per-hop queueing delay = queue / rate (ns)                             max
  QDEPTH queue / port buffer (1/2**20)                                           max
The tag's type picks which one.  Values are encoded (wire/csig.py: compact, a bucket
index over 32 configurable lower bounds; wide, (x - base) >> log2 step, 20
bits); encodings are monotone, so the comparison is done on encoded values: a worse
local value replaces the tag's value and locator.  A tag with d set (a switch
trimmed the packet) is left alone.
"""
import numba as nb

from ...wire import spec as S
from ...wire.codec import set_field
from ...hot import hot
from ...wire.desc import D_CSIG_D, D_CSIG_FMT, D_CSIG_OFF, D_CSIG_S, D_CSIG_T
from .queues import q_bytes
from .state import (C_ABW_IVL, C_LOC_C, C_LOC_W, C_QLIM, C_RATE, S_ABW, S_ABW_BYTES,
                           S_ABW_T0, T_CSIG)

from ...wire.csig import FRAC_ONE, csig_encode


@hot
def abw_update(sw, p, now, nbytes):
    """Count departing bytes; at each interval's end, ABW = C - rate."""
    sw.pst[p, S_ABW_BYTES] += nbytes
    ivl = sw.pcfg[p, C_ABW_IVL]
    el = now - sw.pst[p, S_ABW_T0]
    if ivl > 0 and el >= ivl:
        rate = sw.pst[p, S_ABW_BYTES] * 8 * 1_000_000_000 // el
        abw = sw.pcfg[p, C_RATE] - rate
        sw.pst[p, S_ABW] = abw if abw > 0 else 0
        sw.pst[p, S_ABW_T0] = now
        sw.pst[p, S_ABW_BYTES] = 0


@hot
def local_value(sw, p, t, now):
    rate = sw.pcfg[p, C_RATE]
    if t == S.CSIG_T_ABW or t == S.CSIG_T_ABW_C:
        # an interval with no departure at all means the link is idle
        abw = sw.pst[p, S_ABW]
        if now - sw.pst[p, S_ABW_T0] >= 2 * sw.pcfg[p, C_ABW_IVL]:
            abw = rate
        if t == S.CSIG_T_ABW:
            return abw // 1_000_000
        return abw * FRAC_ONE // rate if rate > 0 else FRAC_ONE
    q = q_bytes(sw, p)
    if t == S.CSIG_T_DELAY:
        return q * 8 * 1_000_000_000 // rate if rate > 0 else 0
    lim = sw.pcfg[p, C_QLIM]
    return q * FRAC_ONE // lim if lim > 0 else 0


@hot
def encode(sw, t, fmt, x):
    return csig_encode(sw.csb, sw.csw, t, fmt, x)


@hot
def csig_update(sw, p, buf, desc, now):
    """Compare-and-replace on a departing tagged frame."""
    fmt = desc[D_CSIG_FMT]
    if fmt == 0 or desc[D_CSIG_D] != 0:
        return
    t = desc[D_CSIG_T]
    if t > 3:
        return
    s = encode(sw, t, fmt, local_value(sw, p, t, now))
    old = desc[D_CSIG_S]
    worse = s < old if t <= S.CSIG_T_ABW_C else s > old
    if not worse:
        return
    off = desc[D_CSIG_OFF]
    if fmt == S.CSIG_COMPACT:
        set_field(buf, off, S.CSIGC_S, s)
        set_field(buf, off, S.CSIGC_LM, sw.pcfg[p, C_LOC_C])
    else:
        set_field(buf, off, S.CSIGW_S, s)
        set_field(buf, off, S.CSIGW_LM, sw.pcfg[p, C_LOC_W])
    sw.stats[p, T_CSIG] += 1


@hot
def csig_mark_trimmed(sw, p, buf, desc):
    """d = 1 and our locator: this port trimmed the packet."""
    off = desc[D_CSIG_OFF]
    if desc[D_CSIG_FMT] == S.CSIG_COMPACT:
        set_field(buf, off, S.CSIGC_D, 1)
        set_field(buf, off, S.CSIGC_LM, sw.pcfg[p, C_LOC_C])
    elif desc[D_CSIG_FMT] == S.CSIG_WIDE:
        set_field(buf, off, S.CSIGW_D, 1)
        set_field(buf, off, S.CSIGW_LM, sw.pcfg[p, C_LOC_W])
