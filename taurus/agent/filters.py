"""Update filters (paper §3.5) between the algorithms' decisions and the
context table.

Boundary filter: a value that is not a finite number is rejected (the flow
keeps its last good decision); a finite value outside [min, max] is clamped
(rate 100 kbit/s .. line rate, cwnd 1 MSS .. max, credit 0 .. max).
Duplicate-value filter: a value equal to the one last written is not written
again (the engine keeps the previous decision).  Both count what they did.

A step's decisions are staged in a per-flow table (``stage``: value,
``isset``: whether the algorithm set it; fastpath.apply_write moves them
there from the algorithms' decision records) and pass the filters and reach
the context table in one compiled call, whether the algorithm ran compiled
or as plain Python: one definition of the filters, and no per-decision
Python.
"""
from collections import namedtuple

import numba as nb
import numpy as np

from taurus.datapath.lowlevel import store_release_u64

FIELDS = ("rate", "cwnd", "credit")
KINDS = ("rejected", "clamped", "duplicate", "written")
REJECTED, CLAMPED, DUPLICATE, WRITTEN = range(4)

WriteArrays = namedtuple("WriteArrays", "stage isset lo hi last n rate cwnd credit version "
                                        "updated_ns faults")
"""filter_write's arrays, in its order (UpdateFilter.write_arrays)."""


@nb.njit(cache=True, nogil=True)
def filter_write(flows, stage, isset, lo, hi, last, n, rate, cwnd, credit, version, updated_ns,
                 now, faults):
    """Filter the staged decisions of ``flows`` and write what passes into the
    table columns (rate, cwnd, credit), then bump the flow's
    version (a release store: the engine sees the values first).  Clears the
    stage.  Writes the faults as rows (flow, kind, field) of ``faults``
    (3 rows per flow at most) and returns how many."""
    nf = 0
    for i in range(len(flows)):
        f = flows[i]
        wrote = False
        for j in range(3):
            if not isset[f, j]:
                continue
            isset[f, j] = False
            v = stage[f, j]
            if not lo[j] <= v <= hi[j]:            # out of bounds, or not a number at all
                if not np.isfinite(v):
                    n[REJECTED, j] += 1
                    faults[nf, 0], faults[nf, 1], faults[nf, 2] = f, REJECTED, j
                    nf += 1
                    continue
                n[CLAMPED, j] += 1
                faults[nf, 0], faults[nf, 1], faults[nf, 2] = f, CLAMPED, j
                nf += 1
                v = lo[j] if v < lo[j] else hi[j]
            iv = np.int64(np.rint(v))              # half to even, as the engine's rint
            if iv == last[f, j]:
                n[DUPLICATE, j] += 1
                continue
            n[WRITTEN, j] += 1
            last[f, j] = iv
            if j == 0:
                rate[f] = iv
            elif j == 1:
                cwnd[f] = iv
            else:
                credit[f] = iv
            wrote = True
        if wrote:
            updated_ns[f] = now
            store_release_u64(version, f, version[f] + 1)
    return nf


class UpdateFilter:
    """The filters' state: bounds per field, the last value written per flow
    and field (-1: none), counts [kind][field], and the stage."""

    def __init__(self, max_flows: int, lo, hi):
        self.lo = np.array([float(x) for x in lo])
        self.hi = np.array([float(x) for x in hi])
        self.last = np.full((max_flows, 3), -1, np.int64)
        self.n = np.zeros((len(KINDS), 3), np.int64)
        self.stage = np.zeros((max_flows, 3))
        self.isset = np.zeros((max_flows, 3), np.bool_)
        self.faults = np.empty((3 * max_flows, 3), np.int64)

    @property
    def c(self) -> dict:
        return {f"{k}_{f}": int(self.n[i, j]) for i, k in enumerate(KINDS)
                for j, f in enumerate(FIELDS)}

    def write_arrays(self, cc) -> WriteArrays:
        """What filter_write reads and writes, for compiled code that calls it
        (the agent's busy loop): the stage, the filters' state and cc's columns."""
        return WriteArrays(self.stage, self.isset, self.lo, self.hi, self.last, self.n, cc.rate,
                           cc.cwnd, cc.credit, cc.version, cc.updated_ns, self.faults)

    def write(self, cc, flows, now_ns: int) -> np.ndarray:
        """Filter and write the staged decisions of ``flows`` (int64 array);
        returns the faults (flow, kind, field)."""
        nf = filter_write(flows, self.stage, self.isset, self.lo, self.hi, self.last, self.n,
                          cc.rate, cc.cwnd, cc.credit, cc.version, cc.updated_ns, now_ns,
                          self.faults)
        return self.faults[:nf]

