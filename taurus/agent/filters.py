"""Update filters (paper §3.5) between ``result_update`` and the context table.

Boundary filter: a value that is not a finite number is rejected (the flow
keeps its last good decision); a finite value outside [min, max] is clamped
(rate 100 kbit/s .. line rate, cwnd 1 MSS .. max, credit 0 .. max).
Duplicate-value filter: a value equal to the one last written is not written
again (the engine keeps the previous decision).  Both count what they did.
"""
import numpy as np

FIELDS = ("rate", "cwnd", "credit")


class UpdateFilter:
    def __init__(self, max_flows: int, lo, hi):
        self.lo = np.asarray(lo, np.float64)          # per field
        self.hi = np.asarray(hi, np.float64)
        self.last = np.full((max_flows, 3), -1, np.int64)   # last written (-1: none)
        self.c = {f"{k}_{f}": 0 for k in ("rejected", "clamped", "duplicate", "written")
                  for f in FIELDS}

    def apply(self, flows: np.ndarray, vals: np.ndarray):
        """vals: float64[k, 3], NaN where an algorithm set nothing.  Returns
        (write mask bool[k, 3], int64[k, 3] values) and counts."""
        # NaN marks "not set" as well, so rejects are told apart by the caller
        # through ``bad`` (inf and values that were not numbers arrive as inf).
        bad = np.isinf(vals)
        unset = np.isnan(vals)
        v = np.where(bad | unset, 0.0, vals)
        clamped = ~bad & ~unset & ((v < self.lo) | (v > self.hi))
        v = np.clip(v, self.lo, self.hi)
        iv = np.rint(v).astype(np.int64)
        dup = ~bad & ~unset & (iv == self.last[flows])
        write = ~bad & ~unset & ~dup
        for j, f in enumerate(FIELDS):
            self.c[f"rejected_{f}"] += int(bad[:, j].sum())
            self.c[f"clamped_{f}"] += int(clamped[:, j].sum())
            self.c[f"duplicate_{f}"] += int(dup[:, j].sum())
            self.c[f"written_{f}"] += int(write[:, j].sum())
        rows, cols = np.nonzero(write)
        self.last[flows[rows], cols] = iv[rows, cols]
        return write, iv, clamped
