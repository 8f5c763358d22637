"""Result metrics as the HPCC and OSCAR evaluations compute them.

- FCT slowdown = FCT / ideal FCT, ideal = base RTT + size / line rate.
- Slowdown by flow-size bins with p50/p95/p99 per bin.
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


def jain(x) -> float:
    x = np.asarray(x, float)
    if len(x) == 0 or not np.any(x):
        return 1.0
    return float(x.sum() ** 2 / (len(x) * np.sum(x * x)))
