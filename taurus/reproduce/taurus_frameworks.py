"""`taurus-frameworks`: the TAURUS paper's §5.4 (Fig 14, Table 2), the three
designs of a CC framework side by side at rising load (N DCTCP flows):
- agent: TAURUS, the report engine aggregating signals for an agent on
  the host, behind the modelled PCIe separation;
- per-event: CCP-like, every signal one message to the agent, behind the
  same separation;
- native: in the datapath, as DOCA-PCC runs CC on the NIC: no host CPU.

Virtual time, on taurus-aggregation's dumbbell (2 Gbit/s bottleneck, ~94
packets in flight a path).  Throughput and latency (the flows' mean srtt)
are exact and deterministic; the agent's CPU is its measured thread time
per simulated second (taurus-aggregation's measure: it varies from run to
run).  In virtual time an agent never runs out of time, so per-event
cannot fall behind here as CCP did on the paper's 400 Gbit/s testbed;
instead the scenario measures the agent's busy time per message and
states the line rate at which per-event's message rate needs a whole core
(messages scale with packets, so with the line rate): beyond it a real
agent drains slower than events arrive, its rings fill (backpressure,
evicted records) and decisions come late, the event drops and slow
reactions the paper's CCP logs show.  The message handler's backlog
counters (backpressure raised, records evicted, late) are printed too.
"""
import os

from .core import run_dict, scenario
from .taurus_micro import _agent_row, _dumbbell

MODES = ("native", "agent", "per-event")
PAPER_CPU = {"ccp": (86.1, 198.7), "taurus": (7.8, 40.0)}      # % of a core, Table 2
PAPER_TPUT_GBPS = {"ccp": 340, "taurus": 390, "doca-pcc": 390}  # fabric congestion, Fig 14a
PAPER_LAT_US = {"ccp": (40, 210), "taurus": (5, 10)}            # Fig 14c
LINE_GBPS = 2.0              # the dumbbell's bottleneck


def _row(s: dict) -> dict:
    r = _agent_row(s)
    srtt = [f["srtt_ns"] for f in s["flows"] if f.get("srtt_ns")]
    r["srtt_us"] = sum(srtt) / len(srtt) / 1e3 if srtt else 0.0
    r["us_per_msg"] = 1e6 * s["agent"]["cpu_s"] / r["messages"] if r["messages"] else 0.0
    ms = [h["detail"]["messages"] for h in s["agent"]["hosts"].values()]
    r["backlogged"] = int(sum(m.get("bp_raised", 0) + m.get("evicted", 0) + m.get("late", 0)
                              for m in ms))
    return r


def _run(out: str, n: int, mode: str, quick: bool) -> dict:
    d = _dumbbell(f"frameworks-{n}-{mode}", {"algorithm": "dctcp", "mode": mode}, n, quick)
    if mode == "native":
        del d["cc"]["separation"]            # in the datapath: nothing to separate
    path = os.path.join(out, f"n{n}-{mode}")
    return _row(run_dict(d, path))


def _line(x: dict, native: bool) -> str:
    if native:                               # no agent: no messages, no host CPU
        return f"{x['goodput_bps'] / 1e9:7.3f} {1:9.3f} {x['srtt_us']:8.1f} {0:9d} {0:10.2f}"
    return (f"{x['goodput_bps'] / 1e9:7.3f} {x['tput_vs_native']:9.3f} {x['srtt_us']:8.1f} "
            f"{x['messages_per_s']:9.0f} {100 * x['cpu_share']:10.2f} {x['us_per_msg']:7.2f} "
            + (f"{x['core_at_gbps']:6.0f} Gbit/s" if "core_at_gbps" in x else " " * 13)
            + f" {x['backlogged']:6d}")


def _span(xs: list) -> str:
    """The CPU shares of rows xs as lo...hi % of a core."""
    c = [100 * x["cpu_share"] for x in xs]
    return f"{min(c):.1f}...{max(c):.1f}%"


@scenario("taurus-frameworks", "TAURUS §5.4: throughput, latency and host CPU of agent "
                               "(TAURUS), per-event (CCP-like) and native (DOCA-PCC-like) "
                               "at rising load")
def taurus_frameworks(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    res = {}
    for n in (1, 8) if quick else (1, 2, 4, 8, 16, 32):
        r = {m: _run(out, n, m, quick) for m in MODES}
        nat = r["native"]["goodput_bps"]
        for m in ("agent", "per-event"):
            r[m]["tput_vs_native"] = r[m]["goodput_bps"] / nat if nat else 0.0
        # per-event's messages follow the packets, so its CPU the line rate:
        # the rate at which it needs one core (an agent's follow flows / RTT)
        share = r["per-event"]["cpu_share"]
        r["per-event"]["core_at_gbps"] = LINE_GBPS / share if share else 0.0
        res[str(n)] = r
    echo(f"taurus-frameworks: N DCTCP flows, {LINE_GBPS:g} Gbit/s bottleneck, virtual time")
    echo("   N  design       Gbit/s  vs native  srtt us  msgs/s     CPU %core  us/msg  "
         "a core at  backlog")
    for n, r in res.items():
        for m in MODES:
            echo(f"  {n:>3}  {m:<10} {_line(r[m], m == 'native')}")
    pe = [r["per-event"] for r in res.values()]
    ag = [r["agent"] for r in res.values()]
    lo_pe = min(x["core_at_gbps"] for x in pe)
    over = [int(n) for n, r in res.items() if r["per-event"]["cpu_share"] >= 1]
    back = {"per-event": sum(x["backlogged"] for x in pe),
            "agent": sum(x["backlogged"] for x in ag)}
    echo(f"  per-event needs a whole core from ~{lo_pe:.0f} Gbit/s on (its messages follow the "
         f"packets; the agent's follow flows per RTT)"
         + (f"; here it is over one core from {min(over)} flows" if over else "")
         + ": beyond that a real agent's events back up and its decisions come late, as the "
         "paper's CCP logs show (virtual time waits for the agent: throughput does not drop)")
    echo(f"  paper: CPU CCP {PAPER_CPU['ccp'][0]}...{PAPER_CPU['ccp'][1]}%, TAURUS "
         f"{PAPER_CPU['taurus'][0]}...{PAPER_CPU['taurus'][1]}% of a core (1..32 flows, 400 "
         f"Gbit/s); throughput CCP ~{PAPER_TPUT_GBPS['ccp']}, TAURUS and DOCA-PCC "
         f"~{PAPER_TPUT_GBPS['taurus']} Gbit/s; latency CCP {PAPER_LAT_US['ccp'][0]}..."
         f"{PAPER_LAT_US['ccp'][1]} us, TAURUS {PAPER_LAT_US['taurus'][0]}..."
         f"{PAPER_LAT_US['taurus'][1]} us")
    return ({"rows": res, "per_event_core_at_gbps": lo_pe, "backlogged": back,
             "per_event_over_core_from_flows": min(over) if over else 0,
             "line_gbps": LINE_GBPS, "paper_cpu_pct": PAPER_CPU,
             "paper_tput_gbps": PAPER_TPUT_GBPS, "paper_latency_us": PAPER_LAT_US},
            f"CPU per-event {_span(pe)}, agent {_span(ag)} of a core at {LINE_GBPS:g} Gbit/s; "
            f"per-event needs a core from ~{lo_pe:.0f} Gbit/s "
            f"(paper at 400 Gbit/s: CCP {PAPER_CPU['ccp'][0]}...{PAPER_CPU['ccp'][1]}%, TAURUS "
            f"{PAPER_CPU['taurus'][0]}...{PAPER_CPU['taurus'][1]}%)")
