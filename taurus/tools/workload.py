"""Flow-size distributions and open-loop arrivals for experiments.

A distribution is a piecewise-linear CDF over flow sizes (shipped ones:
``websearch``, ``hadoop`` and ``cachefollower`` in taurus/data, with their
sources).  Sizes are
drawn by inverting the CDF; arrivals are Poisson with the rate that puts the
requested load on a link: lambda = load * rate / (8 * mean size).  An N:1
incast background (``incast_bursts``) is one Poisson process of bursts over
the whole fabric, each a random receiver and N random other senders.
"""
import csv
import os
from dataclasses import dataclass

import numpy as np

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
SHIPPED = {"websearch": "websearch_cdf.csv", "hadoop": "hadoop_cdf.csv",
           "cachefollower": "cachefollower_cdf.csv"}


@dataclass(frozen=True)
class SizeCdf:
    sizes: np.ndarray   # bytes, non-decreasing
    probs: np.ndarray   # cumulative probability in [0, 1], non-decreasing, ends at 1

    @classmethod
    def load(cls, name_or_path: str) -> "SizeCdf":
        path = os.path.join(DATA, SHIPPED[name_or_path]) if name_or_path in SHIPPED else name_or_path
        rows = []
        with open(path) as f:
            for k, row in enumerate(csv.reader(line for line in f if not line.startswith("#"))):
                if k == 0 and not row[0].strip().replace(".", "").isdigit():
                    continue  # header
                rows.append((float(row[0]), float(row[1])))
        a = np.array(rows)
        sizes, probs = a[:, 0], a[:, 1] / (100.0 if a[-1, 1] > 1.0 else 1.0)
        if len(a) < 2 or np.any(np.diff(sizes) < 0) or np.any(np.diff(probs) < 0) \
                or abs(probs[-1] - 1.0) > 1e-9:
            raise ValueError(f"{path}: a CDF needs >= 2 rows, non-decreasing sizes and "
                             f"probabilities, ending at 100%")
        return cls(sizes, probs)

    def mean(self) -> float:
        """Mean size of the piecewise-linear distribution (bytes)."""
        mids = (self.sizes[1:] + self.sizes[:-1]) / 2
        return float(np.sum(mids * np.diff(self.probs)))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n sizes (bytes, >= 1) by inverse-transform sampling."""
        u = rng.random(n)
        return np.maximum(1, np.interp(u, self.probs, self.sizes)).astype(np.int64)


def poisson_arrivals(rng: np.random.Generator, load: float, rate_bps: float, mean_bytes: float,
                     duration_s: float) -> np.ndarray:
    """Arrival times (s) of flows that put `load` (0..1) on a link of rate_bps."""
    if not 0 < load <= 1:
        raise ValueError(f"load must be in (0, 1], got {load}")
    lam = load * rate_bps / (8.0 * mean_bytes)
    n = int(lam * duration_s * 1.2 + 10)
    t = np.cumsum(rng.exponential(1.0 / lam, n))
    while t[-1] < duration_s:  # rare: draw more
        t = np.concatenate([t, t[-1] + np.cumsum(rng.exponential(1.0 / lam, n))])
    return t[t < duration_s]


@dataclass(frozen=True)
class Burst:
    t: float                # s
    dst: int                # receiving host (an index)
    srcs: tuple             # fan_in distinct other hosts (indices), each sending the burst's size


def incast_bursts(rng: np.random.Generator, n_hosts: int, fan_in: int, size_bytes: float,
                  load: float, rate_bps: float, duration_s: float) -> list[Burst]:
    """N:1 bursts that put `load` (0..1) on every host's downlink on average
    (the HPCC / TAURUS papers' incast background): bursts arrive over the
    whole fabric at lambda = load * rate * n_hosts / (8 * fan_in * size),
    each at a random receiver from fan_in distinct random other hosts."""
    if not 0 < fan_in < n_hosts:
        raise ValueError(f"fan_in must be in [1, {n_hosts - 1}], got {fan_in}")
    ts = poisson_arrivals(rng, load, rate_bps * n_hosts / fan_in, size_bytes, duration_s)
    out = []
    for t in ts:
        dst = int(rng.integers(n_hosts))
        others = rng.choice(n_hosts - 1, fan_in, replace=False)
        out.append(Burst(float(t), dst, tuple(int(o + (o >= dst)) for o in others)))
    return out
