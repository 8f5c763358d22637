"""Result metrics as the HPCC and OSCAR evaluations compute them.

- FCT slowdown = FCT / ideal FCT, ideal = base RTT + size / line rate.
- Slowdown by flow-size bins with p50/p95/p99 per bin (``slowdown_bins``),
  and with the average too, as the HPCC and TAURUS figures plot it
  (``slowdown_table``; ``format_slowdown`` prints one line per run).
- Jain's fairness index J = (sum x)^2 / (n * sum x^2), 1 = perfectly fair.
"""
import numpy as np


def fct_slowdown(size_bytes, fct_ns, base_rtt_ns: float, line_rate_bps: float) -> np.ndarray:
    size = np.asarray(size_bytes, float)
    ideal = base_rtt_ns + size * 8e9 / line_rate_bps
    return np.maximum(np.asarray(fct_ns, float) / ideal, 1.0)


def slowdown_bins(size_bytes, slowdown, edges) -> list[dict]:
    """Per size bin [edges[i], edges[i+1]): count, p50, p95, p99 of slowdown."""
    size = np.asarray(size_bytes)
    sd = np.asarray(slowdown, float)
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        x = sd[(size >= lo) & (size < hi)]
        row = {"lo": int(lo), "hi": int(hi), "count": int(len(x))}
        for q in (50, 95, 99):
            row[f"p{q}"] = float(np.percentile(x, q)) if len(x) else None
        out.append(row)
    return out


def slowdown_table(size_bytes, slowdown, edges) -> list[dict]:
    """Per size bin [edges[i], edges[i+1]): count, avg, p50, p95, p99 of
    slowdown (None where the bin is empty)."""
    size = np.asarray(size_bytes)
    sd = np.asarray(slowdown, float)
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        x = sd[(size >= lo) & (size < hi)]
        row = {"lo": int(lo), "hi": int(hi), "count": int(len(x)),
               "avg": float(x.mean()) if len(x) else None}
        for q in (50, 95, 99):
            row[f"p{q}"] = float(np.percentile(x, q)) if len(x) else None
        out.append(row)
    return out


def size_label(lo: int, hi: int) -> str:
    """A bin's label: <10KB, 10KB-100KB, >=10MB."""
    def k(b):
        return f"{b / 1e6:g}MB" if b >= 1_000_000 else f"{b / 1e3:g}KB"
    return f"<{k(hi)}" if lo == 0 else (f">={k(lo)}" if hi >= 10**12 else f"{k(lo)}-{k(hi)}")


STATS = ("avg", "p50", "p95", "p99")


def format_slowdown(runs: dict[str, list[dict]], label_width: int = 18) -> list[str]:
    """The slowdown tables of several runs (label -> slowdown_table rows, the
    same bins) as text: a header of the bins, then per run one line per
    statistic (avg, p50, p95, p99), a column per bin; '-' where empty."""
    first = next(iter(runs.values()))
    w = max(11, *(len(size_label(b["lo"], b["hi"])) + 1 for b in first))
    head = f"{'':<{label_width}} {'':>4}" + "".join(f"{size_label(b['lo'], b['hi']):>{w}}"
                                                    for b in first)
    lines = [head]
    for label, rows in runs.items():
        lines.append(f"{label:<{label_width}} {'n':>4}" + "".join(f"{b['count']:>{w}d}"
                                                                   for b in rows))
        for st in STATS:
            lines.append(f"{'':<{label_width}} {st:>4}" + "".join(
                f"{b[st]:>{w}.3f}" if b[st] is not None else f"{'-':>{w}}" for b in rows))
    return lines


def jain(x) -> float:
    x = np.asarray(x, float)
    if len(x) == 0 or not np.any(x):
        return 1.0
    return float(x.sum() ** 2 / (len(x) * np.sum(x * x)))
