"""The run directory: summary.json, CSV time series, FCT slowdown, fairness.

    summary.json       run facts, per flow (bytes, goodput, FCT, ACKs that
                       echoed CE / UE: ce_acks, ue_acks), per group,
                       per switch port (drops, marks, queue), per agent
                       (messages, updates, CPU), FCT slowdown bins, fairness
    flow_series.csv    t_ns, flow, group, rate_bps, cwnd_bytes (long flows:
                       bulk and incast), every sample period
    group_series.csv   t_ns, group, rate_bps (every traffic table)
    queue_series.csv   t_ns, port, queue_bytes (every switch port)
    fairness.csv       t_ns, active, jain (over the active long flows)
    fct.csv            one row per finished flow or RPC: size, FCT, slowdown
    fct_bins.csv       slowdown p50/p95/p99 per size bin

summary.json's "fidelity" (wall-clock runs; null in virtual time) says
whether the engine kept up with the configuration: timer lateness, srtt
against base RTT, bottleneck load, engine CPU, and any `fidelity warning:`
lines (experiment/fidelity.py).

Slowdown = FCT / (base RTT + size / line rate): base RTT is twice the sum
of the link delays on the path, line rate the slowest link on it; FCT of a
flow runs from its first post to the ack of its last byte, of an RPC from
the request's post to the ack of the response's last byte.
"""
from __future__ import annotations

import csv
import json
import os

import numpy as np

from taurus.tools.analysis import fct_slowdown, slowdown_bins
from taurus.datapath.ccevents import EVENT_NAMES

from . import fidelity

SUMMARY = "summary.json"


def path_of(topo, a: str, b: str) -> tuple[int, int]:
    """(sum of one-way link delays ns, slowest link rate bit/s) from host a to b."""
    links = [lk for _, lk in fidelity.path_links(topo, a, b)]
    return (sum(lk.delay or 0 for lk in links),
            min((lk.rate or 10**10 for lk in links), default=10**10))


def _flow_rows(r, snap) -> list[dict]:
    flows = r.plan.flows
    acked, srtt = snap.get("acked"), snap.get("srtt")
    evs = snap.get("events")
    ce, ue = snap.get("ce_acks"), snap.get("ue_acks")
    end = r.now
    rows = []
    for k, f in enumerate(flows):
        cc = r._flow_cc(f)
        b = int(acked[k]) if acked is not None else 0
        fct = int(r.done_at[k] - r.posted_at[k]) if r.done_at[k] >= 0 and r.posted_at[k] >= 0 \
            and f.kind not in ("rpc-req", "rpc-resp") else None
        t_start = int(r.posted_at[k]) if r.posted_at[k] >= 0 else None
        span = (fct if fct else (min(end, f.stop) - t_start) if t_start is not None else 0)
        rows.append({"id": k, "nic_flow": int(r.fid[k]), "group": f.group, "kind": f.kind,
                     "src": f.src, "dst": f.dst, "start_ns": f.start, "size": f.size,
                     "mode": cc.mode, "algorithm": r.alg_name.get(k, cc.algorithm),
                     "jit": _jit(r, f.src, cc.mode),
                     "bytes": b, "goodput_bps": (b * 8e9 / span) if span and span > 0 else 0.0,
                     "fct_ns": fct, "done": fct is not None,
                     "srtt_ns": int(srtt[k]) if srtt is not None else None,
                     "ce_acks": int(ce[k]) if ce is not None else 0,
                     "ue_acks": int(ue[k]) if ue is not None else 0,
                     "events": _events_of(evs, k)})
    return rows


def _jit(r, host: str, mode: str):
    """Whether the flow's handlers ran compiled (None: no algorithm, static)."""
    if mode == "static":
        return None
    return True if mode == "native" else r.x.host_cc(host).jit


def algorithms(r) -> list[dict]:
    """Each algorithm the run used, once per (name, mode, jit): where its class
    came from (registry.source: builtin, plugin, a file with its hash) and
    its flows."""
    from taurus.cc_algorithms.registry import source
    out = {}
    for k, f in enumerate(r.plan.flows):
        cc = r._flow_cc(f)
        if cc.mode == "static":
            continue
        key = (r.alg_name.get(k, cc.algorithm), cc.mode, _jit(r, f.src, cc.mode))
        if key not in out:
            out[key] = {"name": key[0], "mode": key[1], "jit": key[2], "spec": cc.algorithm,
                        "source": source(cc.algorithm), "flows": 0}
        out[key]["flows"] += 1
    return list(out.values())


def _events_of(evs, k) -> dict:
    """{event name: records delivered to flow k's algorithm}, those > 0."""
    if evs is None:
        return {}
    return {EVENT_NAMES[e]: int(c) for e, c in enumerate(evs[k]) if c > 0}


def _fct_table(r, rows) -> list[dict]:
    """Finished flows and RPCs with their ideal FCT and slowdown."""
    topo = r.x.topo
    out = []
    paths: dict = {}            # (src, dst) -> path_of: many flows share a pair
    for row in rows:
        if row["fct_ns"] is None:
            continue
        key = (row["src"], row["dst"])
        if key not in paths:
            paths[key] = path_of(topo, *key)
        d, rate = paths[key]
        out.append({"what": f"flow {row['id']}", "group": row["group"], "size": row["size"],
                    "fct_ns": row["fct_ns"], "base_rtt_ns": 2 * d, "line_rate_bps": rate})
    for i, size, lat in r.rpc_lat:
        rp = r.plan.rpcs[i]
        d, rate = path_of(topo, rp.client, rp.server)
        out.append({"what": f"rpc {i}", "group": rp.group, "size": size, "fct_ns": lat,
                    "base_rtt_ns": 2 * d, "line_rate_bps": rate})
    for o in out:
        o["slowdown"] = float(fct_slowdown([o["size"]], [o["fct_ns"]], o["base_rtt_ns"],
                                           o["line_rate_bps"])[0])
    return out


def _pct(v) -> dict:
    if not len(v):
        return {"count": 0, "p50": None, "p95": None, "p99": None}
    return {"count": len(v), **{f"p{q}": float(np.percentile(v, q)) for q in (50, 95, 99)}}


def _series(r):
    """Rates (bit/s) between samples: t[1:], rates [T-1, flows]."""
    if len(r.samples_t) < 2:
        return np.zeros(0), np.zeros((0, len(r.plan.flows)))
    t = np.array(r.samples_t, np.int64)
    acked = np.array(r.samples_acked, np.float64)
    dt = np.diff(t).astype(float)
    return t[1:], np.diff(acked, axis=0) * 8e9 / dt[:, None]


def _long_flows(r) -> list[int]:
    return [k for k, f in enumerate(r.plan.flows) if f.kind in ("bulk", "incast")]


def fairness_series(r, t, rates):
    """Jain over the long flows active in each sample interval (started, not
    stopped, not yet finished): (t_ns, active, jain or None) per sample."""
    longs = np.array(_long_flows(r), np.int64)
    if not len(t):
        return []
    fl = r.plan.flows
    start = np.array([fl[k].start for k in longs], np.int64)
    stop = np.array([fl[k].stop for k in longs], np.int64)
    done = np.asarray(r.done_at, np.int64)[longs]
    lag = int(t[1] - t[0]) if len(t) > 1 else 0
    out = []
    rows = max(1, (1 << 22) // max(1, len(longs)))     # bounded masks for 10^4 flows
    for a in range(0, len(t), rows):
        ti = np.asarray(t[a:a + rows], np.int64)[:, None]
        act = (start < ti - lag) & (ti <= stop) & ((done < 0) | (done >= ti))
        x = np.where(act, rates[a:a + rows][:, longs], 0.0)
        n = act.sum(axis=1)
        s1, s2 = x.sum(axis=1), (x * x).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            j = np.where(s2 > 0, s1 * s1 / (n * s2), 1.0)
        out += [(int(tt), int(k), float(jj) if k else None)
                for tt, k, jj in zip(t[a:a + rows], n, j)]
    return out


def build_summary(r, snap) -> dict:
    x = r.x
    rows = _flow_rows(r, snap)
    fcts = _fct_table(r, rows)
    t, rates = _series(r)
    fair = fairness_series(r, t, rates)
    warm = [j for (ti, n, j) in fair if ti > x.warmup and j is not None and n >= 2]
    keep = t > x.warmup
    groups = {}
    # flows and FCTs by group, gathered once (a plan may have thousands of groups)
    by_group: dict[str, list[int]] = {}
    for k, f in enumerate(r.plan.flows):
        by_group.setdefault(f.group, []).append(k)
    fct_by: dict[str, list[dict]] = {}
    for o in fcts:
        fct_by.setdefault(o["group"], []).append(o)
    for tr in x.traffic:
        ks = by_group.get(tr.key, [])
        g_rate = rates[keep][:, ks].sum(axis=1) if len(ks) and keep.any() else np.zeros(0)
        gf = [o["fct_ns"] for o in fct_by.get(tr.key, [])]
        groups[tr.key] = {"kind": tr.kind, "flows": len(ks),
                          "bytes": int(sum(rows[k]["bytes"] for k in ks)),
                          "goodput_bps": float(g_rate.mean()) if len(g_rate) else 0.0,
                          "completed": len(gf), "fct_ns": _pct(gf),
                          "slowdown": _pct([o["slowdown"] for o in fct_by.get(tr.key, [])])}
    qs = np.array(r.samples_queue) if r.samples_queue else np.zeros((0, len(r.port_list)))
    ports = {}
    for j, (name, _) in enumerate(r.port_list):
        st = snap.get("ports", {}).get(name, {})
        col = qs[:, j] if len(qs) else np.zeros(0)
        ports[name] = {"drops": st.get("drop", 0), "marks": st.get("ecn_mark", 0),
                       "tx_bytes": st.get("tx_bytes", 0),
                       "queue_max": int(col.max()) if len(col) else 0,
                       "queue_mean": float(col.mean()) if len(col) else 0.0,
                       "queue_p99": float(np.percentile(col, 99)) if len(col) else 0.0,
                       "counters": st}
    agents = {}
    for h, a in snap.get("agents", {}).items():
        w = {k: v for k, v in a["handler"].get("filters", {}).items() if k.startswith("written")}
        agents[h] = {"messages": a["messages"].get("drained", 0), "updates": int(sum(w.values())),
                     "calls": a["handler"].get("calls", 0), "detail": a}
    total = rates[keep].sum(axis=1) if keep.any() else np.zeros(0)
    busiest = max(ports, key=lambda p: ports[p]["tx_bytes"]) if ports else None
    return {
        "experiment": x.name, "description": x.description, "source": os.path.abspath(x.source)
        if os.path.exists(x.source) else x.source,
        "clock": r.clock, "seed": x.seed, "duration_ns": x.duration, "step_ns": r.step,
        "stepping": x.stepping, "runner_steps": r.steps,
        "separation": (None if getattr(r, "separation", None) is None else
                       {"report_ns": r.separation.report, "decision_ns": r.separation.decision,
                        "per_message_ps": r.separation.per_message_ps}),
        "sample_ns": r.step * r.sample_every, "warmup_ns": x.warmup,
        "complete": r.complete, "error": r.error, "ended_at_ns": int(r.now),
        "algorithms": algorithms(r),
        "faults": {"handler": int(sum(r.faults.values())),
                   "hosts": {h: int(n) for h, n in r.faults.items() if n}},
        "notes": r.loads.notes,
        "loop_wall_s": round(r.loop_s, 3), "engine_wall_s": round(r.engine_s, 3),
        "throughput_bps": float(total.mean()) if len(total) else 0.0,
        "fairness": {"jain_mean": float(np.mean(warm)) if warm else None,
                     "jain_min": float(np.min(warm)) if warm else None},
        "busiest_port": busiest,
        "flows": rows, "groups": groups, "ports": ports,
        "agent": {"hosts": agents,
                  "messages": int(sum(a["messages"] for a in agents.values())),
                  "updates": int(sum(a["updates"] for a in agents.values())),
                  "cpu_s": round(r.agent_cpu_s, 4)},
        "nics": snap.get("nics", {}),
        "fct_slowdown": slowdown_bins([o["size"] for o in fcts], [o["slowdown"] for o in fcts],
                                      x.size_bins),
        "rpc": _pct([lat for _, _, lat in r.rpc_lat]),
        "fidelity": fidelity.report(r, snap, ports),
    }


def _csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def write_results(r, snap, out_dir) -> dict:
    s = build_summary(r, snap)
    tmp = os.path.join(out_dir, SUMMARY + ".tmp")
    with open(tmp, "w") as f:
        json.dump(s, f, indent=1, default=int)
    os.replace(tmp, os.path.join(out_dir, SUMMARY))
    if r.x.csv:
        t, rates = _series(r)
        flows = r.plan.flows
        cw = np.array(r.samples_cwnd[1:]) if len(r.samples_cwnd) > 1 else np.zeros((0, len(flows)))
        _csv(os.path.join(out_dir, "flow_series.csv"), ["t_ns", "flow", "group", "rate_bps", "cwnd_bytes"],
             [(int(ti), k, flows[k].group, round(float(rates[i, k])), int(cw[i, k]))
              for i, ti in enumerate(t) for k in _long_flows(r)])
        members = {tr.key: [k for k, f in enumerate(flows) if f.group == tr.key]
                   for tr in r.x.traffic}
        group_rate = {g: rates[:, ks].sum(axis=1) for g, ks in members.items()}
        _csv(os.path.join(out_dir, "group_series.csv"), ["t_ns", "group", "rate_bps"],
             [(int(ti), tr.key, round(float(group_rate[tr.key][i])))
              for i, ti in enumerate(t) for tr in r.x.traffic])
        _csv(os.path.join(out_dir, "queue_series.csv"), ["t_ns", "port", "queue_bytes"],
             [(int(ti), name, int(q[j])) for ti, q in zip(r.samples_t, r.samples_queue)
              for j, (name, _) in enumerate(r.port_list)])
        _csv(os.path.join(out_dir, "fairness.csv"), ["t_ns", "active", "jain"],
             fairness_series(r, t, rates))
        rows = _fct_table(r, s["flows"])
        _csv(os.path.join(out_dir, "fct.csv"),
             ["what", "group", "size", "fct_ns", "base_rtt_ns", "line_rate_bps", "slowdown"],
             [(o["what"], o["group"], o["size"], o["fct_ns"], o["base_rtt_ns"], o["line_rate_bps"],
               round(o["slowdown"], 4)) for o in rows])
        _csv(os.path.join(out_dir, "fct_bins.csv"), ["lo", "hi", "count", "p50", "p95", "p99"],
             [(b["lo"], b["hi"], b["count"], b["p50"], b["p95"], b["p99"])
              for b in s["fct_slowdown"]])
    if r.x.plots:
        try:
            from .plots import plot_run
            s["plots"] = plot_run(out_dir)
        except Exception as e:      # plots are a convenience; the data is already written
            s["notes"].append(f"plots failed: {e}")
        with open(tmp, "w") as f:
            json.dump(s, f, indent=1, default=int)
        os.replace(tmp, os.path.join(out_dir, SUMMARY))
    return s
