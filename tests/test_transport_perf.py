"""`taurus perf` between two namespaces over AF_XDP: it reports throughput,
its -J output is iperf3-shaped JSON, and everything is cleaned up."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import needs_root
from taurus.datapath.shm import list_segments
from taurus.tools import netns
from taurus.tools import topology as topo

PREFIX = f"{netns.PREFIX}t{os.getpid()}-"


@needs_root
def test_perf_between_two_namespaces_reports_iperf3_shaped_json():
    t = topo.load(topo.builtin("two_hosts"), prefix=PREFIX)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    base = [sys.executable, "-m", "taurus.cli", "perf", "--topo", "two_hosts",
            "--prefix", PREFIX, "--name", f"{PREFIX}perf"]
    srv = None
    try:
        t.up()
        srv = subprocess.Popen(base + ["-s"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        line = srv.stdout.readline()              # printed once the ports are open
        assert "serving" in line, srv.stderr.read() if srv.poll() is not None else line
        cli = subprocess.run(base + ["-c", "h2", "-t", "2", "-P", "2", "-l", "65536", "-J"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert cli.returncode == 0, cli.stderr
        out = json.loads(cli.stdout)
        assert {"start", "intervals", "end"} <= set(out)
        assert out["start"]["test_start"]["num_streams"] == 2
        end = out["end"]
        assert end["sum_sent"]["bits_per_second"] > 1e6
        assert end["sum_received"]["bytes"] >= end["sum_sent"]["bytes"] > 0
        assert len(out["intervals"]) >= 2
        assert all("bits_per_second" in iv["sum"] for iv in out["intervals"])
        assert end["taurus"]["msg_completion_us"]["n"] > 0
    finally:
        if srv is not None and srv.poll() is None:
            srv.send_signal(signal.SIGINT)
            try:
                srv.wait(20)
            except subprocess.TimeoutExpired:
                srv.kill()
                srv.wait()
        t.down()
    assert not netns.list_ns(PREFIX)
    assert not [s for s in list_segments() if s.startswith(PREFIX)]
