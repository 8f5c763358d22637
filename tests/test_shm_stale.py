"""Shared-memory segments outlive a killed owner no longer: a new owner
reclaims the name, a live owner's segment is refused with a one-line error
naming it, and reclaim_stale removes every segment whose owner is gone."""
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import needs_root
from taurus.datapath.shm import SHM_DIR, Shm, list_segments, reclaim_stale
from taurus.errors import SegmentBusy
from taurus.tools import netns
from taurus.tools import topology as topo

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

OWNER = ("import sys, time; from taurus.datapath.shm import Shm; "
         "s = Shm.create(sys.argv[1], 4096); print('up', flush=True); time.sleep(60)")


def _owner(name):
    """A process that creates segment ``name`` and waits (killed by the test)."""
    p = subprocess.Popen([sys.executable, "-c", OWNER, name], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "up"
    return p


@pytest.fixture
def name():
    n = f"taurus-test-stale-{os.getpid()}"
    yield n
    try:
        os.unlink(os.path.join(SHM_DIR, n))
    except FileNotFoundError:
        pass


def test_a_killed_owners_segment_is_reclaimed_by_the_next_owner(name):
    p = _owner(name)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert os.path.exists(os.path.join(SHM_DIR, name))      # kill -9 left it behind
    s = Shm.create(name, 8192)
    assert s.size == 8192 and s.array(0, "u1", (8192,)).sum() == 0
    s.close()
    assert not os.path.exists(os.path.join(SHM_DIR, name))


def test_a_live_owners_segment_is_refused_naming_the_owner(name):
    p = _owner(name)
    try:
        with pytest.raises(SegmentBusy, match=f"{name} is in use by pid {p.pid} "):
            Shm.create(name, 4096)
        assert name not in reclaim_stale(name)
        assert os.path.exists(os.path.join(SHM_DIR, name))   # untouched
    finally:
        p.kill()
        p.wait()
    assert reclaim_stale(name) == [name]                     # SIGKILL: the owner left it
    assert not os.path.exists(os.path.join(SHM_DIR, name))


def test_an_owner_keeps_its_segment_until_it_closes_it(name):
    s = Shm.create(name, 4096)
    assert name not in reclaim_stale(name)
    r = Shm.attach(name)                                     # readers take no lock
    assert r.size == 4096
    r.close()
    s.close()
    t0 = time.monotonic()
    s2 = Shm.create(name, 4096)                              # the name is free at once
    s2.close()
    assert time.monotonic() - t0 < 1


def test_a_command_meeting_a_live_owners_segment_says_so_in_one_line(name, capsys,
                                                                     monkeypatch):
    """Any taurus command whose segment a live process holds: one line, exit 1."""
    from taurus.cli import main
    from taurus.tools import algorithms_cli
    p = _owner(name)
    monkeypatch.setattr(algorithms_cli, "cmd_algorithms", lambda args: Shm.create(name, 4096))
    try:
        assert main(["algorithms"]) == 1
    finally:
        p.kill()
        p.wait()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{name} is in use by pid {p.pid}" in err[0], err


@needs_root
def test_topo_down_under_a_running_server_leaves_no_segment_and_the_next_start_works():
    """`taurus perf -s` runs; the topology goes down under it; nothing of it
    stays in /dev/shm; a server killed with SIGKILL does not stop the next
    one of the same name from starting."""
    prefix = f"{netns.PREFIX}s{os.getpid()}-"
    name = f"{prefix}perf"
    t = topo.load(topo.builtin("two_hosts"), prefix=prefix)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    # AF_PACKET: a server killed with SIGKILL leaves its XDP program attached,
    # which the next one refuses (a stale state this test is not about)
    base = [sys.executable, "-m", "taurus.cli", "perf", "--topo", "two_hosts", "--prefix", prefix,
            "--name", name, "-s", "--port-kind", "af_packet"]

    def serve():
        srv = subprocess.Popen(base, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        line = srv.stdout.readline()
        assert "serving" in line, srv.stderr.read() if srv.poll() is not None else line
        return srv
    try:
        t.up()
        srv = serve()
        assert list_segments(name)
        t.down()
        srv.wait(timeout=10)
        assert list_segments(name) == []
        t.up()
        srv = serve()
        srv.kill()                                  # SIGKILL: its segments stay behind
        srv.wait()
        assert list_segments(name)
        srv = serve()                               # ... and the next server reclaims them
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=10)
    finally:
        t.down()
    assert list_segments(name) == []
