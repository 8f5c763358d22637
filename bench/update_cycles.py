#!/usr/bin/env python3
"""CPU cycles per update, per algorithm, beside OSCAR's seed table (its
DPDK testbed, GCC -O3: OSCAR 52, DCQCN 46, Swift 104, HPCC 92, PowerTCP 159).

    python bench/update_cycles.py                       # print the table
    python bench/update_cycles.py --record              # and write docs/bench/update_cycles.md
    python bench/update_cycles.py --ghz 3.0             # clock given, not read

Cycles = net ns per update (bench/algorithms.py: the compiled native entry
fed a synthetic stream of the events each algorithm binds, the null class's
loop cost subtracted, best of --repeat rounds) x the clock in GHz (the
kernel's ``cpu MHz`` of /proc/cpuinfo, the TSC rate on a constant-TSC
machine, unless --ghz).  Take the figures on an idle machine: the best of
the rounds hides short interference, not a loaded core's lower clock or
shared caches.  One update = one event the algorithm handles (an ACK, an
INT record, a CNP, a timer, one OSCAR RTT_LS batch record), as the seed
counts one call of the control law.
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from algorithms import Null, measure  # noqa: E402

from taurus.cc_algorithms import registry  # noqa: E402

SEED = {"oscar": 52, "dcqcn": 46, "swift": 104, "hpcc": 92, "powertcp": 159}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(ROOT, "docs", "bench", "update_cycles.md")
HEAD = """## Cycles per update

OSCAR's seed measures one control-law update per algorithm in CPU cycles
(Linux 5.4, DPDK 25.03, GCC 8.4 -O3).  Ours: the native entry the engine
calls per event (Numba, LLVM), net of the measuring loop, in ns x the
clock, on a synthetic stream of each algorithm's events
(bench/update_cycles.py, over bench/algorithms.py).  Orders, not units,
are comparable: the seed's code also parses packets and keeps its own
state layout.

`{cmd}` (at {rev}, {date}, clock {ghz:.3g} GHz{src}):
"""


def clock_ghz() -> tuple[float, str]:
    """The first CPU's ``cpu MHz`` (/proc/cpuinfo), in GHz, and where it came from."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    return float(line.split(":")[1]) / 1e3, " from /proc/cpuinfo"
    except OSError:
        pass
    raise SystemExit("no cpu MHz in /proc/cpuinfo: give --ghz")


def table(res: dict, ghz: float) -> list[str]:
    rows = ["| algorithm | seed cycles | our cycles | our ns | seed rank | our rank |",
            "|---|---|---|---|---|---|"]
    ours = {n: m["native_net_ns"] * ghz for n, m in res.items()}
    seed_rank = {n: i + 1 for i, n in enumerate(sorted(SEED, key=SEED.get))}
    in_seed = [n for n in ours if n in SEED]
    our_rank = {n: i + 1 for i, n in enumerate(sorted(in_seed, key=ours.get))}
    for n, c in ours.items():
        rows.append(f"| {n} | {SEED.get(n, '-')} | {c:.0f} | {res[n]['native_net_ns']:.1f} | "
                    f"{seed_rank.get(n, '-')} | {our_rank.get(n, '-')} |")
    return rows


def _rev() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=8192)
    ap.add_argument("--flows", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=41, help="timed passes; the best counts")
    ap.add_argument("--ghz", type=float, default=0.0, help="the clock (default: /proc/cpuinfo)")
    ap.add_argument("--only", default=",".join([*SEED, "dctcp"]))
    ap.add_argument("--record", action="store_true", help=f"write {os.path.relpath(RECORD, ROOT)}")
    a = ap.parse_args(argv)
    ghz, src = (a.ghz, " given") if a.ghz else clock_ghz()
    classes = {"null": Null, **{n: registry.lookup(n) for n in a.only.split(",") if n}}
    res = measure(classes, a.records, a.flows, a.repeat)
    null = res.pop("null")
    for m in res.values():
        m["native_net_ns"] = max(m["native_ns"] - null["native_ns"], 0.0)
    rows = table(res, ghz)
    last = "update cycles: " + ", ".join(
        f"{n} {res[n]['native_net_ns'] * ghz:.0f}" + (f" (seed {SEED[n]})" if n in SEED else "")
        for n in res)
    print("\n".join(rows))
    print(last)
    if a.record:
        os.makedirs(os.path.dirname(RECORD), exist_ok=True)
        args = argv if argv is not None else sys.argv[1:]
        cmd = " ".join(["python bench/update_cycles.py", *args])
        with open(RECORD, "w") as f:
            f.write(HEAD.format(cmd=cmd, rev=_rev(), date=time.strftime("%Y-%m-%d"), ghz=ghz,
                                src=src) + "\n" + "\n".join(rows) + "\n\n" + WHY + "\n")
    return 0


WHY = """Why the order differs from the seed's, from the code paths (an update
of each, taurus/cc_algorithms/):

- HPCC and PowerTCP take one INT hop per event here: the engine hands each
  hop's (qlen, tx_bytes, ts) as an INT event, so most calls are one hop's
  utilisation (HPCC) or power (PowerTCP) and only the last hop's call
  computes the window; the seed's per-ACK update loops over every hop of
  the INT stack, which is where its 92 and 159 go.  Per ACK, ours costs
  about the hop count times the figure here.
- Swift's update takes a square root (the flow scaling of its target) and
  a division per ACK, the same shape as the seed's 104.
- DCQCN's events are a CNP (a multiply and the alpha EWMA) or a timer or
  byte-counter expiry (an average of two rates), as the seed's 46; its TX
  events (the byte counter) are calls the seed does not count as updates.
- OSCAR's RTT_LS record arrives pre-summed (n, Sx, Sy, Sxx, Sxy of a batch)
  from the engine, so its update is the batch merge, one slope, a look-up of
  the reference state in a 32-entry history and two ratios; the seed
  accumulates the five sums per packet inside its 52.
"""


if __name__ == "__main__":
    sys.exit(main())
