"""`tcd-*`: TCD ("Congestion Detection in Lossless Networks", SIGCOMM 2021):
ternary CE / UE marking at PFC-paused ports (the switch, marks.py), with
DCQCN reacting to CE only (cc_algorithms/dcqcn.py, ``tcd = true``).

Scaling (``Scale``): the seed's rates / s (s = 4: its 40 and 20 Gbit/s links
run at 10 and 5 Gbit/s), delays kept (4 us), and what is measured in bytes
or bit/s scaled alike, so buffer/BDP and size/BDP stay the seed's:
- PFC X_off / X_on 320 / 318 KB -> 80 000 / 79 500 B; epsilon 0.05 (the
  switch default); max(T_on) follows from them and the port rate;
- ECN: the DCQCN paper's RED (Kmin 5 KB, Kmax 200 KB, Pmax 1%; the TCD
  threshold is Kmin) -> 1250 B / 50 KB, and Pmax x s = 4%, so a flow at a
  given share of the line gets as many marks per CNP interval (50 us) as
  at the seed's rate with 1/s the packets;
- DCQCN's R_AI, R_HAI, R_min and byte counter B x 1/s (its timers kept);
- Hadoop flow sizes x 1/s (the workload's ``scale``; arrivals per second
  unchanged, so the load and FCTs in RTTs are the seed's); sizes are binned
  and printed at their seed (unscaled) value.
Why not unscaled or smaller: a NIC keeps at most 256 packets in flight (280
KB of 1 KB packets), under the seed's X_off of 320 KB, so one sender could
not fill an ingress port to X_off; at 1/20 Kmin is a quarter packet (any
two packets queued are marked) and R_min (5 Mbit/s) a packet per 1.6 ms.
Where we differ from the seed (each printed by its scenario):
- the topology of its Figure 2 is not in its text; ours follows
  taurus/tools/topologies/pfc_victim.toml: S0, S1 on T0; T0 -- T1 (T0's
  port P0); R0, R1 and A0..A14 on T1; S0 -> R0 (the potential victims,
  never the cause of congestion), S1 -> R1 and A0..A14 -> R1 (S2 sends
  nothing in the seed: left out).  The A hosts' bursts are synchronised:
  one Poisson process and one Hadoop size per burst, the same for all 15;
  S0 and S1 at 20% of their links, the bursts 60% of R1's in all (ours:
  the seed gives no loads);
- HOST_NOTE (no PFC between S0, S1 and T0), STATES_NOTE (A0 is 15 senders),
  RTO_MIN (10 ms: lossless, nothing to resend).
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np

from taurus.experiment import schema
from taurus.experiment.runner import Runner
from taurus.datapath.devices.nic.setup import nic_counters
from taurus.tools.workload import SizeCdf

from .core import outputs, port_total, pyplot, scenario

DELAY = "4us"
MSS = 1024
EPS = 0.05
N_A = 15
SEED = {"victim_ce_ecn": 26.0, "victim_ce_tcd": 0.0, "fct_small_p50_dcqcn": 10.8,
        "fct_small_p50_tcd": 3.6, "eps_max_zero": 0.05}


@dataclass(frozen=True)
class Scale:
    """The seed's setting at 1/s of its rates (module docstring)."""
    s: int

    line = property(lambda self: 40e9 / self.s)       # the seed's 40 Gbit/s links
    host = property(lambda self: 20e9 / self.s)       # its 20 Gbit/s S0, S1 links
    xoff = property(lambda self: 320_000 // self.s)   # PFC X_off / X_on, 320 / 318 KB
    xon = property(lambda self: 318_000 // self.s)
    kmin = property(lambda self: 5_000 // self.s)     # the DCQCN paper's RED
    kmax = property(lambda self: 200_000 // self.s)
    pmax = property(lambda self: min(1.0, 0.01 * self.s))

    def text(self, sizes: str = "Hadoop") -> str:
        if self.s == 1:
            return ("nothing scaled: 40 / 20 Gbit/s, 4 us; PFC Xoff/Xon 320/318 KB; RED Kmin/Kmax "
                    "5/200 KB, Pmax 1%")
        return (f"rates x 1/{self.s} (40 -> {self.line / 1e9:g}, 20 -> {self.host / 1e9:g} "
                f"Gbit/s), delays 4 us kept; PFC Xoff/Xon 320/318 KB -> {self.xoff}/{self.xon} B; "
                f"RED Kmin/Kmax 5/200 KB -> {self.kmin}/{self.kmax} B, Pmax 1% -> "
                f"{100 * self.pmax:g}%; DCQCN R_AI/R_HAI/R_min/B x 1/{self.s}; {sizes} sizes x "
                f"1/{self.s} (binned at their seed size)")


def _r(bps: float) -> str:
    return f"{bps / 1e3:.0f}Kbit"


def dcqcn(sc: Scale, tcd: bool) -> dict:
    """DCQCN's cc table, its rate steps scaled with the link rate."""
    return {"algorithm": "dcqcn", "mode": "native", "mss": MSS, "cwnd": "0",
            "params": {"tcd": tcd, "R_AI": 40e6 / sc.s, "R_HAI": 200e6 / sc.s,
                       "R_min": 100e6 / sc.s, "B": 10_000_000 // sc.s}}


def _switch(sc: Scale, name: str, tcd: bool, eps: float, buffer: int) -> dict:
    return {"name": name, "buffer": f"{buffer}B",
            "ecn": {"kmin": f"{sc.kmin}B", "kmax": f"{sc.kmax}B", "pmax": sc.pmax},
            "pfc": {"xoff": f"{sc.xoff}B", "xon": f"{sc.xon}B", "tcd": tcd, "epsilon": eps}}


HOST_NOTE = ("no PFC on the S0-T0 and S1-T0 links: a paused NIC of the seed stops and then "
             "sends at DCQCN's rate; ours, behind a MAC that honours PFC, would queue in that "
             "MAC and send the backlog at line rate, a burst that holds P0's queue flat after a "
             "resume (TCD then reads it as congested); so S0 and S1 send on at DCQCN's rate and "
             "T0's buffer holds what their NICs would (no drop: counted)")


def victim_topology(sc: Scale, tcd: bool, eps: float = EPS, n_a: int = N_A) -> dict:
    """The seed's Figure 2 as we read it (module docstring).  Buffers hold
    every ingress port's X_off and headroom at once (no drops)."""
    a = [f"A{k}" for k in range(n_a)]
    hosts = ["S0", "S1", "R0", "R1"] + a
    links = [{"endpoints": ["S0", "T0"], "rate": _r(sc.host), "pfc": False},   # HOST_NOTE
             {"endpoints": ["S1", "T0"], "rate": _r(sc.host), "pfc": False},
             {"endpoints": ["T0", "T1"]},              # T0's port P0 is T0-eth2
             {"endpoints": ["T1", "R0"]}, {"endpoints": ["T1", "R1"]}]
    links += [{"endpoints": [h, "T1"]} for h in a]
    port = 12_000_000 // sc.s
    return {"name": "tcd_victim",
            "defaults": {"rate": _r(sc.line), "delay": DELAY, "buffer": f"{port}B", "mtu": 1500},
            "hosts": [{"name": h} for h in hosts],
            "switches": [_switch(sc, "T0", tcd, eps, port), _switch(sc, "T1", tcd, eps, 2 * port)],
            "links": links}


def _x(name: str, dur_ns: int, topo: dict, cc: dict, traffic: list, sample: str = "100us",
       seed: int = 1) -> dict:
    return {"experiment": {"name": name, "duration": f"{dur_ns}ns", "seed": seed, "step": "10us",
                           "sample": sample},
            "topology": topo, "cc": cc, "traffic": traffic, "outputs": outputs()}


RTO_MIN = 10_000_000    # ns; ours: PFC pauses last milliseconds and lose nothing (RoCE
                        # NICs time out after milliseconds), the NIC's 50 us would resend


class _Watch(Runner):
    """The runner with the NICs' RTO at RTO_MIN, also sampling some hosts'
    NIC counters (rx_data, rx_dup, rx_ce, rx_ue: packets as received)
    every sample period."""
    watch: tuple = ()
    live_samples = True

    def build(self):
        from taurus.experiment import runner
        host = runner.nic_host
        runner.nic_host = functools.partial(host, rto_min_ns=RTO_MIN, rto_init_ns=RTO_MIN)
        try:
            super().build()
        finally:
            runner.nic_host = host
        self.rx = []

    def _on_sample(self):
        self.rx.append((self.now, {h: nic_counters(self.eng, self.nics[h]) for h in self.watch}))


def run_x(d: dict, out: str, watch: tuple = ()) -> tuple[dict, list]:
    """Run experiment dict d in virtual time into out (as core.run_dict), also
    returning the watched hosts' NIC counter samples."""
    from taurus.experiment.results import write_results
    x = schema.from_dict(d, f"<reproduce {d['experiment']['name']}>")
    os.makedirs(out, exist_ok=True)
    r = type("W", (_Watch,), {"watch": watch})(x, "virtual")
    snap = {}
    try:
        r.build()
        r.run()
    finally:
        try:
            snap = r.snapshot()
        finally:
            r.teardown()
    s = write_results(r, snap, out)
    if not s["complete"] or s["error"]:
        raise RuntimeError(f"{x.name}: run incomplete: {s['error']}")
    return s, getattr(r, "rx", [])


def _plot(path: str, draw) -> str:
    plt = pyplot()
    fig = draw(plt)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return os.path.basename(path)


# ------------------------------------------------------------------ tcd-states

STATES = Scale(4)       # not unscaled: a NIC keeps at most 256 packets in flight, 280 KB,
                        # under the seed's X_off of 320 KB; at 1/4 X_off is 80 KB
STATES_NOTE = ("A0 is A0..A14 together, each at line rate: one line-rate sender cannot pause P0 "
               "in our switch (static per-ingress X_off, FIFO egress: F1 at 8 Gbit/s holds "
               "about 8/48 of the root port's queue, A0's ingress port stops at X_off, so F1's "
               "ingress never reaches it); with 15, F1's share of the queue passes X_off")


def states_x(tcd: bool, quick: bool) -> dict:
    """§5.1.1: F0 (S0 -> R0) at 1 Gbit/s and F1 (S1 -> R1) at 8 Gbit/s from
    the start, A0 (STATES_NOTE) -> R1 at line rate through the middle
    third; fixed rates, no congestion control: the marks alone."""
    sc = STATES
    dur = 6_000_000 if quick else 30_000_000      # A must hold more than X_off per sender
    a0, a1 = dur // 3, 2 * dur // 3
    fixed = {"mode": "static", "cwnd": "0"}
    # finite A flows, posted whole (an open-ended bulk flow is only fed 256 KB
    # ahead of its ACKs: too little to fill an ingress port to X_off), sized
    # to end about a1: what is left of the root port after F1, shared by 15
    a_bytes = int((sc.line - 8e9 / sc.s) / N_A * (a1 - a0) / 8e9)
    return _x(f"tcd-states-{'tcd' if tcd else 'ecn'}", dur, victim_topology(sc, tcd),
              {"algorithm": "dctcp", "mode": "static", "mss": MSS, "cwnd": "0"},
              [{"kind": "bulk", "from": "S0", "to": "R0", "cc": {**fixed, "rate": _r(1e9 / sc.s)}},
               {"kind": "bulk", "from": "S1", "to": "R1", "cc": {**fixed, "rate": _r(8e9 / sc.s)}},
               {"kind": "bulk", "from": [f"A{k}" for k in range(N_A)], "to": "R1",
                "start": f"{a0}ns", "size": f"{a_bytes}B", "cc": {**fixed, "rate": _r(sc.line)}}],
              sample="200us" if quick else "1ms")


def _states_run(tcd: bool, quick: bool, out: str) -> dict:
    d = states_x(tcd, quick)
    s, rx = run_x(d, os.path.join(out, "tcd" if tcd else "ecn"), watch=("R0",))
    a0 = int(d["traffic"][2]["start"][:-2])
    a1 = a0 + max(f["fct_ns"] or s["ended_at_ns"] for f in s["flows"] if f["src"][0] == "A")
    t, ce, ue, pk = [], [], [], []
    prev = {"rx_data": 0, "rx_dup": 0, "rx_ce": 0, "rx_ue": 0}
    for now, c in rx:
        c = c["R0"]
        n = c["rx_data"] + c["rx_dup"] - prev["rx_data"] - prev["rx_dup"]   # arrivals
        t.append(now)
        pk.append(n)
        ce.append((c["rx_ce"] - prev["rx_ce"]) / n if n else 0.0)
        ue.append((c["rx_ue"] - prev["rx_ue"]) / n if n else 0.0)
        prev = c
    t, pk, ce, ue = map(np.array, (t, pk, ce, ue))
    during = (t > a0) & (t <= a1)
    outside = ~during & (t > t[0])

    def frac(m, sel):
        return float(100 * (m[sel] * pk[sel]).sum() / max(1, pk[sel].sum()))
    return {"t_ns": t.tolist(), "ce": ce.tolist(), "ue": ue.tolist(), "a0": [a0, a1],
            "during_ce_pct": frac(ce, during), "during_ue_pct": frac(ue, during),
            "outside_ce_pct": frac(ce, outside), "outside_ue_pct": frac(ue, outside),
            "p0_pfc_rx": s["ports"]["T0-eth2"]["counters"].get("pfc_rx", 0),
            "drops": int(sum(p["drops"] for p in s["ports"].values()))}


@scenario("tcd-states", "TCD §5.1.1: F0 1 Gbit/s, F1 8 Gbit/s, then A0 at line rate; F0's "
                        "marking fraction per interval, ECN vs TCD")
def tcd_states(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    res = {k: _states_run(k == "tcd", quick, out) for k in ("ecn", "tcd")}
    e, t = res["ecn"], res["tcd"]
    sc = STATES
    echo(f"tcd-states: F0 S0->R0 {1 / sc.s:g} Gbit/s, F1 S1->R1 {8 / sc.s:g} Gbit/s, A0->R1 at "
         f"{sc.line / 1e9:g} Gbit/s from {e['a0'][0] / 1e6:g} to {e['a0'][1] / 1e6:g} ms; "
         f"F0's packets at R0")
    echo("         F0 packets marked: during A0: CE %    UE %   outside: CE %    UE %   "
         "P0 PAUSEs rx  drops")
    for k, r in res.items():
        echo(f"  {k:<5} {r['during_ce_pct']:31.1f} {r['during_ue_pct']:7.1f} "
             f"{r['outside_ce_pct']:14.1f} {r['outside_ue_pct']:7.1f} {r['p0_pfc_rx']:14d} "
             f"{r['drops']:6d}")
    echo("  (A0 runs until its last byte is acknowledged; the queues it left behind drain "
         "after, still pausing P0 for a while)")
    echo("  seed (Fig. 11): with TCD F0 marked UE while A0 runs, unmarked after; (ECN: the paused "
         "port P0 marks F0 CE)")
    echo(f"  note: {STATES_NOTE}")
    echo(f"  scaling: {sc.text()}; interval {(e['t_ns'][1] - e['t_ns'][0]) / 1e6:g} ms, not the "
         f"seed's 100 ms (a shorter run)")

    def draw(plt):
        fig, ax = plt.subplots(figsize=(7, 3.2))
        for k, st in (("ecn", "-"), ("tcd", "--")):
            r = res[k]
            tm = np.array(r["t_ns"]) / 1e6
            ax.plot(tm, 100 * np.array(r["ce"]), st, label=f"{k.upper()}: CE")
            if k == "tcd":
                ax.plot(tm, 100 * np.array(r["ue"]), ":", label="TCD: UE")
        ax.axvspan(e["a0"][0] / 1e6, e["a0"][1] / 1e6, alpha=0.1, label="A0 active")
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("F0 packets marked (%)")
        ax.legend(fontsize=7)
        return fig
    plots = [_plot(os.path.join(out, "states.png"), draw)]
    return ({**res, "seed": "F0 UE (TCD) during A0, none after", "scaling": sc.text(),
             "note": STATES_NOTE,
             "plots": plots},
            f"F0 marked during A0: ECN {e['during_ce_pct']:.1f}% CE, TCD {t['during_ue_pct']:.1f}% "
            f"UE / {t['during_ce_pct']:.1f}% CE")


# ------------------------------------------------------------------ tcd-victim

HADOOP = "hadoop"
VICTIM_BINS = (0, 10_000, 100_000, 1_000_000, 10**9)     # seed sizes (bytes)
S_LOAD, A_LOAD = 0.2, 0.6
VICTIM = Scale(4)       # ours: S0 and S1 at half their links; the bursts half of R1's


def victim_x(name: str, tcd_switch: bool, tcd_cc: bool, quick: bool, eps: float = EPS,
             sc: Scale | None = None, seed: int = 1) -> dict:
    """§5.1.3 / §5.2.1: S0 -> R0 and S1 -> R1 Hadoop (Poisson, load S_LOAD
    of their links), A0..A14 -> R1 synchronised Hadoop bursts (one Poisson
    process, load A_LOAD of R1's link in all); arrivals stop DRAIN before
    the end so the flows finish.  ``seed`` draws the bursts and the
    workloads (the runs of one seed share one plan)."""
    sc = sc or VICTIM
    dur = 15_000_000 if quick else 60_000_000
    stop = dur - 5_000_000
    rng = np.random.default_rng(19 + seed)
    cdf = SizeCdf.load(HADOOP)
    lam = A_LOAD * sc.line / (8 * N_A * cdf.mean() / sc.s)   # bursts per second
    ts = np.cumsum(rng.exponential(1 / lam, int(lam * stop / 1e9 * 2 + 20)))
    ts = ts[ts * 1e9 < stop]
    sizes = np.maximum(1, cdf.sample(rng, len(ts)) / sc.s).astype(int)
    a = [f"A{k}" for k in range(N_A)]
    wl = {"kind": "workload", "cdf": HADOOP, "load": S_LOAD, "scale": 1 / sc.s,
          "stop": f"{stop}ns", "max_flows": 100_000}
    traffic = [{**wl, "from": "S0", "to": ["R0"]}, {**wl, "from": "S1", "to": ["R1"]}]
    traffic += [{"kind": "incast", "from": a, "to": "R1", "size": f"{n}B",
                 "start": f"{int(t * 1e9)}ns"} for t, n in zip(ts, sizes)]
    return _x(name, dur, victim_topology(sc, tcd_switch, eps), dcqcn(sc, tcd_cc), traffic,
              seed=seed)


def victim_stats(s: dict, sc: Scale) -> dict:
    """Victims: every flow from S0 (all start 5 ms before the end).
    CE-marked: at least one of its ACKs echoed CE (every CE packet is
    acknowledged at once).  FCTs of those that finished, by plan index
    (the runs of a scenario share one plan): ``fct_means`` compares them."""
    v = [f for f in s["flows"] if f["src"] == "S0"]
    n = s["nics"]["R0"]
    return {"victims": len(v), "finished": sum(f["done"] for f in v),
            "ce_pct": 100 * sum(f["ce_acks"] > 0 for f in v) / max(1, len(v)),
            "ue_pct": 100 * sum(f["ue_acks"] > 0 for f in v) / max(1, len(v)),
            "pkt_ce_pct": 100 * n["rx_ce"] / max(1, n["rx_data"] + n["rx_dup"]),
            "pkt_ue_pct": 100 * n["rx_ue"] / max(1, n["rx_data"] + n["rx_dup"]),
            "retx": int(sum(x["tx_retx"] for x in s["nics"].values())),
            "fct": {f["id"]: (f["size"] * sc.s, f["fct_ns"]) for f in v if f["done"]},
            "p0_pfc_rx": s["ports"]["T0-eth2"]["counters"].get("pfc_rx", 0),
            "pfc_xoff": port_total(s, "pfc_tx_xoff"),
            "drops": int(sum(p["drops"] for p in s["ports"].values())),
            "flows": len(s["flows"])}


def fct_means(res: dict) -> int:
    """Each run's victims' mean FCT (us), overall and by seed size bin, over
    the victims that finished in every run (a flow stuck at the end would
    otherwise leave the slower run's mean); returns how many those are."""
    common = set.intersection(*(set(r["fct"]) for r in res.values()))
    for r in res.values():
        fl = [r["fct"][k] for k in sorted(common)]
        r["mean_fct_us"] = float(np.mean([f for _, f in fl])) / 1e3 if fl else 0.0
        r["bins"] = []
        for lo, hi in zip(VICTIM_BINS[:-1], VICTIM_BINS[1:]):
            b = [f for sz, f in fl if lo <= sz < hi]
            r["bins"].append({"lo": lo, "hi": hi, "count": len(b),
                              "mean_fct_us": float(np.mean(b)) / 1e3 if b else None})
        r["fct"] = {str(k): v for k, v in r["fct"].items()}     # JSON keys
    return len(common)


# the victim runs: (key, label, TCD at the switches, TCD in DCQCN)
VICTIM_RUNS = (("ecn", "ECN marks, DCQCN", False, False),
               ("tcd", "TCD marks, DCQCN", True, False),
               ("tcd-cc", "TCD marks, DCQCN+TCD", True, True))


def _fmt_bin(lo, hi):
    def k(b):
        return f"{b // 1_000_000}MB" if b >= 1_000_000 else f"{b // 1000}KB"
    return f"<{k(hi)}" if lo == 0 else (f">={k(lo)}" if hi >= 10**9 else f"{k(lo)}-{k(hi)}")


SEEDS = (1, 2, 3, 4, 5)
SPREAD = ("ce_pct", "ue_pct", "pkt_ce_pct", "pkt_ue_pct", "mean_fct_us")


def victim_runs(out: str, quick: bool, mode: str, runs=VICTIM_RUNS, eps: float = EPS,
                seeds=SEEDS) -> dict:
    """Each run over ``seeds``: per key the seeds' figures (``per_seed``),
    their means under the figures' own names and, for those in SPREAD,
    ``_min`` and ``_max``; counts summed."""
    per = {key: [] for key, *_ in runs}
    for seed in seeds:
        res = {}
        for key, _, ts, tc in runs:
            d = victim_x(f"tcd-victim-{key}-s{seed}", ts, tc, quick, eps, seed=seed)
            d["cc"]["mode"] = mode
            res[key] = victim_stats(run_x(d, os.path.join(out, f"{key}-s{seed}"))[0], VICTIM)
        common = fct_means(res)
        for key, r in res.items():
            r.pop("fct")
            per[key].append({**r, "seed": seed, "fct_common": common})
    out_res = {}
    for key, rs in per.items():
        m = {k: float(np.mean([r[k] for r in rs])) for k in SPREAD}
        m.update({f"{k}_min": min(r[k] for r in rs) for k in SPREAD})
        m.update({f"{k}_max": max(r[k] for r in rs) for k in SPREAD})
        for k in ("victims", "finished", "p0_pfc_rx", "pfc_xoff", "drops", "retx", "flows"):
            m[k] = int(sum(r[k] for r in rs))
        m["bins"] = _mean_bins([r["bins"] for r in rs])
        out_res[key] = {**m, "seeds": len(rs), "per_seed": rs}
    return out_res


def _mean_bins(per_seed: list) -> list:
    """Seed-size bins: flows summed, mean FCT weighted by each seed's count."""
    out = []
    for bs in zip(*per_seed):
        n = sum(b["count"] for b in bs)
        tot = sum(b["mean_fct_us"] * b["count"] for b in bs if b["mean_fct_us"] is not None)
        out.append({"lo": bs[0]["lo"], "hi": bs[0]["hi"], "count": n,
                    "mean_fct_us": tot / n if n else None})
    return out


def _pm(r: dict, k: str, f: str = ".1f") -> str:
    """A figure's mean over the seeds with its range: 0.4% [0.0-1.3]."""
    return f"{r[k]:{f}}% [{r[k + '_min']:{f}}-{r[k + '_max']:{f}}]"


@scenario("tcd-victim", "TCD §5.1.3/Fig. 15a: head-of-line victims of PFC (Fig. 2), Hadoop + "
                        "synchronised bursts; victims CE-marked and their FCT, ECN vs TCD, "
                        "DCQCN vs DCQCN+TCD")
def tcd_victim(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    res = victim_runs(out, quick, mode)
    both = sum(r["fct_common"] for r in res["ecn"]["per_seed"])
    e, t, c = res["ecn"], res["tcd"], res["tcd-cc"]
    echo(f"tcd-victim: S0->R0 (victims), S1->R1 Hadoop at {S_LOAD:g} load; A0..A{N_A - 1}->R1 "
         f"synchronised Hadoop bursts ({A_LOAD:g} of R1's link in all); PFC on; random seeds "
         f"{', '.join(map(str, SEEDS))}: mean [min-max] over them, counts summed")
    echo("                        victims  finished  victim packets CE  victim flows CE-marked  "
         "pkts UE  flows UE  mean FCT us  P0 PAUSEs  drops")
    for key, label, _, _ in VICTIM_RUNS:
        r = res[key]
        echo(f"  {label:<21} {r['victims']:7d} {r['finished']:9d} "
             f"{_pm(r, 'pkt_ce_pct', '.2f'):>18} {_pm(r, 'ce_pct'):>23} {r['pkt_ue_pct']:7.1f}% {r['ue_pct']:8.1f}% "
             f"{r['mean_fct_us']:12.1f} {r['p0_pfc_rx']:10d} {r['drops']:6d}")
    echo(f"  seed (Table 3, CEE, DCQCN): {SEED['victim_ce_ecn']:g}% of victim packets CE-marked "
         f"with ECN, 0% with TCD")
    echo(f"  victims' mean FCT (us) by seed size, over the {both} victims finished in every run "
         "of their seed")
    echo("                                          DCQCN  DCQCN+TCD   (seed Fig. 15a: lower "
         "with DCQCN+TCD in every bin)")

    def v(b):
        return f"{b['mean_fct_us']:9.1f}" if b["mean_fct_us"] is not None else f"{'-':>9}"
    for be, bt in zip(e["bins"], c["bins"]):
        echo(f"    {_fmt_bin(be['lo'], be['hi']):<12} ({be['count']:4d}/{bt['count']:4d} flows)"
             f"        {v(be)} {v(bt)}")
    echo(f"  note: {HOST_NOTE}")
    echo(f"  note: NIC RTO {RTO_MIN / 1e6:g} ms (lossless; the NIC's 50 us would resend paused "
         f"packets)")
    echo(f"  scaling: {VICTIM.text()}")

    def draw(plt):
        fig, ax = plt.subplots(figsize=(6, 3.2))
        labels = [_fmt_bin(b["lo"], b["hi"]) for b in e["bins"]]
        x = np.arange(len(labels))
        for j, (k, r) in enumerate((("DCQCN (ECN)", e), ("DCQCN+TCD (TCD)", c))):
            ax.bar(x + (j - 0.5) * 0.4, [b["mean_fct_us"] or 0 for b in r["bins"]], 0.4, label=k)
        ax.set_xticks(x, labels)
        ax.set_xlabel("victim flow size (seed bytes)")
        ax.set_ylabel("mean FCT (us)")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
        return fig
    plots = [_plot(os.path.join(out, "victim_fct.png"), draw)]
    return ({**res, "runs": {k: lab for k, lab, _, _ in VICTIM_RUNS}, "fct_common": both,
             "seed": {"ce_ecn_pct": SEED["victim_ce_ecn"], "ce_tcd_pct": 0.0},
             "notes": [HOST_NOTE], "scaling": VICTIM.text(), "plots": plots},
            f"victim packets CE ECN {e['pkt_ce_pct']:.2f}%, TCD {t['pkt_ce_pct']:.2f}%; flows "
            f"ECN {e['ce_pct']:.1f}%, TCD {t['ce_pct']:.1f}% ({len(SEEDS)} seeds' mean); victim "
            f"mean FCT DCQCN {e['mean_fct_us']:.1f} us, DCQCN+TCD {c['mean_fct_us']:.1f} us")


# ------------------------------------------------------------------ tcd-epsilon

EPSILONS = (0.01, 0.05, 0.1, 0.2, 0.5)


@scenario("tcd-epsilon", "TCD §5.1.4/Fig. 14: victims' CE marking against epsilon "
                         "(the victim scenario, TCD marks, DCQCN)")
def tcd_epsilon(out: str, quick: bool, mode: str, echo) -> tuple[dict, str]:
    res = {}
    for eps in EPSILONS:
        key = f"eps-{eps:g}".replace(".", "_")        # a run's name takes no dots
        res[f"{eps:g}"] = victim_runs(out, quick, mode, ((key, "", True, False),), eps)[key]
    echo("tcd-epsilon: the tcd-victim scenario, TCD marks and DCQCN, epsilon swept "
         "(max(T_on) = (Xoff - Xon) / (eps C) + 2 x delay + a frame); random seeds "
         f"{', '.join(map(str, SEEDS))}: mean [min-max]")
    echo("  epsilon  victims  victim packets CE  victim flows CE-marked  pkts UE  mean FCT us")
    for k, r in res.items():
        echo(f"  {k:>7} {r['victims']:8d} {_pm(r, 'pkt_ce_pct', '.3f'):>18} "
             f"{_pm(r, 'ce_pct'):>23} {r['pkt_ue_pct']:7.1f}% {r['mean_fct_us']:12.1f}")
    echo("  seed (Fig. 14): no victim packet CE-marked for epsilon < 0.1; more marked as "
         "epsilon grows; 0.05 recommended")
    echo(f"  scaling: {VICTIM.text()}")
    zero = [float(k) for k, r in res.items() if r["pkt_ce_pct_max"] == 0]
    best = max(zero) if zero else None
    zero_f = [float(k) for k, r in res.items() if r["ce_pct_max"] == 0]
    best_f = max(zero_f) if zero_f else None

    def draw(plt):
        fig, ax = plt.subplots(figsize=(5, 3.2))
        xs = [float(k) for k in res]
        ax.plot(xs, [r["ce_pct"] for r in res.values()], "o-", label="victim flows CE-marked")
        ax.plot(xs, [r["pkt_ce_pct"] for r in res.values()], "s--", label="victim packets CE")
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("%")
        ax.legend(fontsize=7)
        return fig
    plots = [_plot(os.path.join(out, "epsilon.png"), draw)]
    def g(v):
        return "none" if v is None else f"{v:g}"
    return ({"epsilon": res, "largest_zero": best, "largest_zero_flows": best_f,
             "seed": {"largest_zero_below": 0.1}, "scaling": VICTIM.text(), "plots": plots},
            f"largest eps with no victim packet CE in any of {len(SEEDS)} seeds: {g(best)} "
            f"(flows: {g(best_f)})")


# ------------------------------------------------------------------ tcd-fct: tcd_fct.py
