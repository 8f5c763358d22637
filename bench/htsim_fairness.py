"""csig-nscc-fairness's three flows in htsim's UEC model beside Taurus's NSCC
(htsim has no CSIG: the baseline only).

    python bench/htsim_fairness.py [--htsim-src DIR] [--keep DIR]

htsim runs `htsim_uec -sender_cc_only -paths 1` (one path a flow, as the
CSIG talk's fat tree) on a 16-host 3-tier fat-tree written here: 2 pods of
4 ToRs, each ToR with 2 hosts and 1 uplink (2:1), one aggregation switch a
pod, 4 cores, 100 Gbit/s, 1 us links, htsim's default queues, ECN and NSCC
constants.  Host n is Taurus's hn, so the flows cross the queues Taurus's
cut-down fabric has: h0 -> h2 and the victim h1 -> h10 share ToR 0's
uplink, the victim and h9 -> h10 share the aggregation switch's downlink to
h10's ToR.  Goodput per flow is read from htsim's sink log (sampled every
1 ms; parse_output is built beside htsim_uec when absent) between 3 and
11 ms; Taurus's from taurus.reproduce.uet_nscc.fairness_run (3 to 12 ms).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_htsim import htsim_binary  # noqa: E402

FLOWS = ((0, 2), (1, 10), (9, 10))            # competitor, victim, competitor
T0, T1, END_US = 0.003, 0.011, 12000          # htsim logs at whole ms up to its end

TOPO = """Nodes 16
Tiers 3
Podsize 8

Tier 0
Oversubscribed 2
Downlink_speed_Gbps 100
Radix_Down 2
Radix_Up 1
Downlink_Latency_ns 1000
Switch_Latency_ns 0

Tier 1
Oversubscribed 1
Downlink_speed_Gbps 100
Radix_Down 4
Radix_Up 4
Downlink_Latency_ns 1000
Switch_Latency_ns 0
Bundle 1

Tier 2
Downlink_speed_Gbps 100
Radix_Down 2
Downlink_Latency_ns 1000
Switch_Latency_ns 0
Bundle 1
"""


def parse_output(exe: str) -> str:
    """htsim's log reader, built beside htsim_uec when absent."""
    build = os.path.dirname(os.path.dirname(exe))
    po = os.path.join(build, "parse_output")
    if not os.path.exists(po):
        subprocess.run(["cmake", "--build", build, "--target", "parse_output"], check=True,
                       capture_output=True)
    return po


def htsim_goodput(exe: str, tmp: str) -> tuple[list[float], int]:
    """Each flow's goodput (bit/s) over T0..T1, in FLOWS' order, and htsim's NACKs."""
    topo, cm, dat = (os.path.join(tmp, n) for n in ("fair16.topo", "fair.cm", "fair.dat"))
    with open(topo, "w") as f:
        f.write(TOPO)
    with open(cm, "w") as f:
        f.write(f"Nodes 16\nConnections {len(FLOWS)}\n")
        for i, (s, d) in enumerate(FLOWS):
            f.write(f"{s}->{d} id {i + 1} start 0 size 1000000000\n")
    out = subprocess.run([exe, "-topo", topo, "-tm", cm, "-sender_cc_only", "-paths", "1",
                          "-end", str(END_US), "-log", "sink", "-logtime_us", "1000", "-o", dat],
                         cwd=tmp, capture_output=True, text=True, check=True).stdout
    nacks = int(re.search(r"NACKs: (\d+)", out).group(1))
    log = subprocess.run([parse_output(exe), dat, "-ascii"], capture_output=True, text=True,
                         check=True).stdout
    cack: dict[int, dict[float, int]] = {}          # sink id -> {time: packets acked}
    for m in re.finditer(r"^([\d.]+) Type UEC_SINK ID (\d+) Ev RATE CAck (\d+)", log, re.M):
        cack.setdefault(int(m[2]), {})[round(float(m[1]), 6)] = int(m[3])
    payload = 4150 - 64                              # htsim's MSS
    # sinks are created in the connection matrix's order
    return [(c[T1] - c[T0]) * payload * 8 / (T1 - T0) for _, c in sorted(cack.items())], nacks


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--htsim-src", default=os.environ.get("HTSIM_SRC", "/tmp/uet-htsim"))
    ap.add_argument("--keep", help="keep htsim's files here (default: a temporary directory)")
    a = ap.parse_args(argv)
    exe = htsim_binary(a.htsim_src)
    tmp = a.keep or tempfile.mkdtemp(prefix="htsim-fair-")
    os.makedirs(tmp, exist_ok=True)
    gp, nacks = htsim_goodput(exe, tmp)
    from taurus.reproduce.uet_nscc import fairness_run
    t = fairness_run("nscc", quick=False)
    tg = list(t["goodput_bps"].values())
    print("flows (competitor, victim, competitor) goodput Gbit/s, competitor:victim, trims")
    for who, g, trims in (("htsim", gp, nacks), ("Taurus", tg, t["trim"])):
        ratio = (g[0] + g[2]) / 2 / g[1]
        print(f"  {who:<7} {' / '.join(f'{x / 1e9:.1f}' for x in g)}   {ratio:.2f}:1   {trims}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
