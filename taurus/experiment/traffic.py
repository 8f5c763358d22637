"""Expand an experiment's [[traffic]] tables into a plan of flows.

The plan is fixed before the run from the seed alone, so a virtual-time run
is reproducible and every buffer can be sized up front.

- A *flow* is one sending connection (one PDC on its sender's NIC).
- bulk: one flow per sender, from start to stop (or a finite `size`);
- incast: one finite flow per sender and round;
- workload: one finite flow per Poisson arrival, size drawn from the CDF;
- rpc: per client and in-flight slot, a request flow (client -> server) and,
  with a response, a response flow back; the runner drives the closed loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from taurus.cc_algorithms.native import pipe_credit
from taurus.tools.workload import SizeCdf, poisson_arrivals

from .schema import Experiment, ExperimentError, Traffic

BULK_CHUNK = 64 * 1024      # an open-ended bulk flow is fed in messages of this size


@dataclass
class Flow:
    id: int                 # index in the plan
    group: str              # "traffic[i]"
    kind: str               # bulk | incast | workload | rpc-req | rpc-resp
    src: str
    dst: str
    start: int              # ns
    stop: int               # ns: no new data after this
    size: int | None        # bytes of a finite flow; None: as much as fits until stop
    cc: dict = field(default_factory=dict)
    rpc: int = -1           # index into Plan.rpcs
    budget: int = 0         # bytes this flow may send in its life (buffer size)


@dataclass
class Rpc:
    group: str
    client: str
    server: str
    count: int              # requests this slot issues
    request: int
    response: int
    start: int
    stop: int
    req_flow: int = -1
    resp_flow: int = -1


@dataclass
class Plan:
    flows: list[Flow]
    rpcs: list[Rpc]


def link_rate(x: Experiment, host: str) -> int:
    lk = x.topo.ifaces_of(host)[0].link
    return lk.rate or 10**10


def receiver_init_credit(x: Experiment, host: str) -> int:
    """The credit a new sender to `host` starts with (RCCC's pipe-cleaning
    burst): [cc] receiver_init_credit, or by default one BDP of the host's
    link with an RTT of 4 times its delay (two alike links each way), at
    least 2 MSS."""
    cc = x.host_cc(host)
    if cc.receiver_init_credit:
        return cc.receiver_init_credit
    return pipe_credit(link_rate(x, host), x.topo.ifaces_of(host)[0].link.delay or 0, cc.mss)


def send_budget(x: Experiment, f: Flow) -> int:
    """Bytes a flow may ever send: its send stream and receive region are
    linear buffers for now, sized to the run here (and only here)."""
    if f.size is not None:
        return f.size
    secs = (f.stop - f.start) / 1e9
    return int(link_rate(x, f.src) * secs / 8) + 4 * BULK_CHUNK


def build_plan(x: Experiment) -> Plan:
    rng = np.random.default_rng(x.seed)
    flows: list[Flow] = []
    rpcs: list[Rpc] = []

    def add(tr: Traffic, kind, src, dst, start, stop, size, rpc=-1):
        f = Flow(len(flows), tr.key, kind, src, dst, int(start), int(stop), size, tr.cc, rpc)
        flows.append(f)
        return f

    for tr in x.traffic:
        stop = x.duration if tr.stop is None else min(tr.stop, x.duration)
        if tr.kind == "bulk":
            for s in tr.src:
                add(tr, "bulk", s, tr.dst[0], tr.start, stop, tr.size)
        elif tr.kind == "incast":
            for k in range(tr.rounds):
                t0 = tr.start + k * tr.interval
                if t0 >= x.duration:
                    break
                for s in tr.src:
                    add(tr, "incast", s, tr.dst[0], t0, x.duration, tr.size)
        elif tr.kind == "workload":
            cdf = SizeCdf.load(tr.cdf)
            mean = cdf.mean() * tr.scale
            for s in tr.src:
                ts = poisson_arrivals(rng, tr.load, link_rate(x, s), mean, (stop - tr.start) / 1e9)
                sizes = np.maximum(1, (cdf.sample(rng, len(ts)) * tr.scale).astype(np.int64))
                dsts = [d for d in tr.dst if d != s]
                pick = rng.integers(0, len(dsts), len(ts))
                for t, n, p in zip(ts, sizes, pick):
                    add(tr, "workload", s, dsts[p], tr.start + int(t * 1e9), x.duration, int(n))
            n = sum(1 for f in flows if f.group == tr.key)
            if n > tr.max_flows:
                raise ExperimentError(x.source, f"{tr.key}.max_flows", f"the plan has {n} flows, "
                                      f"more than max_flows = {tr.max_flows} (lower load or "
                                      f"the duration, or raise max_flows)")
        else:
            for c in tr.src:
                per = [tr.count // tr.concurrency + (k < tr.count % tr.concurrency)
                       for k in range(tr.concurrency)]
                for n in per:
                    if not n:
                        continue
                    r = Rpc(tr.key, c, tr.dst[0], n, tr.request, tr.response, tr.start, stop)
                    r.req_flow = add(tr, "rpc-req", c, r.server, tr.start, stop,
                                     n * tr.request, len(rpcs)).id
                    if tr.response:
                        r.resp_flow = add(tr, "rpc-resp", r.server, c, tr.start, stop,
                                          n * tr.response, len(rpcs)).id
                    rpcs.append(r)
    for f in flows:
        f.budget = send_budget(x, f)
    return Plan(flows, rpcs)
