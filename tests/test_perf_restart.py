"""`taurus perf -s` SIGKILLed (no `topo clean` after) and started again under
the same name, on the same namespaces: it serves, where it used to fail
because the dead engine's XDP programs stayed attached to the veths (the
interface holds them, not a file) and its segments stayed in /dev/shm.  A
client then moves data through it, every byte verified."""
import os
import re
import signal
import subprocess
import sys

import pytest

from conftest import needs_root
from taurus.datapath.shm import list_segments
from taurus.tools import netns
from taurus.tools import topology as topo

pytestmark = pytest.mark.serial     # real packets: runs alone (conftest.py)

PREFIX = f"{netns.PREFIX}r{os.getpid()}-"
ENV = dict(os.environ, PYTHONPATH=os.getcwd())
BASE = [sys.executable, "-m", "taurus.cli", "perf", "--topo", "two_hosts", "--prefix", PREFIX,
        "--name", f"{PREFIX}perf"]


def _serve():
    p = subprocess.Popen(BASE + ["-s", "--xdp-mode", "generic"], env=ENV, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stdout.readline()
    assert "serving" in line, p.stderr.read() if p.poll() is not None else line
    return p


@needs_root
def test_a_killed_perf_server_starts_again_on_the_same_namespaces():
    t = topo.load(topo.builtin("two_hosts"), prefix=PREFIX).up()
    procs = []
    try:
        procs.append(_serve())
        assert [s for s in list_segments() if s.startswith(f"{PREFIX}perf")]
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait(10)
        procs.append(_serve())          # same name, same interfaces
        r = subprocess.run(BASE + ["-c", "h2", "-t", "1", "--verify"], env=ENV,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        acked = int(re.search(r"verify: flow \d+: (\d+) payload bytes ACKed", r.stdout)[1])
        line = procs[1].stdout.readline()
        m = re.match(r"taurus perf: verified \S+ pdc \d+: (\d+) bytes, 0 wrong", line)
        assert m and int(m[1]) >= acked > 0, line
        procs[1].send_signal(signal.SIGINT)
        assert procs[1].wait(30) == 0
        assert "replaced XDP program" in procs[1].stderr.read()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        t.down()
        topo.clean(prefix=PREFIX)
    assert not [s for s in list_segments() if s.startswith(PREFIX.rstrip("-"))]
