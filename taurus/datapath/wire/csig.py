"""CSIG value encoding (**ours**, docs/PROTOCOLS.md "CSIG tag"): the one
definition of how a local value becomes a tag's `s` and back.

Local values, per wire type t (spec.CSIG_T_*): ABW in Mbit/s, ABW/C and
queue depth as fractions in 1/2**20, delay in ns.  Compact tags carry the
index of the highest of 32 bucket lower bounds not above the value; wide
tags (x - base) >> log2 step, clamped to 20 bits.  Switches encode
(devices/switch/csig.py, with their own copy of the tables, these by
default); hosts decode with the defaults here, so a tag's reflected `s`
becomes a value in physical units (ns, bit/s, ppm).  Decoding gives the
lower bound of the value's bucket (compact) or step (wide).
"""
import numba as nb
import numpy as np

from . import spec as S

WIDE_MAX = (1 << 20) - 1
FRAC_ONE = 1 << 20


def default_csig_buckets() -> np.ndarray:
    """Lower bounds of the 32 compact buckets per type (ours; configurable):
    ABW in Mbit/s and DELAY in ns grow geometrically; ABW/C and QDEPTH are
    fractions in 1/2**20, 32 equal steps."""
    b = np.zeros((4, 32), np.int64)
    geo = np.concatenate([[0], np.round(np.geomspace(1, 400_000, 31))]).astype(np.int64)
    b[0] = geo                                   # ABW, Mbit/s, up to 400 Gbit/s
    b[1] = np.arange(32) * (1 << 15)             # ABW/C
    b[2] = np.concatenate([[0], np.round(np.geomspace(100, 10_000_000, 31))])  # delay, ns
    b[3] = np.arange(32) * (1 << 15)             # queue depth
    return b


def default_csig_wide() -> np.ndarray:
    """(base, log2 step) per type: Mbit/s, 1/2**20, 4 ns, 1/2**20."""
    return np.array([[0, 0], [0, 0], [0, 2], [0, 0]], np.int64)


CSB = default_csig_buckets()
CSW = default_csig_wide()


@nb.njit(cache=True, inline="always")
def csig_encode(csb, csw, t, fmt, x):
    """Local value x of type t as a tag's s in format fmt (monotone in x)."""
    if fmt == S.CSIG_COMPACT:
        s = 0
        for k in range(1, 32):
            if csb[t, k] <= x:
                s = k
        return np.int64(s)
    v = (x - csw[t, 0]) >> csw[t, 1]
    if v < 0:
        return np.int64(0)
    return np.int64(WIDE_MAX) if v > WIDE_MAX else np.int64(v)


@nb.njit(cache=True, inline="always")
def csig_decode(csb, csw, t, fmt, s):
    """A tag's s back to the local value's unit (the lower bound it stands for)."""
    if fmt == S.CSIG_COMPACT:
        return csb[t, min(max(s, 0), 31)]
    return csw[t, 0] + (np.int64(s) << csw[t, 1])


@nb.njit(cache=True, inline="always")
def csig_physical(t, x):
    """A local value of type t in physical units: bit/s (ABW), ppm (ABW/C,
    queue depth), ns (delay)."""
    if t == S.CSIG_T_ABW:
        return np.int64(x) * 1_000_000
    if t == S.CSIG_T_DELAY:
        return np.int64(x)
    return (np.int64(x) * 1_000_000 + FRAC_ONE // 2) >> 20


@nb.njit(cache=True, inline="always")
def csig_value(t, fmt, s):
    """A reflected s, decoded with the default tables, in physical units."""
    return csig_physical(t, csig_decode(CSB, CSW, t, fmt, s))


@nb.njit(cache=True, inline="always")
def csig_start(t, fmt):
    """The s a sender starts a tag at: the best value, so switches can only
    make it worse (the highest s for the min types ABW and ABW/C, 0 for the
    max types)."""
    if t == S.CSIG_T_ABW or t == S.CSIG_T_ABW_C:
        return np.int64(31) if fmt == S.CSIG_COMPACT else np.int64(WIDE_MAX)
    return np.int64(0)


LM_LAST_HOP_COMPACT, LM_LAST_HOP_WIDE = S.LM_LAST_HOP_COMPACT, S.LM_LAST_HOP_WIDE


def locator_with_last_hop(lm: int, fmt: str, last_hop: bool) -> int:
    """lm with its top bit set for a last hop, cleared otherwise."""
    bit = LM_LAST_HOP_COMPACT if fmt == "compact" else LM_LAST_HOP_WIDE
    return (lm | bit) if last_hop else (lm & ~bit)
