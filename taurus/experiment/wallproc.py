"""A wall-clock run in docs/DESIGN.md's process model.

The runner builds the engine (topology, ports, NICs, flows, native
algorithms) as for any run, then splits the work:

- each host with agent or per-event flows gets an agent process on the
  engine's contract segment (ring and doorbell), as ``taurus agent run``;
- the plan goes into the engine before it starts: each generated flow
  starts and stops on its NIC's timer (nic_generate_at), the host model's
  hogs on theirs, and the sampler writes its rows into a shared segment
  (``<engine>-smp``);
- a watcher process forked from the runner does the watching: a hung
  engine or a dead agent stops the run (the engine's STOP word), host
  loads start and stop on time, the progress line;
- the runner's own process then is the engine's: it takes a core of its
  own and runs the whole experiment in one ``run_until``, Python acting
  only in the loop's chunk bookkeeping (about every 20 ms), which the
  loop counts as pauses (Engine.pauses).  The process that built the
  AF_XDP sockets runs them: their UMEM is its private memory, which a
  forked process would only see copied.

After the run the runner reads the agents' figures (each writes them as it
exits), the completions, the samples and the engine's counters, and tears
everything down as any run does; SIGINT / SIGTERM stop the engine at its
next chunk and the run is written as incomplete.

``step`` bounds nothing here: flows start and stop at their exact times
on the engine's timers, agents step when the engine publishes, the
sampler writes at its period.  It only rounds the sample period (a
multiple of it), so the same file gives the same series grid on both
clocks.  Plans with RPCs (a closed loop in Python that reacts to
completions) and runners that read the live engine at each sample
(live_samples) keep the stepped in-process path (runner.Runner).
"""
from __future__ import annotations

import gc
import json
import logging
import os
import signal
import sys
import time

import numpy as np

from taurus.datapath.ctlblock import NOW, STOP
from taurus.datapath.devices.nic import setup as NS
from taurus.datapath.devices.nic.state import CQ_TX
from taurus.datapath.sampler import N_META, ROWS, Sampler, rows_for, sampler_start
from taurus.datapath.shm import Shm
from taurus.tools.cores import elsewhere, engine_core, pinned

from . import fidelity
from .faults import AlgorithmFault
from .runner import Runner, Stopped

log = logging.getLogger("taurus.run")

START_LEAD_NS = 20_000_000      # the plan starts this long after it is loaded
WATCH_EVERY_S = 0.05            # how often the watcher looks at the engine and the agents
STALL_S = 3.0                   # an engine whose clock stands this long is hung
SAMPLE_BUDGET_WORDS = 1 << 25   # a shared sample buffer for the whole run up to 256 MiB
WALL_RTO_MIN = 200_000          # ns: the RTO's floor (a loaded host deschedules for 100s of us)


class WallRunner(Runner):
    """runner.Runner on the wall clock in the process model (module
    docstring)."""

    def __init__(self, x, progress: bool = False, port_kind: str = "auto"):
        super().__init__(x, "wall", progress, port_kind)
        self.step = x.step                  # rounds the sample period only
        self.sample_every = max(1, x.sample // self.step)
        self.agent_cfgs: dict = {}          # host -> (agent config table, NIC slot)
        self.agent_procs: dict = {}         # host -> multiprocessing.Process
        self.agent_stats: dict = {}         # host -> what its agent wrote as it exited
        self.watcher = 0                    # the watcher's pid
        self.timing = None                  # the engine's timing over the run (Probe)
        self.smp = None
        self._smp_shm = None
        self._tmp = ""

    # ------------------------------------------------------------ build
    def _wall_rto(self) -> tuple[int, int]:
        """No slice stalls the engine here: the floor covers a descheduled
        host, the first RTO a few of the plan's largest base RTTs."""
        base = max((fidelity.base_rtt(fidelity.path_links(self.x.topo, f.src, f.dst),
                                      self._flow_cc(f).mss) for f in self.plan.flows), default=0)
        return WALL_RTO_MIN, max(4 * WALL_RTO_MIN, 3 * base)

    def _start_agents(self) -> None:
        """An agent process per host with agent flows, started where the
        in-process runner starts its agents (before the flows are added:
        a flow takes the events its agent announced)."""
        import tempfile
        self.agent_cfgs = self._agent_configs()
        self._tmp = tempfile.mkdtemp(prefix="taurus-wall-")
        self._start_agent_procs(engine_core())

    # ------------------------------------------------------------ run
    def run(self) -> None:
        x, eng = self.x, self.eng
        if self.agent_cfgs and x.cc.separation is not None:
            raise RuntimeError("[cc] separation models the NIC-host link on the virtual clock; "
                               "on the wall clock the separation is real")
        core = engine_core()
        self._shared_sampler()
        # The watcher first: forking a large process takes long on a busy
        # machine, and the plan's times must still lie ahead when it starts.
        rfd, wfd = os.pipe()
        self.watcher = os.fork()
        if self.watcher == 0:
            os.close(wfd)
            _watch_main(self, rfd, core)        # never returns
        os.close(rfd)
        try:
            self.t0 = t0 = eng.now() + START_LEAD_NS
            self._load_plan(t0)
            eng.install("smp", self.smp)
            sampler_start(self.smp, self.sample_every * self.step, t0)
            finite = {int(self.fid[k]): k for k, f in enumerate(self.plan.flows)
                      if f.size is not None}
            if finite:
                def completions():
                    for kind, _n, ident, _m, _e, t in NS.nic_completions(eng):
                        k = finite.get(ident) if kind == CQ_TX else None
                        if k is not None:
                            self.done_at[k] = t - t0
                eng.on_chunk.append(completions)
            os.write(wfd, b"%d\n" % t0)
        except BaseException:
            os.close(wfd)
            self._end_watcher()
            raise
        self.probe = fidelity.Probe(eng)
        w0 = time.monotonic()
        gc_was = gc.isenabled()
        gc.disable()                # a collection would run in the loop's chunk bookkeeping
        try:
            with pinned(core):
                r = eng.run_until(t0 + x.duration, stop_idle=False)
        finally:
            if gc_was:
                gc.enable()
            self.timing = self.probe.read(eng)
            self.engine_s = self.loop_s = time.monotonic() - w0
            self.now = max(0, min(x.duration, eng.now() - t0))
            os.close(wfd)                       # the watcher's cue to finish
            self._end_watcher()
            if finite:
                completions()
            self._samples()
        why = self._watcher_verdict()
        if r != "until":
            self.error = why or f"the engine stopped ({r})"
            return
        self.now = x.duration
        self._agent_results()
        self.complete = True

    def _start_agent_procs(self, core) -> None:
        import multiprocessing as mp
        from taurus.datapath.ccshm import CTL_AGENT_PID, CcShm
        ctx = mp.get_context("fork")
        for h, (cfg, slot) in self.agent_cfgs.items():
            p = ctx.Process(target=_agent_main, daemon=True, name=f"taurus-agent-{h}",
                            args=(self.eng.name, slot, cfg, os.getpid(),
                                  os.path.join(self._tmp, f"agent-{h}.json"), h, core))
            p.start()
            self.agent_procs[h] = p
        if not self.agent_procs:
            return
        cc = CcShm.attach(self.eng.name + "-cc")
        t_end = time.monotonic() + 600
        try:
            for h, p in self.agent_procs.items():
                slot = self.agent_cfgs[h][1]
                while int(cc.ctls[slot, CTL_AGENT_PID]) != p.pid:   # configured and compiled
                    if self.stop_requested:
                        raise Stopped(self.stop_requested)
                    if not p.is_alive():
                        raise RuntimeError(f"the agent of {h} exited (code {p.exitcode}) "
                                           f"before the run")
                    if time.monotonic() > t_end:
                        raise RuntimeError(f"the agent of {h} did not start within 600 s")
                    time.sleep(0.01)
        finally:
            cc.close()

    def _shared_sampler(self) -> None:
        """The sampler's meta and rows in a shared segment the watcher reads,
        sized for the whole run when that fits the budget (then the engine
        never yields to have it drained)."""
        F, Q = len(self.fid), len(self.port_list)
        width = 1 + 2 * F + Q
        need = 2 * (self.x.duration // (self.sample_every * self.step) + 2) + 4
        cap = need if need * width <= SAMPLE_BUDGET_WORDS else rows_for(width)
        self._smp_shm = shm = Shm.create(self.eng.name + "-smp", (N_META + cap * width) * 8)
        meta = shm.array(0, np.int64, (N_META,))
        buf = shm.array(N_META * 8, np.int64, (cap, width))
        self.smp = Sampler(meta=meta, fids=np.ascontiguousarray(self.fid, np.int64),
                           qports=np.ascontiguousarray([p for _, p in self.port_list], np.int64),
                           buf=buf)

    def _load_plan(self, t0: int) -> None:
        """Every generated flow on its NIC's timers, the host model's hogs."""
        eng, x = self.eng, self.x
        for k, f in enumerate(self.plan.flows):
            stop = 0 if f.size is not None or f.stop >= x.duration else t0 + f.stop
            NS.nic_generate_at(eng, int(self.fid[k]), t0 + f.start, f.size, stop)
            self.posted_at[k] = f.start
        for h in x.host_load:
            if h.share:
                NS.nic_hog(eng, self.nics[h.host], h.share, t0 + h.start,
                           t0 + (x.duration if h.stop is None else h.stop))

    def _end_watcher(self) -> None:
        if not self.watcher:
            return
        t_end = time.monotonic() + 10
        while time.monotonic() < t_end:
            pid, _ = os.waitpid(self.watcher, os.WNOHANG)
            if pid:
                self.watcher = 0
                return
            time.sleep(0.02)
        os.kill(self.watcher, signal.SIGKILL)
        os.waitpid(self.watcher, 0)
        self.watcher = 0

    def _watcher_verdict(self) -> str:
        try:
            with open(os.path.join(self._tmp, "watcher")) as f:
                return f.read().strip()
        except OSError:
            return ""

    def _agent_results(self) -> None:
        """Stop the agents and read what each wrote as it exited; a handler
        that raised fails the run where cc.on_fault says so."""
        self._stop_agents()
        for h in self.agent_procs:
            try:
                with open(os.path.join(self._tmp, f"agent-{h}.json")) as f:
                    self.agent_stats[h] = json.load(f)
            except (OSError, ValueError):
                continue
            self.agent_cpu_s += self.agent_stats[h].get("cpu_s", 0.0)
            n = self.agent_stats[h].get("faults", 0)
            if n:
                self.faults[h] = n
                if self.x.host_cc(h).on_fault == "fail":
                    raise AlgorithmFault(self.agent_stats[h].get("first_fault", "a handler raised"))

    def _stop_agents(self) -> None:
        for p in self.agent_procs.values():
            if p.is_alive():
                os.kill(p.pid, signal.SIGTERM)
        for p in self.agent_procs.values():
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join(2)

    # ------------------------------------------------------------ collect + teardown
    def snapshot(self) -> dict:
        snap = super().snapshot()
        if self.timing is not None:         # over the run, not the agents' shutdown after it
            snap["timing"] = self.timing
        snap["agents"] = {h: {"messages": st["messages"], "handler": st["handler"],
                              "host_actions": st["host_actions"]}
                          for h, st in self.agent_stats.items()}
        return snap

    def teardown(self) -> list[str]:
        errors = []
        try:
            self._end_watcher()
            self._stop_agents()
        except Exception as e:
            errors.append(f"processes: {e}")
        errors += super().teardown()            # the engine closes its sampler's view first
        if self._smp_shm is not None:
            self.smp = None
            self._smp_shm.close()
            self._smp_shm = None
        if self._tmp:
            import shutil
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = ""
        return errors


# ---------------------------------------------------------------- the watcher
def _watch_main(r: WallRunner, rfd: int, core) -> None:
    """The watcher: until the runner closes the pipe (the run is over),
    host loads on time, the progress line, and a stop (the engine's STOP
    word, the reason in a file) when the engine's clock stands still or
    an agent died.  Never through the runner's cleanup (os._exit)."""
    import select
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # the engine's process takes ^C
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        elsewhere(core)
        x, ctl = r.x, r.eng.ctl
        line = b""
        while not line.endswith(b"\n"):            # t0, once the plan is loaded
            chunk = os.read(rfd, 64)
            if not chunk:
                os._exit(0)                         # the runner gave up before the run
            line += chunk
        r.t0 = int(line)
        why = ""
        wall0 = time.monotonic()
        last_bar = 0.0
        last_now, last_move = -1, time.monotonic()
        r.loads.start(r.t0)
        try:
            while not select.select([rfd], [], [], WATCH_EVERY_S)[0]:
                t = time.monotonic()
                now = int(ctl[NOW])
                if now != last_now:
                    last_now, last_move = now, t
                elif t - last_move > STALL_S and not why:
                    why = f"the engine's clock stood still for {STALL_S:.0f} s"
                dead = [h for h, p in r.agent_procs.items() if not _alive(p.pid)]
                if dead and not why:
                    why = f"the agent of {dead[0]} exited mid-run"
                if why:
                    with open(os.path.join(r._tmp, "watcher"), "w") as f:
                        f.write(why)
                    ctl[STOP] = 1
                r.now = max(0, min(now - r.t0, x.duration))
                r.loads.poll(r.now)
                if r.progress and t - last_bar > 0.2:
                    last_bar = t
                    _bar(r, t - wall0)
        finally:
            r.loads.stop()
        if r.progress:
            r.now = x.duration
            _bar(r, time.monotonic() - wall0)
            sys.stderr.write("\n")
    except BaseException as e:
        print(f"taurus run: watcher: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        code = 1
    os._exit(code)


def _alive(pid: int) -> bool:
    """A child of the runner (not ours to reap) that has not exited."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _bar(r: WallRunner, wall_s: float) -> None:
    """The progress line; the rate from the last two rows in the shared
    sampler (read, never drained here)."""
    m, buf = r.smp.meta, r.smp.buf
    rows, cap = int(m[ROWS]), buf.shape[0]
    F = len(r.fid)
    r.samples_t = [int(buf[k % cap][0]) - r.t0 for k in range(max(0, rows - 2), rows)]
    r.samples_acked = [buf[k % cap][1:1 + F].copy() for k in range(max(0, rows - 2), rows)]
    Runner._bar(r, wall_s)


# ---------------------------------------------------------------- an agent process
def _agent_main(engine: str, slot: int, cfg: dict, parent: int, out: str, host: str,
                core) -> None:
    """One host's agent (taurus agent run's loop) until SIGTERM; writes its
    counters and faults to `out` as it exits."""
    import ctypes
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    elsewhere(core)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)       # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # ^C is the runner's; it stops us
    code = 1
    try:
        from taurus.agent.agent import Agent
        from taurus.agent.config import parse
        from .faults import agent_faults, first_fault
        agent = Agent(engine + "-cc", parse(cfg), stats_dir=None, slot=slot)
        code = agent.run()
        st = agent.stats()
        st["cpu_s"] = time.process_time()          # the whole process's, start-up included
        st["faults"] = agent_faults(agent.handler)
        if st["faults"]:
            st["first_fault"] = first_fault(agent.handler, host)[0]
        with open(out + ".tmp", "w") as f:
            json.dump(st, f, default=str)
        os.replace(out + ".tmp", out)
    except BaseException as e:
        print(f"taurus agent {host}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
    finally:
        os._exit(code)
