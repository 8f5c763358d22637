"""`taurus-converge` and `taurus-mice`: the TAURUS paper's §5.3 figures 9a-h,
each algorithm in an agent behind the modelled NIC-host separation
(``[cc] separation = "pcie"``) against the same algorithm in the datapath.

The paper's claim is qualitative: the separation costs no notable penalty
at the granularity of an RTT (Fig 9e-h) and the mice's latency matches the
in-datapath CC's, slightly lower at times (Fig 9a-d).  Ours are the same
experiments at 10 Gbit/s (the paper's simulations: 400 Gbit/s) with the
ratio agent / native beside each figure.  The switch answers Bolt's flows
with SRC packets (``src`` on s1; other algorithms' packets do not ask for
them, so their runs are as without it).
"""
import os

from .core import drops, outputs, queue_percentiles, run_dict, scenario

ALGORITHMS = ("dctcp", "swift", "hpcc", "bolt")
SEPARATION = "pcie"
PAPER = "TAURUS §5.3: agent near native, no notable penalty at RTT granularity"


def _cc(alg: str, mode: str) -> dict:
    cc = {"algorithm": alg, "mode": mode, "mss": 1024, "cwnd": "20KB"}
    if mode != "native":
        cc["separation"] = SEPARATION
    return cc


BURST_AT = 2_000_000          # ns, as the paper
LONG_LINK = "25Gbit"
"""h1's link: faster than the 10 Gbit/s port it saturates, so that its flow
alone queues there, is marked and settles before the burst (at one line
rate the long flow builds no queue, so a window-based flow's window grows
unchecked, limited only by the NIC's send ring)."""


def _converge(alg: str, mode: str, quick: bool, out: str = "") -> dict:
    """examples/converge_1plus7.toml (INT for HPCC, SRC for Bolt), h1 on a faster link:
    h1 saturates the 10 Gbit/s port to h9; h2..h8 send 500 KB each at 2 ms
    (quick: 200 KB)."""
    return {"experiment": {"name": f"converge-{alg}-{mode}", "duration": "6ms" if quick else "14ms",
                           "seed": 1, "step": "10us", "sample": "20us"},
            "topology": {"builtin": "incast",
                         "defaults": {"rate": "10Gbit", "delay": "2us", "buffer": "1MB"},
                         "switches": [{"name": "s1", "buffer": "8MB", "ecn": {"k": "65KB"},
                                       "pfc": {"xoff": "400KB", "xon": "200KB"}, "int": True,
                                       "src": True}],
                         "links": [{"endpoints": ["h1", "s1"], "rate": LONG_LINK}]},
            "cc": _cc(alg, mode),
            "traffic": [{"kind": "bulk", "from": "h1", "to": "h9"},
                        {"kind": "incast", "from": [f"h{i}" for i in range(2, 9)], "to": "h9",
                         "size": "200KB" if quick else "500KB", "start": BURST_AT}],
            "outputs": outputs()}


def _converge_row(s: dict, run_dir: str) -> dict:
    burst = [f for f in s["flows"] if f["group"] == "traffic[1]"]
    done = [f["fct_ns"] for f in burst if f["done"]]
    end = max((f["start_ns"] + f["fct_ns"] for f in burst if f["done"]), default=s["ended_at_ns"])
    p50, p99 = queue_percentiles(run_dir, s["busiest_port"], BURST_AT, end)
    return {"burst_fct_mean_ns": sum(done) / len(done) if done else 0.0,
            "burst_completed": len(done), "burst_flows": len(burst),
            "queue_p50": p50, "queue_p99": p99, "drops": drops(s),
            "messages": s["agent"]["messages"]}


MICE_LOAD = 0.1               # of h3's 10 Gbit/s link: ~122K mice a second


def _mice_cdf(out: str) -> str:
    """A one-size flow-size CDF: every mouse 1 KB."""
    path = os.path.join(out, "mice_cdf.csv")
    with open(path, "w") as f:
        f.write("# size_bytes,percent\n1024,0\n1024,100\n")
    return path


def _mice(alg: str, mode: str, quick: bool, out: str) -> dict:
    """The paper's mice: 1 KB flows from h3, Poisson at MICE_LOAD, across
    the 2 Gbit/s ECN link to h4 that two long flows (h1, h2) saturate;
    10K mice (quick: 400), the long flows 2 ms ahead."""
    n = 400 if quick else 10_000
    span = int(n * 8 * 1024 / (MICE_LOAD * 10e9) * 1e9)          # ns of arrivals for n
    return {"experiment": {"name": f"mice-{alg}-{mode}", "warmup": "2ms", "seed": 1,
                           "duration": 2_000_000 + span + 3_000_000, "step": "10us",
                           "sample": "100us"},
            "topology": {"name": "mice",
                         "defaults": {"rate": "10Gbit", "delay": "2us", "buffer": "1MB"},
                         "hosts": [{"name": f"h{i}"} for i in range(1, 5)],
                         "switches": [{"name": "s1", "int": True, "src": True}],
                         "links": [{"endpoints": ["h1", "s1"]}, {"endpoints": ["h2", "s1"]},
                                   {"endpoints": ["h3", "s1"]},
                                   {"endpoints": ["s1", "h4"], "rate": "2Gbit",
                                    "ecn": {"k": "20KB"}}]},
            "cc": _cc(alg, mode),
            "traffic": [{"kind": "bulk", "from": ["h1", "h2"], "to": "h4"},
                        {"kind": "workload", "from": "h3", "to": "h4", "cdf": _mice_cdf(out),
                         "load": MICE_LOAD, "start": 2_000_000, "stop": 2_000_000 + span,
                         "max_flows": 2 * n}],
            "outputs": {**outputs(), "size_bins": ["0B", "2KB", "1GB"]}}


def _mice_row(s: dict, run_dir: str) -> dict:
    g = s["groups"]["traffic[1]"]
    return {"mice": g["flows"], "completed": g["completed"], "p50_ns": g["fct_ns"]["p50"],
            "p99_ns": g["fct_ns"]["p99"], "elephants_bps": s["groups"]["traffic[0]"]["goodput_bps"],
            "messages": s["agent"]["messages"]}


def _pairs(out: str, quick: bool, build, row) -> dict:
    """{alg: {"native": row, "agent": row}} for ALGORITHMS."""
    res = {}
    for alg in ALGORITHMS:
        res[alg] = {}
        for mode in ("native", "agent"):
            d = os.path.join(out, f"{alg}-{mode}")
            res[alg][mode] = row(run_dict(build(alg, mode, quick, out), d), d)
    return res


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


@scenario("taurus-converge", "TAURUS Fig 9e-h: 1 long flow + 7 x 500 KB into one "
                             "10 Gbit/s port; agent (PCIe separation) vs native per algorithm")
def taurus_converge(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    res = _pairs(out, quick, _converge, _converge_row)
    echo("taurus-converge: h1 saturates h9's 10 Gbit/s port; h2..h8 each send "
         f"{'200' if quick else '500'} KB at {BURST_AT // 10**6} ms; h1's link {LONG_LINK}")
    echo("            burst FCT mean (us)      queue p99 (KB)     agent/native")
    echo("            native    agent         native   agent      FCT   queue")
    for alg, r in res.items():
        n, a = r["native"], r["agent"]
        r["fct_ratio"] = _ratio(a["burst_fct_mean_ns"], n["burst_fct_mean_ns"])
        r["queue_p99_ratio"] = _ratio(a["queue_p99"], n["queue_p99"])
        echo(f"  {alg:<8} {n['burst_fct_mean_ns'] / 1e3:8.1f} {a['burst_fct_mean_ns'] / 1e3:8.1f}"
             f"      {n['queue_p99'] / 1e3:8.1f} {a['queue_p99'] / 1e3:7.1f}"
             f"     {r['fct_ratio']:5.3f} {r['queue_p99_ratio']:5.2f}")
    echo(f"  paper: {PAPER} (Fig 9e-h: DCTCP, Swift, HPCC, Bolt)")
    head = ", ".join(f"{alg} {r['fct_ratio']:.3f}" for alg, r in res.items())
    return ({**res, "separation": SEPARATION, "paper": PAPER},
            f"burst FCT agent/native {head}")


@scenario("taurus-mice", "TAURUS Fig 9a-d: 1 KB mice behind 2 elephants on a 2 Gbit/s link; "
                         "agent (PCIe separation) vs native FCT per algorithm")
def taurus_mice(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    res = _pairs(out, quick, _mice, _mice_row)
    echo(f"taurus-mice: 1 KB mice (Poisson, {MICE_LOAD:.0%} of a 10 Gbit/s link) behind 2 "
         f"elephants on a 2 Gbit/s ECN link")
    echo("            FCT p50 (us)        FCT p99 (us)       agent/native")
    echo("            native   agent      native   agent      p50    p99")
    for alg, r in res.items():
        n, a = r["native"], r["agent"]
        r["p50_ratio"] = _ratio(a["p50_ns"], n["p50_ns"])
        r["p99_ratio"] = _ratio(a["p99_ns"], n["p99_ns"])
        echo(f"  {alg:<8} {n['p50_ns'] / 1e3:7.1f} {a['p50_ns'] / 1e3:7.1f}"
             f"     {n['p99_ns'] / 1e3:7.1f} {a['p99_ns'] / 1e3:7.1f}"
             f"     {r['p50_ratio']:5.3f} {r['p99_ratio']:5.3f}")
    echo(f"  paper: {PAPER}; the mice's latency as native's, at times slightly lower "
         f"(Fig 9a-d)")
    head = ", ".join(f"{alg} {r['p99_ratio']:.3f}" for alg, r in res.items())
    return ({**res, "separation": SEPARATION, "paper": PAPER}, f"mice FCT p99 agent/native {head}")
