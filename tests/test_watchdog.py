"""The engine's heartbeat and the watch agents and apps keep on it
(datapath/watchdog.py): what the watch calls gone, and, on real packets,
SIGKILL of the engine -> its agent and its app exit within 1 s with the
message and exit status 3."""
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import needs_root
from test_perf_iperf3 import _alive, _children   # a process and its children, by /proc
from taurus.datapath import ccshm as C
from taurus.datapath.engine import Engine
from taurus.datapath.shm import SHM_DIR, list_segments
from taurus.datapath.watchdog import (EXIT_ENGINE_GONE, H_BEAT_NS, H_BEATS, H_PID, EngineGone,
                                      EngineWatch)
from taurus.tools import netns
from taurus.tools import topology as topo

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

PREFIX = f"{netns.PREFIX}t{os.getpid()}w-"


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_watch_calls_an_engine_gone_when_closed_replaced_dead_or_silent():
    name = f"taurus-t{os.getpid()}-wd"
    eng = Engine(clock="virtual", name=name)
    try:
        w = EngineWatch(name)
        assert w.reason(force=True) is None
        eng.run_for(1000)
        # Virtual time: no beat, and a beat long ago is an engine paused between steps.
        eng._hdr[H_BEAT_NS] -= 10 ** 10
        assert w.reason(force=True) is None
        eng.close()
        assert w.reason(force=True) == f"closed; pid {os.getpid()} still runs"
        try:
            w.check()
            raise AssertionError("no EngineGone")
        except EngineGone as e:
            assert str(e) == f"engine {name} is gone (closed; pid {os.getpid()} still runs)"
        w.close()
        eng = Engine(clock="virtual", name=name)
        w = EngineWatch(name)
        eng.close()
        eng = Engine(clock="virtual", name=name)       # a new engine under the same name
        assert w.reason(force=True) == f"replaced by a new engine; pid {os.getpid()} still runs"
        w.close()
    finally:
        eng.close()
    eng = Engine(clock="wall", name=name)
    try:
        w = EngineWatch(name)
        beats = int(eng._hdr[H_BEATS])
        end = time.monotonic() + 5
        while eng._hdr[H_BEATS] < beats + 3 and time.monotonic() < end:
            time.sleep(0.01)
        assert eng._hdr[H_BEATS] >= beats + 3             # it beats on its own
        eng._heartbeat.close()                            # as if the process hung...
        eng._hdr[H_BEAT_NS] -= 2 * 10 ** 9
        assert w.reason(force=True) is None               # ... while compiling: not judged
        eng.run_for(1000)                                 # serving, and each run chunk beats
        assert w.reason(force=True) is None
        eng._hdr[H_BEAT_NS] -= 2 * 10 ** 9                # hung since: judged
        assert re.fullmatch(r"no heartbeat for 2\.\d s from pid \d+", w.reason(force=True))
        w.close()
        dead = _dead_pid()
        eng._hdr[H_PID] = dead
        w = EngineWatch(name)
        assert w.reason(force=True) == f"pid {dead} exited"
        w.close()
    finally:
        eng.close()
    assert EngineWatch.for_segment(name + "-cc") is None      # no engine: no watch
    assert not os.path.exists(os.path.join(SHM_DIR, name))


def _wait_exit(procs: dict, t0: float, timeout: float) -> dict:
    """Seconds from t0 until each process exited (None: still running)."""
    out = dict.fromkeys(procs)
    end = t0 + timeout
    while time.monotonic() < end and any(v is None for v in out.values()):
        for k, p in procs.items():
            if out[k] is None and p.poll() is not None:
                out[k] = time.monotonic() - t0
        time.sleep(0.002)
    return out


@needs_root
def test_sigkill_of_the_engine_ends_its_agent_and_app_within_a_second(tmp_path):
    """perf -s (the engine) serves two namespaces; `taurus agent run` on h2's
    slot, `taurus perf -c -C dctcp` (with its own agent for h1) sending.
    SIGKILL perf -s: both exit within 1 s, status 3, saying why; the forked
    agent goes too; pid and stats files are removed."""
    t = topo.load(topo.builtin("two_hosts"), prefix=PREFIX)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    name = f"{PREFIX}perf"
    base = [sys.executable, "-m", "taurus.cli", "perf", "--topo", "two_hosts",
            "--prefix", PREFIX, "--name", name]
    procs = {}
    try:
        t.up()
        srv = procs["engine"] = subprocess.Popen(
            base + ["-s", "--xdp-mode", "generic"], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        line = srv.stdout.readline()                  # printed once the ports are open
        assert "serving" in line, line or srv.stderr.read()     # EOF: it exited
        agent = procs["agent"] = subprocess.Popen(
            [sys.executable, "-m", "taurus.cli", "agent", "run", "--nic", name + "-cc",
             "--slot", "1", "--pid-dir", str(tmp_path), "--stats-dir", str(tmp_path)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        cc = C.CcShm.attach(name + "-cc", nic=1)
        end = time.monotonic() + 300                  # a cold Numba cache compiles the agent
        while int(cc.ctl[C.CTL_AGENT_PID]) != agent.pid:
            assert agent.poll() is None, agent.communicate()
            assert time.monotonic() < end
            time.sleep(0.05)
        cli = procs["app"] = subprocess.Popen(
            base + ["-c", "h2", "--from", "h1", "-t", "60", "-C", "dctcp"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while "sec" not in (line := cli.stdout.readline()):      # the first interval
            assert line, cli.stderr.read()
        forked = _children(cli.pid)
        assert forked and all(_alive(p) for p in forked)
        assert os.path.exists(tmp_path / f"agent-{agent.pid}.pid")
        t0 = time.monotonic()
        srv.kill()
        srv.wait()
        took = _wait_exit({"agent": agent, "app": cli}, t0, 10)
        a_out, a_err = agent.communicate()
        c_out, c_err = cli.communicate()
        gone = f"engine {name} is gone (pid {srv.pid} exited); exiting"
        assert took["agent"] is not None and took["agent"] < 1.0, (took, a_err)
        assert took["app"] is not None and took["app"] < 1.0, (took, c_err)
        assert agent.returncode == EXIT_ENGINE_GONE, a_err
        assert cli.returncode == EXIT_ENGINE_GONE, c_err
        assert f"taurus agent: {gone}" in a_err, a_err
        assert f"taurus perf: {gone}" in c_err, c_err
        end = time.monotonic() + 2
        while any(_alive(p) for p in forked) and time.monotonic() < end:
            time.sleep(0.01)
        assert not any(_alive(p) for p in forked)
        assert not list(tmp_path.iterdir())           # pid file and stats file removed
        print(f"exit after SIGKILL: agent {took['agent']:.3f} s, app {took['app']:.3f} s")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        t.down()
        for s in list_segments(PREFIX):               # the killed engine's, by design
            os.unlink(os.path.join(SHM_DIR, s))
    assert not netns.list_ns(PREFIX)
