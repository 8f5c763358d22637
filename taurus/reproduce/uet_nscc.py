"""Ultra Ethernet NSCC (the UEC transport's sender CC) and CSIG ("CSIG:
Fine-Grained Congestion Signals for ML Workloads", SIGCOMM 2025 tutorial):
`csig-nscc-fairness`, the CSIG talk's 3-flow victim scenario, NSCC against
NSCC + CSIG max(Delay); `nscc-lb`, a permutation on a leaf-spine with a
fixed EV against NSCC's EV load balancing.

`csig-nscc-fairness` runs unscaled at htsim's defaults (htsim_defaults.py:
100 Gbit/s, 4150-byte packets, htsim's queue, ECN thresholds and NSCC
constants as htsim derives them from the fabric's BDP and target) and
prints them.  Scaled to 25 Gbit/s with 1 KB MTUs (below) it gives another
ratio (NSCC 9.2:1, NSCC + CSIG 3.0:1; 9.1:1 and 2.9:1 with htsim's own
derivation at 25 Gbit/s and 1134-byte packets, so the scale, not the
rounding of the thresholds, makes the difference), so it is not scaled.

Scaling (`nscc-lb`): the seeds' 100 Gbit/s
links with 4 KB MTUs become 25 Gbit/s links with 1 KB MTUs and the same
1 us link delays, so every byte quantity (BDP, MSS, buffers, ECN and trim
thresholds) is a quarter and the BDP in packets is the seed's; NSCC's
reference BDP is scaled alike (ref_rate 25 Gbit/s), so its scaled
constants (a, b) are the seed's.
"""
import os

import numpy as np

from .core import drops, outputs, port_total, pyplot, run_dict, scenario
from .csig_tag import tag_line
from .htsim_defaults import HtsimFabric, in_force

RATE = 25_000_000_000          # the seeds' 100 Gbit/s, scaled by MSS 1 KB / 4 KB
MSS = 1024
HOP_DELAY = 1_000              # ns, the CSIG talk's link delay
FAIR_TAG_WHY = ("the compact tag's delay buckets are 47% apart, so a queue of 10 to 14.7 us "
                "reads 10 us, under the 10.5 us target, and the victim would never decrease; "
                "the wide tag's 4 ns steps let the bottleneck's delay settle at the target")
SEED_FAIR = (5.0, 2.3)         # CSIG: competitor : victim, NSCC and NSCC + CSIG max(Delay)
SCALE_NOTE = ("links 25 Gbit/s with 1 KB MTUs (the seeds' 100 Gbit/s with 4 KB, scaled 1/4 in "
              "bytes: BDP in packets, buffer/BDP and threshold/BDP kept), 1 us link delays")


def _wire(nbytes: int) -> float:
    """ns to serialise a packet of nbytes payload (with ~60 B of headers)."""
    return (nbytes + 60) * 8e9 / RATE


def nscc_params(network_rtt: float, **more) -> dict:
    """NSCC on this fabric: htsim's network_max_unloaded_rtt and reference
    BDP scaled with the links (ref_rate), trimming on (target 0.75 RTT)."""
    return {"network_rtt": float(network_rtt), "ref_rate": float(RATE), "trimming": True, **more}


def switch_features(bdp: float) -> dict:
    """htsim's UEC defaults relative to the BDP (main_uec.cpp): queue = 1 BDP
    with trimming (ours: trim above 1 BDP in a 4 BDP buffer), ECN RED from
    0.2 to 0.8 BDP."""
    return {"ecn": {"kmin": int(0.2 * bdp), "kmax": int(0.8 * bdp), "pmax": 1.0},
            "trim": {"threshold": int(bdp)}, "csig": {"type": "delay"}}


# ---- csig-nscc-fairness ------------------------------------------------------------------
# The CSIG talk's 3-tier fat tree (16 hosts, 2:1 oversubscribed, single paths) cut down to
# the switches the three flows cross: the victim h1 -> h10 goes up through ToR t0 (queue 1,
# shared with h0 -> h2) and down through Agg a2 (queue 2, shared with h9 -> h10).
FAIR_LINKS = (("h0", "t0"), ("h1", "t0"), ("t0", "a0"), ("a0", "t1"), ("t1", "h2"),
              ("a0", "c0"), ("c0", "a2"), ("a2", "t2"), ("t2", "h10"), ("h9", "t3"),
              ("t3", "a2"))
FAIR_FLOWS = (("h0", "h2"), ("h1", "h10"), ("h9", "h10"))     # competitor, victim, competitor
FAIR_HOPS = 6                  # links on the victim's path, the fabric's longest
UNSCALED = HtsimFabric(hops=FAIR_HOPS, hop_delay=HOP_DELAY)


def fairness_run(alg: str, quick: bool, fab: HtsimFabric = UNSCALED) -> dict:
    """The three flows under ``alg`` (nscc or nscc-csig), native, in virtual
    time on fabric ``fab``: each flow's goodput over
    the steady window and the victim's NSCC decisions (cases per ACK) there."""
    from taurus.cc_algorithms import registry
    from taurus.cc_algorithms.native import NativeTable
    from taurus.datapath.devices.nic.setup import (DATA_HDR, add_flow, flow_stats, nic_commit,
                                                   nic_skip_delivered)
    from taurus.datapath.devices.nic.app import WouldBlock
    from taurus.datapath.devices.switch.setup import switch_stats
    from taurus.datapath.engine import Engine
    from taurus.tools.fabric import build_virtual, nic_host
    from taurus.tools.topology import Topology

    dur, warm = (3_000_000, 1_000_000) if quick else (12_000_000, 3_000_000)
    rtt = fab.network_rtt
    t = Topology("csig-fairness")
    for h in sorted({h for f in FAIR_FLOWS for h in f}):
        t.add_host(h)
    for s in ("t0", "t1", "t2", "t3", "a0", "a2", "c0"):
        t.add_switch(s, fab.switch())
    for a, b in FAIR_LINKS:
        t.add_link(a, b, rate=int(fab.rate), delay=int(fab.hop_delay), buffer=fab.buffer)
    tab = NativeTable(16)
    a = tab.add(registry.lookup(alg))
    buf = max(2048, -(-(DATA_HDR + fab.mss) // 64) * 64)     # a pool buffer holds a frame
    eng = Engine(clock="virtual", max_flows=16, max_nics=8, native=tab.native, buf_size=buf)
    try:
        fab_ = build_virtual(eng, t, host_factory=lambda *x: nic_host(*x, mss=fab.mss,
                                                                       rx_buf_bytes=8 << 20))
        nics = fab_["hosts"]
        flows = []
        for src, dst in FAIR_FLOWS:
            f = add_flow(eng, nics[src], t.mac_of(dst), t.ip_of(dst), buf_bytes=4 << 20)
            tab.start(eng, f, a, fab.nscc_params())
            flows.append((src, dst, f))
        st = tab.state(a)
        counts = ("n_md", "n_fair", "n_prop", "n_fast", "n_noop", "n_qa")
        c0 = a0 = None
        while eng.now() < dur:
            for src, dst, f in flows:
                try:
                    while True:
                        nic_commit(eng, nics[src], f, 1 << 20)   # bulk: keep the ring full
                except WouldBlock:
                    pass
                nic_skip_delivered(eng, nics[dst], t.ip_of(src), f)
            eng.run_until(eng.now() + 20_000, stop_idle=False)
            if c0 is None and eng.now() >= warm:
                c0 = {(f, k): float(st[k][f]) for _, _, f in flows for k in counts}
                a0 = [flow_stats(eng, f)["acked"] for _, _, f in flows]
        span = (eng.now() - warm) / 1e9
        gp = [(flow_stats(eng, f)["acked"] - x) * 8 / span for (_, _, f), x in zip(flows, a0)]
        dec = {f"{s}->{d}": {k[2:]: int(st[k][f] - c0[f, k]) for k in counts}
               for s, d, f in flows}
        cwnd = {f"{s}->{d}": float(st["cwnd"][f]) for s, d, f in flows}
        sw = switch_stats(eng)
        marks = {k: sum(p[k] for p in sw.values()) for k in ("drop", "trim", "ecn_mark")}
    finally:
        eng.close()
    comp = (gp[0] + gp[2]) / 2
    return {"goodput_bps": {f"{s}->{d}": g for (s, d, _), g in zip(flows, gp)},
            "victim_bps": gp[1], "competitor_bps": comp,
            "ratio": comp / gp[1] if gp[1] > 0 else float("inf"),
            "victim_decisions": dec["h1->h10"], "decisions": dec, "cwnd_end": cwnd,
            "network_rtt_ns": rtt, "bdp_bytes": rtt * fab.rate / 8e9,
            "window_ns": [warm, dur], **marks}


def _fair_table(res: dict, echo) -> None:
    echo("  run         victim Gbit/s  competitors Gbit/s  ratio   seed   "
         "victim MD / FI / PI (+fast) / no-op / QA")
    for alg, seed in zip(res, SEED_FAIR):
        r = res[alg]
        d = r["victim_decisions"]
        echo(f"  {alg:<10} {r['victim_bps'] / 1e9:13.2f} {r['competitor_bps'] / 1e9:19.2f} "
             f"{r['ratio']:6.2f}:1 {seed:4.1f}:1   {d['md']} / {d['fair']} / {d['prop']} "
             f"(+{d['fast']}) / {d['noop']} / {d['qa']}")
    for alg in res:
        d, w = res[alg]["decisions"]["h0->h2"], res[alg]["cwnd_end"]["h0->h2"]
        echo(f"  {alg:<10} competitor h0->h2: MD / FI / PI / no-op {d['md']} / {d['fair']} / "
             f"{d['prop']} / {d['noop']}, cwnd at the end {w / 1e3:.1f} KB "
             f"(maxwnd 1.5 BDP of its path)")


@scenario("csig-nscc-fairness", "CSIG: a victim flow across two congested queues, each "
                                "shared with one competitor; NSCC vs NSCC + CSIG max(Delay)")
def csig_nscc_fairness(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    if mode != "native":
        echo(f"csig-nscc-fairness: runs native (the victim's decision counts are read from "
             f"the native state table), not {mode}")
    res = {alg: fairness_run(alg, quick) for alg in ("nscc", "nscc-csig")}
    r0 = res["nscc"]
    params = in_force(UNSCALED)
    echo(f"csig-nscc-fairness: unscaled, at htsim's defaults; steady window "
         f"{r0['window_ns'][0] / 1e6:g}-{r0['window_ns'][1] / 1e6:g} ms; parameters in force:")
    for line in params:
        echo(f"  {line}")
    tag = tag_line("nscc-csig", FAIR_TAG_WHY)
    echo(f"  {tag}")
    _fair_table(res, echo)
    echo("  seed: baseline NSCC's victim does almost only MD and FI; with CSIG max(Delay) "
         "no-ops and PIs replace MDs (counts are ACKs per case; an MD cuts at most once per "
         "base RTT)")
    plots = _plot_fairness(out, res)
    x, y = r0["ratio"], res["nscc-csig"]["ratio"]
    return ({"runs": res, "params_in_force": params, "tag": tag,
             "seed_ratio": {"nscc": SEED_FAIR[0], "nscc-csig": SEED_FAIR[1]}, "plots": plots},
            f"NSCC {x:.1f}:1, NSCC+CSIG {y:.1f}:1")


def _plot_fairness(out: str, res: dict) -> list:
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.4))
    algs = list(res)
    x = np.arange(len(algs))
    a1.bar(x - 0.2, [res[a]["victim_bps"] / 1e9 for a in algs], 0.4, label="victim")
    a1.bar(x + 0.2, [res[a]["competitor_bps"] / 1e9 for a in algs], 0.4, label="competitors (mean)")
    a1.set_xticks(x, algs)
    a1.set_ylabel("goodput (Gbit/s)")
    a1.legend(fontsize=7)
    kinds = ("md", "fair", "prop", "fast", "noop")
    for i, a in enumerate(algs):
        d = res[a]["victim_decisions"]
        tot = max(sum(d[k] for k in kinds), 1)
        a2.bar(np.arange(len(kinds)) + (i - 0.5) * 0.4, [d[k] / tot for k in kinds], 0.4, label=a)
    a2.set_xticks(np.arange(len(kinds)), ["MD", "FI", "PI", "fast", "no-op"])
    a2.set_ylabel("share of the victim's decisions")
    a2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fairness.png"), dpi=100)
    plt.close(fig)
    return ["fairness.png"]


# ---- nscc-lb ----------------------------------------------------------------------------
LEAVES, SPINES, PER_LEAF = 4, 4, 4
LB_HOPS = 4                    # host, leaf, spine, leaf, host


def lb_rtt() -> float:
    return 2 * LB_HOPS * HOP_DELAY + LB_HOPS * (_wire(MSS) + _wire(0))


def _lb(mode: str, quick: bool, ev_lb: bool) -> dict:
    """A 4-leaf, 4-spine leaf-spine (1:1), 4 hosts a leaf; host j of leaf l
    sends one flow to host j of leaf l+1 (a permutation: every flow crosses
    the spines, 4 a leaf over 4 uplinks, ECMP on the EV)."""
    rtt = lb_rtt()
    bdp = rtt * RATE / 8e9
    hosts = [f"h{l * PER_LEAF + j}" for l in range(LEAVES) for j in range(PER_LEAF)]
    links = [{"endpoints": [f"h{l * PER_LEAF + j}", f"l{l}"]}
             for l in range(LEAVES) for j in range(PER_LEAF)]
    links += [{"endpoints": [f"l{l}", f"s{s}"]} for l in range(LEAVES) for s in range(SPINES)]
    sw = [{"name": n, **switch_features(bdp)} for n in
          [f"l{l}" for l in range(LEAVES)] + [f"s{s}" for s in range(SPINES)]]
    size = "2MB" if quick else "8MB"
    traffic = [{"kind": "bulk", "from": f"h{l * PER_LEAF + j}",
                "to": f"h{((l + 1) % LEAVES) * PER_LEAF + j}", "size": size}
               for l in range(LEAVES) for j in range(PER_LEAF)]
    return {"experiment": {"name": f"nscc-lb-{'balanced' if ev_lb else 'fixed'}",
                           "duration": "6ms" if quick else "20ms", "seed": 1, "step": "10us",
                           "sample": "20us"},
            "topology": {"name": "leafspine", "defaults": {"rate": f"{RATE // 10**9}Gbit", "delay": "1us",
                                                           "buffer": int(4 * bdp)},
                         "hosts": [{"name": h} for h in hosts], "switches": sw, "links": links},
            "cc": {"algorithm": "nscc", "mode": mode, "mss": MSS,
                   "params": nscc_params(rtt, ev_lb=ev_lb)},
            "traffic": traffic, "outputs": outputs()}


def lb_row(s: dict) -> dict:
    """Per spine: bytes it sent over the run until the last flow finished,
    as a share of its capacity then; FCTs of the flows."""
    fl = s["flows"]
    done = [f for f in fl if f["done"]]
    end = max((f["start_ns"] + f["fct_ns"] for f in done), default=s["ended_at_ns"])
    util = {}
    for sp in range(SPINES):
        ports = [p for n, p in s["ports"].items() if n.startswith(f"s{sp}-")]
        util[f"s{sp}"] = sum(p["tx_bytes"] for p in ports) * 8e9 / (len(ports) * RATE * end)
    fct = [f["fct_ns"] for f in done]
    lo = min(util.values())
    return {"spine_util": util, "util_max_min": max(util.values()) / lo if lo > 0 else float("inf"),
            "fct_p99_ns": float(np.percentile(fct, 99)) if fct else float("nan"),
            "fct_p50_ns": float(np.percentile(fct, 50)) if fct else float("nan"),
            "completed": len(done), "flows": len(fl), "drops": drops(s),
            "trims": port_total(s, "trim"),
            "marks": int(sum(p["marks"] for p in s["ports"].values()))}


@scenario("nscc-lb", "a permutation on a 4-leaf 4-spine leaf-spine; NSCC with a fixed EV vs "
                     "with EV load balancing (rotate on ECN and trims)")
def nscc_lb(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    res = {}
    for key, ev_lb in (("fixed", False), ("balanced", True)):
        res[key] = lb_row(run_dict(_lb(mode, quick, ev_lb), os.path.join(out, key)))
    echo(f"nscc-lb: {SCALE_NOTE}; {LEAVES} leaves x {PER_LEAF} hosts, {SPINES} spines, 1:1; "
         f"{LEAVES * PER_LEAF} flows of {'2' if quick else '8'} MB, host j of leaf l -> leaf "
         f"l+1; network RTT {lb_rtt() / 1e3:.1f} us")
    echo("  run        spine util % (s0..s3)         max/min  FCT p50 / p99 us  done  drops trims")
    for k, r in res.items():
        u = " ".join(f"{100 * v:5.1f}" for v in r["spine_util"].values())
        echo(f"  {k:<9} {u:<28} {r['util_max_min']:7.2f} {r['fct_p50_ns'] / 1e3:8.0f} / "
             f"{r['fct_p99_ns'] / 1e3:5.0f} {r['completed']:3d}/{r['flows']} {r['drops']:5d} "
             f"{r['trims']:5d}")
    echo("  UET: NSCC rotates the EV on ECN to trigger packet-level load balancing; "
         "the issue's goal: balancing lowers spine max/min utilisation")
    plots = _plot_lb(out, res)
    f, b = res["fixed"], res["balanced"]
    return ({"runs": res, "scaling": SCALE_NOTE, "plots": plots},
            f"spine utilisation max/min fixed {f['util_max_min']:.2f}, balanced "
            f"{b['util_max_min']:.2f}; p99 FCT fixed {f['fct_p99_ns'] / 1e3:.0f} us, balanced "
            f"{b['fct_p99_ns'] / 1e3:.0f} us")


def _plot_lb(out: str, res: dict) -> list:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    x = np.arange(SPINES)
    for i, (k, r) in enumerate(res.items()):
        ax.bar(x + (i - 0.5) * 0.4, [100 * v for v in r["spine_util"].values()], 0.4, label=k)
    ax.set_xticks(x, [f"s{s}" for s in range(SPINES)])
    ax.set_ylabel("spine utilisation (%)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "spines.png"), dpi=100)
    plt.close(fig)
    return ["spines.png"]
