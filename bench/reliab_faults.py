"""Network faults during transfers (bench/reliability.py part 2): random
loss (1% and 10%), reordering, duplication, corruption (a flipped bit
behind a checksum of the intact datagram: the UDP checksum is wrong) and a
100 ms outage, from the impairment device (datapath/devices/impair.py)
between two host NICs.  Each case moves random data both ways on several
flows; the SHA-256 of every delivered stream must equal the sent one's, and
retransmissions are counted.

`run_virtual` runs on memory links in virtual time; `run_xdp` (root) runs
the same cases over AF_XDP: h1 -- x -- h2 on veths in namespaces, the
impairment device on x's two ports, the engine on the wall clock.
"""
import hashlib

import numpy as np

G = 1_000_000_000
OUTAGE_NS = 100_000_000

CASES = {                                 # name: impairment parameters
    "loss 1%": dict(loss=0.01),
    "loss 10%": dict(loss=0.10),
    "reorder 5%": dict(reorder=0.05, reorder_k=3, reorder_delay_ns=20_000),
    "duplicate 5%": dict(dup=0.05),
    "corrupt 2%": dict(corrupt=0.02),
    "outage 100 ms": dict(),
    "all at once": dict(loss=0.01, reorder=0.05, reorder_k=3, reorder_delay_ns=20_000,
                        dup=0.02, corrupt=0.01),
}


def _streams(seed, n_flows, nbytes):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, nbytes + int(rng.integers(0, 4096)), np.uint8).tobytes()
            for _ in range(n_flows)]


class _Transfers:
    """Flows each way between NICs a and b with random data, posted in
    256 KiB messages as room allows and taken as delivered."""

    def __init__(self, eng, hosts, n_flows, nbytes, seed, cwnd):
        from taurus.datapath.devices.nic.setup import add_flow
        self.eng, self.rows = eng, []
        (a, ma, ia), (b, mb, ib) = hosts
        for k, (src, dst, mac, sip, dip) in enumerate(((a, b, mb, ia, ib), (b, a, ma, ib, ia))):
            for j, data in enumerate(_streams(seed * 10 + k, n_flows, nbytes)):
                f = add_flow(eng, src, mac, dip, cwnd_bytes=cwnd)
                self.rows.append(dict(src=src, dst=dst, sip=sip, f=f, data=data, posted=0,
                                      got=hashlib.sha256(), n_got=0))

    def pump(self):
        from taurus.datapath.devices.nic.app import WouldBlock
        from taurus.datapath.devices.nic.setup import nic_post, nic_take_delivered
        for r in self.rows:
            while r["posted"] < len(r["data"]):
                m = r["data"][r["posted"]:r["posted"] + (256 << 10)]
                try:
                    nic_post(self.eng, r["src"], r["f"], m)
                except WouldBlock:
                    break
                r["posted"] += len(m)
            b = nic_take_delivered(self.eng, r["dst"], r["sip"], r["f"])
            r["got"].update(b)
            r["n_got"] += len(b)

    def done(self):
        from taurus.datapath.devices.nic.setup import flow_done
        return all(r["posted"] == len(r["data"]) and flow_done(self.eng, r["f"])
                   and r["n_got"] == len(r["data"]) for r in self.rows)

    def result(self):
        same = [r["got"].digest() == hashlib.sha256(r["data"]).digest() for r in self.rows]
        sent = sum(len(r["data"]) for r in self.rows)
        # bytes of a stream not delivered, or all of it if what arrived differs
        lost = sum(len(r["data"]) - min(r["n_got"], len(r["data"])) if r["n_got"] < len(r["data"])
                   else (0 if ok else len(r["data"])) for r, ok in zip(self.rows, same))
        return dict(streams=len(self.rows), sha256_equal=sum(same), bytes=sent, bytes_lost=lost)


def _counts(eng, nics, di):
    from taurus.datapath.devices.impair import impair_counters
    from taurus.datapath.devices.nic.setup import nic_counters
    cs = [nic_counters(eng, d) for d in nics]
    keys = ("tx_retx", "rto_fire", "rto_unsent", "rto_held", "rto_fail", "retx_sack",
            "retx_nack", "rx_dup", "rx_ooo", "drop_csum", "drop_parse")
    out = {k: sum(c[k] for c in cs) for k in keys}
    out["impair"] = {k: v for k, v in impair_counters(eng, di).items() if v}
    return out


def run_case(name, eng, nics, hosts, di, step_ns, deadline_ns, n_flows, nbytes, seed, cwnd,
             pump_every=None):
    """One case on a built engine: flows, the impairment, run to the end."""
    from taurus.datapath.devices import impair
    regs = eng.E.devs.regs[di]
    tr = _Transfers(eng, hosts, n_flows, nbytes, seed, cwnd)
    p = CASES[name]
    for key, reg in (("loss", impair.LOSS), ("reorder", impair.REORDER), ("dup", impair.DUP),
                     ("corrupt", impair.CORRUPT)):
        regs[reg] = round(p.get(key, 0.0) * impair.P_ONE)
    regs[impair.K] = p.get("reorder_k", 3)
    regs[impair.DELAY] = p.get("reorder_delay_ns", 0)
    before = _counts(eng, nics, di)
    t0 = eng.now()
    if name.startswith("outage"):          # 100 us into the transfers, both ways down
        tr.pump()
        eng.run_for(100_000)
        regs[impair.LOSS] = impair.P_ONE
        while eng.now() - t0 < 100_000 + OUTAGE_NS:
            tr.pump()
            eng.run_for(min(step_ns, t0 + 100_000 + OUTAGE_NS - eng.now()))
        regs[impair.LOSS] = 0
    while not tr.done() and eng.now() - t0 < deadline_ns:
        tr.pump()
        eng.run_for(step_ns)
    tr.pump()
    for reg in (impair.LOSS, impair.REORDER, impair.DUP, impair.CORRUPT):
        regs[reg] = 0
    after = _counts(eng, nics, di)
    diff = {k: v - before[k] for k, v in after.items() if k != "impair"}
    diff["impair"] = {k: v - before["impair"].get(k, 0) for k, v in after["impair"].items()
                      if v - before["impair"].get(k, 0)}
    return dict(case=name, **tr.result(), **diff, done=tr.done(),
                engine_s=round((eng.now() - t0) / 1e9, 3))


def run_virtual(cases=tuple(CASES), n_flows=2, nbytes=1 << 20, seed=1, log=print):
    """Every case on its own engine (memory links, 10 Gbit/s, 2 us each way)."""
    from taurus.datapath.devices.impair import add_impair
    from taurus.datapath.devices.nic.setup import add_nic, nic_reserve
    from taurus.datapath.engine import Engine
    rows = []
    for k, name in enumerate(cases):
        eng = Engine(clock="virtual", n_frames=32768)
        with eng:
            nic_reserve(eng, max_flows=64)
            a, x = eng.add_mem_link("h1", "im0", delay_ns=2000, rate_bps=10 * G)
            y, b = eng.add_mem_link("im1", "h2", delay_ns=2000, rate_bps=10 * G)
            di = add_impair(eng, x, y, seed=seed + k)
            macs, ips = ("02:00:00:00:00:01", "02:00:00:00:00:02"), ("10.0.0.1", "10.0.0.2")
            d1 = add_nic(eng, a, macs[0], ips[0], line_rate_bps=10 * G)
            d2 = add_nic(eng, b, macs[1], ips[1], line_rate_bps=10 * G)
            r = run_case(name, eng, (d1, d2), ((d1, macs[0], ips[0]), (d2, macs[1], ips[1])),
                         di, step_ns=1_000_000, deadline_ns=30 * G, n_flows=n_flows,
                         nbytes=nbytes, seed=seed + k, cwnd=128 << 10)
        log(fmt(r))
        rows.append(r)
    return rows


def fmt(r):
    return (f"  {r['case']:<14} {r['streams']} streams, {r['bytes'] / 2**20:6.1f} MiB, "
            f"sha256 equal {r['sha256_equal']}/{r['streams']}, lost {r['bytes_lost']} B, "
            f"retx {r['tx_retx']} (rto {r['rto_fire']}, of them acknowledged before "
            f"resent {r['rto_unsent']}; sack {r['retx_sack']}, "
            f"nack {r['retx_nack']}), drop_csum {r['drop_csum']}, impair {r['impair']}, "
            f"{r['engine_s']} s engine time{'' if r['done'] else ', NOT DONE'}")


def run_xdp(cases=tuple(CASES), n_flows=2, nbytes=1 << 19, seed=1, log=print):
    """Every case over AF_XDP (root): h1 -- x -- h2 on veths, the impairment
    device on x's two ports, both NICs and x in one wall-clock engine; one
    topology for all cases (the impairment is reprogrammed between them)."""
    import os

    from taurus.datapath.devices.impair import add_impair
    from taurus.datapath.engine import Engine
    from taurus.tools import netns
    from taurus.tools.fabric import netns_nic_host
    from taurus.tools.topology import Topology
    t = Topology("faults", prefix=f"{netns.PREFIX}f{os.getpid()}-")
    t.add_host("h1")
    t.add_host("h2")
    t.add_switch("x")
    t.add_link("h1", "x", rate="1Gbit", delay="1us")
    t.add_link("x", "h2", rate="1Gbit", delay="1us")
    rows = []
    t.up()
    try:
        eng = Engine(clock="wall", max_flows=256, max_nics=2, n_frames=32768)
        with eng:
            xp = [eng.add_port(i.name, i.name, netns=t.ns_of("x"), kind="af_xdp")
                  for i in t.ifaces_of("x")]
            di = add_impair(eng, xp[0], xp[1], seed=seed)
            hosts = []
            for h in ("h1", "h2"):
                i = t.ifaces_of(h)[0]
                p = eng.add_port(i.name, i.name, netns=t.ns_of(h), kind="af_xdp")
                hosts.append((netns_nic_host(eng, t, h, p), t.mac_of(h), t.ip_of(h)))
            nics = tuple(h[0] for h in hosts)
            for k, name in enumerate(cases):
                r = run_case(name, eng, nics, hosts, di, step_ns=2_000_000,
                             deadline_ns=60 * G, n_flows=n_flows, nbytes=nbytes,
                             seed=seed + 100 + k, cwnd=64 << 10)
                r["case"] = name
                log(fmt(r))
                rows.append(r)
    finally:
        t.down()
    return rows
