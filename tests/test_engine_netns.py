"""Real packets: Scapy-crafted frames sent from namespace h1 cross the
engine's forwarder (ports opened in s1's namespace) and arrive in h2, over
AF_XDP and over AF_PACKET.  Everything is removed afterwards, also when the
engine process is SIGKILLed."""
import os
import signal
import socket
import subprocess
import sys
import time

import multiprocessing as mp

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from taurus.datapath.engine import Engine, attach_stats
from taurus.datapath.shm import list_segments
from taurus.tools import netns, topology as topo
from taurus.tools.fabric import attach_switches

from conftest import needs_root

pytestmark = [needs_root, pytest.mark.netns]
PREFIX = f"taurus-t{os.getpid()}e-"


def _line(prefix=PREFIX):
    t = topo.Topology("line", prefix=prefix)
    t.add_host("h1", ip="10.9.0.1/24")
    t.add_host("h2", ip="10.9.0.2/24")
    t.add_switch("s1")
    t.add_link("h1", "s1")
    t.add_link("h2", "s1")
    return t


@pytest.fixture
def line():
    t = _line()
    try:
        yield t.up()
    finally:
        t.down()
        topo.clean(prefix=PREFIX)


def _frames(t, n, ttl=64):
    src, dst = t.mac_of("h1"), t.mac_of("h2")
    return [bytes(Ether(src=src, dst=dst) / IP(src=t.ip_of("h1"), dst=t.ip_of("h2"), ttl=ttl)
                  / UDP(sport=1000 + i, dport=4793) / (b"taurus%05d" % i + bytes(i * 7)))
            for i in range(n)]


def _receive(ifname, n, timeout_s):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((ifname, 0))
    s.settimeout(0.2)
    got, deadline = [], time.monotonic() + timeout_s
    while len(got) < n and time.monotonic() < deadline:
        try:
            f, addr = s.recvfrom(4096)
        except socket.timeout:
            continue
        if addr[2] != socket.PACKET_OUTGOING and b"taurus" in f:
            got.append(f)
    s.close()
    return got


def _send(ifname, frames):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    for f in frames:
        s.send(f)
        time.sleep(0.001)
    s.close()


@pytest.mark.parametrize("kind", ["af_xdp", "af_packet"])
def test_frames_cross_the_forwarder(line, kind):
    frames = _frames(line, 50)
    with Engine(clock="wall") as eng:
        attach_switches(eng, line, port_kind=kind)
        assert {c["kind"] for c in eng.counters().values()} == {kind}
        q = mp.get_context("fork").SimpleQueue()
        rxp = netns.start_in_ns(line.ns_of("h2"), lambda: q.put(_receive("h2-eth0", 50, 10)))
        time.sleep(0.3)
        txp = netns.start_in_ns(line.ns_of("h1"), _send, "h1-eth0", frames)
        eng.run_for(1_500_000_000)
        txp.join(5)
        got = q.get()
        print(eng.counters(), [h.stats() for h in eng._handles if hasattr(h, "stats")])
        rxp.join(5)
        assert got == _frames(line, 50, ttl=63)     # routed: one hop off the TTL (Scapy's checksum)
        c = eng.counters()
        assert c["s1-eth0"]["rx_pkts"] >= 50 and c["s1-eth1"]["tx_pkts"] >= 50
        assert c["s1-eth1"]["tx_drop"] == 0


def test_sigkilled_engine_is_cleaned_up(line):
    """An engine process killed with SIGKILL leaves its pidfile, shared memory
    and (through its sockets) the namespaces; `topo clean` removes them all."""
    name = f"taurus-eng-t{os.getpid()}"
    pid_dir = f"/tmp/{PREFIX}pids"
    script = f"""
import sys, time
sys.path.insert(0, {os.path.dirname(__file__)!r})
from test_engine_netns import _line
from taurus import pidfiles
from taurus.datapath.engine import Engine
from taurus.tools.fabric import attach_switches
with pidfiles.pidfile("engine", pid_dir={pid_dir!r}, prefix={PREFIX!r}):
    eng = Engine(clock="wall", name={name!r})
    attach_switches(eng, _line({PREFIX!r}), port_kind="auto")
    print("ready", flush=True)
    eng.run_forever()
"""
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        assert attach_stats(name)["pid"] == p.pid
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        assert name in list_segments()          # a crash leaves these behind ...
        assert os.listdir(pid_dir) == [f"engine-{p.pid}.pid"]
        removed, left = topo.clean(prefix=PREFIX, pid_dir=pid_dir)
        removed2, left2 = topo.clean(prefix="taurus-eng-t%d" % os.getpid())
        assert not left and not left2
        assert name not in list_segments()      # ... and clean removes them
        assert netns.list_ns(PREFIX) == []
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
