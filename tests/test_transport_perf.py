"""`taurus perf` between two namespaces over AF_XDP: it reports throughput,
its -J output is iperf3-shaped JSON, and everything is cleaned up."""
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import needs_root
from taurus.datapath.shm import list_segments
from taurus.tools import netns
from taurus.tools import topology as topo
from taurus.tools.procs import interrupt

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

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
        # the server with bench/transport.py's bulk settings (the defaults run elsewhere)
        srv = subprocess.Popen(base + ["-s", "--xdp-mode", "generic", "--ack-every", "16",
                                       "--ack-delay-us", "200"], env=env, stdout=subprocess.PIPE,
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
        # RPCs: every request is answered by the server over the reverse flow.
        cli = subprocess.run(base + ["-c", "h2", "-t", "1", "-P", "2", "--rpc", "2000", "-J"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert cli.returncode == 0, cli.stderr
        end = json.loads(cli.stdout)["end"]
        assert end["taurus"]["msg_completion_us"]["n"] >= 20
        assert end["taurus"]["msg_completion_us"]["p50"] > 0
    finally:
        interrupt(srv, 20)
        t.down()
    assert not netns.list_ns(PREFIX)
    assert not [s for s in list_segments() if s.startswith(PREFIX)]


def test_perf_server_answers_rpc_streams_and_drains_the_rest():
    """perf -s's Sink, in-process on the virtual clock: a duplex stream
    opening with ECHO gets every message back whole; a bulk stream beside it
    is drained; the client's reverse half is left to the client."""
    from taurus.tools.perf import ECHO, Sink
    from taurus.transport import listen
    from test_transport_client import IP1, IP2, _engine
    from test_transport_transfer import payload
    eng, d1, d2 = _engine("virtual")
    with eng:
        sink = Sink(eng, ["h1", "h2"])
        eng.on_chunk.append(sink)
        ep = listen(eng, "h1")
        rpc = ep.connect(IP2, duplex=True)
        rpc.send(ECHO)
        bulk = ep.connect(IP2)
        bulk.send(payload(300_000, 1))
        for k in range(5):
            req = payload(2000 + 700 * k, 10 + k)
            rpc.send(req)
            assert rpc.recv(timeout=5) == req
        for _ in range(20):
            eng.run_for(100_000)
        assert sink.bytes == 300_000 + sum(2000 + 700 * k for k in range(5))
        assert len(sink.echo) == 1 and len(sink.bulk) == 1 and not sink.new
        # Closed by the client, both are let go (a long-lived server keeps
        # nothing of them) once all that arrived is counted and answered.
        rpc.tx.close()
        bulk.close()
        for _ in range(40):
            eng.run_for(100_000)
        assert not sink.echo and not sink.bulk and not sink.new
        assert sink.bytes == 300_000 + sum(2000 + 700 * k for k in range(5))
