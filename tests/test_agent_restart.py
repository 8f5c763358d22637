"""An agent killed and restarted, with real processes: a wall-clock engine
(in this process) carries a DCTCP flow in agent mode across a 500 Mbit/s ECN
bottleneck; `taurus agent run` is a separate process.  SIGKILL it -> within
the heartbeat timeout the engine caps the flow at the fallback rate and the
flow keeps going; a new agent -> it takes over (fallback ends, decisions
change again).  Processes and the engine are cleaned up even on failure."""
import os
import signal
import sys
import time

import pytest

from taurus.datapath import ccshm as C
from taurus.datapath.devices.nic.app import WouldBlock
from taurus.datapath.devices.nic.setup import (add_flow, nic_post, nic_take_delivered,
                                               set_flow_mode)
from taurus.datapath.engine import Engine
from taurus.tools.fabric import build_virtual, nic_host
from taurus.tools.procs import spawn, stop
from taurus.tools.topology import Topology

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

HB_TIMEOUT_NS = 50_000_000
FALLBACK_BPS = 2_000_000     # far below what the flow gets (the wall engine here: ~400 Mbit/s)
CHUNK = bytes(1 << 20)


def topo():
    t = Topology("restart")
    t.add_host("h1")
    t.add_host("h2")
    t.add_switch("s1")
    t.add_link("h1", "s1", rate="10Gbit", delay="2us")
    t.add_link("s1", "h2", rate="500Mbit", delay="2us", buffer="1MB",
               features={"ecn": {"k": "10KB"}})
    return t


def start_agent(eng, slot, tmp_path, tag):
    cfg = tmp_path / "agent.toml"
    cfg.write_text('[agent]\nalgorithm = "dctcp"\nmss = 1024\nline_rate_bps = 10e9\n')
    return spawn([sys.executable, "-m", "taurus.agent.cli", "run", "--nic", eng.name + "-cc",
                  "--slot", str(slot), "--config", str(cfg), "--pid-dir", str(tmp_path / tag),
                  "--stats-dir", str(tmp_path / tag)],
                 env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))


class App:
    """Keeps the flow's send ring full and drains what h2 delivers, between
    engine slices: the flow never runs out of data however long a phase."""

    def __init__(self, eng, h1, h2, src_ip, f):
        self.eng, self.h1, self.h2, self.src, self.f = eng, h1, h2, src_ip, f
        self.delivered = 0

    def __call__(self):
        try:
            while True:
                nic_post(self.eng, self.h1, self.f, CHUNK)
        except WouldBlock:
            pass
        self.delivered += len(nic_take_delivered(self.eng, self.h2, self.src, self.f))


def run_until(eng, cond, timeout_s):
    """Run the engine in 5 ms slices until cond() or the timeout; True if cond()."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        eng.run_for(5_000_000)
        if cond():
            return True
    return False


def test_sigkill_falls_back_and_a_new_agent_takes_over(tmp_path):
    t = topo()
    procs = []
    eng = Engine(clock="wall", max_flows=16, max_nics=2)
    try:
        size = 8 << 20
        fab = build_virtual(eng, t, host_factory=lambda *a: nic_host(*a, rx_buf_bytes=size))
        h1 = fab["hosts"]["h1"]
        slot = int(eng.E.devs.regs[h1, 0])
        cc = eng.cc
        cc.ctls[slot, C.CTL_HB_TIMEOUT_NS] = HB_TIMEOUT_NS
        cc.ctls[slot, C.CTL_FALLBACK_RATE] = FALLBACK_BPS
        f = add_flow(eng, h1, t.mac_of("h2"), t.ip_of("h2"), cwnd_bytes=20 * 1024,
                     buf_bytes=size)
        h2 = fab["hosts"]["h2"]
        app = App(eng, h1, h2, t.ip_of("h1"), f)

        def delivered():
            return app.delivered

        procs.append(start_agent(eng, slot, tmp_path, "a1"))
        a1 = procs[-1]
        end = time.monotonic() + 60          # the agent's start-up (imports) is slow
        while cc.ctls[slot, C.CTL_AGENT_PID] != a1.pid and a1.poll() is None:
            assert time.monotonic() < end, "agent did not start"
            time.sleep(0.02)
        set_flow_mode(eng, f, "agent")       # the agent has said which events it wants
        eng.on_chunk.append(app)             # between the engine's run chunks
        # 1. the agent runs the flow: heartbeat, decisions written
        assert run_until(eng, lambda: cc.version[f] >= 5 or a1.poll() is not None, 60)
        assert a1.poll() is None, "agent exited"
        assert cc.ctls[slot, C.CTL_AGENT_PID] == a1.pid and cc.flags[f] & C.FL_CC_ACTIVE
        assert cc.period_ns[f, C.CLS_ACCUMULABLE] == -C.RTT_UNIT     # DCTCP: once per RTT
        assert eng.E.rep.fallback[slot] == 0

        # 2. SIGKILL: fallback within the heartbeat timeout, the flow keeps going
        a1.send_signal(signal.SIGKILL)
        a1.wait(10)
        t_kill = time.monotonic_ns()
        last_hb = int(cc.ctls[slot, C.CTL_HEARTBEAT_NS])
        assert run_until(eng, lambda: eng.E.rep.fallback[slot] == 1, 5)
        waited = time.monotonic_ns() - t_kill
        # In the engine's own time: fallback came at its first poll after the
        # last heartbeat aged past the timeout; we see it at the end of the
        # 5 ms slice.  (Wall time from the kill also counts any time this
        # process was descheduled on a loaded machine, so it is only printed.)
        age = eng.now() - last_hb
        assert HB_TIMEOUT_NS < age <= HB_TIMEOUT_NS + 3 * 5_000_000 + 20_000_000, age
        assert cc.ctls[slot, C.CTL_FALLBACKS] == 1
        v_dead, d0, t0 = int(cc.version[f]), delivered(), eng.now()
        eng.run_for(200_000_000)
        d1, t1 = delivered(), eng.now()
        rate = (d1 - d0) * 8e9 / (t1 - t0)
        assert d1 > d0, "the flow stopped while the agent was dead"
        assert rate <= 1.2 * FALLBACK_BPS, rate            # capped at the fallback rate
        assert int(cc.version[f]) == v_dead                 # nobody decides

        # 3. a new agent takes over: fallback ends, decisions change again
        procs.append(start_agent(eng, slot, tmp_path, "a2"))
        a2 = procs[-1]
        assert run_until(eng, lambda: (eng.E.rep.fallback[slot] == 0
                                       and cc.version[f] >= v_dead + 5) or a2.poll() is not None,
                         60)
        assert a2.poll() is None, "second agent exited"
        assert cc.ctls[slot, C.CTL_AGENT_PID] == a2.pid
        assert cc.ctls[slot, C.CTL_FALLBACKS] == 1          # one episode
        d2, t2 = delivered(), eng.now()
        eng.run_for(100_000_000)
        after = (delivered() - d2) * 8e9 / (eng.now() - t2)
        print(f"fallback after {waited / 1e6:.1f} ms (timeout {HB_TIMEOUT_NS / 1e6:.0f} ms), "
              f"{rate / 1e6:.1f} Mbit/s while dead (cap {FALLBACK_BPS / 1e6:.0f}), "
              f"{after / 1e6:.1f} Mbit/s after the new agent took over")
        assert after > 2 * FALLBACK_BPS

        assert stop(a2, grace_s=10) == 0
    finally:
        for p in procs:
            stop(p, grace_s=0.5)
        eng.close()
