#!/usr/bin/env python3
"""TAURUS micro-benchmark (paper §5.2 and Table 2): N DCTCP flows from one
sender host through the software switch's ECN bottleneck to one receiver,
run four ways -- native (DCTCP compiled into the engine), agent (TAURUS:
aggregated reports, one message per flow per RTT, DCTCP's handlers as plain
Python, ``[agent] jit = false``), agent-jit (the same handlers compiled,
``jit = true``: same decisions, a fraction of the CPU) and per-event (the
agent with aggregation off, CCP-like; DCTCP compiled, as a per-event run is
by default) -- for N in 1, 2, 4, 8, 16, 32.

    python bench/agent_overhead.py              # virtual time (default), ~11 s
    python bench/agent_overhead.py --flows 1,32 --modes agent-jit
    python bench/agent_overhead.py --clock wall # wall clock, agent in its own process
    sudo python bench/agent_overhead.py --clock wall --ports af_xdp  # ... and real packets
    python bench/agent_overhead.py --delay 2us  # a ~10 us base RTT instead (see below)

    h1 --10 Gbit/s, 100 us-- s1 --bottleneck (2 Gbit/s, 100 us, ECN K = 20 KB)-- h2

Why 100 us links: what aggregation can remove depends on how many signals
one flow's report per RTT gathers, i.e. on the bandwidth-delay product in
packets, shared by the N flows.  The paper's testbed had ~98 packets in
flight per path (400 Gbit/s x 8 us base RTT / 4 KB); this software fabric
is 200x slower, so its RTT is scaled up to keep the packets in flight: a
~406 us base RTT at 2 Gbit/s is ~94 packets of 1 KB.  With 2 us links (a
~10 us base RTT, ~2 packets in flight) each flow sits at 1 MSS past N=16
or so: one ACK per flow per RTT, nothing to aggregate (measured over 40 ms
at N=32: 7.6% fewer messages); ``--delay 2us`` runs that regime.

Per run: goodput (bytes delivered in order at h2 after a warm-up), messages
per second reaching the agent (records the engine published), signals
behind them and per flow per RTT (the flows' mean srtt at the end: about
how many signals one report per RTT can gather),
context-table updates the agent's filters removed, and agent CPU as a
fraction of one core:
- ``--clock virtual``: the agent runs in this process, woken every
  --step-us of virtual time (default 100 us, a quarter of the base RTT;
  the wall-clock agent under load wakes about as often: a 20 us nap lasts
  ~120 us on the 2-core test VM, plus the step); CPU = its thread CPU time / virtual
  time, i.e. the share of a core it would need to keep up in real time
  (the median of nine replays of the recorded steps, see InProcessAgent).
- ``--clock wall``: the engine runs on the wall clock over in-memory links
  (``--ports af_xdp|af_packet``: over veths between namespaces, every host
  and switch port a real socket, fabric.build_netns) in this process and
  the agent is `taurus agent run` in its own process;
  CPU = utime + stime from /proc/<pid>/stat over the measured window;
  wakes/s = its context switches (/proc/<pid>/status) over the window; an
  idle agent blocks on the report ring's doorbell (``--no-doorbell``: it
  polls on its timer only, as before), and the summary line gives the
  engine's doorbell wake syscalls per second (its side of the cost).
On the wall clock the agent's CPU is mostly per wake-up (a sleep and a
cold step cost ~100 us on the 2-core test VM), so agent-jit, whose
per-record cost is small, helps less there than in virtual time;
the agent naps ``--nap-rtt`` of the flows' median srtt after work (half,
~250 us here: ~22% of a core at N=32 against ~38% at a fixed 20 us nap,
``--nap-rtt 0``, with goodput not told apart; see bench/README.md).
Both clocks share one code path (run_one); only the agent driver differs.
Also printed: the agent's CPU per wake-up (us/step, virtual clock) and per
message (us/msg: CPU / messages published in the window); on a 2-core VM
with steal time they vary by tens of percent from run to run.
``--repeat R`` runs every (N, mode) R times, modes interleaved, and the
summary lines take medians (goodput ratios per repeat, each against the
native run beside it): the host's load drifts.  Back-pressure raises the
aggregation periods only when the agent falls behind.
The last line is `agent/native goodput: X.XX, message reduction: Y%`
(goodput summed over all N, median over repeats; reduction = 1 - messages / signals of the
agent runs: per-event sends one message per signal by construction, so this
is agent against per-event at the same traffic.  On the virtual clock both
modes carry identical traffic and it equals 1 - agent / per-event messages;
on the wall clock the runs differ, and comparing two runs' rates would mix
in their goodput difference).
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

MODES = ("native", "agent", "agent-jit", "per-event")
SLEEP_US = [20, 1000]        # the agent's adaptive sleep (--agent-sleep-us)
NAP_RTT = [0.5]              # its nap after work, a share of the flows' srtt (--nap-rtt)
BUSY_LOOP = [True]           # agent-jit's busy phase compiled (--no-busy-loop)
DOORBELL = [True]            # an idle agent blocks on the ring's doorbell (--no-doorbell)


def topology(rate, access="10Gbit", k="20KB", prefix=None, delay="100us"):
    from taurus.tools.topology import Topology
    t = Topology("tbench", prefix=prefix) if prefix else Topology("tbench")
    t.add_host("h1")
    t.add_host("h2")
    t.add_switch("s1")
    t.add_link("h1", "s1", rate=access, delay=delay)
    t.add_link("s1", "h2", rate=rate, delay=delay, buffer="2MB", features={"ecn": {"k": k}})
    return t


class InProcessAgent:
    """Virtual clock: the agent in this process, stepped in virtual time.

    Its CPU is not timed in place: right after the engine's loop has swept
    the caches, a Python step costs several times what it costs on a core of
    its own.  So every step's records are kept, and ``cpu()`` replays them
    back to back through a fresh agent (same config, same batches, same
    decisions) and times that -- the agent as a process on its own core."""

    def __init__(self, eng, slot, cfg):
        from taurus.agent.agent import Agent
        from taurus.datapath.ccshm import CcShm
        self.cfg = cfg
        self.agent = Agent(eng.name + "-cc", cfg, cc=CcShm.attach(eng.name + "-cc", nic=slot),
                           stats_dir=None, slot=slot)
        self.agent.start()
        self.steps = []            # (now, records the step found)
        self.mark = None
        self.measured_steps = 0

    def step(self, now):
        ring = self.agent.cc.ring
        r = ring.ring
        tail, head = int(r.cons[0]), int(r.prod[0])
        rows = r.rec[(tail + np.arange(head - tail)) % ring.capacity].copy()
        self.agent.step(now)
        self.steps.append((now, rows))

    def start_measure(self):
        self.mark = len(self.steps)

    def cpu(self, replays: int = 9):
        """Thread CPU (ns) of replaying the steps since start_measure(): the
        median of ``replays`` replays (one is at the mercy of a noisy host)."""
        if self.mark is None:
            return 0
        self.measured_steps = len(self.steps) - self.mark
        return sorted(self._replay() for _ in range(replays))[replays // 2]

    def _replay(self):
        from taurus.agent.agent import Agent
        from taurus.testing.fake_datapath import FakeDatapath
        with FakeDatapath(max_flows=self.agent.cc.max_flows,
                          ring_capacity=self.agent.cc.ring.capacity) as dp:
            a = Agent(dp.name, self.cfg, cc=dp.cc, stats_dir=None)
            a.start()
            cpu = 0
            for i, (now, rows) in enumerate(self.steps):
                if len(rows):
                    dp.push(rows)
                t0 = time.thread_time_ns()
                a.step(now)
                if i >= self.mark:
                    cpu += time.thread_time_ns() - t0
            a.teardown()
        return cpu

    def filters(self):
        return dict(self.agent.handler.filter.c)

    def close(self):
        self.agent.teardown()


class ProcessAgent:
    """Wall clock: `taurus agent run` as its own process; CPU from /proc."""

    def __init__(self, eng, slot, cfg_path):
        from taurus.datapath import ccshm as C
        from taurus.tools.procs import spawn
        self.dir = tempfile.mkdtemp(prefix="taurus-bench-agent-")
        self.proc = spawn([sys.executable, "-m", "taurus.agent.cli", "run", "--nic",
                           eng.name + "-cc", "--slot", str(slot), "--config", cfg_path,
                           "--pid-dir", self.dir, "--stats-dir", self.dir],
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        self.stats = os.path.join(self.dir, f"agent-{eng.name}-cc" + (f"-{slot}" if slot else "")
                                  + ".json")
        end = time.monotonic() + 120
        while eng.cc.ctls[slot, C.CTL_AGENT_PID] != self.proc.pid:
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError("the agent process did not start")
            time.sleep(0.02)

    def step(self, now):
        pass

    def start_measure(self):
        self.cpu0, self.wakes0, self.sys0 = self._cpu(), self._wakes(), self._cpu(sys_only=True)

    def cpu(self):
        return self._cpu() - self.cpu0

    def sys(self):
        return self._cpu(sys_only=True) - self.sys0

    def wakes(self):
        """Times the agent went to sleep and woke (context switches)."""
        return self._wakes() - self.wakes0

    def _wakes(self):
        n = 0
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    n += int(line.split()[1])
        return n

    def _cpu(self, sys_only=False):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
        ticks = int(v[12]) if sys_only else int(v[11]) + int(v[12])
        return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")

    def filters(self):
        try:
            with open(self.stats) as f:
                return json.load(f)["handler"]["filters"]
        except (OSError, ValueError, KeyError):
            return {}

    def close(self):
        import shutil
        from taurus.tools.procs import stop
        stop(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


def run_one(mode, nflows, clock="virtual", duration_ns=10_000_000, warm_ns=2_000_000,
            rate="2Gbit", step_ns=100_000, mss=1024, access="10Gbit", k="20KB", ports="mem",
            delay="100us"):
    """One (mode, N) run; returns a dict of measured figures."""
    from taurus.agent.config import parse
    from taurus.datapath import ccshm as C
    from taurus.datapath.devices.nic.app import WouldBlock
    from taurus.datapath.devices.nic.state import DR_SLOT
    from taurus.datapath.devices.nic.setup import (add_flow, nic_delivered, nic_post,
                                                   nic_take_delivered, set_flow_mode)
    from taurus.cc_algorithms.dctcp import Dctcp
    from taurus.cc_algorithms.native import NativeTable
    from taurus.datapath.engine import Engine
    from taurus.datapath.shmring import WAKES
    from taurus.tools import netns
    from taurus.tools.fabric import build_netns, build_virtual, netns_nic_host, nic_host
    from taurus.tools.perf import RTO_MIN_NS
    from taurus.units import parse_rate
    real = ports != "mem"
    if real and clock != "wall":
        raise ValueError("real ports need --clock wall")
    t = topology(rate, access, k, prefix=f"taurus-bench-{os.getpid()}-" if real else None,
                 delay=delay)
    rate_bps = parse_rate(rate)
    line = parse_rate(access)
    total = duration_ns + warm_ns
    # Virtual: more than a flow can send, posted once.  Wall: the run is far
    # longer than the NIC's 64 MiB send arena lasts, so an app refills every
    # send ring and consumes every receive ring between slices.
    refill = clock == "wall"
    size = max(1 << 20, (16 << 20) // nflows) if refill else \
        min(int(total * line / 8e9 / nflows) + (1 << 16), (56 << 20) // nflows)
    native = NativeTable(64)
    dctcp = native.add(Dctcp)
    eng = Engine(clock=clock, max_flows=64, max_nics=2, native=native.native)
    agent = None
    jit = "false" if mode == "agent" else "true"      # per-event: compiled, as by default
    cfg_text = (f'[agent]\nalgorithm = "dctcp"\njit = {jit}\n'
                f'mss = {mss}\nline_rate_bps = {line}\n'
                f'sleep_min_us = {SLEEP_US[0]}\nsleep_max_us = {SLEEP_US[1]}\n'
                f'nap_rtt = {NAP_RTT[0]}\nbusy_loop = {str(BUSY_LOOP[0]).lower()}\n'
                f'doorbell = {str(DOORBELL[0]).lower()}\n')
    try:
        if real:
            t.up()
            fab = build_netns(eng, t, port_kind=ports, host_factory=lambda *a: netns_nic_host(
                *a, mss=mss, rx_buf_bytes=size, rto_min_ns=RTO_MIN_NS))
        else:
            fab = build_virtual(eng, t, host_factory=lambda *a: nic_host(*a, mss=mss,
                                                                         rx_buf_bytes=size))
        h1, h2 = fab["hosts"]["h1"], fab["hosts"]["h2"]
        slot = int(eng.E.devs.regs[h1, DR_SLOT])
        if mode != "native":
            if clock == "virtual":
                import tomllib
                agent = InProcessAgent(eng, slot, parse(tomllib.loads(cfg_text)))
            else:
                path = os.path.join(tempfile.gettempdir(), f"taurus-bench-{os.getpid()}.toml")
                with open(path, "w") as f:
                    f.write(cfg_text)
                agent = ProcessAgent(eng, slot, path)
        flows = []
        for _ in range(nflows):
            f = add_flow(eng, h1, t.mac_of("h2"), t.ip_of("h2"), cwnd_bytes=10 * mss,
                         buf_bytes=size)
            if mode == "native":
                native.start(eng, f, dctcp)
            else:
                set_flow_mode(eng, f, "agent" if mode == "agent-jit" else mode)
            flows.append(f)
        got = [0]
        chunk = bytes(min(256 << 10, size // 2))

        def app():
            for f in flows:
                try:
                    while True:
                        nic_post(eng, h1, f, chunk)
                except WouldBlock:
                    pass
                got[0] += len(nic_take_delivered(eng, h2, t.ip_of("h1"), f))
        if refill:
            app()
        else:
            for f in flows:
                nic_post(eng, h1, f, np.zeros(size - 1, np.uint8).tobytes())

        def delivered():
            if refill:
                return got[0]
            return sum(len(nic_delivered(eng, h2, t.ip_of("h1"), f)) for f in flows)

        def counters():
            ctl = eng.cc.ctls[slot]
            return (int(ctl[C.CTL_REPORTED]), int(ctl[C.CTL_SIGNALS]),
                    delivered(), eng.now(), int(eng.cc.rings.prod[slot, WAKES]))

        start = eng.now()
        slice_ns = step_ns if clock == "virtual" else 5_000_000
        c0 = None
        while eng.now() - start < total:
            eng.run_until(eng.now() + slice_ns, stop_idle=False)
            if refill:
                app()
            if agent:
                agent.step(eng.now())
            if c0 is None and eng.now() - start >= warm_ns:
                c0 = counters()
                if agent:
                    agent.start_measure()
        c1 = counters()
        dt = (c1[3] - c0[3]) / 1e9
        srtt = float(np.mean([eng.cc.srtt[f] for f in flows]))
        cpu_ns = agent.cpu() if agent else 0
        wakes = agent.wakes() if hasattr(agent, "wakes") else None
        sys_ns = agent.sys() if hasattr(agent, "sys") else None
        filt = agent.filters() if agent else {}
        written = sum(v for k, v in filt.items() if k.startswith("written"))
        dup = sum(v for k, v in filt.items() if k.startswith("duplicate"))
        return {"mode": mode, "flows": nflows, "clock": clock, "seconds": dt,
                "goodput_bps": (c1[2] - c0[2]) * 8 / dt,
                "msgs_per_s": (c1[0] - c0[0]) / dt, "signals_per_s": (c1[1] - c0[1]) / dt,
                "srtt_ns": srtt, "signals_per_flow_rtt": (c1[1] - c0[1]) / dt / nflows * srtt / 1e9,
                "agent_cpu": cpu_ns / 1e9 / dt,
                "agent_us_per_msg": cpu_ns / 1e3 / max(c1[0] - c0[0], 1),
                "agent_us_per_step": (cpu_ns / 1e3 / agent.measured_steps
                                      if getattr(agent, "measured_steps", 0) else None),
                "agent_wakes_per_s": wakes / dt if wakes is not None else None,
                "agent_sys_cpu": sys_ns / 1e9 / dt if sys_ns is not None else None,
                "engine_bell_wakes_per_s": (c1[4] - c0[4]) / dt,
                "updates_written": written, "updates_filtered": dup,
                "ring_full": int(eng.cc.ctls[slot, C.CTL_RING_FULL]),
                "bottleneck_bps": rate_bps}
    finally:
        if agent:
            agent.close()
        eng.close()
        if real:
            t.down()
            for ns in netns.list_ns(t.prefix):
                netns.remove_ns(ns)


def median_row(runs):
    """Each numeric figure's median over repeated runs of one (N, mode)."""
    out = dict(runs[0])
    for k, v in out.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = float(np.median([r[k] for r in runs if r[k] is not None]))
    return out


def ratio(rows, n, mode):
    """Median over repeats of mode/native goodput, each repeat against the
    native run beside it (the host's load drifts between repeats)."""
    g = {(r["rep"], r["mode"]): r["goodput_bps"] for r in rows if r["flows"] == n}
    return float(np.median([g[i, mode] / g[i, "native"] for i, m in g if m == mode]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clock", choices=("virtual", "wall"), default="virtual")
    ap.add_argument("--flows", default="1,2,4,8,16,32")
    ap.add_argument("--duration-ms", type=float, default=50.0,
                    help="measured time per run (virtual or wall), after a warm-up")
    ap.add_argument("--warm-ms", type=float, default=20.0,
                    help="not measured: slow start and DCTCP's convergence (~50 RTTs; one "
                         "flow in agent mode measured 0.79 of native over 10-40 ms, 0.97 over "
                         "20-120 ms)")
    ap.add_argument("--rate", default="2Gbit", help="bottleneck rate")
    ap.add_argument("--access", default="10Gbit", help="the sender's link rate")
    ap.add_argument("--k", default="20KB", help="the bottleneck's ECN threshold")
    ap.add_argument("--delay", default="100us",
                    help="each link's delay (the base RTT is 4x): how many packets a flow has "
                         "in flight per RTT, hence how many signals one report per RTT gathers")
    ap.add_argument("--step-us", type=float, default=100.0,
                    help="virtual clock: the agent's wake-up interval")
    ap.add_argument("--ports", default="mem", choices=("mem", "af_xdp", "af_packet"),
                    help="wall clock: memory links, or real packets over veths (root)")
    ap.add_argument("--agent-sleep-us", default="20,1000", metavar="MIN,MAX",
                    help="wall clock: the bounds of the agent's nap after work and its "
                         "longest idle wait on the doorbell (its own defaults are 50,1000)")
    ap.add_argument("--nap-rtt", type=float, default=0.5,
                    help="wall clock: the agent's nap after work as a share of the flows' "
                         "median srtt, within --agent-sleep-us (0: always the minimum)")
    ap.add_argument("--no-busy-loop", action="store_true",
                    help="wall clock: agent-jit rests and steps from Python, not in the "
                         "compiled loop (taurus/agent/busyloop.py)")
    ap.add_argument("--no-doorbell", action="store_true",
                    help="the agent sleeps on its timer only (the engine's doorbell ignored)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run every (N, mode) this many times, modes interleaved; the "
                         "summary lines take each figure's median")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="which of " + ", ".join(MODES) + " to run (native and agent always run)")
    ap.add_argument("--json", help="write every run's figures here")
    a = ap.parse_args(argv)
    ns = [int(x) for x in a.flows.split(",")]
    SLEEP_US[:] = [int(x) for x in a.agent_sleep_us.split(",")]
    NAP_RTT[0] = a.nap_rtt
    DOORBELL[0] = not a.no_doorbell
    BUSY_LOOP[0] = not a.no_busy_loop
    if a.clock == "wall" and a.duration_ms < 200:
        a.duration_ms, a.warm_ms = 1000.0, 200.0       # wall: whole seconds, not ms
    modes = [m for m in MODES if m in a.modes.split(",") or m in ("native", "agent")]
    rows = []
    print(f"{'flows':>5} {'mode':>9} {'goodput Gb/s':>12} {'msgs/s':>10} {'signals/s':>10} "
          f"{'sig/flow/RTT':>12} {'agent CPU':>9} {'us/step':>8} {'us/msg':>7} {'wakes/s':>8} "
          f"{'filtered':>9}")
    for n, rep, mode in ((n, i, m) for n in ns for i in range(a.repeat) for m in modes):
        r = run_one(mode, n, a.clock, int(a.duration_ms * 1e6), int(a.warm_ms * 1e6), a.rate,
                    step_ns=int(a.step_us * 1000), access=a.access, k=a.k, ports=a.ports,
                    delay=a.delay)
        r["rep"] = rep
        rows.append(r)
        tot = r["updates_written"] + r["updates_filtered"]
        filt = f"{r['updates_filtered'] / tot:.1%}" if tot else "-"
        step = f"{r['agent_us_per_step']:.1f}" if r["agent_us_per_step"] else "-"
        msg = f"{r['agent_us_per_msg']:.2f}" if mode != "native" else "-"
        wk = f"{r['agent_wakes_per_s']:.0f}" if r["agent_wakes_per_s"] is not None else "-"
        print(f"{n:>5} {mode:>9} {r['goodput_bps'] / 1e9:>12.3f} {r['msgs_per_s']:>10.0f} "
              f"{r['signals_per_s']:>10.0f} {r['signals_per_flow_rtt']:>12.1f} "
              f"{r['agent_cpu']:>9.1%} {step:>8} {msg:>7} "
              f"{wk:>8} {filt:>9}", flush=True)
    by = {(n, m): median_row([r for r in rows if (r["flows"], r["mode"]) == (n, m)])
          for n in ns for m in modes}
    if a.repeat > 1:
        print(f"medians of {a.repeat} runs each:")
    for n in ns:
        ag = by[n, "agent"]
        also = "".join(f" {m}/native {ratio(rows, n, m):.3f}" for m in modes[2:])
        cpu = "".join(f", {m} {by[n, m]['agent_cpu']:.1%}" for m in modes[2:])
        print(f"N={n}: agent/native {ratio(rows, n, 'agent'):.3f}{also} "
              f"message reduction {1 - ag['msgs_per_s'] / max(ag['signals_per_s'], 1):.1%} "
              f"agent CPU {ag['agent_cpu']:.1%}{cpu} "
              f"engine doorbell wakes/s {ag['engine_bell_wakes_per_s']:.0f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    reps = sorted({r["rep"] for r in rows})
    g = float(np.median([sum(r["goodput_bps"] for r in rows if (r["rep"], r["mode"]) == (i, "agent"))
                         / sum(r["goodput_bps"] for r in rows if (r["rep"], r["mode"]) == (i, "native"))
                         for i in reps]))
    red = 1 - sum(by[n, "agent"]["msgs_per_s"] for n in ns) / max(
        sum(by[n, "agent"]["signals_per_s"] for n in ns), 1)
    print(f"agent/native goodput: {g:.2f}, message reduction: {red:.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
