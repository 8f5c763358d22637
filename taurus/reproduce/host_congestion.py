"""`host-congestion`: the TAURUS §5 host-congestion experiment in the
virtual-time host model, fabric-only DCTCP against host-congestion CC."""
import os

import numpy as np

from taurus.tools.analysis import jain

from .core import outputs, pyplot, run_dict, scenario

PAPER_HOST_GAIN = 9.3        # % throughput, TAURUS (host CC) vs DOCA-PCC under host congestion, §5
HOST_NOTES = (
    "host-aware: h3's flow runs hostcc with mba in an agent; in virtual time an MBA limit of "
    "p% leaves the hog p% of its share (experiment/hog.py ModelHostActions)",
    "network-only: without the host-local response the hog keeps its share; a host drop "
    "costs DCTCP a retransmission, no window cut (it cuts on ECN and timeouts), so a full "
    "host buffer keeps the fabric-only host busy")


def _host_congestion(alg: str, mode: str, quick: bool, mba: bool = False) -> dict:
    """2 senders, 10 Gbit/s links; the receiver h3 delivers into memory at
    10 Gbit/s through a 256 KB host buffer, and a hog takes half of that
    from 2 ms to 8 ms of 10 (quick: 1 ms to 5 ms of 6).  h3 sends a paced
    100 Mbit/s flow back to h1: the flow whose algorithm sees h3's own host
    samples, and with ``mba`` takes hostCC's host-local response (in an
    agent: native mode ignores host actions)."""
    dur, hog0, hog1 = ("6ms", "1ms", "5ms") if quick else ("10ms", "2ms", "8ms")
    back = {"algorithm": alg, "rate": "100Mbit"}
    if mba:
        back.update(mode="agent", params={"mba": True})
    return {"experiment": {"name": f"host-{alg}", "duration": dur, "warmup": "500us",
                           "seed": 1, "step": "10us", "sample": "20us"},
            "topology": {"name": "hostcong", "defaults": {"rate": "10Gbit", "delay": "2us",
                                                          "buffer": "1MB"},
                         "hosts": [{"name": "h1"}, {"name": "h2"}, {"name": "h3"}],
                         "switches": [{"name": "s1", "ecn": {"k": "20KB"}}],
                         "links": [{"endpoints": ["h1", "s1"]}, {"endpoints": ["h2", "s1"]},
                                   {"endpoints": ["s1", "h3"]}]},
            "cc": {"algorithm": alg, "mode": mode, "mss": 1024, "cwnd": "20KB"},
            "traffic": [{"kind": "bulk", "from": ["h1", "h2"], "to": "h3"},
                        {"kind": "bulk", "from": "h3", "to": "h1", "cc": back}],
            "host_model": {"host_bw": "10Gbit", "buffer": "256KB", "sample": "10us",
                           "hosts": ["h3"]},
            "host_load": [{"host": "h3", "share": 0.5, "start": hog0, "stop": hog1}],
            "outputs": outputs()}


HOST_ROWS = (("fabric-only", "dctcp", False), ("network-only", "hostcc", False),
             ("host-aware", "hostcc", True))


def host_congestion_pair(out: str, quick: bool, mode: str) -> dict:
    """{row: figures} for HOST_ROWS: DCTCP; hostcc's network response alone;
    hostcc with hostCC's host-local response (MBA on the hog) too.  Goodput
    is the two senders' to h3 (after the warmup)."""
    res = {}
    for key, alg, mba in HOST_ROWS:
        d = os.path.join(out, key)
        s = run_dict(_host_congestion(alg, mode, quick, mba), d)
        fwd = [f for f in s["flows"] if f["dst"] == "h3"]
        res[key] = {"algorithm": alg, "mba": mba, "goodput_bps": s["groups"]["traffic[0]"]["goodput_bps"],
                    "host_drops": int(s["nics"]["h3"]["drop_host_buf"]),
                    "switch_drops": int(sum(p["drops"] for p in s["ports"].values())),
                    "jain": jain(np.array([f["goodput_bps"] for f in fwd])),
                    "host_actions": s["agent"]["hosts"].get("h3", {}).get("detail", {})
                    .get("host_actions", {})}
    return res


@scenario("host-congestion", "TAURUS §5: 2 senders, a receiver whose memory bandwidth a hog "
                             "halves for a window; fabric-only DCTCP vs host-congestion CC")
def host_congestion(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    res = host_congestion_pair(out, quick, mode)
    f = res["fabric-only"]

    def gain(r):
        return 100 * (r["goodput_bps"] / f["goodput_bps"] - 1) if f["goodput_bps"] else 0.0
    echo("host-congestion: h1, h2 -> h3 at 10 Gbit/s; h3's host 10 Gbit/s, halved by a hog")
    echo("                   Gbit/s  host drops  switch drops   Jain   vs fabric-only")
    for k, r in res.items():
        echo(f"  {k:<14} {r['goodput_bps'] / 1e9:9.3f} {r['host_drops']:11d} "
             f"{r['switch_drops']:13d} {r['jain']:6.3f} {gain(r):+8.1f}%")
    echo(f"  paper: host CC +{PAPER_HOST_GAIN}% throughput (TAURUS vs DOCA-PCC under host "
         f"congestion)")
    for n in HOST_NOTES:
        echo(f"  note: {n}")
    _plot_host(out, res)
    h = res["host-aware"]
    return ({**res, "gain_pct": gain(h), "network_only_gain_pct": gain(res["network-only"]),
             "paper_gain_pct": PAPER_HOST_GAIN, "notes": list(HOST_NOTES), "plots": ["host.png"]},
            f"fabric-only {f['goodput_bps'] / 1e9:.2f} Gbit/s, {f['host_drops']} host drops; "
            f"host-aware {h['goodput_bps'] / 1e9:.2f} Gbit/s, {h['host_drops']} host drops "
            f"({gain(h):+.1f}%)")


def _plot_host(out: str, res: dict) -> None:
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.2))
    keys = list(res)
    a1.bar(keys, [res[k]["goodput_bps"] / 1e9 for k in keys])
    a1.set_ylabel("goodput (Gbit/s)")
    a2.bar(keys, [res[k]["host_drops"] for k in keys])
    a2.set_ylabel("host drops (packets)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "host.png"), dpi=100)
    plt.close(fig)


