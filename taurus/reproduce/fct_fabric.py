"""The large-scale FCT setting of the TAURUS, HPCC and OSCAR simulations,
for the scenarios that run at their scale (taurus_fct.py; OSCAR and TCD
at scale reuse it): a fat-tree, WebSearch or Hadoop flows between all
hosts with an 8:1 incast background, FCT slowdown per size bin.

Topology (``fat_tree_x``): the TAURUS seed's 3-tier fat-tree of 16 core,
20 aggregation and 20 ToR switches and 320 hosts (topogen's fat_tree by
tiers: 5 pods of 4 ToRs and 4 aggregation switches, 16 hosts per ToR,
each ToR to the 4 aggregation switches of its pod, aggregation switch j
of every pod to the 4 cores of group j; ECMP 4 wide at ToR and
aggregation).  Links 1 us.  The seed says every link is 400 Gbit/s and
there is no oversubscription; both hold only in the HPCC ns-3 setup it
follows (simulation/mix/fat.txt: hosts 100 Gbit/s, ToR-aggregation and
aggregation-core 400 Gbit/s), which we take: 16 x 100 = 4 x 400 Gbit/s at
a ToR, 4 ToRs under 4 core uplinks at an aggregation switch, 1:1.  Every
switch has a 32 MB shared buffer (the seed's), ECN, INT and Bolt's SRC on
every port, so one fabric serves every algorithm (only packets of an
algorithm that binds SRC ask for an SRC), and PFC on its switch-to-switch
links (PFC_NOTE: not towards hosts).

Scaling (``Scale``, stated by each scenario): rates x 1/s, delays kept,
and what is in bytes x 1/s (flow sizes, the shared buffer, PFC and ECN
thresholds, Bolt's SRC threshold), so size/BDP and buffer/BDP are the
papers' and a slowdown is comparable; a run has 1/s of the packets.
Sizes are binned at their seed (unscaled) value.  Ours, the papers give none: PFC X_off 1/40 of the
shared buffer per ingress (half the buffer over a ToR's 20 ports), X_on
95% of it; DCTCP's ECN step K = 40 KB per 100 Gbit/s of a port (about a
fifth of its BDP).  Bolt's SRC threshold is its authors' 10 KB (ns-3
ccThreshold, at 100 Gbit/s) x 1/s on every port.

Traffic (``fct_traffic``): every host sends flows of a CDF, Poisson at
`load` of its link, each to a random other host (the experiment's
``workload`` kind); and an N:1 incast background (workload.incast_bursts):
bursts at a random receiver from N random other hosts, each sending the
same size (TAURUS's 8 x 500 KB by default, `incast`), at `incast_load` of
every host's downlink.  Arrivals stop DRAIN before the end so most flows
finish.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from taurus.tools.analysis import fct_slowdown, slowdown_table
from taurus.tools.topogen import tree_shape
from taurus.tools.workload import incast_bursts

from .core import port_total

SEED_TREE = {"core": 16, "agg": 20, "tor": 20, "hosts": 320}
SMALL_TREE = {"core": 4, "agg": 4, "tor": 4, "hosts": 32}   # 2 pods, 8 hosts per ToR, 1:1
HOST_BPS, FABRIC_BPS = 100e9, 400e9
DELAY = "1us"
BUFFER = 32_000_000             # bytes per switch, shared
MSS = 1024
LONGEST_RTT_NS = 12_000         # host, ToR, aggregation, core and back: 6 links of 1 us each way
SRC_THRESHOLD = 10_000          # bytes: Bolt's ccThreshold (serhatarslan-hub/bolt_cc_ns3)
INCAST_FAN_IN, INCAST_SIZE = 8, 500_000
# seed sizes (bytes): the seed's "< 100 KB" and "> 300 KB" fall on edges
BINS = (0, 10_000, 100_000, 300_000, 1_000_000, 10_000_000, 10**12)
SMALL = 100_000
PFC_NOTE = ("PFC between switches only, not on the host links (the seed: every switch): a "
            "host whose switch port sends PFC sits behind a PAUSE-honouring MAC, a shim "
            "switch device of two ports, and 320 of them with the fabric's 640 switch ports "
            "pass the switches' 1,024 ECMP groups (datapath/devices/switch/state.py MAX_GRP: "
            "every distinct egress port set is one); a ToR's buffer takes what its hosts send "
            "(drops counted)")


@dataclass(frozen=True)
class Scale:
    """The papers' setting at 1/s of its rates and bytes (module docstring)."""
    s: int

    host = property(lambda self: HOST_BPS / self.s)
    fabric = property(lambda self: FABRIC_BPS / self.s)
    buffer = property(lambda self: BUFFER // self.s)
    xoff = property(lambda self: BUFFER // 40 // self.s)
    xon = property(lambda self: BUFFER * 95 // 4000 // self.s)

    def ecn_k(self, rate_bps: float) -> int:
        return int(40_000 * rate_bps / 100e9)

    def text(self, incast_size: int = INCAST_SIZE) -> str:
        if self.s == 1:
            return ("nothing scaled: hosts 100, fabric 400 Gbit/s, 1 us; 32 MB shared buffer; "
                    f"PFC X_off/X_on {self.xoff}/{self.xon} B; ECN K 40/160 KB; "
                    f"SRC {SRC_THRESHOLD // 1000} KB")
        return (f"rates x 1/{self.s} (hosts 100 -> {self.host / 1e9:g}, fabric 400 -> "
                f"{self.fabric / 1e9:g} Gbit/s), delays 1 us kept; bytes x 1/{self.s}: shared "
                f"buffer 32 MB -> {self.buffer / 1e6:g} MB, PFC X_off/X_on {self.xoff}/"
                f"{self.xon} B, ECN K {self.ecn_k(self.host) // 1000}/"
                f"{self.ecn_k(self.fabric) // 1000} KB (host/fabric ports), SRC "
                f"{SRC_THRESHOLD // 1000} KB -> {SRC_THRESHOLD // self.s} B, flow sizes (binned "
                f"at their seed size), incast {incast_size // 1000} KB -> "
                f"{incast_size // self.s // 1000} KB")


def _rate(bps: float) -> str:
    return f"{bps / 1e3:.0f}Kbit"


def init_window(sc: Scale, tree: dict = SEED_TREE) -> int:
    """Every flow's first window (bytes): one BDP of a host link over the
    longest base RTT (host, ToR, aggregation, core and back: 6 links each
    way), as HPCC's flows start at line rate.  The same in every mode: in
    an agent mode the algorithm's own first window lands only with its
    first decision."""
    return int(sc.host * LONGEST_RTT_NS * 1e-9 / 8)


@dataclass(frozen=True)
class Links:
    """What the fat-tree's links carry, already scaled: rates, delay, each
    switch's shared buffer (also every port's cap), and the port features
    (ecn, pfc, int ...) of host and of switch-to-switch links.  The
    harness's own is ``harness_links``; a scenario with another paper's
    fabric (tcd.py: 40 Gbit/s, 4 us, RED, PFC with TCD) gives its own."""
    host_bps: float
    fabric_bps: float
    delay: str
    buffer: int
    host_ports: dict
    fabric_ports: dict


def harness_links(sc: Scale) -> Links:
    """The module docstring's links: ECN step K, INT and SRC everywhere,
    PFC between switches."""
    pfc = {"xoff": f"{sc.xoff}B", "xon": f"{sc.xon}B"}
    src = {"threshold": f"{SRC_THRESHOLD // sc.s}B"}
    return Links(sc.host, sc.fabric, DELAY, sc.buffer,
                 {"ecn": {"k": f"{sc.ecn_k(sc.host)}B"}, "int": True, "src": src},
                 {"ecn": {"k": f"{sc.ecn_k(sc.fabric)}B"}, "int": True, "src": src, "pfc": pfc})


def n_hosts(tree: dict) -> int:
    """Hosts of a tree given by tiers or by k (topogen)."""
    return tree_shape(tree).n_hosts


def fat_tree_x(sc: Scale, tree: dict = SEED_TREE, links: Links | None = None) -> dict:
    """The [topology] table: the fat-tree (by tiers, or k-ary), shared
    buffer and the links' features (``links``; the harness's by default)."""
    ln = links or harness_links(sc)

    def link(bps, ports):
        return {"rate": _rate(bps), "delay": ln.delay, "buffer": f"{ln.buffer}B", "mtu": 1500,
                **ports}
    return {"name": "fct_fat_tree",
            "fat_tree": {**tree, "switch": {"buffer": f"{ln.buffer}B"},
                         "host_link": link(ln.host_bps, ln.host_ports),
                         "fabric_link": link(ln.fabric_bps, ln.fabric_ports)}}


def oversubscription(sc: Scale, tree: dict = SEED_TREE) -> tuple[float, float]:
    return tree_shape(tree).oversubscription(sc.host, sc.fabric)


def fct_traffic(sc: Scale, tree: dict, cdf: str, load: float, incast_load: float,
                stop_ns: int, seed: int,
                incast: tuple[int, int] = (INCAST_FAN_IN, INCAST_SIZE),
                host_bps: float | None = None) -> list[dict]:
    """The [[traffic]] tables: the workload between all hosts and one incast
    table per background burst (``incast``: fan-in, bytes per sender at the
    seed's scale; its load is of ``host_bps``, sc.host by default)."""
    fan_in, incast_size = incast
    hosts = [f"h{i}" for i in range(1, n_hosts(tree) + 1)]
    traffic = [{"kind": "workload", "from": hosts, "to": hosts, "cdf": cdf, "load": load,
                "scale": 1 / sc.s, "stop": f"{stop_ns}ns", "max_flows": 1_000_000}]
    if incast_load > 0:
        rng = np.random.default_rng(seed + 1_000_003)     # apart from the workload's draws
        size = incast_size // sc.s
        for b in incast_bursts(rng, len(hosts), fan_in, size, incast_load, host_bps or sc.host,
                               stop_ns / 1e9):
            traffic.append({"kind": "incast", "from": [hosts[i] for i in b.srcs],
                            "to": hosts[b.dst], "size": f"{size}B",
                            "start": f"{int(b.t * 1e9)}ns"})
    return traffic


def fct_x(name: str, sc: Scale, tree: dict, cdf: str, load: float, incast_load: float,
          duration_ns: int, drain_ns: int, cc: dict, seed: int = 1, frames: int = 1 << 17,
          step_ns: int = 10_000,
          incast: tuple[int, int] = (INCAST_FAN_IN, INCAST_SIZE),
          links: Links | None = None) -> dict:
    """One experiment dict of the setting; ``cc`` its [cc] table; ``step_ns``
    the runner's step (in agent modes the decision lands within one);
    ``incast`` the background's fan-in and bytes per sender (seed scale);
    ``links`` the fabric's links (fat_tree_x)."""
    return {"experiment": {"name": name, "duration": f"{duration_ns}ns", "seed": seed,
                           "step": f"{step_ns}ns", "frames": frames,
                           # two samples: the per-flow series of 50,000 flows are not read
                           "sample": f"{duration_ns // 2 // step_ns * step_ns}ns"},
            "topology": fat_tree_x(sc, tree, links),
            "cc": {"mss": MSS, "cwnd": f"{init_window(sc, tree)}B", **cc},
            "traffic": fct_traffic(sc, tree, cdf, load, incast_load, duration_ns - drain_ns,
                                   seed, incast, links.host_bps if links else None),
            "outputs": {"plots": False, "csv": False}}


def slowdowns(s: dict, topo, sc: Scale, bins: tuple = BINS, small: int = SMALL) -> dict:
    """The run's finished flows' FCT slowdown (ideal: base RTT of the path +
    size / the path's slowest link, as results.py), by seed size: the
    workload's flows (``table`` in ``bins``, ``small``: < ``small`` bytes),
    the incast ones apart, and both (``every``)."""
    from taurus.experiment.results import path_of
    paths: dict = {}
    size, sd, kind = [], [], []
    for f in s["flows"]:
        if not f["done"]:
            continue
        key = (f["src"], f["dst"])
        if key not in paths:
            paths[key] = path_of(topo, *key)
        d, rate = paths[key]
        size.append(f["size"] * sc.s)
        sd.append(fct_slowdown([f["size"]], [f["fct_ns"]], 2 * d, rate)[0])
        kind.append(f["kind"])
    size, sd, kind = np.array(size), np.array(sd), np.array(kind)
    wl = kind == "workload"

    def summary(sel):
        return slowdown_table(size[sel], sd[sel], (0, 10**12))[0]
    return {"table": slowdown_table(size[wl], sd[wl], bins),
            "small": summary(wl & (size < small)), "all": summary(wl),
            "incast": summary(kind == "incast"), "every": summary(np.ones(len(sd), bool))}


def run_stats(s: dict, sc: Scale, topo, wall_s: float, bins: tuple = BINS,
              small: int = SMALL) -> dict:
    """Slowdowns (``every``: the workload's and the incast's flows
    together; ``bins``, ``small`` as slowdowns) and what the run cost:
    flows, packets, PFC, drops, Bolt's SRCs sent, pool misses (tx_nobuf),
    wall seconds and rates."""
    hops = port_total(s, "tx") + int(sum(n.get("tx_data", 0) + n.get("tx_retx", 0)
                                         + n.get("tx_ack", 0) for n in s["nics"].values()))
    return {**slowdowns(s, topo, sc, bins, small),
            "flows": len(s["flows"]), "finished": sum(f["done"] for f in s["flows"]),
            "pfc_xoff": port_total(s, "pfc_tx_xoff"),
            "drops": int(sum(p["drops"] for p in s["ports"].values())),
            "src_tx": port_total(s, "src_tx"),
            "tx_nobuf": int(sum(n.get("tx_nobuf", 0) for n in s["nics"].values())),
            "packet_hops": hops, "wall_s": wall_s, "loop_s": s.get("loop_wall_s", 0.0),
            "sim_ms": s.get("ended_at_ns", 0) / 1e6}


def run(d: dict, out: str) -> tuple[dict, object]:
    """Run experiment dict d in virtual time into out; (summary, topology)."""
    import time
    from taurus.experiment import schema
    from taurus.experiment.runner import run_experiment
    x = schema.from_dict(d, f"<reproduce {d['experiment']['name']}>")
    os.makedirs(out, exist_ok=True)
    t0 = time.monotonic()
    s = run_experiment(x, out, "virtual")
    if not s["complete"] or s["error"]:
        raise RuntimeError(f"{x.name}: run incomplete: {s['error']}")
    s["wall_s"] = time.monotonic() - t0
    return s, x.topo


def isolated(fn, *args):
    """fn(*args) in a fresh process: a large run's memory (up to 10 GB for
    an agent run of 51,617 flows) is not all returned to the system after
    it, and one process running a scenario's runs in turn grew to 14 GB; a
    process per run gives it all back when the run ends."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                             max_tasks_per_child=1) as pool:
        return pool.submit(fn, *args).result()
