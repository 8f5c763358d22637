"""The faithful envelope of this machine: for each CC mode, the smallest
base RTT at which the DCTCP dumbbell on real packets (`taurus run
--clock wall`) is faithful, at each bottleneck rate.

    sudo python bench/wall_envelope.py [--modes native,agent,per-event]
                                       [--rates 100Mbit,250Mbit,500Mbit,1Gbit,2Gbit]
                                       [--rtts 8ms,2ms,1ms,500us,200us,100us,50us,30us]
                                       [--duration 1500ms] [--json FILE] [--keep DIR]
                                       [--ack-every N --ack-delay 50us] [--mss 1400]
    python bench/wall_envelope.py --table FILE      # the table again, from --json's file

The experiment is examples/wall_dctcp.toml with its numbers replaced: two
DCTCP senders on host links of 2.5x the bottleneck share the s1 -> s2
bottleneck (MSS 1024, or --mss); every link has one-way delay base/6 less the
serialization, so the base RTT (fidelity.base_rtt: delays both ways plus
one data frame and one ACK serialised per link) is the target; step
marking at K = max(20 KB, C x RTT / 7) (DCTCP's guideline); a buffer of
max(1 MB, 8 K); each flow starts with its share of the BDP; the host
NICs ACK as the NIC does by default, or as --ack-every / --ack-delay say
([cc] ack_every, ack_delay: fewer ACKs, fewer veth crossings).

Faithful (issue 40), from the run's summary:
  - no fidelity warning;
  - the bottleneck's queue mean within 0.5-1.5 K;
  - every flow's srtt <= 1.5 x (base RTT + queueing)  (srtt_ratio);
  - timers late p99 < 1/10 of the base RTT.

For each mode and rate, the RTTs are tried from the largest down and the
search stops at the first one not faithful (a tighter one is harder).
Prints one table: rows the rates, columns the modes, each cell the
smallest faithful base RTT (`-`: none) and, beside it, what failed first
below it.  The engine must have a core to itself: run on an idle machine.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "wall_dctcp.toml")
sys.path.insert(0, ROOT)

from taurus.units import parse_delay, parse_rate  # noqa: E402

MSS = 1024
HOST_RATE_X = 2.5
FRAME = 1024 + 78           # a data frame on the wire (header + MSS), about
ACK = 90
K_MIN = 20_000
QUEUE_BAND = (0.5, 1.5)     # x K
SRTT_MAX = 1.5              # x (base RTT + queueing)
LATE_MAX = 0.1              # x base RTT, timers late at p99


def setting(rate: int, rtt: int) -> dict:
    """The dumbbell's numbers for a bottleneck `rate` (bit/s) and a base RTT (ns)."""
    host = int(rate * HOST_RATE_X)
    ser = sum((FRAME + ACK) * 8e9 / r for r in (host, rate, host))   # ns, on the 3 links
    delay = max(0, int((rtt - ser) / 6))
    bdp = rate * rtt / 8e9
    k = int(max(K_MIN, bdp / 7))
    return {"rate": rate, "rtt": rtt, "host": host, "delay": delay, "k": k,
            "buffer": max(1 << 20, 8 * k), "init": max(4, int(bdp / 2 / MSS))}


def sets(st: dict, mode: str, duration: int, tag: str, ack: list[str] = ()) -> list[str]:
    d = f'"{st["delay"]}ns"'
    return list(ack) + [f'experiment.duration="{duration}ns"', f'experiment.warmup="{duration // 3}ns"',
            f'topology.name="{tag}"',
            f'topology.defaults.rate="{st["host"]}bit"', f"topology.defaults.delay={d}",
            f'topology.links.0.rate="{st["rate"]}bit"', f"topology.links.0.delay={d}",
            f'topology.links.0.buffer="{st["buffer"]}B"',
            f'topology.links.0.ecn.k="{st["k"]}B"',
            f'cc.mode="{mode}"', f"cc.params.init_cwnd_pkts={st['init']}",
            "outputs.plots=false"]


def judge(s: dict, st: dict) -> tuple[bool, str]:
    """Faithful by the four rules, and the first one broken, briefly (the
    engine's CPU share first: a run whose engine lost its core says
    nothing about the setting)."""
    fd = s.get("fidelity") or {}
    if not s.get("complete"):
        return False, f"incomplete: {s.get('error')}"
    e, necks = fd.get("engine") or {}, fd.get("bottlenecks") or {}
    if e.get("cpu_share") is not None and e["cpu_share"] < 0.9:
        return False, f"machine busy: the engine had {100 * e['cpu_share']:.0f}% of a core"
    base = min(f["base_rtt_ns"] for f in fd["flows"])
    p99 = fd["timers"].get("p99_ns")
    if p99 is not None and p99 >= LATE_MAX * base:
        return False, f"timers late p99 {p99 / 1e3:.0f} us"
    if not necks:
        return False, "no bottleneck in the report"
    b = max(necks.values(), key=lambda b: b["queue_mean_bytes"])
    if b["utilisation"] < 0.8:
        return False, (f"carried {b['carried_bps'] / 1e9:.3f} of {b['rate_bps'] / 1e9:g} Gbit/s "
                       f"(loop busy {100 * (e.get('busy') or 0):.0f}%)")
    q = b["queue_mean_bytes"]
    if not QUEUE_BAND[0] * st["k"] <= q <= QUEUE_BAND[1] * st["k"]:
        return False, f"queue mean {q / st['k']:.2f} K"
    ratios = [f["srtt_ratio"] for f in fd["flows"] if f["srtt_ratio"] is not None]
    if not ratios or max(ratios) > SRTT_MAX:
        return False, f"srtt {max(ratios, default=0):.2f}x base + queueing"
    if fd.get("warnings"):
        return False, fd["warnings"][0][len("fidelity warning: "):][:80]
    return True, ""


def run_one(st: dict, mode: str, duration: int, keep: str | None, ack=()) -> dict:
    tag = "wenv"
    out = tempfile.mkdtemp(prefix="wall-envelope-", dir=keep)
    args = [sys.executable, "-m", "taurus.cli", "run", EXAMPLE, "--clock", "wall",
            "--out", out, "--no-progress"] + [a for s in sets(st, mode, duration, tag, ack)
                                               for a in ("--set", s)]
    t = time.monotonic()
    p = subprocess.run(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
                       capture_output=True, text=True)
    row = {"mode": mode, **st, "wall_s": round(time.monotonic() - t, 1), "rc": p.returncode,
           "command": " ".join(args[1:])}
    try:
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        ok, why = judge(s, st)
        fd = s.get("fidelity") or {}
        row.update(faithful=ok, why=why, goodput_bps=s.get("throughput_bps"),
                   engine=fd.get("engine"), timers=fd.get("timers"))
    except (OSError, ValueError):
        row.update(faithful=False, why=f"no summary (rc {p.returncode}): {p.stderr[-300:]}")
    if not keep:
        shutil.rmtree(out, ignore_errors=True)
    return row


def _fmt_ns(ns) -> str:
    return "-" if ns is None else (f"{ns / 1e6:g} ms" if ns >= 1e6 else f"{ns / 1e3:g} us")


def table(rows: list[dict]) -> str:
    """Rates x modes: the smallest faithful base RTT; after it, in
    brackets, why the next tighter one failed."""
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    rates = sorted({r["rate"] for r in rows})
    head = "| bottleneck | " + " | ".join(modes) + " |"
    out = [head, "|---" * (len(modes) + 1) + "|"]
    for rate in rates:
        cells = []
        for m in modes:
            rs = sorted((r for r in rows if r["mode"] == m and r["rate"] == rate),
                        key=lambda r: -r["rtt"])
            good = [r["rtt"] for r in rs if r["faithful"]]
            bad = [r for r in rs if not r["faithful"]]
            cell = _fmt_ns(min(good)) if good else "-"
            if bad:
                cell += f" ({_fmt_ns(bad[0]['rtt'])}: {bad[0]['why']})"
            cells.append(cell)
        out.append(f"| {rate / 1e9:g} Gbit/s | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    global MSS, FRAME           # --mss: the setting's frames and initial windows
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modes", default="native,agent,per-event")
    ap.add_argument("--rates", default="100Mbit,250Mbit,500Mbit,1Gbit,2Gbit")
    ap.add_argument("--rtts", default="8ms,2ms,1ms,500us,200us,100us,50us,30us")
    ap.add_argument("--duration", default="1500ms")
    ap.add_argument("--json", help="write every run's row here")
    ap.add_argument("--keep", help="keep the run directories under DIR")
    ap.add_argument("--mss", type=int, default=MSS,
                    help="[cc] mss (1404 at most in a 1500-byte MTU on the wall clock)")
    ap.add_argument("--ack-every", type=int, help="[cc] ack_every of every host NIC")
    ap.add_argument("--ack-delay", help="[cc] ack_delay of every host NIC, e.g. 50us")
    ap.add_argument("--table", metavar="FILE", help="print the table of a --json file and exit")
    a = ap.parse_args(argv)
    if a.table:
        with open(a.table) as f:
            print(table(json.load(f)["rows"]))
        return 0
    if os.geteuid() != 0:
        print("wall_envelope: needs root (namespaces, AF_XDP)", file=sys.stderr)
        return 2
    rates = [parse_rate(r) for r in a.rates.split(",")]
    rtts = sorted((parse_delay(t) for t in a.rtts.split(",")), reverse=True)
    dur = parse_delay(a.duration)
    MSS, FRAME = a.mss, a.mss + FRAME - MSS
    ack = [f"cc.mss={a.mss}"] + ([f"cc.ack_every={a.ack_every}"] if a.ack_every else []) + \
        ([f'cc.ack_delay="{a.ack_delay}"'] if a.ack_delay else [])
    rows = []
    for mode in a.modes.split(","):
        for rate in rates:
            for rtt in rtts:
                r = run_one(setting(rate, rtt), mode, dur, a.keep, ack)
                rows.append(r)
                print(f"{mode:9} {rate / 1e9:5g} Gbit/s  base {_fmt_ns(rtt):>7}: "
                      f"{'faithful' if r['faithful'] else 'no: ' + r['why']}", flush=True)
                if a.json:
                    with open(a.json, "w") as f:
                        json.dump({"load": os.getloadavg(), "rows": rows}, f, indent=1)
                if not r["faithful"]:
                    break               # tighter RTTs are harder still
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
