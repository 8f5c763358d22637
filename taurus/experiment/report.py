"""`taurus report RUN_DIR [RUN_DIR...]`: runs side by side, one column each."""
from __future__ import annotations

import json
import os

from .results import SUMMARY


def _g(v, scale=1.0, fmt="{:.2f}"):
    return "-" if v is None else fmt.format(v / scale)


def rows_of(s: dict) -> list[tuple[str, str]]:
    """(label, value) lines for one run summary."""
    out = [("experiment", s["experiment"]), ("clock", s["clock"]),
           ("algorithm", algorithm_cell(s)),
           ("complete", "yes" if s["complete"] else f"NO ({s.get('error') or 'partial'})"),
           ("duration (ms)", _g(s["duration_ns"], 1e6)),
           ("throughput (Gbit/s)", _g(s["throughput_bps"], 1e9)),
           ("Jain mean / min", f"{_g(s['fairness']['jain_mean'], fmt='{:.3f}')} / "
                               f"{_g(s['fairness']['jain_min'], fmt='{:.3f}')}")]
    p = s.get("busiest_port")
    if p:
        q = s["ports"][p]
        out += [("busiest port", p), ("  queue mean / max (KB)",
                                        f"{_g(q['queue_mean'], 1e3, '{:.1f}')} / {_g(q['queue_max'], 1e3, '{:.1f}')}"),
                ("  marks / drops", f"{q['marks']} / {q['drops']}")]
    if fault_count(s):
        out.append(("handler faults", str(fault_count(s))))
    out += [("drops (all ports)", str(sum(v["drops"] for v in s["ports"].values()))),
            ("agent messages / updates", f"{s['agent']['messages']} / {s['agent']['updates']}"),
            ("agent CPU (s)", _g(s["agent"]["cpu_s"], fmt="{:.3f}"))]
    out += fidelity_rows(s.get("fidelity"))
    for g, v in s["groups"].items():
        out.append((f"{g} {v['kind']} (Gbit/s)", _g(v["goodput_bps"], 1e9)))
        if v["completed"]:
            f = v["fct_ns"]
            out.append(("  FCT p50/p99 (us)", f"{_g(f['p50'], 1e3, '{:.1f}')} / {_g(f['p99'], 1e3, '{:.1f}')}"))
            sd = v["slowdown"]
            out.append(("  slowdown p50/p99", f"{_g(sd['p50'])} / {_g(sd['p99'])}"))
    return out


def algorithm_cell(s: dict) -> str:
    """The run's algorithms with mode and jit: "ecn-aimd agent jit=false";
    several joined by ", " (older summaries: from the flows)."""
    algs = s.get("algorithms")
    if algs is None:
        algs = [{"name": f["algorithm"], "mode": f["mode"], "jit": None}
                for f in s.get("flows", []) if f.get("mode") != "static"]
    cells = []
    for a in algs:
        c = f"{a['name']} {a['mode']}" + ("" if a.get("jit") is None or a["mode"] == "native"
                                          else f" jit={'true' if a['jit'] else 'false'}")
        if c not in cells:
            cells.append(c)
    return ", ".join(cells) or "-"


def fault_count(s: dict) -> int:
    return int((s.get("faults") or {}).get("handler", 0))


def fault_line(s: dict) -> str:
    """What `taurus run` says of a run that went on past handler faults."""
    n = fault_count(s)
    if not n:
        return ""
    hosts = ", ".join(f"{h} {c}" for h, c in s["faults"]["hosts"].items())
    return f"handler faults: {n} ({hosts}); their events' decisions were dropped (on_fault = fallback)"


def table(dirs: list[str]) -> str:
    cols = []
    for d in dirs:
        path = os.path.join(d, SUMMARY)
        with open(path) as f:
            cols.append((os.path.basename(os.path.normpath(d)), dict(rows_of(json.load(f)))))
    labels = []
    for _, c in cols:
        labels += [k for k in c if k not in labels]
    w0 = max(len(k) for k in labels)
    ws = [max(len(name), *(len(c.get(k, "")) for k in labels)) for name, c in cols]
    lines = [" " * w0 + "  " + "  ".join(n.rjust(w) for (n, _), w in zip(cols, ws))]
    for k in labels:
        lines.append(k.ljust(w0) + "  " + "  ".join(c.get(k, "").rjust(w) for (_, c), w in zip(cols, ws)))
    return "\n".join(lines)


def fidelity_rows(fd: dict | None) -> list[tuple[str, str]]:
    """(label, value) lines of a wall-clock run's fidelity report."""
    if not fd:
        return []
    t, e = fd["timers"], fd["engine"]
    ratios = [f["srtt_ratio"] for f in fd["flows"] if f["srtt_ratio"] is not None]
    out = [("timers late p50/p99/max (us)", " / ".join(_g(t[k], 1e3, "{:.1f}")
                                                       for k in ("p50_ns", "p99_ns", "max_ns"))),
           ("engine busy / loop / CPU (%)", " / ".join(_g(e[k], 0.01, "{:.0f}")
                                                       for k in ("busy", "loop_share", "cpu_share"))),
           ("engine paused: times, max (us)",
            f"{e['pauses']}, {e['pause_max_ns'] / 1e3:.0f}" if e.get("pause_max_ns") is not None
            else "-"),
           ("srtt / (base RTT + queue)", f"max {max(ratios):.2f}x" if ratios else "-")]
    for p, b in fd["bottlenecks"].items():
        out.append((f"bottleneck {p} (Gbit/s)", f"offered {b['offered_bps'] / 1e9:.3f}, carried "
                                                f"{b['carried_bps'] / 1e9:.3f} of {b['rate_bps'] / 1e9:.3f}"))
    out.append(("fidelity", "ok" if fd["faithful"] else f"{len(fd['warnings'])} warning(s)"))
    return out


def fidelity_warnings(s: dict) -> list[str]:
    """The `fidelity warning:` lines of a run summary (none in virtual time)."""
    return list((s.get("fidelity") or {}).get("warnings", []))
