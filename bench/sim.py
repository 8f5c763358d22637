"""How fast virtual time runs: simulated seconds, Gbit and packet-hops per
wall second, the wall time split engine / runner+agent, peak RSS.

    python bench/sim.py [--quick] [--only dumbbell,fat-tree,many-flows,fairness,memory] [--json OUT]

Cases (each `taurus run` in its own process, so its peak RSS is its own):
  dumbbell    examples/dctcp_dumbbell.toml for 1 simulated second (quick:
              0.1 s), DCTCP native and in the agent;
  fat-tree    a k = 8 fat-tree (128 hosts, 10 Gbit/s, 1 us links), WebSearch
              flows at 60% load from every host to random others for 20 ms
              (quick: k = 4, 5 ms), DCTCP in the agent;
  many-flows  10,000 concurrent long flows (625 between each of 16 host
              pairs) on a 4-leaf, 2-spine, 32-host leaf-spine for 50 ms,
              DCTCP in the agent (quick: 1,000 for 20 ms);
  fairness    10,000 long flows from 2 senders through a 10 Gbit/s dumbbell
              bottleneck for 1 s, DCTCP in the agent: each flow's goodput
              against its max-min share of what the bottleneck carried, and
              the agent's CPU (quick: 200 flows through 1 Gbit/s for 0.3 s);
              the exit status is 1 when any flow is off it by more than 10%;
  memory      the fairness dumbbell with 1,000 and with 10,000 flows for
              10 ms: `memory: X KiB per flow` from the two peak RSS, and the
              static per-flow share of the tables sized by the flow count.
A packet-hop is one frame sent by one port (a switch egress or a NIC), so
a data packet over the dumbbell's 3 links and its ACK back make 6.
The last line: `sim: dumbbell X sim-s per wall-s (native), fat-tree Y M
packet-hops/s, 10k flows Z M packet-hops/s`.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _experiment(name: str, quick: bool) -> tuple[str, list[str]]:
    """(TOML text or a file path, --set overrides)."""
    if name.startswith("memory-"):   # the fairness dumbbell with n flows for 10 ms
        n = int(name.split("-")[1])
        spec, _ = _experiment("fairness", False)
        spec = spec.replace('duration = "1s"', 'duration = "10ms"').replace(
            'warmup = "300ms"', 'warmup = "0ms"').replace('sample = "10ms"', 'sample = "1ms"')
        return spec.replace("parallel = 5000", f"parallel = {n // 2}"), []
    if name.startswith("dumbbell"):
        mode = name.split("-")[1]
        return (os.path.join(ROOT, "examples", "dctcp_dumbbell.toml"),
                [f"experiment.duration={'100ms' if quick else '1s'}", f"cc.mode={mode}"])
    if name == "fat-tree":
        k, dur = (4, "5ms") if quick else (8, "20ms")
        hosts = json.dumps([f"h{i}" for i in range(1, k ** 3 // 4 + 1)])
        return (f'''[experiment]
name = "sim-fat-tree"
duration = "{dur}"
seed = 1
sample = "100us"
[topology]
name = "ft"
fat_tree = {{ k = {k}, switch = {{ ecn = {{ k = "65KB" }} }} }}
defaults = {{ rate = "10Gbit", delay = "1us", buffer = "1MB" }}
[cc]
algorithm = "dctcp"
mode = "agent"
[[traffic]]
kind = "workload"
from = {hosts}
to = {hosts}
cdf = "websearch"
load = 0.6
max_flows = 100000
''', [])
    n = 1_000 if quick else 10_000
    if name == "fairness":       # n long flows through one bottleneck, each asserted
        return (f'''[experiment]
name = "sim-fairness"
duration = "{'300ms' if quick else '1s'}"
warmup = "{'100ms' if quick else '300ms'}"
seed = 1
sample = "10ms"
[topology]
builtin = "dumbbell"
defaults = {{ rate = "10Gbit", delay = "2us" }}
[[topology.links]]
endpoints = ["s1", "s2"]
rate = "{'1Gbit' if quick else '10Gbit'}"
buffer = "32MB"
ecn = {{ k = "100KB" }}
[cc]
algorithm = "dctcp"
mode = "agent"
[outputs]
plots = false
[[traffic]]
kind = "bulk"
from = ["h1", "h2"]
to = "h3"
parallel = {(200 if quick else n) // 2}
''', [])
    # many-flows: n long flows between 16 host pairs of a leaf-spine
    return (f'''[experiment]
name = "sim-many-flows"
duration = "{'20ms' if quick else '50ms'}"
seed = 1
sample = "1ms"
[topology]
name = "ls"
leaf_spine = {{ leaves = 4, spines = 2, hosts_per_leaf = 8, switch = {{ ecn = {{ k = "65KB" }} }} }}
defaults = {{ rate = "10Gbit", delay = "1us", buffer = "8MB" }}
[cc]
algorithm = "dctcp"
mode = "agent"
[outputs]
plots = false
''' + "".join(f'''[[traffic]]
kind = "bulk"
from = ["h{i}"]
to = "h{i + 16}"
parallel = {n // 16}
''' for i in range(1, 17)), [])


def static_bytes_per_flow() -> dict:
    """Bytes each flow adds to the tables sized by the flow count: the NIC
    state (flow, PDC, CC-context and signal rows, send and receive windows,
    message queue, the PDC hash) and the agent contract's shared memory (CC
    columns, periods, delivered events)."""
    import numpy as np
    if ROOT not in sys.path:        # run as `python bench/sim.py`: the package beside bench/
        sys.path.insert(0, ROOT)
    from taurus.datapath.ccshm import _layout
    from taurus.datapath.devices.nic.state import nic_shapes

    def nic(f):
        return sum(int(np.prod(s)) * np.dtype(d).itemsize for _, s, d in nic_shapes(1, f)
                   if s is not None)
    f0, f1 = 10_001, 20_001
    return {"nic": (nic(f1) - nic(f0)) / (f1 - f0),
            "cc_shm": (_layout(1, f1, 1 << 14)["size"] - _layout(1, f0, 1 << 14)["size"])
            / (f1 - f0)}


def packet_hops(summary: dict) -> int:
    """Frames sent by every switch port and every NIC in a run's summary."""
    return sum(int(v["counters"].get("tx", 0)) for v in summary["ports"].values()) \
        + sum(int(n.get(k, 0)) for n in summary["nics"].values()
              for k in ("tx_data", "tx_retx", "tx_ack", "tx_nack", "tx_cnp", "tx_close"))


def run_case(name: str, quick: bool, out: str) -> dict:
    spec, sets = _experiment(name, quick)
    path = spec
    if not os.path.exists(spec):
        path = os.path.join(out, f"{name}.toml")
        with open(path, "w") as f:
            f.write(spec)
    cmd = [sys.executable, "-m", "taurus.cli", "run", path, "--out", os.path.join(out, name),
           "--no-progress"] + [a for s in sets for a in ("--set", s)]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    err = p.stderr.read().decode()[-400:]
    p.returncode = os.waitstatus_to_exitcode(status)
    try:
        with open(os.path.join(out, name, "summary.json")) as f:
            s = json.load(f)
    except OSError:
        return {"case": name, "error": f"exit {p.returncode}: {err.strip()}"}
    sim_s = s["ended_at_ns"] / 1e9
    hops = packet_hops(s)
    bits = sum(f["bytes"] for f in s["flows"]) * 8
    loop = s["loop_wall_s"]
    fair = {}
    if name.startswith("fairness"):  # each flow against its max-min share of what was carried
        g = [f["goodput_bps"] for f in s["flows"]]
        share = sum(g) / len(g)
        dev = [abs(x / share - 1) for x in g]
        fair = {"share_mbps": share / 1e6, "worst_dev": max(dev),
                "within_10pct": sum(d <= 0.1 for d in dev) / len(dev),
                "jain": s["fairness"]["jain_mean"],
                "carried_gbps": sum(g) / 1e9}
    return {**fair, "case": name, "complete": s["complete"], "flows": len(s["flows"]),
            "sim_s": sim_s, "wall_s": wall, "loop_wall_s": loop,
            "engine_wall_s": s["engine_wall_s"], "outside_engine_s": loop - s["engine_wall_s"],
            "setup_s": wall - loop, "agent_cpu_s": s["agent"]["cpu_s"],
            "sim_s_per_wall_s": sim_s / loop if loop else 0.0,
            "gbit_per_wall_s": bits / 1e9 / loop if loop else 0.0,
            "packet_hops": hops, "mhops_per_wall_s": hops / 1e6 / loop if loop else 0.0,
            "peak_rss_mb": ru.ru_maxrss / 1024}


CASES = ("dumbbell-native", "dumbbell-agent", "fat-tree", "many-flows", "fairness",
         "memory-1000", "memory-10000")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="",
                    help="comma-separated: dumbbell, fat-tree, many-flows, fairness, memory")
    ap.add_argument("--json", metavar="OUT")
    a = ap.parse_args(argv)
    want = [c for c in CASES if not a.only or any(c.startswith(w) for w in a.only.split(","))]
    res = {}
    with tempfile.TemporaryDirectory(prefix="taurus-bench-sim-") as out:
        print(f"{'case':<16} {'flows':>6} {'sim s':>7} {'wall s':>7} {'loop s':>7} "
              f"{'engine':>7} {'outside':>7} {'agent':>6} {'sim-s/s':>8} {'Gbit/s':>7} "
              f"{'Mhop/s':>7} {'RSS MB':>7}")
        for c in want:
            r = res[c] = run_case(c, a.quick, out)
            if "error" in r:
                print(f"{c:<16} failed: {r['error']}")
                continue
            print(f"{c:<16} {r['flows']:6d} {r['sim_s']:7.3f} {r['wall_s']:7.1f} "
                  f"{r['loop_wall_s']:7.1f} {r['engine_wall_s']:7.1f} {r['outside_engine_s']:7.1f} "
                  f"{r['agent_cpu_s']:6.1f} {r['sim_s_per_wall_s']:8.4f} "
                  f"{r['gbit_per_wall_s']:7.2f} {r['mhops_per_wall_s']:7.3f} {r['peak_rss_mb']:7.0f}")
    if "share_mbps" in res.get("fairness", {}):
        r = res["fairness"]
        print(f"fairness: {r['flows']} flows, {r['carried_gbps']:.2f} Gbit/s carried, share "
              f"{r['share_mbps']:.3f} Mbit/s, {100 * r['within_10pct']:.1f}% of flows within 10% "
              f"of it (worst {100 * r['worst_dev']:.1f}%), Jain {r['jain']:.4f}, agent CPU "
              f"{r['agent_cpu_s']:.1f} s")
    if "peak_rss_mb" in res.get("memory-1000", {}) and "peak_rss_mb" in res.get("memory-10000", {}):
        st = static_bytes_per_flow()
        per = (res["memory-10000"]["peak_rss_mb"] - res["memory-1000"]["peak_rss_mb"]) * 1024 / 9000
        res["memory"] = {"kib_per_flow": per, "static_nic_b": st["nic"], "static_cc_shm_b": st["cc_shm"]}
        print(f"memory: {per:.1f} KiB per flow (peak RSS, 10,000 vs 1,000 flows); of it static "
              f"tables {st['nic'] / 1024:.2f} KiB NIC state + {st['cc_shm'] / 1024:.2f} KiB "
              f"agent shared memory")
    print("loop s: the run's event loop (setup and results excluded); engine: of it in the "
          "compiled engine; outside: the runner's and agent's share; agent: its CPU seconds")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)

    def g(c, k, fmt):
        r = res.get(c, {})
        return fmt.format(r[k]) if k in r else "-"
    print(f"sim: dumbbell {g('dumbbell-native', 'sim_s_per_wall_s', '{:.3f}')} sim-s per wall-s "
          f"(native), fat-tree {g('fat-tree', 'mhops_per_wall_s', '{:.3f}')} M packet-hops/s, "
          f"{'1k' if a.quick else '10k'} flows {g('many-flows', 'mhops_per_wall_s', '{:.3f}')} "
          f"M packet-hops/s")
    fair = res.get("fairness", {})
    if fair.get("within_10pct", 1.0) < 1.0:     # the case asserts every flow
        print(f"fairness: FAILED, {fair['flows'] - round(fair['within_10pct'] * fair['flows'])} "
              "flows off their share by more than 10%")
        return 1
    return 0 if all("error" not in r for r in res.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
