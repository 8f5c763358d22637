"""Update filters (paper §3.5) between ``result_update`` and the context table.

Boundary filter: a value that is not a finite number is rejected (the flow
keeps its last good decision); a finite value outside [min, max] is clamped
(rate 100 kbit/s .. line rate, cwnd 1 MSS .. max, credit 0 .. max).
Duplicate-value filter: a value equal to the one last written is not written
again (the engine keeps the previous decision).  Both count what they did.

One decision (three fields) at a time in plain Python: a step decides for a
few flows, and numpy's per-call cost would dwarf the arithmetic.
"""
import math

FIELDS = ("rate", "cwnd", "credit")
KINDS = ("rejected", "clamped", "duplicate", "written")
REJECTED, CLAMPED, DUPLICATE, WRITTEN = range(4)


class UpdateFilter:
    def __init__(self, max_flows: int, lo, hi):
        self.max_flows = max_flows
        self.lo = tuple(float(x) for x in lo)         # per field
        self.hi = tuple(float(x) for x in hi)
        self.last = {}                                # flow -> last written per field (-1: none)
        self.n = [[0, 0, 0] for _ in KINDS]           # counts [kind][field]

    @property
    def c(self) -> dict:
        return {f"{k}_{f}": self.n[i][j] for i, k in enumerate(KINDS)
                for j, f in enumerate(FIELDS)}

    def apply(self, flow: int, result) -> tuple:
        """``result``: an algorithm's (rate, cwnd, credit), None where it set
        nothing.  Returns (values to write, None where nothing is written;
        faults: (kind, field index) of each rejected or clamped value)."""
        last = self.last.get(flow)
        if last is None:
            last = self.last[flow] = [-1, -1, -1]
        out = [None, None, None]
        faults = ()
        n = self.n
        for j, v in enumerate(result):
            if v is None:
                continue
            if type(v) is not float:
                v = _float(v)
            lo, hi = self.lo[j], self.hi[j]
            if not lo <= v <= hi:             # out of bounds, or not a number at all
                if not math.isfinite(v):
                    n[REJECTED][j] += 1
                    faults += ((REJECTED, j),)
                    continue
                n[CLAMPED][j] += 1
                faults += ((CLAMPED, j),)
                v = lo if v < lo else hi
            iv = round(v)                     # half to even, as the engine's rint
            if iv == last[j]:
                n[DUPLICATE][j] += 1
                continue
            n[WRITTEN][j] += 1
            last[j] = out[j] = iv
        return out, faults


def _float(v) -> float:
    """inf for what is not a number (rejected as non-finite)."""
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return math.inf
