"""Run an experiment: build, drive the traffic, sample, collect, tear down.

One engine carries the whole topology: in virtual time on memory links
(fabric.build_virtual, one process, deterministic), or on the wall clock
over the topology's namespaces (switch ports via fabric.attach_switches,
each host NIC on an engine port opened in its host's namespace).  Python
acts only at multiples of `step` ns, and (experiment.stepping = "event",
the default) only at those where something is due: a flow starts or stops,
an agent has a batch to drain (at the step after the report engine's
publish: the engine's loop steps the agents itself, agent/inloop.py, or
returns at the publish, Engine.run_until wake_on_publish), a host
sampler's period ends.  Skipped points are ones where Python would have
done nothing, so the run is the one fixed stepping (stepping = "fixed",
Python at every point) gives; a plan with RPCs (whose closed loop reacts
to completions) steps at every point.

The NIC makes the traffic: bulk, incast and workload flows are streams it
generates (nic_generate) and every receiver is a sink (nic_sink), so the
run's memory does not grow with its duration or its rates (traffic.py).

In virtual time a host whose switch port sends PFC sits behind a MAC that
honours PAUSE (fabric.nic_host pfc: a shim switch device, which queues what
the NIC sends while paused).

Agents run in-process, one per sending host NIC, stepped at those points.  That is the TAURUS picture with the PCIe queue
replaced by the slice: a decision lands within one step.  On the wall
clock make_runner picks wallproc.WallRunner instead (docs/DESIGN.md's
process model: the engine's own process and core, agents in theirs),
unless the plan has RPCs, whose closed loop needs Python at every step.

Teardown always runs (finally): agents, host loads, engine (its shared
memory), namespaces.  SIGINT/SIGTERM end the run early; the results written
so far are marked incomplete.
"""
from __future__ import annotations

import heapq
import logging
import os
import signal
import sys
import threading
import time

import numpy as np

from taurus.cc_algorithms.algorithm import FlowContext
from taurus.cc_algorithms.native import NativeTable
from taurus.cc_algorithms.params import ConfigError
from taurus.cc_algorithms.registry import lookup, make_params
from taurus.datapath.ccnative import no_native
from taurus.datapath.ccshm import CTL_NATIVE_FAULTS, CcShm
from taurus.datapath.devices.nic import setup as NS
from taurus.datapath.devices.nic.state import (DR_SLOT, CQ_RX, CQ_TX, CX_RATE, FL_ACKED_OFF,
                                              FL_SRTT, SG_ECN, SG_UE)
from taurus.datapath.devices.switch.setup import switch_stats
from taurus.datapath.engine import Engine
from taurus.tools.fabric import (attach_switches, build_virtual, engine_limits, nic_host,
                                 real_port_opts)
from taurus.tools.pcap import Capture

from . import algcheck, fidelity, frames
from .faults import AlgorithmFault, agent_faults, first_fault
from .hog import HostLoads
from .schema import CcSpec, Experiment, ExperimentError
from .traffic import SEND_RING, Plan, build_plan, link_rate, receiver_init_credit

log = logging.getLogger("taurus.run")
WALL_MIN_STEP = 500_000         # ns: Python between slices stalls the datapath on the wall clock
WALL_RTO_STEPS = 8              # wall clock: minimum RTO in steps
MAX_BUFFERS = 8 << 30           # bytes of RPC send rings a plan may ask for
SINK_WINDOW = 1 << 30           # the receive window a sink shows its senders (never binds)


class Stopped(BaseException):
    """SIGINT or SIGTERM arrived during the run.  A BaseException, as
    KeyboardInterrupt is: code that recovers from errors with ``except
    Exception`` (Numba's compiler, which the first run calls mid-build, among
    them) must not swallow a stop."""


class Runner:
    def __init__(self, x: Experiment, clock: str = "virtual", progress: bool = False,
                 port_kind: str = "auto"):
        self.x, self.clock, self.port_kind = x, clock, port_kind
        self.plan: Plan = build_plan(x)
        self.step = x.step if clock == "virtual" else max(x.step, WALL_MIN_STEP)
        self.sample_every = max(1, x.sample // self.step)
        self.progress = progress
        self.eng = None
        self.agents: dict = {}                      # host -> in-process Agent
        self.in_loop: list = []                     # their steps in the engine's loop
        self.native: NativeTable | None = None
        self.receivers: dict = {}       # host -> (receiver algorithm id, params)
        self.native_flows: dict[int, tuple] = {}    # plan index -> (algorithm id, Params)
        self.alg_name: dict[int, str] = {}          # plan index -> its algorithm's name
        self.faults: dict[str, int] = {}            # host -> handler faults (raised) so far
        self.nics: dict[str, int] = {}
        self.sw_ports: dict[str, int] = {}
        self.port_list: list[tuple[str, int]] = []     # switch ports, sampled in this order
        self.flow_of: dict[int, int] = {}
        self.rpc_state: list[dict] = []
        self.topo_up = False
        self.loads = HostLoads(x, clock)
        self.t0 = 0
        self.now = 0
        self.complete = False
        self.error = ""
        self.stop_requested = ""        # SIGINT/SIGTERM seen (its name)
        self.agent_cpu_s = 0.0
        self.engine_s = 0.0             # wall seconds inside run_until (the rest is Python)
        self.loop_s = 0.0
        self.steps = 0                  # times Python acted between engine slices
        self.stats_cache: dict = {}
        self.probe: fidelity.Probe | None = None    # engine timing over the run (wall clock)
        n = len(self.plan.flows)
        self.fid = np.zeros(n, np.int64)            # plan index -> NIC flow id
        self.posted_at = np.full(n, -1, np.int64)   # ns the flow's data was first posted
        self.done_at = np.full(n, -1, np.int64)     # ns its last byte was acked (finite flows)
        self.samples_t: list[int] = []
        self.samples_acked: list[np.ndarray] = []
        self.samples_cwnd: list[np.ndarray] = []
        self.samples_queue: list[np.ndarray] = []
        self.rpc_lat: list[tuple[int, int, int]] = []   # (rpc index, size, latency ns)

    # ------------------------------------------------------------ sizing
    def _tx_bytes(self) -> int:
        """The send arena: the ring generated flows share, and each RPC
        flow's own (one message)."""
        tx = SEND_RING + sum(f.ring for f in self.plan.flows) + (1 << 20)
        if tx > MAX_BUFFERS:
            raise ValueError(f"the plan's RPC messages need {tx / 2**30:.1f} GiB of send rings "
                             f"(> {MAX_BUFFERS >> 30} GiB): fewer or smaller requests")
        return tx

    # ------------------------------------------------------------ build
    def _cc_key(self, f, what: str) -> str:
        """Where flow f's cc value `what` comes from in the file (for errors)."""
        if what in f.cc:
            return f"{f.group}.cc.{what}"
        return f"cc.hosts.{f.src}.{what}" if f.src in self.x.cc_hosts else f"cc.{what}"

    def _native_table(self, max_flows: int) -> NativeTable | None:
        """The native algorithms of the plan's native flows, each added once,
        and each flow's parameters, checked (errors name the key)."""
        tab = None
        for k, f in enumerate(self.plan.flows):
            cc = self._flow_cc(f)
            if cc.mode in ("agent", "per-event"):
                self.alg_name[k] = lookup(cc.algorithm).name      # checked before the run
            if cc.mode != "native":
                continue
            try:
                cls = lookup(cc.algorithm, role="sender")
            except ConfigError as e:
                raise ExperimentError(self.x.source, self._cc_key(f, "algorithm"),
                                      e.message) from None
            try:
                params = make_params(cls, cc.params, self._cc_key(f, "params"))
            except ConfigError as e:
                raise ExperimentError(self.x.source, e.key, e.message) from None
            tab = tab or NativeTable(max_flows)
            self.native_flows[k] = (tab.add(cls), params)
            self.alg_name[k] = cls.name
        for h in sorted({f.dst for f in self.plan.flows}):
            cc = self.x.host_cc(h)
            if not cc.receiver:
                continue
            where = f"cc.hosts.{h}" if h in self.x.cc_hosts else "cc"
            try:
                cls = lookup(cc.receiver, role="receiver")
                params = make_params(cls, cc.receiver_params, f"{where}.receiver_params")
            except ConfigError as e:
                raise ExperimentError(self.x.source, e.key or f"{where}.receiver",
                                      e.message) from None
            tab = tab or NativeTable(max_flows)
            self.receivers[h] = (tab.add(cls), params)
        return tab

    def build(self) -> None:
        x, topo = self.x, self.x.topo
        tx = self._tx_bytes()
        nflows = len(self.plan.flows)
        # a host whose switch port sends PFC gets a MAC that honours it (a
        # shim switch device and a memory link each), or the class is not lossless
        pfc = {h for h in topo.hosts if self.clock == "virtual" and pfc_facing(topo, h)}
        self.native = self._native_table(nflows + 2)
        # real ports lend pool frames to the kernel: a pool sized by their
        # number; a PFC shim is a device and two ports more; 2 spare ports
        lim = engine_limits(topo, real=self.clock == "wall", extra_ports=2 + 2 * len(pfc),
                            extra_devices=len(pfc))
        if x.frames:
            lim["n_frames"] = max(lim["n_frames"], x.frames)
        self.eng = eng = Engine(clock=self.clock, max_flows=nflows + 2, **lim,
                                buf_size=frames.pool_buffer(x, self.clock),
                                timers=max(1 << 16, 4 * nflows + 1024),
                                native=self._native_for(len(topo.hosts)))
        eng.reserve_nics(max_flows=nflows + 1, tx_bytes=tx, rx_bytes=1 << 16, cq=1 << 16)

        def host(eng, topo, h, port):
            return nic_host(eng, topo, h, port, mss=x.host_cc(h).mss, pfc=h in pfc,
                            **self._ack_opts(h))
        if self.clock == "virtual":
            fab = build_virtual(eng, topo, host_factory=host)
            self.nics = fab["hosts"]
            self.sw_ports = {name: p for name, p in fab["ports"].items()
                             if not topo.node(name.rsplit("-eth", 1)[0]).is_host}
        else:
            topo.up(owner=True)
            self.topo_up = True
            placed = attach_switches(eng, topo, port_kind=self.port_kind)
            self.sw_ports = {eng.port_name(p): p for ps in placed.values() for p in ps}
            self.nics = {}
            for h in topo.hosts:
                i = topo.ifaces_of(h)[0]
                p = eng.add_port(i.name, i.name, netns=topo.ns_of(h), kind=self.port_kind,
                                 **real_port_opts(topo))
                rto_min, rto_init = self._wall_rto()
                self.nics[h] = eng.add_nic(p, topo.mac_of(h), topo.ip_of(h),
                                           line_rate_bps=link_rate(x, h), mss=x.host_cc(h).mss,
                                           rto_min_ns=rto_min, rto_init_ns=rto_init,
                                           **self._ack_opts(h))
        for d in self.nics.values():     # the runner never reads what hosts receive
            NS.nic_sink(eng, d, SINK_WINDOW)
        for h, m in x.host_model.items():
            NS.nic_host_model(eng, self.nics[h], m.host_bw, m.buffer, m.sample)
        self._start_agents()
        init = {}
        for h, (alg, params) in self.receivers.items():
            init[h] = receiver_init_credit(x, h)
            self.native.start_receiver(eng, self.nics[h], alg, params,
                                       FlowContext(mss=x.host_cc(h).mss, line_rate=link_rate(x, h)),
                                       idle_ns=x.host_cc(h).receiver_idle, init_credit=init[h])
        for k, f in enumerate(self.plan.flows):
            cc = self._flow_cc(f)
            fid = NS.add_flow(eng, self.nics[f.src], topo.mac_of(f.dst), topo.ip_of(f.dst),
                              rate_bps=cc.rate, cwnd_bytes=cc.cwnd,
                              buf_bytes=f.ring or SEND_RING, shared_ring=f.generated,
                              credit=f.dst in self.receivers, init_credit=init.get(f.dst),
                              rwnd_bytes=SINK_WINDOW)
            assert fid == k + 1, "flow ids follow the plan (agent overrides rely on it)"
            if cc.mode == "native":
                alg, params = self.native_flows[k]
                self.native.start(eng, fid, alg, params,
                                  FlowContext(mss=x.host_cc(f.src).mss,
                                              line_rate=link_rate(x, f.src),
                                              init_cwnd=float(cc.cwnd), init_rate=float(cc.rate)))
            else:
                NS.set_flow_mode(eng, fid, cc.mode)
            self.fid[k] = fid
        self.flow_of = {int(fid): k for k, fid in enumerate(self.fid)}
        self.port_list = sorted(self.sw_ports.items(), key=lambda kv: kv[1])

    def _ack_opts(self, h: str) -> dict:
        """Host h's NIC ACK settings the file sets ([cc] ack_every, ack_delay)."""
        cc = self.x.host_cc(h)
        return {k: v for k, v in (("ack_every", cc.ack_every), ("ack_delay_ns", cc.ack_delay))
                if v is not None}

    def _wall_rto(self) -> tuple[int, int]:
        """(RTO floor, first RTO) ns of the wall clock's NICs.  The engine
        pauses while Python acts between slices: an RTO shorter than a few
        steps would fire on ACKs waiting in the ring."""
        return WALL_RTO_STEPS * self.step, 2 * WALL_RTO_STEPS * self.step

    def _native_for(self, nics: int):
        """The engine's native algorithms with a receiver-algorithm row for
        each of `nics` NICs: the datapath reads one on every packet a NIC
        receives, and its default table has ccnative.MAX_NICS (256) rows,
        too few for a larger topology (a NIC past them reads beyond)."""
        base = self.native.native if self.native else no_native()
        if len(base.nic_alg) >= nics:
            return base if self.native else None
        wide = base._replace(nic_alg=np.full(nics, -1, np.int64))
        if self.native:
            self.native._native = wide      # start_receiver writes the engine's array
        return wide

    def _flow_cc(self, f) -> CcSpec:
        base = self.x.host_cc(f.src)
        o = f.cc
        return CcSpec(o.get("algorithm", base.algorithm), o.get("mode", base.mode),
                      o.get("params", base.params), base.mss,
                      _size_or(o.get("cwnd"), base.cwnd), _rate_or(o.get("rate"), base.rate))

    def _agent_configs(self) -> dict:
        """host -> (its agent's configuration table, its NIC slot), for each
        host with agent or per-event flows; flows whose algorithm differs
        from their host's get an [[override]]."""
        by_host: dict[str, list] = {}
        for k, f in enumerate(self.plan.flows):
            cc = self._flow_cc(f)
            if cc.mode in ("agent", "per-event"):
                by_host.setdefault(f.src, []).append((k + 1, cc))
        out = {}
        for h, flows in by_host.items():
            base = self.x.host_cc(h)
            start = (int(base.cwnd), int(base.rate))
            over = [{"flows": [fid], "algorithm": cc.algorithm, "params": cc.params,
                     "init_cwnd_bytes": int(cc.cwnd), "init_rate_bps": int(cc.rate)}
                    for fid, cc in flows
                    if (cc.algorithm, cc.params, int(cc.cwnd), int(cc.rate))
                    != (base.algorithm, base.params, *start)]
            out[h] = ({"agent": {"algorithm": base.algorithm, "params": base.params,
                                 "mss": base.mss, "line_rate_bps": link_rate(self.x, h),
                                 "jit": base.jit, "init_cwnd_bytes": start[0],
                                 "init_rate_bps": start[1]},
                       "override": over},
                      int(self.eng.E.devs.regs[self.nics[h], DR_SLOT]))
        return out

    def _start_agents(self) -> None:
        """One in-process agent per host with agent or per-event flows.  (The
        agent is imported here: a run without agent flows does not need it.)"""
        cfgs = self._agent_configs()
        if not cfgs:
            return
        from taurus.agent.agent import Agent
        from taurus.agent.config import parse as agent_config
        for h, (table, slot) in cfgs.items():
            cfg = agent_config(table)
            a = Agent(self.eng.name + "-cc", cfg, cc=CcShm.attach(self.eng.name + "-cc", nic=slot),
                      stats_dir=None, slot=slot)
            self.agents[h] = a
            loads = [ld for ld in self.x.host_load if ld.host == h and ld.share]
            if self.clock == "virtual" and loads:     # host actions act on the model's hog
                from .hog import ModelHostActions
                a.host = a.handler.host = ModelHostActions(self, h, loads[0])
            a.start()

    # ------------------------------------------------------------ run
    def run(self) -> None:
        """Step the engine from Python point to point until the run's end:
        flows begin and stop, the engine runs to the next point anything is
        due, then completions, agents, loads and samples are taken."""
        x, eng = self.x, self.eng
        self._start()
        wall0 = time.monotonic()
        last_bar = 0.0
        while self.now < x.duration:
            if self.stop_requested:
                raise Stopped(self.stop_requested)
            self._flows_due()
            w0 = time.perf_counter()
            r = eng.run_until(self.t0 + self._until(), stop_idle=False, wake_on_publish=self.wake)
            if r == "woken":
                # an agent has a batch: it drains at the next point, as at every point,
                # or when the separation model lands its decision
                woke = eng.now() - self.t0
                at = (eng.agents_due_at() - self.t0 if self.separation
                      else (woke // self.step + 1) * self.step)
                r = eng.run_until(self.t0 + min(x.duration, at), stop_idle=False)
            self.engine_s += time.perf_counter() - w0
            self.now = eng.now() - self.t0
            self.steps += 1
            self._completions()
            self._step_agents(r)
            self._check_faults()
            self.loads.poll(self.now)
            self._samples()
            if self.live_samples and self.now >= self.next_sample:
                self._on_sample()
                self.next_sample = (self.now // self.period + 1) * self.period
            if self.progress and time.monotonic() - last_bar > 0.2:
                last_bar = time.monotonic()
                self._bar(time.monotonic() - wall0)
        self.loop_s = time.monotonic() - wall0
        if self.progress:
            self._bar(self.loop_s)
            sys.stderr.write("\n")
        self.complete = True

    def _check_faults(self) -> None:
        """Count the handlers that raised, per host; the first on a host whose
        ``cc.on_fault`` is "fail" (the default) fails the run."""
        for h, a in self.agents.items():
            n = agent_faults(a.handler)
            if n != self.faults.get(h, 0):
                self.faults[h] = n
                if self.x.host_cc(h).on_fault == "fail":
                    raise AlgorithmFault(*first_fault(a.handler, h))
        if self.native is not None:
            for h in {f.src for k, f in enumerate(self.plan.flows) if k in self.native_flows}:
                n = int(self.eng.E.rep.ctls[self._slot(h), CTL_NATIVE_FAULTS])
                if n != self.faults.get(f"{h} native", 0):
                    self.faults[f"{h} native"] = n
                    if self.x.host_cc(h).on_fault == "fail":
                        names = sorted({self.alg_name[k] for k, f in enumerate(self.plan.flows)
                                        if k in self.native_flows and f.src == h})
                        raise AlgorithmFault(
                            f"algorithm {', '.join(names)} on {h} (native): a handler raised; "
                            f"compiled code keeps no exception: run it with cc.mode = \"agent\" "
                            f"and cc.jit = false to see it, or set cc.on_fault = \"fallback\"")

    def _start(self) -> None:
        """The run's state at t0: flows by start, hogs, agents, the sampler."""
        x, eng = self.x, self.eng
        flows = self.plan.flows
        self.order = sorted(range(len(flows)), key=lambda k: flows[k].start)
        self.nxt = 0                                 # next flow (by start) not yet begun
        self.stops: list[tuple[int, int]] = []       # (stop, k) of open-ended flows running
        self.rpc_state = [dict(left=r.count, issued=-1, resolved=-1) for r in self.plan.rpcs]
        self.not_rpc: set = set()
        self.t0 = eng.now()
        self.loads.start(self.t0)
        for h in x.host_load:           # hogs in the host model: a share of its bandwidth
            if h.share:
                NS.nic_hog(eng, self.nics[h.host], h.share, self.t0 + h.start,
                           self.t0 + (x.duration if h.stop is None else h.stop))
        self.every = x.stepping == "fixed" or bool(self.plan.rpcs)
        self._separate()
        self._loop_agents(not self.every)
        self.wake = bool(self.agents) and not self.every and not self.in_loop
        # the engine samples the series itself (datapath/sampler.py)
        self.period = self.sample_every * self.step
        eng.start_sampler(self.fid, [p for _, p in self.port_list], self.period, self.t0)
        self.next_sample = self.period               # for live_samples only
        self.agent_due = 0                           # a drain was capped: step again next point
        self.probe = fidelity.Probe(eng)

    def _separate(self) -> None:
        """The NIC-host separation model ([cc] separation): the agents step
        when it lands their decisions, on the virtual clock's event stepping."""
        sep = self.separation = self.x.cc.separation if self.agents else None
        if sep is None:
            return
        if self.clock != "virtual" or self.every:
            raise RuntimeError("[cc] separation models the NIC-host link on the virtual clock "
                               "with event stepping (no fixed stepping, no rpc traffic); on "
                               "the wall clock the separation is real")
        self.eng.separate_agents(sep.latency, sep.per_message_ps)

    def _flows_due(self) -> None:
        """Begin the flows whose start has come; stop the open-ended ones
        whose stop has."""
        flows = self.plan.flows
        while self.nxt < len(self.order) and flows[self.order[self.nxt]].start <= self.now:
            k = self.order[self.nxt]
            self.nxt += 1
            self._begin(k)
            if flows[k].size is None:
                heapq.heappush(self.stops, (flows[k].stop, k))
        while self.stops and self.stops[0][0] <= self.now:
            NS.nic_generate_stop(self.eng, int(self.fid[heapq.heappop(self.stops)[1]]))

    def _until(self) -> int:
        """Where the engine runs to: the next point (every point when
        stepping is fixed), else the first point at or after the next
        thing due (a flow, a stop, a sample, a capped drain, the end)."""
        x, step, flows = self.x, self.step, self.plan.flows
        point = (self.now // step + 1) * step   # the next point Python may act at
        if self.every:
            return min(x.duration, point)
        due = [x.duration] + ([self.next_sample] if self.live_samples else [])
        if self.nxt < len(self.order):
            due.append(flows[self.order[self.nxt]].start)
        if self.stops:
            due.append(self.stops[0][0])
        if self.agent_due:
            due.append(self.agent_due)
        due += [t - self.t0 for t in self._sampler_due()]
        return min(x.duration, max(point, -(-min(due) // step) * step))

    def _step_agents(self, r: str) -> None:
        """The agents after a run: in-loop ones finished (the one a run ended
        at first), the rest stepped here; their CPU time counted apart."""
        self.agent_due = 0
        if not self.agents:
            return
        eng, step = self.eng, self.step
        c0 = time.thread_time()     # agents run in this thread (process_time:
        #                             ~1 ms a call in a process with many threads)
        if self.in_loop:
            # the loop's steps ran inside the engine's time; the ones
            # here count in c0's, and sync folds the counts of both
            s = sum(il.step_seconds() for il in self.in_loop)
            self.agent_cpu_s += s
            self.engine_s -= s
            self._step_in_loop(eng.agent_at() if r == "agent" else -1, eng.now())
            for il in self.in_loop:
                il.sync()
            more = any(a.messages.more for a in self.agents.values())
            eng.agents_due(eng.now() + step if more else 0)
        else:
            for a in self.agents.values():
                a.step(eng.now())
            if any(a.messages.more for a in self.agents.values()):
                self.agent_due = self.now + step
        self.agent_cpu_s += time.thread_time() - c0

    def _step_in_loop(self, at: int, now: int) -> None:
        """Step the in-loop agents at `now`, as Python's stepping would, with
        their compiled steps (the loop's).  After a run that ended "agent",
        the loop stepped those before `at` already and `at` needs finishing."""
        j = 0
        if at >= 0:
            for il in self.in_loop[:at]:
                il.stepped()
            self.in_loop[at].finish(now)
            j = at + 1
        while j < len(self.in_loop):
            k = self.eng.step_agents(j, now)
            for il in self.in_loop[j:len(self.in_loop) if k < 0 else k]:
                il.stepped()
            if k < 0:
                break
            self.in_loop[k].finish(now)
            j = k + 1

    agents_in_loop = True
    """Whether the engine's loop may step the agents itself (agent/inloop.py):
    the same steps at the same times as Python's stepping, without a return
    to Python per publish.  False: Python steps them (for comparison)."""

    def _loop_agents(self, event_stepping: bool) -> None:
        """Hand the agents' steps to the engine's loop when every agent can
        be stepped there (compiled, no host samplers) and the run steps by
        events on the virtual clock."""
        if not (self.agents and self.agents_in_loop and event_stepping
                and self.clock == "virtual"):
            return
        from taurus.agent.inloop import InLoop
        if not all(InLoop.qualifies(a) for a in self.agents.values()):
            return
        if len(self.agents) > self.eng.E.vag.shape[0]:      # more than the loop's rows:
            return                                          # Python steps them
        self.in_loop = [InLoop(a) for a in self.agents.values()]
        self.eng.step_agents_in_loop([(il.entry, il.args) for il in self.in_loop], self.step)
        self.eng.step_agents(len(self.in_loop), 0)     # steps none: loads its code before the run

    def _sampler_due(self) -> list[int]:
        """When the agents' host samplers are next due (engine ns)."""
        return [t for a in self.agents.values() if a.samplers.items
                for t in (a.samplers.next_due(),) if t is not None]

    def _begin(self, k) -> None:
        f = self.plan.flows[k]
        if f.kind == "rpc-req":
            self._rpc_issue(f.rpc)
            return
        if f.kind == "rpc-resp":
            return
        self.posted_at[k] = self.now
        NS.nic_generate(self.eng, int(self.fid[k]), f.size)

    def _rpc_issue(self, i) -> None:
        r, st = self.plan.rpcs[i], self.rpc_state[i]
        if st["left"] <= 0 or self.now >= r.stop:
            return
        st["left"] -= 1
        st["issued"] = self.now
        k = r.req_flow
        if self.posted_at[k] < 0:
            self.posted_at[k] = self.now
        NS.nic_post(self.eng, self.nics[r.client], int(self.fid[k]), bytes(r.request))

    def _completions(self) -> None:
        for kind, n, ident, _msg, _end, t in NS.nic_completions(self.eng):
            t -= self.t0
            if kind == CQ_TX:
                k = self.flow_of.get(ident)
                if k is None:
                    continue
                f = self.plan.flows[k]
                if f.kind == "rpc-req" and not self.plan.rpcs[f.rpc].response:
                    self._rpc_done(f.rpc, t)
                elif f.kind == "rpc-resp":
                    self._rpc_done(f.rpc, t)
                elif f.size is not None:
                    self.done_at[k] = t
            elif kind == CQ_RX and (n, ident) not in self.not_rpc:
                i = self._rpc_of_rx(n, ident)
                if i is None:
                    self.not_rpc.add((n, ident))
                    continue
                r = self.plan.rpcs[i]
                k = r.resp_flow
                if self.posted_at[k] < 0:
                    self.posted_at[k] = t
                NS.nic_post(self.eng, self.nics[r.server], int(self.fid[k]), bytes(r.response))

    def _rpc_of_rx(self, n, r):
        """The RPC slot whose requests arrive on receive PDC r of NIC slot n."""
        for i, st in enumerate(self.rpc_state):
            if st["resolved"] == r and self._slot(self.plan.rpcs[i].server) == n:
                return i
        for i, st in enumerate(self.rpc_state):
            rp = self.plan.rpcs[i]
            if rp.response and st["resolved"] < 0 and self._slot(rp.server) == n:
                got = NS.rx_pdc(self.eng, self.nics[rp.server], self.x.topo.ip_of(rp.client),
                                 int(self.fid[rp.req_flow]))
                if got:
                    st["resolved"] = got
                    if got == r:
                        return i
        return None

    def _slot(self, h) -> int:
        return int(self.eng.E.devs.regs[self.nics[h], DR_SLOT])

    def _rpc_done(self, i, t) -> None:
        r, st = self.plan.rpcs[i], self.rpc_state[i]
        self.rpc_lat.append((i, r.request + r.response, t - st["issued"]))
        self.done_at[r.req_flow] = t
        if r.resp_flow >= 0:
            self.done_at[r.resp_flow] = t
        self._rpc_issue(i)

    live_samples = False
    """True: the run stops at every sample time and calls _on_sample there,
    for subclasses that read more of the live state than the sampler does."""

    def _on_sample(self) -> None:
        """At each sample time when live_samples (after that sample's row)."""

    def _samples(self) -> None:
        """Take in the rows the engine's sampler wrote since the last call."""
        rows = self.eng.drain_samples()
        F = len(self.fid)
        for row in rows:
            self.samples_t.append(int(row[0]) - self.t0)
            self.samples_acked.append(row[1:1 + F])
            self.samples_cwnd.append(row[1 + F:1 + 2 * F])
            self.samples_queue.append(row[1 + 2 * F:])

    def _bar(self, wall_s: float) -> None:
        x = self.x
        frac = min(1.0, self.now / x.duration)
        rate = 0.0
        if len(self.samples_t) >= 2:
            dt = (self.samples_t[-1] - self.samples_t[-2]) / 1e9
            rate = float((self.samples_acked[-1] - self.samples_acked[-2]).sum()) * 8 / dt / 1e9
        bar = "#" * int(30 * frac)
        sys.stderr.write(f"\r{x.name} [{bar:<30}] {self.now / 1e6:8.2f}/{x.duration / 1e6:.2f} ms "
                         f"(wall {wall_s:5.1f}s)  {rate:6.2f} Gbit/s   ")
        sys.stderr.flush()

    # ------------------------------------------------------------ collect + teardown
    def snapshot(self) -> dict:
        """Counters read from the live engine (before teardown)."""
        eng = self.eng
        out = {"ports": {}, "nics": {}, "agents": {}}
        if eng is None:
            return out
        out["ports"] = switch_stats(eng, [p for _, p in self.port_list]) if self.port_list else {}
        out["nics"] = {h: NS.nic_counters(eng, d) for h, d in self.nics.items()}
        for h, a in self.agents.items():
            st = a.stats()
            out["agents"][h] = {"messages": st["messages"], "handler": st["handler"],
                                "host_actions": st["host_actions"]}
        N = eng.E.nic
        out["acked"] = N.fl[self.fid, FL_ACKED_OFF].copy()
        out["rate"] = N.ctx[self.fid, CX_RATE].copy()
        out["srtt"] = N.fl[self.fid, FL_SRTT].copy()
        out["events"] = eng.E.rep.delivered[self.fid].copy()
        out["ce_acks"] = N.sig[self.fid, SG_ECN].copy()
        out["ue_acks"] = N.sig[self.fid, SG_UE].copy()
        out["timing"] = self.probe.read(eng) if self.probe else None
        return out

    def teardown(self) -> list[str]:
        errors = []
        if self.in_loop:
            try:
                self.eng.step_agents_in_loop([], 0)
                for il in self.in_loop:
                    il.close()
            except Exception as e:
                errors.append(f"in-loop agents: {e}")
            self.in_loop = []
        for h, a in self.agents.items():
            try:
                a.teardown()
            except Exception as e:          # keep tearing down the rest
                errors.append(f"agent {h}: {e}")
        self.agents = {}
        try:
            self.loads.stop()
        except Exception as e:
            errors.append(f"host load: {e}")
        if self.eng is not None:
            try:
                self.eng.close()
            except Exception as e:
                errors.append(f"engine: {e}")
        if self.topo_up:
            try:
                self.x.topo.down()
            except Exception as e:
                errors.append(f"topology: {e}")
            self.topo_up = False
        return errors


def pfc_facing(topo, host: str) -> bool:
    """The switch port on `host`'s link sends PFC (its features have pfc)."""
    i = topo.ifaces_of(host)[0]
    if topo.node(i.peer_node).is_host:
        return False
    return bool(topo.port_features(i.peer_node, i.peer_iface).get("pfc"))


def _size_or(v, default):
    """A per-flow override (already validated by the schema), else the host's value."""
    from .schema import _size0
    return default if v is None else _size0(v)


def _rate_or(v, default):
    from .schema import _rate0
    return default if v is None else _rate0(v)


def _stop_handler(main_pid: int, r: "Runner"):
    """SIGINT/SIGTERM end the run in this process.  pyroute2 forks helpers
    (namespace work) that inherit the handler and are sent SIGTERM when
    done: there the handler must exit at once, never unwind through our
    cleanup (which would tear down the parent's namespaces).  The stop is
    also recorded on the runner, whose loop raises it again: a handler that
    runs inside a callback (a weakref's, or ctypes' during a compile) has
    its exception printed and dropped by Python."""
    def handler(signum, frame):
        if os.getpid() != main_pid:
            os._exit(128 + signum)
        r.stop_requested = signal.Signals(signum).name
        raise Stopped(r.stop_requested)
    return handler


def make_runner(x: Experiment, clock: str, progress: bool = False,
                port_kind: str = "auto") -> Runner:
    """The wall clock's runner follows docs/DESIGN.md's process model
    (wallproc.py) unless the plan needs Python at every step (RPCs) or the
    runner reads the live engine at samples; virtual time steps in process."""
    if clock == "wall" and not build_plan(x).rpcs and not Runner.live_samples \
            and os.environ.get("TAURUS_WALL_STEPPED") != "1":
        from .wallproc import WallRunner
        return WallRunner(x, progress, port_kind)
    return Runner(x, clock, progress, port_kind)


def run_experiment(x: Experiment, out_dir: str, clock: str = "virtual", progress: bool = False,
                   port_kind: str = "auto", pcap: dict | None = None) -> dict:
    """Run `x`, write the run directory, return the summary.  Always tears
    down; on SIGINT/SIGTERM or an error the summary says incomplete.
    pcap: capture the engine's ports (tools/pcap.py Capture.in_process
    arguments); the summary's "pcap" holds its figures."""
    from .results import write_results
    algcheck.check(x)               # before anything is made: a bad algorithm leaves no run dir
    frames.check(x, clock)          # ... as does an MSS the pool or the ports cannot carry
    algcheck.compile_check(x)
    os.makedirs(out_dir, exist_ok=True)
    r = make_runner(x, clock, progress, port_kind)
    handler = _stop_handler(os.getpid(), r)
    # signals reach only the main thread (a sweep's worker threads run
    # without: their process's own handling stops them)
    main = threading.current_thread() is threading.main_thread()
    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
    snap = {}
    cap = cap_stats = None
    try:
        try:
            r.build()
            if pcap:
                cap = Capture.in_process(r.eng, **pcap)
            r.run()
        except Stopped as e:
            r.error = f"stopped by {e}"
        except Exception as e:
            r.error = f"{type(e).__name__}: {e}"
            raise
        finally:
            try:
                snap = r.snapshot()
            except Exception as e:      # a half-built engine: report what we have
                r.error = r.error or f"snapshot: {e}"
            try:
                cap_stats = cap.close() if cap is not None else None
            except OSError as e:        # e.g. the disk is full: keep tearing down
                log.warning("pcap: %s", e)
            errs = r.teardown()
            if errs:
                log.warning("teardown: %s", "; ".join(errs))
            summary = write_results(r, snap, out_dir)
            if cap_stats:
                summary["pcap"] = cap_stats
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return summary
