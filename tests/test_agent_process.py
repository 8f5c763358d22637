"""The agent as a real process: heartbeat while it runs, SIGTERM -> exit 0
within 2 s, pidfile, stats file and the cgroup it created removed."""
import os
import signal
import subprocess
import sys
import time

import pytest

from taurus.testing.fake_datapath import FakeDatapath, record
from taurus.agent.host_actions import cgroup2_root
from taurus.datapath import ccshm as C

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)


def wait(cond, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "python"])
def test_agent_process_runs_and_stops_cleanly(tmp_path, jit):
    root = cgroup2_root()
    cg = f"taurus-t{os.getpid()}-agent{int(jit)}"
    use_cg = root is not None and os.geteuid() == 0 and os.access(root, os.W_OK)
    cfg = tmp_path / "agent.toml"
    cfg.write_text(f'[agent]\nalgorithm = "dctcp"\njit = {str(jit).lower()}\n'
                   'params = { alpha_init = 0.0 }\n'
                   + (f'[host]\ncgroup = "{cg}"\ncreate_cgroup = true\n' if use_cg else ""))
    with FakeDatapath(f"t{os.getpid()}-proc{int(jit)}", max_flows=8, ring_capacity=256) as dp:
        p = subprocess.Popen([sys.executable, "-m", "taurus.agent.cli", "run", "--nic", dp.name,
                              "--config", str(cfg), "--pid-dir", str(tmp_path),
                              "--stats-dir", str(tmp_path)])
        try:
            # start-up: imports, and on a cold Numba cache compiling the agent's steps
            assert wait(lambda: dp.cc.ctl[C.CTL_AGENT_PID] == p.pid or p.poll() is not None, 60)
            assert p.poll() is None, "agent exited at start"
            hb0 = int(dp.cc.ctl[C.CTL_HEARTBEAT_NS])
            assert wait(lambda: dp.cc.ctl[C.CTL_HEARTBEAT_NS] > hb0, 2)
            assert os.path.exists(tmp_path / f"agent-{p.pid}.pid")
            if use_cg:
                assert os.path.isdir(os.path.join(root, cg))
            w = 10 * 4096
            dp.push([record(1, C.EV_ACK, 1, (w, 10, 0, w))])          # all of it ECN-echoed
            assert wait(lambda: dp.cc.version[1] == 1, 5)
            assert dp.cc.cwnd[1] == int(w * (1 - 1 / 32))
            assert wait(lambda: (tmp_path / f"agent-{dp.name}.json").exists(), 5)
            t0 = time.monotonic()
            p.send_signal(signal.SIGTERM)
            assert p.wait(timeout=2) == 0 and time.monotonic() - t0 < 2
            hb = int(dp.cc.ctl[C.CTL_HEARTBEAT_NS])
            time.sleep(0.05)
            assert dp.cc.ctl[C.CTL_HEARTBEAT_NS] == hb        # writes nothing more
            assert not os.path.exists(tmp_path / f"agent-{p.pid}.pid")
            assert not (tmp_path / f"agent-{dp.name}.json").exists()
            if use_cg:
                assert not os.path.exists(os.path.join(root, cg))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            if use_cg and os.path.isdir(os.path.join(root, cg)):
                os.rmdir(os.path.join(root, cg))     # only after a failure
