"""Is a wall-clock run faithful to its configuration?

On the wall clock the emulated network is only as good as the engine's
loop: if it cannot keep up, timers fire late, delays stretch, senders are
held back by the CPU or by an RTT the engine inflates, and the run measures
the engine rather than congestion control.  The report (summary.json
"fidelity", and on screen) gives:

- timers: how late the engine's timers fired, p50 / p99 / max ns (the
  wheel's histogram, datapath/wheel.py; p50 and p99 are the upper bounds of
  their buckets, at most 25% above the true value);
- flows: each flow's srtt against its configured base RTT (twice the path's
  link delays plus, per link, one full data frame and one ACK serialised)
  and against what the bottleneck's mean queue adds to it;
- bottlenecks: per switch egress port that is the slowest link of some
  flow, the plan's demand, the offered load (bytes queued or dropped there)
  and the carried load against its rate;
- engine: its loop's busy fraction (clock time in passes that did work;
  time the process was descheduled counts to the pass it fell in), its
  share of the wall time (the rest is Python between slices, when the
  datapath stands still) and the process's CPU time against the wall time
  (below 1: the machine took the core away), and how often and how long
  at most its loop was out between run chunks or slices (Engine.pauses:
  the engine process's own bookkeeping in the process model, Python's
  step between slices otherwise).

Rules (``assess``), each a line starting ``fidelity warning:`` with what to
change:

1. timers late: p99 lateness above a tenth of the smallest base RTT;
2. engine-limited: a bottleneck the plan's demand should fill carries less
   than RATE_REACHED of its rate, while the senders were CPU-limited (loop
   busy, or the process short of CPU) or window-limited (srtt well above
   base RTT plus queueing);
3. RTT inflated: a flow's srtt above SRTT_INFLATION x (base RTT + the mean
   queueing delay of its bottleneck): the algorithm sees delay the
   configuration does not have;
4. CPU taken: the process had the CPU less than CPU_SHORT of the wall
   time.  A busy-polling engine that other processes compete with is
   descheduled for milliseconds at a time; no configuration fixes that,
   only an idle core does.

``Probe`` measures the engine over the run (the runner starts it at the
first slice and reads it at the end); ``report`` gathers the rest from the
runner and its snapshot; ``assess`` applies the rules to plain numbers.
"""
from __future__ import annotations

import time
from collections import deque

import numpy as np

from taurus.datapath.devices.nic.setup import DATA_HDR
from taurus.datapath.wheel import late_bucket_bounds
from taurus.datapath.wire import spec as S

ACK_FRAME = S.ETH_SIZE + S.IPV4_SIZE + S.UDP_SIZE + S.ACK_CC_SIZE + S.PROBE_SIZE
TIMER_LATE_FRACTION = 0.1       # of the smallest base RTT, at p99
RATE_REACHED = 0.8              # of a bottleneck's rate, carried over the whole run
SRTT_INFLATION = 2.0            # x (base RTT + mean queueing delay at the bottleneck)
BUSY_SATURATED = 0.95           # loop busy fraction at which the engine is CPU-limited
CPU_SHORT = 0.9                 # process CPU / wall below which the machine held it back


class Probe:
    """The engine's loop timing and the process's CPU time over a run (the
    largest timer lateness is the engine's since it started; no timer fires
    before a run)."""

    def __init__(self, eng):
        eng.pauses_reset()
        self.t0 = eng.loop_timing()
        self.cpu0 = time.process_time()
        self.wall0 = time.monotonic_ns()

    def read(self, eng) -> dict:
        t = eng.loop_timing()
        return {"wall_ns": time.monotonic_ns() - self.wall0,
                "cpu_s": time.process_time() - self.cpu0,
                "run_ns": t["run_ns"] - self.t0["run_ns"],
                "idle_ns": t["idle_ns"] - self.t0["idle_ns"],
                "late_hist": t["late_hist"] - self.t0["late_hist"],
                "late_max_ns": t["late_max_ns"], "pauses": eng.pauses()}


def late_percentiles(hist, max_ns: int) -> dict:
    """{count, p50_ns, p99_ns, max_ns} of a lateness histogram (wheel.late)."""
    hist = np.asarray(hist, np.int64)
    n = int(hist.sum())
    if n == 0:
        return {"count": 0, "p50_ns": None, "p99_ns": None, "max_ns": None}
    cum = np.cumsum(hist)

    def q(f):
        i = int(np.searchsorted(cum, f * n))
        return min(late_bucket_bounds(i)[1] - 1, max_ns)
    return {"count": n, "p50_ns": q(0.5), "p99_ns": q(0.99), "max_ns": int(max_ns)}


def path_links(topo, a: str, b: str) -> list[tuple[str, object]]:
    """[(upstream node, link)] from host a to host b, in order (fewest hops)."""
    adj: dict[str, list] = {}
    for lk in topo.links:
        adj.setdefault(lk.a, []).append((lk.b, lk))
        adj.setdefault(lk.b, []).append((lk.a, lk))
    prev = {a: None}
    q = deque([a])
    while q:
        u = q.popleft()
        for v, lk in adj.get(u, ()):
            if v not in prev:
                prev[v] = (u, lk)
                q.append(v)
    if b not in prev:
        raise ValueError(f"no path from {a} to {b}")
    out, v = [], b
    while prev[v] is not None:
        u, lk = prev[v]
        out.append((u, lk))
        v = u
    return out[::-1]


def _rate(lk) -> int:
    return lk.rate or 10**10


def base_rtt(links, mss: int) -> int:
    """ns: twice the link delays, plus one data frame out and one ACK back
    serialised on every link."""
    return int(sum(2 * (lk.delay or 0) + (DATA_HDR + mss + ACK_FRAME) * 8e9 / _rate(lk)
                   for _, lk in links))


def egress_port(node: str, lk) -> str:
    """The interface through which `node` sends on link `lk`."""
    return lk.a_iface if lk.a == node else lk.b_iface


def _bottleneck(topo, links):
    """(port name, rate) of the slowest link of a path that a switch sends
    on (the first of equals), or None when the sender's own link is slowest."""
    slow = min(_rate(lk) for _, lk in links)
    for u, lk in links:
        if _rate(lk) == slow:
            return (egress_port(u, lk), slow) if not topo.node(u).is_host else None
    return None


def _demand(f, rate_limit: int, span: int) -> float:
    """bit/s a flow of the plan asks for, averaged over the run."""
    if span <= 0:
        return 0.0
    if f.size is None:                      # open-ended bulk: all it can get while active
        active = max(0, min(f.stop, span) - f.start)
        return rate_limit * active / span
    return f.size * 8e9 / span


def report(r, snap, ports: dict) -> dict | None:
    """The fidelity report of a wall-clock run (None for virtual time): the
    runner `r`, its snapshot (with "timing", Probe.read) and the summary's
    switch ports (queue means)."""
    timing = snap.get("timing")
    if r.clock != "wall" or timing is None:
        return None
    x, topo = r.x, r.x.topo
    span = max(1, int(r.now))
    stats = snap.get("ports", {})
    srtt = snap.get("srtt")
    flows, necks = [], {}
    for k, f in enumerate(r.plan.flows):
        links = path_links(topo, f.src, f.dst)
        cc = r._flow_cc(f)
        base = base_rtt(links, cc.mss)
        neck = _bottleneck(topo, links)
        sender = _rate(links[0][1])
        limit = min(sender, cc.rate) if cc.rate else sender
        if neck:
            b = necks.setdefault(neck[0], {"rate_bps": neck[1], "demand_bps": 0.0, "flows": []})
            b["demand_bps"] += _demand(f, limit, span)
            b["flows"].append(k)
        flows.append({"id": k, "src": f.src, "dst": f.dst, "base_rtt_ns": base,
                      "srtt_ns": int(srtt[k]) if srtt is not None and srtt[k] > 0 else None,
                      "bottleneck": neck[0] if neck else None})
    for name, b in necks.items():
        st = stats.get(name, {})
        b["offered_bps"] = (st.get("enq_bytes", 0) + st.get("drop_bytes", 0)) * 8e9 / span
        b["carried_bps"] = st.get("tx_bytes", 0) * 8e9 / span
        b["queue_mean_bytes"] = ports.get(name, {}).get("queue_mean", 0.0)
        b["marks"] = st.get("ecn_mark", 0)
        b["late_restarts"] = st.get("late", 0)
    wall = max(1, timing["wall_ns"])
    pauses = timing.get("pauses") or {}
    engine = {"busy": 1 - timing["idle_ns"] / timing["run_ns"] if timing["run_ns"] > 0 else None,
              "loop_share": timing["run_ns"] / wall,
              "cpu_share": timing["cpu_s"] * 1e9 / wall,
              "pauses": pauses.get("count"), "pause_max_ns": pauses.get("max_ns")}
    return assess(late_percentiles(timing["late_hist"], timing["late_max_ns"]), flows, necks,
                  engine)


def assess(timers: dict, flows: list[dict], bottlenecks: dict, engine: dict) -> dict:
    """Apply the rules to measured numbers: timers (late_percentiles),
    flows [{id, src, dst, base_rtt_ns, srtt_ns, bottleneck}], bottlenecks
    {port: {rate_bps, demand_bps, offered_bps, carried_bps, queue_mean_bytes}},
    engine {busy, loop_share, cpu_share}.  Returns them with each flow's
    expected srtt and ratio, each bottleneck's utilisation, and "warnings"."""
    warnings = []
    for f in flows:
        b = bottlenecks.get(f.get("bottleneck"))
        qd = b["queue_mean_bytes"] * 8e9 / b["rate_bps"] if b else 0.0
        f["expected_srtt_ns"] = int(f["base_rtt_ns"] + qd)
        f["srtt_ratio"] = (round(f["srtt_ns"] / f["expected_srtt_ns"], 3)
                           if f["srtt_ns"] and f["expected_srtt_ns"] > 0 else None)
    for b in bottlenecks.values():
        b["utilisation"] = round(b["carried_bps"] / b["rate_bps"], 3)
    base_min = min((f["base_rtt_ns"] for f in flows), default=None)
    p99 = timers.get("p99_ns")
    if base_min and p99 is not None and p99 > TIMER_LATE_FRACTION * base_min:
        warnings.append(
            f"fidelity warning: the engine's timers fired up to {p99 / 1e3:.1f} us late (p99; "
            f"max {timers['max_ns'] / 1e3:.1f} us), more than a tenth of the base RTT "
            f"({base_min / 1e3:.1f} us): delays and rates are not what the file says; lengthen "
            f"the link delays (base RTT >= {10 * p99 / 1e3:.0f} us) or lower the rates")
    inflated = [f for f in flows if f["srtt_ratio"] and f["srtt_ratio"] > SRTT_INFLATION]
    busy, cpu = engine.get("busy"), engine.get("cpu_share")
    cpu_limited = (busy is not None and busy >= BUSY_SATURATED) or (cpu is not None
                                                                    and cpu < CPU_SHORT)
    due = {p: b for p, b in bottlenecks.items() if b["demand_bps"] >= b["rate_bps"]}
    if due and all(b["utilisation"] < RATE_REACHED for b in due.values()) \
            and (cpu_limited or inflated):
        why = []
        if cpu_limited:
            why.append(f"CPU-limited (engine loop busy {100 * (busy or 0):.0f}%, process CPU "
                       f"{100 * (cpu or 0):.0f}% of wall)")
        if inflated:
            why.append("window-limited (srtt up to "
                       f"{max(f['srtt_ratio'] for f in inflated):.1f}x base RTT + queueing)")
        p, b = max(due.items(), key=lambda kv: kv[1]["utilisation"])
        taken = not inflated and (busy is None or busy < BUSY_SATURATED)
        fix = ("give the engine a core of its own" if taken else
               f"lower the rates (this engine carried {b['carried_bps'] / 1e9:.3f} Gbit/s) or "
               f"lengthen the delays")
        warnings.append(
            f"fidelity warning: no bottleneck reached its rate ({p} carried "
            f"{b['carried_bps'] / 1e9:.3f} of {b['rate_bps'] / 1e9:.3f} Gbit/s) while the senders "
            f"were {' and '.join(why)}: the run measures the engine, not congestion control; "
            f"{fix}")
    elif inflated:
        worst = max(inflated, key=lambda f: f["srtt_ratio"])
        warnings.append(
            f"fidelity warning: flow {worst['id']} ({worst['src']} -> {worst['dst']}) saw srtt "
            f"{worst['srtt_ns'] / 1e3:.1f} us, {worst['srtt_ratio']:.1f}x its base RTT plus "
            f"queueing ({worst['expected_srtt_ns'] / 1e3:.1f} us): the engine adds delay the "
            f"configuration does not have; lengthen the link delays or lower the rates")
    if cpu is not None and cpu < CPU_SHORT:
        warnings.append(
            f"fidelity warning: the engine process had the CPU only {100 * cpu:.0f}% of the wall "
            f"time (other processes took its core, descheduling it for milliseconds): run on an "
            f"idle machine (a core to itself)")
    return {"timers": timers, "engine": {k: (round(v, 4) if v is not None else None)
                                         for k, v in engine.items()},
            "flows": flows, "bottlenecks": bottlenecks, "warnings": warnings,
            "faithful": not warnings}
