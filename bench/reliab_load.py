"""A long run under load (bench/reliability.py part 5), in virtual time.

On a 4-leaf, 2-spine leaf-spine (5 hosts a leaf, 10 Gbit/s, ECN at the
switches), DCTCP in agent mode (one in-process agent per sending NIC,
draining its report ring after every slice, as the runner does):

- `long_flows` long-lived streams the NIC generates (nic_generate, as the
  runner's bulk flows) from 8 hosts of leaves 1-2 to 8 sinks on leaves 3-4,
  open for the whole run;
- beside them, flow churn between the fifth host of each leaf: finite
  flows opened (add_flow), given random data (nic_post), read at the
  receiver (nic_take_delivered) and checked byte for byte, then closed
  (nic_close), `concurrent` at a time, until `churn_flows` have closed
  and `wall_s` of wall time has passed; with `max_wall_s`, no flow is
  opened after that much wall time (the run's figures say how many were).

Sampled every `sample_slices` slices: the process's RSS (its growth is
from the end of the warm-up, the first tenth of the churn and of
`wall_s`, to the end; every preallocated table is touched once before the
run (prefault), so the figure shows growth, not a table's pages mapped as
the run first reaches them: the per-flow send and receive slots fill over
each flow's first 256 packets, minutes of wall time at 10,000 flows);
every table's occupancy against its capacity (sending flow rows,
receive PDC rows, the PDC hash, report rings, the timing wheel's timers,
the frame pool, CC context rows, NIC submission / completion queues);
every NIC, switch port and agent counter, which must never decrease (a
wrapped or corrupted counter would).  A churn that
finishes no flow for STALL_NS ends the run (its open flows are `stuck`).
At the end every long flow stops sending and what is in flight drains:
every long flow must have moved data, the churn's rows must be free, no
frame held.  Stopping a generated stream (nic_generate_stop) posts no more,
but what it posted stays to be sent, up to its send ring (SEND_RING, 320
KiB) a flow: 10,000 flows sharing the leaves' 40 Gbit/s of uplinks would
take seconds of virtual time, with one packet a flow standing in the uplink
queues meanwhile.  So each is also paced to a standstill (static, 1 bit/s),
and what is in the network drains within DRAIN_NS.
"""
import time

import numpy as np

G = 1_000_000_000
SLICE_NS = 20_000           # virtual time between two rounds of the apps and agents
STALL_NS = 50_000_000       # no churn flow finished for this long: the rest are stuck
DRAIN_NS = 50_000_000       # at the end, the streams stopped: what is in flight drains
CHURN_BUF = 64 << 10        # a churn flow's send ring and its receiver's ring
LEAVES, PER_LEAF = 4, 5


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def topology():
    from taurus.tools.topology import from_dict
    return from_dict({"topology": {
        "name": "load",
        "leaf_spine": {"leaves": LEAVES, "spines": 2, "hosts_per_leaf": PER_LEAF,
                       "switch": {"ecn": {"k": "65KB"}}}},
        "defaults": {"rate": "10Gbit", "delay": "1us", "buffer": "8MB"}})


def prefault(eng):
    """Touch every page of the engine's preallocated arrays (a byte of
    each page or-ed with 0) but the NICs' byte rings, which apps fill as
    they use them: RSS then starts at what those tables will take."""
    seen = set()

    def walk(x):
        if isinstance(x, np.ndarray):
            if x.size and x.ctypes.data not in seen and x.flags.writeable \
                    and x.flags.c_contiguous:
                seen.add(x.ctypes.data)
                u = x.reshape(-1).view(np.uint8)
                u[::4096] |= 0
        elif isinstance(x, tuple):
            for k, v in (x._asdict().items() if hasattr(x, "_asdict") else enumerate(x)):
                if k not in ("txbuf", "rxbuf"):
                    walk(v)
    walk(eng.E)
    return len(seen)


def _hosts():
    """(long-flow senders, their sinks, churn hosts) by name."""
    h = [[f"h{lf * PER_LEAF + j + 1}" for j in range(PER_LEAF)] for lf in range(LEAVES)]
    senders = h[0][:4] + h[1][:4]
    sinks = h[2][:4] + h[3][:4]
    churn = [row[4] for row in h]
    return senders, sinks, churn


class Tables:
    """Occupancy and capacity of every per-connection and per-packet table."""

    def __init__(self, eng):
        self.eng = eng

    def read(self) -> dict:
        from taurus.datapath.devices.nic.setup import nic_table_use
        from taurus.datapath.devices.nic.state import (M_NNIC, N_QC, QC_CQ_HEAD, QC_CQ_TAIL,
                                                      QC_SQ_HEAD, QC_SQ_TAIL)
        from taurus.datapath.wheel import ARMED, NEXT_ID
        eng = self.eng
        E, N, cc = eng.E, eng.E.nic, eng.cc
        u = nic_table_use(eng)
        k = int(N.meta[M_NNIC])
        q = N.qc[:k * N_QC].reshape(k, N_QC)
        rp = cc.rings.prod[:, 0].astype(np.int64) - cc.rings.cons[:, 0].astype(np.int64)
        return {
            "flows_open": u["flows"], "flow_rows": (u["flow_rows"], N.fl.shape[0] - 1),
            "pdcs_open": u["pdcs"], "pdc_rows": (u["pdc_rows"], N.rp.shape[0] - 1),
            "pdc_hash": (u["hash"], N.hkey.shape[0]),
            "report_ring": (int(rp.max()), cc.rings.rec.shape[1]),
            "timers": (int(E.wheel.meta[NEXT_ID]), E.wheel.due.shape[0]),
            "timers_armed": int(E.wheel.meta[ARMED]),
            "frames": (eng.frames_in_use(), E.pool.data.shape[0]),
            "cc_rows": (int(np.count_nonzero(cc.owner >= 0)), cc.max_flows),
            "sq": (_depth(q, QC_SQ_HEAD, QC_SQ_TAIL), N.sq.shape[1]),
            "cq": (_depth(q, QC_CQ_HEAD, QC_CQ_TAIL), N.cq.shape[1]),
        }


def _depth(q, head, tail):
    """The fullest NIC queue's records (head: written, tail: taken)."""
    return int(np.abs(q[:, head].astype(np.int64) - q[:, tail].astype(np.int64)).max())


def _flat(prefix, d, out):
    for k, v in d.items():
        if isinstance(v, dict):
            _flat(f"{prefix}{k}.", v, out)
        elif isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            out[prefix + k] = int(v)
    return out


class Counters:
    """Every NIC, switch port and agent counter; check() says which went
    backwards (or negative) since the last reading."""

    def __init__(self, eng, nics, ports, agents):
        self.eng, self.nics, self.ports, self.agents = eng, nics, ports, agents
        self.last = None
        self.errors = []

    def read(self) -> dict:
        from taurus.datapath.devices.nic.setup import nic_counters
        from taurus.datapath.devices.switch.setup import switch_stats
        out = {}
        for h, d in self.nics.items():
            _flat(f"nic.{h}.", nic_counters(self.eng, d), out)
        _flat("port.", switch_stats(self.eng, list(self.ports.values())), out)
        for h, a in self.agents.items():
            st = a.stats()
            _flat(f"agent.{h}.", {"messages": st["messages"], "handler": st["handler"]}, out)
        return out

    def check(self) -> dict:
        now = self.read()
        for k, v in now.items():
            if v < 0:
                self.errors.append((k, "negative", v))
            elif self.last is not None and k in self.last and v < self.last[k] \
                    and not _gauge(k):
                self.errors.append((k, "decreased", self.last[k], v))
        self.last = now
        return now


def _gauge(key):
    """Counter names that are levels, not totals (they may go down)."""
    leaf = key.rsplit(".", 1)[-1]
    return leaf in GAUGES


GAUGES = {"queue", "qlen", "backlog", "in_flight", "pending", "lag", "last_batch", "open",
          "depth", "max_batch", "q_bytes", "paused"}


class Churn:
    """Finite flows between the churn hosts, `concurrent` at a time; each
    carries random data the receiver reads and checks, then closes."""

    def __init__(self, eng, topo, nics, hosts, total, concurrent, msg, seed):
        self.eng, self.topo, self.nics, self.hosts = eng, topo, nics, hosts
        self.total, self.concurrent, self.msg = total, concurrent, msg
        self.rng = np.random.default_rng(seed)
        self.pool = self.rng.integers(0, 256, 4 * msg, np.uint8).tobytes()
        self.open = {}               # flow -> [src, dst, src ip, data, bytes got, closing]
        self.opened = self.closed = self.checked = self.bad = 0
        self.bytes = 0

    def pump(self):
        from taurus.datapath.devices.nic.setup import (add_flow, flow_closed, nic_close,
                                                       nic_post, nic_take_delivered,
                                                       set_flow_mode)
        eng, topo = self.eng, self.topo
        for f in list(self.open):
            src, dst, sip, data, got, closing = r = self.open[f]
            if closing:
                if flow_closed(eng, f):
                    del self.open[f]
                    self.closed += 1
                continue
            got += nic_take_delivered(eng, self.nics[dst], sip, f)
            r[4] = got
            if len(got) >= len(data):
                self.checked += 1
                self.bad += got != data
                self.bytes += len(got)
                nic_close(eng, self.nics[src], f)
                r[5] = True
        while self.opened < self.total and len(self.open) < self.concurrent:
            k = self.opened % len(self.hosts)
            src, dst = self.hosts[k], self.hosts[(k + 2) % len(self.hosts)]   # across spines
            n = int(self.rng.integers(1, self.msg + 1))
            a = int(self.rng.integers(0, len(self.pool) - n))
            data = self.pool[a:a + n]
            f = add_flow(eng, self.nics[src], topo.mac_of(dst), topo.ip_of(dst),
                         buf_bytes=CHURN_BUF, rwnd_bytes=CHURN_BUF)
            set_flow_mode(eng, f, "agent")
            nic_post(eng, self.nics[src], f, data)
            self.open[f] = [src, dst, topo.ip_of(src), data, b"", False]
            self.opened += 1

    @property
    def done(self):
        return self.opened >= self.total and not self.open


def _agents(eng, nics, hosts, line_rate):
    from taurus.agent.agent import Agent
    from taurus.agent.config import parse as agent_config
    from taurus.datapath.ccshm import CcShm
    out = {}
    for h in hosts:
        cfg = agent_config({"agent": {"algorithm": "dctcp", "mss": 1024,
                                      "line_rate_bps": line_rate}})
        slot = int(eng.E.devs.regs[nics[h], 0])
        a = Agent(eng.name + "-cc", cfg, cc=CcShm.attach(eng.name + "-cc", nic=slot),
                  stats_dir=None, slot=slot)
        a.start()
        out[h] = a
    return out


def run(long_flows=10_000, churn_flows=100_000, wall_s=600.0, concurrent=128, msg=16 << 10,
        sample_slices=500, seed=1, log=print, progress=False, max_wall_s=None):
    from taurus.datapath.devices.nic import setup as NS
    from taurus.datapath.devices.nic.state import FL_ACKED_OFF, FL_POSTED, FL_SENT_OFF
    from taurus.datapath.engine import Engine
    from taurus.tools.fabric import build_virtual, nic_host
    topo = topology()
    senders, sinks, churn_hosts = _hosts()
    nflows = long_flows + 2 * concurrent + 64
    eng = Engine(clock="virtual", max_flows=nflows + 2, max_nics=len(topo.hosts),
                 max_ports=64, max_devices=32, n_frames=1 << 16,
                 timers=max(1 << 16, 4 * nflows + 1024))
    agents = {}
    try:
        eng.reserve_nics(max_flows=nflows + 1, tx_bytes=(2 * concurrent + 64) * CHURN_BUF
                         + (6 << 16), rx_bytes=(2 * concurrent + 64) * CHURN_BUF, cq=1 << 16)
        fab = build_virtual(eng, topo,
                            host_factory=lambda *a: nic_host(*a, rx_buf_bytes=CHURN_BUF))
        nics = fab["hosts"]
        ports = {n: p for n, p in fab["ports"].items()
                 if not topo.node(n.rsplit("-eth", 1)[0]).is_host}
        for h in sinks:
            NS.nic_sink(eng, nics[h], 1 << 30)
        agents = _agents(eng, nics, senders + churn_hosts, 10 * G)
        from taurus.experiment.traffic import SEND_RING
        longs = []
        for i in range(long_flows):
            s, d = senders[i % len(senders)], sinks[i % len(sinks)]
            f = NS.add_flow(eng, nics[s], topo.mac_of(d), topo.ip_of(d), buf_bytes=SEND_RING,
                            shared_ring=True, rwnd_bytes=1 << 30)
            NS.set_flow_mode(eng, f, "agent")
            NS.nic_generate(eng, f)
            longs.append(f)
        longs = np.array(longs, np.int64)
        prefault(eng)
        tables, counters = Tables(eng), Counters(eng, nics, ports, agents)
        churn = Churn(eng, topo, nics, churn_hosts, churn_flows, concurrent, msg, seed)
        samples = []
        t0, slices, rss0, warm_at = time.monotonic(), 0, None, None

        def sample():
            s = {"wall_s": round(time.monotonic() - t0, 1), "sim_ms": eng.now() / 1e6,
                 "rss": rss_bytes(), "churned": churn.closed, **tables.read()}
            counters.check()
            samples.append(s)
            return s
        sample()
        last_closed, stalled = 0, 0
        while not (churn.done and time.monotonic() - t0 >= wall_s):
            if max_wall_s is not None and time.monotonic() - t0 >= max_wall_s:
                churn.total = min(churn.total, churn.opened)     # open no more
            churn.pump()
            stalled = stalled + 1 if churn.closed == last_closed and churn.open else 0
            last_closed = churn.closed
            if stalled * SLICE_NS >= STALL_NS:     # no churn flow finished for that long
                break
            eng.run_until(eng.now() + SLICE_NS, stop_idle=False)
            NS.nic_completions(eng)          # nobody waits on them: keep the CQs empty
            for a in agents.values():
                a.step(eng.now())
            slices += 1
            if slices % sample_slices == 0:
                s = sample()
                if progress:
                    log(f"    {s['wall_s']:.0f} s wall, {s['sim_ms']:.1f} ms: {churn.closed} "
                        f"churned, {len(churn.open)} open, RSS {s['rss'] / 2**20:.0f} MiB")
                if rss0 is None and churn.closed >= churn.total // 10 \
                        and s["wall_s"] >= wall_s / 10:        # the warm-up: a tenth
                    rss0, warm_at = s["rss"], len(samples) - 1
        stuck = sorted(churn.open)
        fl = eng.E.nic.fl
        unsent = int((fl[longs, FL_POSTED] - fl[longs, FL_SENT_OFF]).sum())
        for f in longs:                 # the streams stop sending: what is in flight drains
            NS.nic_generate_stop(eng, int(f))
            NS.set_flow_mode(eng, int(f), "static")
            NS.set_flow_cc(eng, int(f), rate_bps=1)
        drain_t0 = eng.now()
        for _ in range(DRAIN_NS // SLICE_NS):
            if eng.frames_in_use() == 0:
                break
            eng.run_until(eng.now() + SLICE_NS, stop_idle=False)
            NS.nic_completions(eng)
            for a in agents.values():
                a.step(eng.now())
        drain_ns = eng.now() - drain_t0
        end = sample()
        acked = eng.E.nic.fl[longs, FL_ACKED_OFF]
        if rss0 is None:
            rss0, warm_at = samples[0]["rss"], 0
        for a in agents.values():
            a.teardown()
        agents = {}
    finally:
        for a in agents.values():
            a.teardown()
        eng.close()
    cap = {k: max(s[k][0] for s in samples) for k in samples[0] if isinstance(samples[0][k], tuple)}
    r = dict(flows=churn.closed, opened=churn.opened, stuck=stuck, checked=churn.checked,
             bad=churn.bad,
             churn_mib=churn.bytes / 2**20, long_flows=long_flows,
             long_min_mib=float(acked.min()) / 2**20, long_total_gib=float(acked.sum()) / 2**30,
             long_idle=int(np.count_nonzero(acked == 0)),
             long_unsent_mib=unsent / 2**20, drain_ms=drain_ns / 1e6,
             wall_s=time.monotonic() - t0, sim_s=end["sim_ms"] / 1e3, slices=slices,
             rss_mib=end["rss"] / 2**20, rss_growth_pct=100.0 * (end["rss"] - rss0) / rss0,
             warm_sample=warm_at, peak=cap,
             capacity={k: v[1] for k, v in end.items() if isinstance(v, tuple)},
             end={k: (v[0] if isinstance(v, tuple) else v) for k, v in end.items()},
             counter_errors=counters.errors, counters=len(counters.last or {}),
             samples=samples)
    log(fmt(r))
    return r


def fmt(r):
    peak = ", ".join(f"{k} {v}/{r['capacity'][k]}" for k, v in r["peak"].items())
    return (f"  {r['wall_s']:.0f} s wall, {r['sim_s'] * 1e3:.1f} ms virtual: {r['long_flows']} "
            f"long DCTCP flows in agent mode moved {r['long_total_gib']:.2f} GiB (each at least "
            f"{r['long_min_mib']:.2f} MiB, {r['long_idle']} idle) while {r['flows']} flows "
            f"were opened, carried {r['churn_mib']:.0f} MiB checked ({r['bad']} bad) and closed\n"
            f"  RSS {r['rss_mib']:.0f} MiB, growth after warm-up {r['rss_growth_pct']:+.2f}%; "
            f"peak use/capacity: {peak}\n"
            f"  at the end: flows open {r['end']['flows_open']}, "
            f"PDCs open {r['end']['pdcs_open']}, "
            f"frames held {r['end']['frames']} after {r['drain_ms']:.1f} ms of drain (the "
            f"long flows stopped with {r['long_unsent_mib']:.0f} MiB posted, unsent); "
            f"{len(r['stuck'])} churn flows stuck; "
            f"{r['counters']} counters, "
            f"{len(r['counter_errors'])} went backwards")
