"""Expand an experiment's [[traffic]] tables into a plan of flows.

The plan is fixed before the run from the seed alone, so a virtual-time run
is reproducible.  Its memory does not grow with the run's duration: bulk,
incast and workload flows are streams the NIC generates as ACKs free room
(datapath/devices/nic/gen.py), all sharing one send ring of SEND_RING
bytes, and every receiver is a sink; only RPC messages (which the runner
posts, request by request) have rings of their own.

- A *flow* is one sending connection (one PDC on its sender's NIC).
- bulk: `parallel` flows per sender (default 1), from start to stop (or a
  finite `size`);
- incast: one finite flow per sender and round;
- workload: one finite flow per Poisson arrival, size drawn from the CDF;
- rpc: per client and in-flight slot, a request flow (client -> server) and,
  with a response, a response flow back; the runner drives the closed loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from taurus.cc_algorithms.native import pipe_credit
from taurus.datapath.devices.nic.setup import MAX_PDC_ROWS
from taurus.datapath.devices.nic.state import GEN_CHUNK
from taurus.tools.workload import SizeCdf, poisson_arrivals

from .schema import Experiment, ExperimentError, Traffic

MAX_PLAN_FLOWS = MAX_PDC_ROWS - 2
"""Flows a plan may have: the runner gives each its own flow row (row 0 and
one spare are not flows)."""

SEND_RING = 5 * GEN_CHUNK
"""A generated flow's send buffer: it keeps 4 messages of GEN_CHUNK posted
beyond what is acknowledged (and room for the next), as a socket's send
buffer bounds what an app has in flight."""


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
    ring: int = 0           # bytes of its own send ring (0: the shared one of generated flows)

    @property
    def generated(self) -> bool:
        """The NIC makes its bytes (every flow but an RPC's messages)."""
        return self.rpc < 0


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
                for _ in range(tr.parallel):
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
    if len(flows) > MAX_PLAN_FLOWS:
        raise ExperimentError(x.source, "traffic", f"the plan has {len(flows)} flows, more than "
                              f"a run holds ({MAX_PLAN_FLOWS}: each is a PDC, whose id is 16 "
                              f"bits on the wire); lower parallel, load or the duration")
    for f in flows:     # an RPC's messages are posted one at a time: a ring holds one
        if not f.generated:
            f.ring = rpcs[f.rpc].request if f.kind == "rpc-req" else rpcs[f.rpc].response
    return Plan(flows, rpcs)
