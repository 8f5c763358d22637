"""OSCAR ("OSCAR: O(1)-Step Convergence And Readily-deployable Congestion
Control", Nanjing University): `oscar-convergence` (the slides' 1 long + 9
short flows micro-benchmark, swept over 3, 9, 27 short flows: round trips
to converge at a microburst's onset and release and their growth with the
gap, OSCAR against DCTCP, DCQCN, Swift, HPCC and PowerTCP), `oscar-bls`
(delay gradient by batched least squares against divide + EWMA, judged by
the switch queue's true growth rate) and `oscar-fairness` (Jain of 2 and 8
OSCAR flows).

Scaling: the slides' testbed has 40 Gbit/s links and a 13.5 us base RTT.
These runs keep the base RTT (3 us per link, two links each way, plus
serialisation) and run the links at 10 Gbit/s, so every byte quantity
scales by 1/4: OSCAR's target queue 75 KB -> 18.75 KB, DCTCP/DCQCN's ECN
threshold 30 KB at 10 Gbit/s (the 30 x Gbit/s / 10 KB rule), buffers 1 MB
(> 50 BDPs: no drops but for DCQCN at 27 burst flows, its window cap
lifted).  OSCAR is given the base RTT (``base_rtt``: a lone flow's
unloaded RTT, measured once), as the authors' sockets are (all flows
the same D_target), rather than each flow's least RTT seen.

Counting rounds (`oscar-convergence`, taurus/reproduce/rounds.py): 1 long
flow and n = 3, 9, 27 burst flows, each burst flow its fair share of the
nominal 1 to 5 ms.  The aggregate sending state (each active flow's pacing
rate, or cwnd / base RTT when lower: a rate, not a window over the RTT now,
which reads as the link whenever a queue holds the window; DCQCN's window is
the NIC's cap, lifted and left out) is averaged per base RTT; rounds count
from the onset (release: the last burst flow's end) until it is within 5%
of the level the phase ends at, first (reach) and for good (settle).  The
gap Delta = n + 1 (the rate ratio to close) and the counts are fitted
against it per algorithm.
"""
from __future__ import annotations

import functools
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from taurus.cc_algorithms.algorithm import Algorithm, param, set_rate
from taurus.cc_algorithms.oscar import Oscar
from taurus.cc_algorithms.params import Params
from taurus.tools.analysis import jain

from . import rounds
from .core import drops, long_jain, outputs, pyplot, run_dict, scenario

ALGS = ("oscar", "dctcp", "dcqcn", "swift", "hpcc", "powertcp")
NAMES = {"oscar": "OSCAR", "dctcp": "DCTCP", "dcqcn": "DCQCN", "swift": "Swift", "hpcc": "HPCC",
         "powertcp": "PowerTCP"}
RATE_BASED = ("dcqcn",)                 # the window is the NIC's cap, no part of the algorithm
WIDE_CWND = "1MB"                       # so that cap never binds (the buffer's size)
LINK_BPS = 10e9
SCALE = LINK_BPS / 40e9                 # the slides' 40 Gbit/s testbed
TARGET_QUEUE = 75_000 * SCALE           # OSCAR's 75 KB at 40 Gbit/s
HYPER_GAP = 2_000                       # 1 us + a 1 KB packet's extra serialisation, 2 hops
SEED_MSE = (0.0058, 0.079, 13.4)        # the slides: BLS, divide + EWMA, the ratio they give
SEED_ORDER = ("onset (deceleration) / release (acceleration): OSCAR O(1) / O(1); DCQCN, Swift "
              "O(log Delta) / O(Delta); HPCC, PowerTCP O(1) / O(1)")
HOLD_NS = 100_000
MSS = 256                               # 1 KB at 40 Gbit/s: the same packets per BDP and per tau
EWMA_ALPHA = 0.875                      # divide + EWMA: weight of the old estimate (ours)


# ---- sampling the decisions: a hook on the runner's sampler ----------------------------
_RUNS: list = []


@contextmanager
def _trace_decisions():
    """While active, each experiment sample also records every flow's
    decision version, pacing rate, window and srtt (Runner._on_sample)."""
    from taurus.datapath.devices.nic.state import CX_CWND, CX_RATE, FL_SRTT
    from taurus.experiment import runner as R
    orig = R.Runner._on_sample

    def sample(self):
        if not hasattr(self, "oscar_trace"):
            self.oscar_trace = []
            _RUNS.append(self)
        E = self.eng.E
        rate, cwnd = E.rep.rate[self.fid], E.rep.cwnd[self.fid]
        self.oscar_trace.append((self.now, E.rep.version[self.fid].copy(),
                                 np.where(rate > 0, rate, E.nic.ctx[self.fid, CX_RATE]),
                                 np.where(cwnd > 0, cwnd, E.nic.ctx[self.fid, CX_CWND]),
                                 E.nic.fl[self.fid, FL_SRTT].copy(),
                                 np.array(self.samples_queue[-1], np.float64)))
        self.oscar_ports = [name for name, _ in self.port_list]
    R.Runner._on_sample, R.Runner.live_samples = sample, True
    _RUNS.clear()
    try:
        yield _RUNS
    finally:
        R.Runner._on_sample, R.Runner.live_samples = orig, False


def _trace(run) -> dict:
    t = np.array([x[0] for x in run.oscar_trace], np.int64)
    cols = [np.array([x[i] for x in run.oscar_trace], np.float64) for i in range(1, 6)]
    out = dict(zip(("t", "version", "rate", "cwnd", "srtt", "queue"), [t, *cols]))
    out["ports"] = run.oscar_ports
    return out


def payload_fraction(s: dict) -> float:
    """Payload bytes delivered per wire byte through the bottleneck (headers,
    and INT when a flow asks for it, take the rest)."""
    wire = s["ports"][s["busiest_port"]]["tx_bytes"]
    return min(1.0, sum(f["bytes"] for f in s["flows"]) / wire) if wire else 1.0


def normalised_rate(tr: dict, k: int, s: dict) -> np.ndarray:
    """Flow k's allowed rate over time, min(pacing, cwnd / RTT), over the
    link's payload rate (cwnd counts payload; pacing the wire).  RTT is the
    path's now: the flow's least srtt plus the bottleneck queue's delay
    (srtt itself is an average that lags a change by several RTTs)."""
    payload = payload_fraction(s)
    rate = np.where(tr["rate"][:, k] > 0, tr["rate"][:, k], LINK_BPS) * payload
    srtt = tr["srtt"][:, k]
    base = srtt[srtt > 0].min() if (srtt > 0).any() else 1.0
    q = tr["queue"][:, tr["ports"].index(s["busiest_port"])]
    rtt = base + q * 8e9 / LINK_BPS
    win = np.where(tr["cwnd"][:, k] > 0, tr["cwnd"][:, k] * 8e9 / rtt, LINK_BPS)
    cap = LINK_BPS * payload
    return np.minimum(np.minimum(rate, win), cap) / cap


# ---- oscar-convergence --------------------------------------------------------------
def _topology(n_senders: int, switch: dict | None = None) -> dict:
    hosts = [f"h{i}" for i in range(1, n_senders + 2)]
    sw = {"name": "s1", "ecn": {"k": "30KB"}, "int": True, **(switch or {})}
    return {"name": "oscar-star", "defaults": {"rate": "10Gbit", "delay": "3us", "buffer": "1MB"},
            "hosts": [{"name": h} for h in hosts], "switches": [sw],
            "links": [{"endpoints": [h, "s1"]} for h in hosts]}


def _cc(alg: str, mode: str) -> dict:
    cc = {"algorithm": alg, "mode": mode, "mss": MSS, "cwnd": "16KB"}     # ~ a BDP
    if alg == "oscar":
        cc["params"] = {"target_queue": TARGET_QUEUE, "hyper_gap": HYPER_GAP,
                        "base_rtt": base_rtt(mode)}
    return cc


@functools.lru_cache(maxsize=None)
def base_rtt(mode: str) -> float:
    """The star's unloaded RTT for a full-size packet (ns), measured once by a
    lone flow (its srtt, the queue empty).  The authors' OSCAR takes the base
    RTT from the socket (RoCEv2SocketState::GetBaseRtt, known from the
    topology), the same for every flow; a flow measuring its own least RTT
    instead (base_rtt = 0) overestimates it when it starts into a queue, so
    a latecomer's D_target sits above an earlier flow's and the earlier flow
    yields (8 flows: the first ends at ~1/4 of its share)."""
    d = {"experiment": {"name": "oscar-base-rtt", "duration": "100us", "seed": 1,
                        "step": "2us", "sample": "2us"},
         "topology": _topology(1),
         "cc": {"algorithm": "oscar", "mode": mode, "mss": MSS, "cwnd": "16KB",
                "params": {"target_queue": TARGET_QUEUE, "hyper_gap": HYPER_GAP}},
         "traffic": [{"kind": "bulk", "from": "h1", "to": "h2"}],
         "outputs": outputs()}
    with _trace_decisions() as runs, tempfile.TemporaryDirectory() as tmp:
        run_dict(d, tmp)
        srtt = _trace(runs[-1])["srtt"][:, 0]
    return float(srtt[srtt > 0].min())


def convergence_times(quick: bool) -> tuple[int, int, int]:
    """(burst start, nominal burst end, run end) ns: the slides' 1 ms .. 5 ms (quick: shorter)."""
    return (500_000, 1_500_000, 2_300_000) if quick else (1_000_000, 5_000_000, 10_000_000)


def burst_flows(quick: bool) -> tuple[int, ...]:
    """The sweep of the gap: burst flows joining the long one (the slides' 9 among them)."""
    return (3, 9, 27)


def _convergence(alg: str, mode: str, quick: bool, n: int) -> dict:
    b0, _, end = convergence_times(quick)
    cc = _cc(alg, mode)
    if alg in RATE_BASED:
        cc["cwnd"] = WIDE_CWND
    rx = f"h{n + 2}"
    return {"experiment": {"name": f"converge-{alg}-{n}", "duration": f"{end}ns", "seed": 1,
                           "step": "2us", "sample": "2us"},
            "topology": _topology(n + 1),
            "cc": cc,
            "traffic": [{"kind": "bulk", "from": "h1", "to": rx},
                        {"kind": "bulk", "from": [f"h{i}" for i in range(2, n + 2)], "to": rx,
                         "start": f"{b0}ns", "size": burst_size(quick, n)}],
            "outputs": outputs()}


def burst_size(quick: bool, n: int = 9) -> int:
    """Bytes per burst flow: its fair share (link / (n + 1)) over the nominal burst."""
    b0, b1, _ = convergence_times(quick)
    return int(LINK_BPS / (n + 1) * (b1 - b0) / 8e9)


def state_rate(tr: dict, k: int, s: dict, base: float) -> np.ndarray:
    """Flow k's sending state as a rate, over the link's payload rate, while
    the flow is active (0 before its start and after its end): its pacing
    rate, or cwnd / base RTT when lower (HPCC's R = W / T).  The base RTT,
    not the RTT now: with the queue's delay in the divisor, any window total
    above a BDP reads as exactly the link, and the state gap (the queue it
    builds) would vanish from the count."""
    payload = payload_fraction(s)
    cap = LINK_BPS * payload
    rate = np.where(tr["rate"][:, k] > 0, tr["rate"][:, k] * payload, cap)
    if s["flows"][k]["algorithm"] not in RATE_BASED:
        rate = np.minimum(rate, np.where(tr["cwnd"][:, k] > 0,
                                         tr["cwnd"][:, k] * 8e9 / base, cap))
    f = s["flows"][k]
    stop = f["start_ns"] + f["fct_ns"] if f["done"] else np.inf
    return np.where((tr["t"] >= f["start_ns"]) & (tr["t"] < stop), rate / cap, 0.0)


def _phase(t, x, t0, t1, rtt, rtt_now) -> dict:
    """Reach and settle in base RTTs; ``reach_own``: reach in the path's own
    round trips (base RTT plus the bottleneck's queueing delay)."""
    r = rounds.per_round(t, x, t0, t1, rtt)
    level = rounds.level(r)
    reach = rounds.rounds_to_reach(r, level)
    return {"reach": reach, "reach_own": None if reach is None else
            round(rounds.own_rounds(t, rtt_now, t0, t0 + reach * rtt), 1),
            "settle": rounds.rounds_to_settle(r, rounds.settled(r)), "level": level,
            "spread": rounds.spread(r), "first_round": float(r[0]) if len(r) else None,
            "phase_rounds": len(r)}


def convergence_row(alg: str, mode: str, quick: bool, n: int, out: str) -> dict:
    """One algorithm at n burst flows: rounds (base RTTs) from the onset and
    from the release until the aggregate sending state is first within 5% of
    the level it ends at (reach), and until it stays there (settle); the
    long flow's share apart."""
    b0, _, _ = convergence_times(quick)
    exp = _convergence(alg, mode, quick, n)       # OSCAR's base RTT measured first, apart
    with _trace_decisions() as runs:
        s = run_dict(exp, os.path.join(out, f"converge-{alg}-{n}"))
        tr = _trace(runs[-1])
    rtt = base_rtt(mode)
    t = tr["t"]
    per = np.stack([state_rate(tr, k, s, rtt) for k in range(n + 1)], axis=1)
    agg = per.sum(axis=1)
    ends = [f["start_ns"] + f["fct_ns"] if f["done"] else s["ended_at_ns"] for f in s["flows"][1:]]
    on_end, rel = min(ends), max(ends)           # onset: until the aggregate's makeup changes
    q = tr["queue"][:, tr["ports"].index(s["busiest_port"])]
    rtt_now = rtt + q * 8e9 / LINK_BPS
    onset = _phase(t, agg, b0, on_end, rtt, rtt_now)
    release = _phase(t, agg, rel, s["ended_at_ns"], rtt, rtt_now)
    tail = (t >= on_end - (on_end - b0) / 4) & (t < on_end)
    share = float(per[tail, 0].mean() / agg[tail].mean() * (n + 1)) if agg[tail].mean() > 0 else 0.0
    return {"burst_flows": n, "onset": onset, "release": release,
            "long_onset": _phase(t, per[:, 0], b0, on_end, rtt, rtt_now)["reach"],
            "long_share": share, "burst_ns": [b0, on_end, rel], "drops": drops(s),
            "t_us": (t / 1e3).tolist()[::5], "aggregate": agg.tolist()[::5]}


def _fmt(n) -> str:
    return "-" if n is None else str(n)


def _lvl(v) -> str:
    return "-" if v is None else f"{v:.2f}"


@scenario("oscar-convergence", "OSCAR seed: 1 long flow + 3, 9 or 27 burst flows (microburst "
                               "1-5 ms) into one 10 Gbit/s port; round-trip times to converge "
                               "at onset and release, and their growth with the gap, OSCAR vs "
                               "DCTCP, DCQCN, Swift, HPCC, PowerTCP")
def oscar_convergence(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    b0, b1, _ = convergence_times(quick)
    ns = burst_flows(quick)
    rows: dict = {}
    for a in ALGS:
        rows[a] = {}
        for n in ns:
            try:
                rows[a][str(n)] = convergence_row(a, mode, quick, n, out)
            except Exception as e:      # one run's failure leaves the others' rows
                rows[a][str(n)] = {"error": f"{type(e).__name__}: {e}",
                                   "onset": {"reach": None, "settle": None, "reach_own": None},
                                   "release": {"reach": None, "settle": None, "reach_own": None}}
    fits = {a: {f"{ph}_{c}": rounds.growth([n + 1 for n in ns],
                                            [rows[a][str(n)][ph][c] for n in ns])
                for ph in ("onset", "release") for c in ("reach", "settle", "reach_own")}
            for a in ALGS}
    rtt = base_rtt(mode)
    echo(f"oscar-convergence: h1 long from 0; n burst flows from {b0 / 1e6:g} ms, each its fair "
         f"share over to {b1 / 1e6:g} ms; one 10 Gbit/s port (the slides' 40 scaled by 1/4: MSS "
         f"1 KB -> {MSS} B, OSCAR target queue {TARGET_QUEUE / 1e3:g} KB); base RTT "
         f"{rtt / 1e3:.2f} us = one round (OSCAR's tau {Oscar.Params().tau / 1e3:g} us: "
         f"{rtt / Oscar.Params().tau:.1f} updates a round)")
    echo(f"  seed (slides' table): {SEED_ORDER}")
    echo("  rounds: base RTTs from the burst's onset (release: its last flow's end) until the "
         "aggregate sending state (sum of pacing rates, or cwnd / base RTT when lower; "
         f"{', '.join(NAMES[a] for a in RATE_BASED)} by rate alone) is first within 5% of the "
         "level it ends at (reach: its last quarter's median, given beside) and until it stays "
         "there (settle; swing: the last quarter's p5-p95 over the level; own: reach in the "
         "path's own round trips, base RTT + the bottleneck queue's delay); gap Delta = n + 1 "
         "(onset: n + 1 line-rate starters into one link; release: the long flow from "
         "1 / (n + 1) to all of it)")
    echo("  algorithm  n   onset: reach (own) settle level swing first   release: reach settle "
         "level swing   long flow: reach, share/fair  drops")
    for a in ALGS:
        for n in ns:
            r = rows[a][str(n)]
            if "error" in r:
                echo(f"  {NAMES[a]:<9} {n:2d}  failed: {r['error']}")
                continue
            o, x = r["onset"], r["release"]
            own = "-" if o["reach_own"] is None else f"{o['reach_own']:.1f}"
            echo(f"  {NAMES[a]:<9} {n:2d}  {_fmt(o['reach']):>12} {own:>5} {_fmt(o['settle']):>6} "
                 f"{_lvl(o['level']):>5} {_lvl(o['spread']):>5} {o['first_round'] or 0:5.1f}   "
                 f"{_fmt(x['reach']):>14} {_fmt(x['settle']):>6} {_lvl(x['level']):>5} "
                 f"{_lvl(x['spread']):>5}   {_fmt(r['long_onset']):>16}, "
                 f"{r['long_share']:10.2f}  {r['drops']:5d}")
    echo("  (settle -: the phase's last quarter swings beyond 5% of its median; reach -: "
         "never within 5%, or the phase is empty (the burst did not end within the run))")
    echo("  fitted growth over Delta = " + ", ".join(str(n + 1) for n in ns)
         + " (rounds per doubling of Delta; order: under 2 rounds across the sweep O(1), else "
           "the better of the log and linear fits):")
    for a in ALGS:
        f = fits[a]
        echo(f"  {NAMES[a]:<9} " + "  ".join(
            f"{k.replace('_', ' ')} {_slope(f[k])} {f[k]['order'] or '-':<12}"
            for k in ("onset_reach", "release_reach", "onset_settle", "release_settle",
                      "onset_reach_own")))
    plots = _plot_convergence(out, rows, ns[-1], b0)
    head = "rounds to reach the level, growth over Delta (onset/release): " + ", ".join(
        f"{NAMES[a]} {fits[a]['onset_reach']['order'] or '-'}/"
        f"{fits[a]['release_reach']['order'] or '-'}" for a in ALGS)
    return {"link_bps": LINK_BPS, "base_rtt_ns": rtt, "burst_flows": list(ns), "rows": rows,
            "fits": fits, "plots": plots, "seed": SEED_ORDER}, head


def _slope(f) -> str:
    return "     -" if f["per_doubling"] is None else f"{f['per_doubling']:+6.1f}"


def _plot_convergence(out, rows, n, b0) -> list[str]:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for a in ALGS:
        r = rows[a][str(n)]
        if "aggregate" in r:
            ax.plot(r["t_us"], r["aggregate"], label=NAMES[a], lw=1)
    ax.axvline(b0 / 1e3, color="grey", ls=":", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("time (us)")
    ax.set_ylabel(f"aggregate sending state / link ({n} burst flows)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "convergence.png"), dpi=100)
    plt.close(fig)
    return ["convergence.png"]


# ---- oscar-bls ----------------------------------------------------------------------

TRACE: list = []
PROBE_SHARE = 0.3          # of the link: ~7 samples per 5 us batch at 256 B


@dataclass
class ProbeParams(Params):
    share: float = param(PROBE_SHARE, "", "fixed rate, of the line rate")


def _probe_init(s, p, d):
    set_rate(d, p.share * p.line_rate)


def _record_rtt(s, p, ev, d):
    """Plain Python (the probe runs in an agent with jit = false): keep each
    RTT sample (send time, RTT) for the offline comparison."""
    TRACE.append((int(ev.send_time), int(ev.rtt)))


class GradientProbe(Algorithm):
    """A fixed-rate flow that keeps every RTT sample it is given (jit = false
    only): the samples both gradient estimators are fed."""
    name = "gradient-probe"
    Params = ProbeParams
    state = ("x",)
    binds = ("RTT",)
    init = staticmethod(_probe_init)
    on_rtt = staticmethod(_record_rtt)


def bls_batches(send, rtt, tau):
    """Batches of tau ns of send time (>= 3 samples): (first, last, BLS slope)."""
    out = []
    i = 0
    while i < len(send):
        j = int(np.searchsorted(send, send[i] + tau, side="right"))
        if j - i >= 3:
            x = send[i:j] - send[i]
            y = rtt[i:j]
            n = j - i
            den = n * (x * x).sum() - x.sum() ** 2
            g = (n * (x * y).sum() - x.sum() * y.sum()) / den if den > 0 else 0.0
            out.append((send[i], send[j - 1], g))
        i = j
    return out


def divide_ewma(send, rtt, alpha=EWMA_ALPHA):
    """The slides' naive estimator: per consecutive pair dRTT / dsend, EWMA'd
    (alpha the old estimate's weight); the estimate after each sample."""
    g = np.zeros(len(send))
    cur = 0.0
    for i in range(1, len(send)):
        dx = send[i] - send[i - 1]
        if dx > 0:
            cur = alpha * cur + (1 - alpha) * (rtt[i] - rtt[i - 1]) / dx
        g[i] = cur
    return g


def _bls_experiment(mode: str, quick: bool) -> dict:
    b0, b1, end = (200_000, 600_000, 800_000) if quick else (300_000, 1_300_000, 1_600_000)
    oscar = _cc("oscar", mode)
    probe = {**oscar, "algorithm": "taurus.reproduce.oscar:GradientProbe", "mode": "agent",
             "params": {}, "jit": False, "cwnd": "1MB"}     # plain Python; the rate alone limits it
    return {"experiment": {"name": "oscar-bls", "duration": f"{end}ns", "seed": 1,
                           "step": "1us", "sample": "1us"},
            "topology": _topology(10),
            "cc": probe,
            "traffic": [{"kind": "bulk", "from": "h1", "to": "h11"},
                        {"kind": "bulk", "from": [f"h{i}" for i in range(2, 11)], "to": "h11",
                         "start": f"{b0}ns", "size": int(LINK_BPS / 10 * (b1 - b0) / 8e9),
                         "cc": {k: oscar[k] for k in ("algorithm", "mode", "params")}}],
            "outputs": outputs()}


def true_gradient(run_dir, port, lag, a, b):
    """The queue's growth over [a, b] + lag (the packets' time to the
    queue), as RTT ns per send ns: (q(b) - q(a)) / (C (b - a))."""
    import csv
    t, q = [], []
    with open(os.path.join(run_dir, "queue_series.csv")) as f:
        for r in csv.DictReader(f):
            if r["port"] == port:
                t.append(int(r["t_ns"]))
                q.append(int(r["queue_bytes"]))
    t, q = np.array(t, float), np.array(q, float)
    qa, qb = np.interp(np.asarray(a) + lag, t, q), np.interp(np.asarray(b) + lag, t, q)
    return (qb - qa) * 8e9 / LINK_BPS / (np.asarray(b) - np.asarray(a))


@scenario("oscar-bls", "OSCAR seed: delay gradient by batched least squares vs divide + "
                       "EWMA on the same RTT samples, against the switch queue's growth")
def oscar_bls(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    d = os.path.join(out, "bls")
    TRACE.clear()
    s = run_dict(_bls_experiment(mode, quick), d)
    tr = np.array(sorted(TRACE), np.float64)
    send, rtt = tr[:, 0], tr[:, 1]
    tau = Oscar.Params().tau
    batches = bls_batches(send, rtt, tau)
    a = np.array([x[0] for x in batches])
    b = np.array([x[1] for x in batches])
    bls = np.array([x[2] for x in batches])
    ew_all = divide_ewma(send, rtt)
    ew = ew_all[np.searchsorted(send, b)]
    lag = 3_000 + MSS * 8e9 / LINK_BPS             # NIC serialisation + the first link
    port = s["busiest_port"]
    truth = true_gradient(d, port, lag, a, b)
    keep = b > a
    mse_b = float(np.mean((bls[keep] - truth[keep]) ** 2))
    mse_e = float(np.mean((ew[keep] - truth[keep]) ** 2))
    ratio = mse_e / mse_b if mse_b > 0 else float("inf")
    echo(f"oscar-bls: h1 sends at a fixed {PROBE_SHARE:g} of the link from 0; h2..h10 (OSCAR) "
         f"join for a burst as in oscar-convergence; {len(send)} RTT samples of h1's flow, "
         f"{int(keep.sum())} batches of "
         f"{tau / 1e3:g} us; truth: {port}'s queue growth / link rate (queue sampled each 1 us)")
    echo(f"  divide + EWMA: alpha {EWMA_ALPHA} on the old estimate (ours; the slides give none)")
    echo(f"  seed (testbed): MSE BLS {SEED_MSE[0]}, divide+EWMA {SEED_MSE[1]} "
         f"({SEED_MSE[2]}x smaller)")
    echo(f"  ours:           MSE BLS {mse_b:.4g}, divide+EWMA {mse_e:.4g} ({ratio:.1f}x smaller)")
    plots = _plot_bls(out, b[keep], truth[keep], bls[keep], ew[keep])
    return ({"samples": len(send), "batches": int(keep.sum()), "mse_bls": mse_b,
             "mse_divide_ewma": mse_e, "ratio": ratio, "seed_mse": SEED_MSE, "port": port,
             "plots": plots},
            f"MSE BLS {mse_b:.4g}, divide+EWMA {mse_e:.4g} ({ratio:.1f}\u00d7 smaller)")


def _plot_bls(out, t, truth, bls, ew) -> list[str]:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(t / 1e3, ew, lw=0.8, label="divide + EWMA")
    ax.plot(t / 1e3, bls, lw=0.8, label="BLS")
    ax.plot(t / 1e3, truth, lw=1.2, color="k", label="queue growth / link rate")
    ax.set_xlabel("send time (us)")
    ax.set_ylabel("delay gradient")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bls.png"), dpi=100)
    plt.close(fig)
    return ["bls.png"]


# ---- oscar-fairness -----------------------------------------------------------------
AI_VARIANTS = {"authors": False, "per_tau": True}     # OscarParams.ai_per_tau
AI_NAMES = {"authors": "authors' AI (ai per batch)", "per_tau": "ours (ai x batch span in tau)"}


def _fairness_experiment(n: int, mode: str, quick: bool, per_tau: bool = False) -> dict:
    join, end = (300_000, 1_500_000) if quick else (500_000, 4_000_000)
    cc = _cc("oscar", mode)
    cc["params"] = {**cc["params"], "ai_per_tau": per_tau}
    return {"experiment": {"name": f"oscar-fair-{n}", "duration": f"{end}ns", "seed": 1,
                           "step": "2us", "sample": "2us"},
            "topology": _topology(n),
            "cc": cc,
            "traffic": [{"kind": "bulk", "from": "h1", "to": f"h{n + 1}"},
                        {"kind": "bulk", "from": [f"h{i}" for i in range(2, n + 1)],
                         "to": f"h{n + 1}", "start": f"{join}ns"}],
            "outputs": outputs()}


def fairness_row(n: int, mode: str, quick: bool, out: str, variant: str = "authors") -> dict:
    d = os.path.join(out, f"fair-{variant}-{n}")
    exp = _fairness_experiment(n, mode, quick, AI_VARIANTS[variant])
    with _trace_decisions() as runs:
        s = run_dict(exp, d)
        tr = _trace(runs[-1])
    join = s["flows"][1]["start_ns"]
    end = s["ended_at_ns"]
    rates = np.stack([normalised_rate(tr, k, s) for k in range(n)], axis=1)
    ok = (np.abs(rates - 1 / n) <= 0.1 / n).all(axis=1)
    t = tr["t"]
    i0 = int(np.searchsorted(t, join))
    conv = next((t[i] - join for i in range(i0, len(t)) if ok[i:i + HOLD_NS // 2_000].all()
                 and i + HOLD_NS // 2_000 <= len(t)), None)
    t_after = join + (end - join) // 2          # "after convergence": the run's second half
    return {"flows": n, "jain": long_jain(d, t_after),
            "jain_allowed": float(np.mean([jain(r) for r in rates[t > t_after]])),
            "time_to_fair_us": None if conv is None else conv / 1e3,
            "goodput_bps": s["throughput_bps"], "drops": drops(s)}


@scenario("oscar-fairness", "OSCAR seed: 2 and then 8 OSCAR flows on one 10 Gbit/s "
                            "bottleneck, the authors' additive increase and ours; Jain after "
                            "convergence, time to within 10% of fair")
def oscar_fairness(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    rows = {v: {n: fairness_row(n, mode, quick, out, v) for n in (2, 8)} for v in AI_VARIANTS}
    echo("oscar-fairness: h1 from 0, the others join; one 10 Gbit/s port, base RTT ~13.5 us "
         f"(OSCAR given {base_rtt(mode) / 1e3:.2f} us, a lone flow's)")
    echo("  seed: OSCAR converges to the target state rapidly and fairly (testbed figure); "
         "goal Jain >= 0.98")
    echo("  additive increase                flows   Jain (goodput)  Jain (allowed rate)  "
         "to within 10% of fair  Gbit/s  drops")
    for v, byn in rows.items():
        for n, r in byn.items():
            tf = "-" if r["time_to_fair_us"] is None else f"{r['time_to_fair_us']:.0f} us"
            echo(f"  {AI_NAMES[v]:<31} {n:5d}   {r['jain']:14.3f}  {r['jain_allowed']:19.3f}  "
                 f"{tf:>21}  {r['goodput_bps'] / 1e9:6.2f}  {r['drops']:5d}")
    a, o = rows["authors"], rows["per_tau"]
    return ({"rows": {v: {str(n): r for n, r in byn.items()} for v, byn in rows.items()}},
            f"Jain 2 / 8 flows: authors' AI {a[2]['jain']:.3f} / {a[8]['jain']:.3f}, "
            f"AI per tau (ours) {o[2]['jain']:.3f} / {o[8]['jain']:.3f}")
