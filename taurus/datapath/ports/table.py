"""The engine's port table: one row per port, any kind."""
from collections import namedtuple

import numpy as np

from .capture import no_capture
from .common import N_COUNTERS, N_LIST, N_REGS
from .memlink import make_arrivals

Ports = namedtuple("Ports", ["kind", "regs", "lists", "cnt", "cap", "arr"])
"""kind int32[P]; regs int64[P, N_REGS]; lists int64[P, N_LIST];
cnt uint64[P, N_COUNTERS] (usually a view on shared memory); cap the
capture block (capture.py; an engine's is in its capture segment); arr
the memory links' arrivals heap (memlink.py)."""


def make_ports(kinds, counters=None, cap=None) -> Ports:
    """A port table of len(kinds) ports; counters and cap (the capture
    block) default to private ones."""
    n = len(kinds)
    cnt = counters if counters is not None else np.zeros((n, N_COUNTERS), np.uint64)
    if cnt.shape != (n, N_COUNTERS):
        raise ValueError(f"counter block has shape {cnt.shape}, expected {(n, N_COUNTERS)}")
    return Ports(kind=np.asarray(kinds, np.int32),
                 regs=np.zeros((n, N_REGS), np.int64),
                 lists=np.zeros((n, N_LIST), np.int64),
                 cnt=cnt, cap=no_capture(n) if cap is None else cap, arr=make_arrivals(n))
