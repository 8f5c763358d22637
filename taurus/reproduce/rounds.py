"""Convergence counted in control rounds: how many round-trip times a rate
trace takes, from a change (a burst's onset or release), to come within a
band of the level it ends at (reach) and to stay there (settle); and how
that count grows with the size of the change.

The level is the trace's own settled value (the median of the phase's last
``tail`` of rounds), not a fixed fraction of the link: each algorithm aims
at its own aggregate (HPCC at eta = 95% of the link, DCTCP at a queue of
about its marking threshold), and a band pinned to the link would count an
algorithm that sits at its own target as never converged.  A phase whose
tail is not itself inside the band has not settled: no settle count, and
``spread`` says how far it still swings.
"""
from __future__ import annotations

import math

import numpy as np


def per_round(t, x, t0: float, t1: float, rtt: float) -> np.ndarray:
    """Means of the samples x(t) over consecutive rounds [t0 + k rtt,
    t0 + (k + 1) rtt) inside [t0, t1); a round without samples repeats the
    previous mean.  Averaging over a round removes the packet-scale noise a
    sample period holds."""
    t, x = np.asarray(t, float), np.asarray(x, float)
    n = int((t1 - t0) // rtt)
    out = np.empty(n)
    for k in range(n):
        sel = (t >= t0 + k * rtt) & (t < t0 + (k + 1) * rtt)
        out[k] = x[sel].mean() if sel.any() else (out[k - 1] if k else np.nan)
    return out


def _tail(rounds: np.ndarray, tail: float) -> np.ndarray:
    return np.asarray(rounds)[-max(2, int(len(rounds) * tail)):]


def level(rounds: np.ndarray, tail: float = 0.25) -> float | None:
    """The level the trace ends at: the median of its last ``tail`` of rounds
    (None: fewer than 4 rounds, or a level of 0)."""
    if len(rounds) < 4:
        return None
    v = float(np.median(_tail(rounds, tail)))
    return v if v > 0 else None


def spread(rounds: np.ndarray, tail: float = 0.25) -> float | None:
    """How far the trace still swings at its end: (p95 - p5) of its last
    ``tail`` of rounds over their median."""
    v = level(rounds, tail)
    if v is None:
        return None
    p5, p95 = np.percentile(_tail(rounds, tail), [5, 95])
    return float((p95 - p5) / v)


def settled(rounds: np.ndarray, tail: float = 0.25, tol: float = 0.05) -> float | None:
    """The level, or None when the last ``tail`` of rounds are not all within
    ``tol`` of it (the trace has not settled)."""
    v = level(rounds, tail)
    return v if v is not None and (np.abs(_tail(rounds, tail) / v - 1) <= tol).all() else None


def rounds_to_reach(rounds: np.ndarray, level: float | None, tol: float = 0.05) -> int | None:
    """Rounds until the trace first comes within ``tol`` of ``level`` (the gap
    closed once, whether or not it then stays): k + 1 for the first such
    round k; None if never or no level."""
    if level is None:
        return None
    ok = np.flatnonzero(np.abs(np.asarray(rounds) / level - 1) <= tol)
    return int(ok[0]) + 1 if len(ok) else None


def rounds_to_settle(rounds: np.ndarray, level: float | None, tol: float = 0.05) -> int | None:
    """Rounds until the trace is within ``tol`` of ``level`` and stays there
    to the phase's end: k + 1 for the first round k from which every round is
    in the band (1: the first round's mean is already there); None if the
    level is None or the last round is outside."""
    if level is None or len(rounds) == 0:
        return None
    ok = np.abs(np.asarray(rounds) / level - 1) <= tol
    if not ok[-1]:
        return None
    bad = np.flatnonzero(~ok)
    return int(bad[-1]) + 2 if len(bad) else 1


def growth(deltas, counts) -> dict:
    """Least-squares fits of the round counts against the gap: ``per_doubling``
    (rounds added each time the gap doubles: the slope over log2 of the gap)
    and ``per_unit`` (the slope over the gap), and ``order``: "O(1)" when the
    fitted count moves by under ``flat`` rounds across the whole sweep, else
    "shrinking" when it falls, and when it grows whichever of O(log Delta)
    and O(Delta) fits with under half the other's residual ("growing" when
    neither does, or with two counts).
    Gaps whose count is None (never settled) are left out; fewer than two
    counts: no fit."""
    pts = [(float(d), float(c)) for d, c in zip(deltas, counts) if c is not None]
    if len(pts) < 2:
        return {"per_doubling": None, "per_unit": None, "order": None, "points": len(pts)}
    d = np.array([p[0] for p in pts])
    c = np.array([p[1] for p in pts])
    fits = {}
    for name, x in (("log", np.log2(d)), ("lin", d)):
        A = np.stack([x, np.ones_like(x)], axis=1)
        coef, *_ = np.linalg.lstsq(A, c, rcond=None)
        fits[name] = (float(coef[0]), float(np.sum((A @ coef - c) ** 2)))
    spread = fits["log"][0] * math.log2(d.max() / d.min())
    flat = 2.0                      # rounds: below this across the sweep counts as constant
    lg, ln = fits["log"][1], fits["lin"][1]
    if abs(spread) < flat:
        order = "O(1)"
    elif spread < 0:
        order = "shrinking"
    elif len(pts) < 3 or not (lg < ln / 2 or ln < lg / 2):
        order = "growing"           # two points fit both curves; else neither fits clearly better
    else:
        order = "O(log Delta)" if lg < ln else "O(Delta)"
    return {"per_doubling": fits["log"][0], "per_unit": fits["lin"][0], "order": order,
            "points": len(pts)}


def own_rounds(t, rtt_now, t0: float, t1: float) -> float:
    """Round trips elapsed from t0 to t1 when a round lasts rtt_now(t) (the
    path's RTT with its queue): the integral of dt / rtt_now.  A count in
    base RTTs charges a controller for feedback its queue delays; this one
    counts the round trips its decisions could act on."""
    t, r = np.asarray(t, float), np.asarray(rtt_now, float)
    sel = (t >= t0) & (t < t1)
    if not sel.any():
        return 0.0
    ts = t[sel]
    dt = np.diff(np.append(ts, t1))
    return float(np.sum(dt / r[sel]))
