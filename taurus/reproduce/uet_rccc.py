"""Ultra Ethernet RCCC ("Receiver Credit-based Congestion Control"):
`rccc-incast`, an 8:1 incast through a leaf-spine with RCCC at the receiver
and NSCC at the senders against NSCC alone.

Scaling: the seeds' 100 Gbit/s host links with 4 KB MTUs become 25 Gbit/s
with 1 KB MTUs (uet_nscc.py's scaling: every byte quantity a quarter, the
BDP in packets kept), the fabric links 4 times the host links as in the
seed's figure (400G fabric, 100G hosts), 1 us link delays; flow sizes are
scaled by the same quarter.
"""
import csv
import os

import numpy as np

from taurus.datapath.devices.nic.setup import DATA_HDR

from .core import drops, outputs, port_total, pyplot, queue_percentiles, run_dict, scenario
from .uet_nscc import HOP_DELAY, MSS, RATE, _wire, nscc_params, switch_features

FABRIC = 4 * RATE              # the seed's 400G fabric under 100G hosts, scaled
SCALE_NOTE = ("host links 25 Gbit/s, fabric 100 Gbit/s, 1 KB MTUs (the seeds' 100/400 Gbit/s "
              "with 4 KB, scaled 1/4 in bytes: BDP in packets, buffer/BDP kept), 1 us link "
              "delays, sizes scaled 1/4")
PAYLOAD = MSS / (MSS + DATA_HDR)        # payload share of a full frame on the wire


def _gbit(bps) -> str:
    return f"{int(bps) // 10**9}Gbit"


# ---- rccc-incast --------------------------------------------------------------------------
SENDERS = 8
HOPS = 4                       # host, leaf, spine, leaf, host
RECV, LAST_HOP = "h8", "l2-eth0"        # l2's first link is the one to h8: its port 0


def incast_rtt() -> float:
    return 2 * HOPS * HOP_DELAY + 2 * (_wire(MSS) + _wire(0)) + 2 * (MSS + 60) * 8e9 / FABRIC


def _incast(mode: str, quick: bool, rccc: bool) -> dict:
    """Three leaves, two spines: h0-h3 on l0, h4-h7 on l1, the receiver h8 on
    l2; each sender sends `size` to h8 at once (2 MB in the seed, scaled)."""
    rtt = incast_rtt()
    bdp = rtt * RATE / 8e9
    feats = switch_features(bdp)
    hosts = [f"h{i}" for i in range(SENDERS + 1)]
    links = [{"endpoints": [f"h{i}", f"l{i // 4}"]} for i in range(SENDERS)]
    last = {"endpoints": ["l2", RECV]}
    if rccc:
        last["ecn"] = False    # the seed: last-hop ECN off for RCCC traffic
    links.append(last)
    links += [{"endpoints": [f"l{l}", f"s{s}"], "rate": _gbit(FABRIC)}
              for l in range(3) for s in range(2)]
    sw = [{"name": n, **feats} for n in ("l0", "l1", "l2", "s0", "s1")]
    # nscc's rccc: last-hop trims do not cut the window of flows under RCCC (htsim)
    cc = {"algorithm": "nscc", "mode": mode, "mss": MSS, "params": nscc_params(rtt, rccc=rccc)}
    if rccc:
        slice_bytes = int(RATE * 1e-6 / 8 * PAYLOAD)      # rccc.py's pipe-cleaning credit
        cc.update(receiver="rccc", receiver_init_credit=slice_bytes, receiver_idle="50us")
    size = "128KB" if quick else "512KB"
    return {"experiment": {"name": f"rccc-incast-{'rccc' if rccc else 'nscc'}",
                           "duration": "2ms" if quick else "5ms", "seed": 1, "step": "5us",
                           "sample": "5us"},
            "topology": {"name": "leafspine3", "defaults": {"rate": _gbit(RATE), "delay": "1us",
                                                            "buffer": int(4 * bdp)},
                         "hosts": [{"name": h} for h in hosts], "switches": sw, "links": links},
            "cc": cc,
            "traffic": [{"kind": "incast", "from": hosts[:SENDERS], "to": RECV, "size": size,
                         "start": "100us"}],
            "outputs": outputs()}


def incast_row(s: dict, run_dir: str) -> dict:
    """Drops and trims anywhere; the receiver link's utilisation while all
    senders are active (their summed goodput over the link's payload
    capacity, from the incast's start to the first completion); max/min
    per-sender goodput; the last-hop queue p99 over the incast."""
    fl = s["flows"]
    t0 = min(f["start_ns"] for f in fl)
    ends = [f["start_ns"] + f["fct_ns"] if f["done"] else s["ended_at_ns"] for f in fl]
    t1, t2 = min(ends), max(ends)
    rate = []
    with open(os.path.join(run_dir, "flow_series.csv")) as fh:
        per_t: dict[int, float] = {}
        for r in csv.DictReader(fh):
            t = int(r["t_ns"])
            if t0 < t <= t1:
                per_t[t] = per_t.get(t, 0.0) + int(r["rate_bps"])
        rate = [v for _, v in sorted(per_t.items())]
    gp = [f["goodput_bps"] for f in fl]
    _, q99 = queue_percentiles(run_dir, LAST_HOP, t0, t2)
    return {"drops": drops(s),
            "trims": port_total(s, "trim"),
            "marks": int(sum(p["marks"] for p in s["ports"].values())),
            "utilisation": float(np.mean(rate)) / (RATE * PAYLOAD) if rate else 0.0,
            "incast_utilisation": sum(f["bytes"] for f in fl) * 8e9 / ((t2 - t0) * RATE * PAYLOAD),
            "share_max_min": max(gp) / min(gp) if min(gp) > 0 else float("inf"),
            "queue_p99": q99, "completed": sum(f["done"] for f in fl), "flows": len(fl),
            "span_ns": t2 - t0, "all_active_ns": t1 - t0}


@scenario("rccc-incast", "UET RCCC: 8 senders -> 1 receiver through a leaf-spine; RCCC at the "
                         "receiver with NSCC at the senders vs NSCC alone")
def rccc_incast(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    res = {}
    for key, rccc in (("rccc", True), ("nscc", False)):
        d = os.path.join(out, key)
        res[key] = incast_row(run_dict(_incast(mode, quick, rccc), d), d)
    size = 128 if quick else 512
    echo(f"rccc-incast: {SCALE_NOTE}; 3 leaves, 2 spines; {SENDERS} senders x {size} KB "
         f"(seed: 2 MB) -> {RECV}; network RTT {incast_rtt() / 1e3:.1f} us; RCCC: 1 us slices, "
         f"pipe-cleaning credit one slice, last-hop ECN off; 'drops' in the last line counts "
         f"packets dropped or trimmed (payload lost)")
    echo("  run    drops trims  util (all active)  util (incast)  shares max/min  "
         "last-hop q p99 KB  done")
    for k, r in res.items():
        echo(f"  {k:<6} {r['drops']:5d} {r['trims']:5d} {100 * r['utilisation']:14.1f}% "
             f"{100 * r['incast_utilisation']:13.1f}% {r['share_max_min']:15.3f} "
             f"{r['queue_p99'] / 1e3:18.1f}  {r['completed']}/{r['flows']}")
    echo("  UET RCCC: RCCC grants match the receiver's link, so the incast runs without loss "
         "at full rate; the issue's goal: 0 drops, >= 95% utilisation, shares within 5%")
    plots = _plot_incast(out, res)
    r, n = res["rccc"], res["nscc"]
    return ({"runs": res, "scaling": SCALE_NOTE, "plots": plots},
            f"RCCC drops {r['drops'] + r['trims']}, utilisation {100 * r['utilisation']:.1f}%, "
            f"shares max/min {r['share_max_min']:.2f}, queue p99 {r['queue_p99'] / 1e3:.1f} KB; "
            f"NSCC alone drops {n['drops'] + n['trims']}, queue p99 {n['queue_p99'] / 1e3:.1f} KB")


def _plot_incast(out: str, res: dict) -> list:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for k in res:
        t, q = [], []
        with open(os.path.join(out, k, "queue_series.csv")) as fh:
            for r in csv.DictReader(fh):
                if r["port"] == LAST_HOP:
                    t.append(int(r["t_ns"]) / 1e3)
                    q.append(int(r["queue_bytes"]) / 1e3)
        axes[0].plot(t, q, label=k)
    axes[0].set_xlabel("time (us)")
    axes[0].set_ylabel(f"{LAST_HOP} queue (KB)")
    axes[0].legend(fontsize=7)
    ks = list(res)
    axes[1].bar(np.arange(len(ks)), [res[k]["drops"] + res[k]["trims"] for k in ks])
    axes[1].set_xticks(np.arange(len(ks)), ks)
    axes[1].set_ylabel("drops + trims")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "incast.png"), dpi=100)
    plt.close(fig)
    return ["incast.png"]
