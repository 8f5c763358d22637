"""The agent process: attach a NIC's CC segment, then drain -> dispatch -> write.

One ``step()`` is one wake-up: heartbeat, drain a batch, deliver it, run the
host samplers that are due.  ``run()`` loops with an adaptive sleep (50 µs
after work, doubling to 1 ms when idle, shorter if a sampler is due; never a
busy poll; no sleep when the drain was capped, i.e. more is waiting) until
SIGINT/SIGTERM, or until its engine is gone (another process's engine:
its pid exited, its segment was replaced, or its wall-clock heartbeat
stopped; datapath/watchdog.py), then tears down: algorithms, host actions
(cgroups it created), the stats file; after that it writes nothing to
shared memory.  ``run()`` returns 0, or EXIT_ENGINE_GONE with ``gone`` set.

The nap after work is a plain timer (it gathers the rest of a burst;
``nap_rtt`` ties it to the flows' RTT); an idle agent waits on the ring's
doorbell (doorbell.py) instead, which the engine's next publication ends,
and counts the empty steps the timer would have taken meanwhile (pacing.py),
and so does a busy one when the engine publishes less often than it naps.
Why: a wake-up costs ~30-80 us of CPU on the development machines whether or
not it finds records (``python bench/agent_wakeup.py``), and an idle agent's
timer wake-ups find none.
With ``jit`` and one algorithm class, the busy phase -- nap, step, nap,
... -- runs inside one Numba loop (busyloop.py) until a step needs Python.
"""
import json
import logging
import os
import signal
import time

from taurus.datapath.ccshm import (CTL_AGENT_PID, CTL_BATCH_BYTES, CTL_DEADLINE_NS,
                                   CTL_HEARTBEAT_NS, CTL_PROBE_NS, CTL_PROBE_PKTS, FL_CC_ACTIVE,
                                   CcShm, segment_name)
from taurus.datapath.watchdog import EXIT_ENGINE_GONE, EngineGone, EngineWatch

from .doorbell import Doorbell
from .handler import AlgorithmHandler
from .host_actions import HostActions
from .messages import MessageHandler
from .pacing import NAP_EVERY_NS, Cadence, TimerSchedule, rtt_nap, timer_slack_ns
from .signals import SamplerSet

log = logging.getLogger("taurus.agent")
STATS_DIR = "/run/taurus"
STATS_EVERY_NS = 1_000_000_000
BUSY_MAX_NS = 10_000_000     # the compiled busy loop hands back at least this often


def stats_path(nic: str, stats_dir: str = STATS_DIR, slot: int = 0) -> str:
    return os.path.join(stats_dir, f"agent-{nic}.json" if not slot else f"agent-{nic}-{slot}.json")


class Agent:
    def __init__(self, nic: str, cfg, cc: CcShm | None = None, stats_dir: str | None = STATS_DIR,
                 slot: int = 0):
        """``nic``: the contract segment's name (taurus-cc-<nic>); ``slot``: this
        NIC's slot in it (its ring and control block)."""
        self.nic, self.cfg = nic, cfg
        self.cc = cc if cc is not None else CcShm.attach(nic, nic=slot)
        self._own_cc = cc is None
        # An engine in this process steps us itself; another's may vanish.
        self.watch = EngineWatch.for_segment(segment_name(nic)) if cc is None else None
        self.gone: EngineGone | None = None
        self.samplers = SamplerSet()
        h = cfg.host
        for name, args in h.samplers.items():
            args = dict(args)
            period_us = args.pop("period_us", None)
            self.samplers.add(name, period_us and int(period_us) * 1000, **args)
        self.messages = MessageHandler(self.cc, cfg.backpressure, cfg.agent.batch_max)
        # Last: the only step that changes the host (it may create a cgroup).
        self.host = HostActions(h.cgroup, h.create_cgroup) if h.cgroup else None
        self.handler = AlgorithmHandler(self.cc, cfg, host=self.host, samplers=self.samplers)
        self.bell = Doorbell(self.cc.ring.ring) if cfg.agent.doorbell else None
        self.stats_file = stats_path(nic, stats_dir, self.cc.nic) if stats_dir else None
        self.stopping = False
        self.torn_down = False
        self._next_stats = 0
        self.nap_ns = cfg.agent.sleep_min_us * 1000     # after work (pacing.rtt_nap)
        self.cadence = Cadence()                         # how often the engine publishes

    def start(self, loop: bool = False) -> None:
        """Configure the engine's reporting, compile, announce; ``loop``: also
        compile the busy loop (run() uses it with jit and one algorithm class)."""
        # How the engine should report to us: batching, probe cadence, custom segments.
        self.cc.ctl[CTL_BATCH_BYTES] = self.cfg.agent.batch_bytes
        self.cc.ctl[CTL_DEADLINE_NS] = round(self.cfg.agent.deadline_us * 1000)
        self.cc.ctl[CTL_PROBE_PKTS] = self.cfg.probe.every_pkts
        self.cc.ctl[CTL_PROBE_NS] = self.cfg.probe.every_us * 1000
        self.cc.segs[:] = 0
        for j, s in enumerate(self.cfg.segment):
            self.cc.segs[j] = s.row()
        self.handler.start()
        self.messages.warm()
        self.handler.warm(self.messages,
                          (self.bell, self.cadence, timer_slack_ns()) if loop else None)
        self.cc.ctl[CTL_HEARTBEAT_NS] = time.monotonic_ns()
        self.cc.ctl[CTL_AGENT_PID] = os.getpid()    # last: "configured, events announced"

    def step(self, now_ns: int | None = None) -> int:
        """One wake-up; returns how many records were drained."""
        mono = time.monotonic_ns()
        now = mono if now_ns is None else now_ns
        self.cc.ctl[CTL_HEARTBEAT_NS] = mono
        before = self.messages.c["drained"]
        try:
            self.handler.step(self.messages, now)
        finally:
            self.messages.release()
        if self.samplers.items:
            self.handler.deliver_host(self.samplers.due(now), now)
        return self.messages.c["drained"] - before

    def run(self) -> int:
        def stop(signum, frame):
            self.stopping = True
        old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
        a = self.cfg.agent
        timer = TimerSchedule(a.sleep_min_us * 1000, a.sleep_max_us * 1000)
        idle_max = a.idle_max_us * 1000
        sleep = timer.lo
        next_nap = 0
        cadence = self.cadence
        try:
            self.start(loop=a.busy_loop)
            busy = self.handler.busy
            while not self.stopping:
                if self.watch is not None and self.watch.reason() is not None:
                    self.gone = EngineGone(self.watch.name, self.watch.gone)
                    break
                n = self.step()
                now = time.monotonic_ns()
                if now >= self._next_stats:
                    self._next_stats = now + STATS_EVERY_NS
                    self.write_stats()
                if a.nap_rtt and now >= next_nap:
                    next_nap = now + NAP_EVERY_NS
                    timer.lo = self.work_nap()
                if n and self.messages.more:
                    continue                     # the drain was capped: no sleep
                due = self.samplers.next_due()
                if self.bell is not None:
                    cadence.update(now, self.bell.bells())
                if n or self.bell is None:       # the timer
                    sleep = timer.lo if n else timer.next(sleep)
                    nap = sleep if due is None else min(sleep, max(due - now, 0))
                    if n and nap and busy is not None:
                        # Rests and steps compiled, until a step needs Python.
                        until = min(now + BUSY_MAX_NS, self._next_stats,
                                    next_nap if a.nap_rtt else now + BUSY_MAX_NS,
                                    due if due is not None else now + BUSY_MAX_NS)
                        self._busy(busy, nap, until)
                        continue
                    if not (n and self.bell is not None and cadence.sparse(sleep + timer.slack)):
                        if nap:
                            time.sleep(nap / 1e9)
                        continue
                # Idle, or publications sparser than the nap, on the doorbell:
                # until the engine publishes, the timer would have lowered the
                # back-pressure, or a sampler is due.
                wait = idle_max
                need = self.messages.steps_to_lower()
                if need is not None:
                    wait = min(wait, timer.span(sleep, need))
                if due is not None:
                    wait = min(wait, max(due - now, 0))
                if wait:
                    self.bell.wait(wait)
                k, sleep = timer.fit(sleep, time.monotonic_ns() - now)
                if k > 1:                        # the last is the step we take now
                    self.messages.idle_steps(k - 1)
        finally:
            self.teardown()
            if self.watch is not None:
                self.watch.close()
            for s, h in old.items():
                signal.signal(s, h)
        return EXIT_ENGINE_GONE if self.gone is not None else 0

    def _busy(self, busy, nap: int, until: int) -> None:
        self.handler.forget_reused()        # the busy loop sets up only unseen flows
        try:
            busy.run(self.messages, nap, until)
        finally:
            self.messages.release()

    def work_nap(self) -> int:
        """The nap after work (ns): ``nap_rtt`` of the flows' median srtt."""
        a, cc = self.cfg.agent, self.cc
        self.nap_ns = rtt_nap(cc.srtt, (cc.flags & FL_CC_ACTIVE) != 0, a.nap_rtt,
                              a.sleep_min_us * 1000, a.sleep_max_us * 1000)
        return self.nap_ns

    def stats(self) -> dict:
        return {"nic": self.nic, "pid": os.getpid(), "nap_us": self.nap_ns // 1000,
                "messages": self.messages.stats(),
                "handler": self.handler.stats(), "sampler_errors": dict(self.samplers.errors),
                "busy_loop": dict(self.handler.busy.c) if self.handler.busy else None,
                "host_actions": dict(self.host.counts) if self.host else {},
                "doorbell": dict(self.bell.c, engine_wakes=self.bell.engine_wakes())
                if self.bell else None}

    def write_stats(self) -> None:
        if not self.stats_file:
            return
        try:
            os.makedirs(os.path.dirname(self.stats_file), exist_ok=True)
            tmp = self.stats_file + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self.stats(), f)
            os.replace(tmp, self.stats_file)
        except OSError as e:
            log.debug("stats file: %s", e)

    def teardown(self) -> None:
        if self.torn_down:
            return
        self.torn_down = True
        self.handler.teardown()
        if self.bell is not None:
            self.bell.close()
        if self.host is not None:
            self.host.teardown()
        if self.stats_file:
            for p in (self.stats_file, self.stats_file + ".tmp"):
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass
        log.info("agent %s stopped: %s", self.nic, json.dumps(self.messages.stats()))
        if self._own_cc:
            self.cc.close()
