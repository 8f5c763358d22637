"""A topology a run brought up (Topology.up(owner=True)) belongs to that run
while it lives: bringing it up again names the run.  Once the run is gone
(SIGKILL), the next up takes down what it left (namespaces, its segments)
and builds afresh, where it used to fail with "namespace ... already
exists" until `taurus topo clean`."""
import logging
import os
import subprocess
import sys

import pytest

from conftest import needs_root
from taurus.datapath.shm import list_segments
from taurus.tools import netns
from taurus.tools import topology as topo

pytestmark = pytest.mark.serial     # namespaces: runs alone (conftest.py)

PREFIX = f"{netns.PREFIX}o{os.getpid()}-"
ENV = dict(os.environ, PYTHONPATH=os.getcwd())
RUN = r"""
import sys, time
from taurus.datapath.shm import Shm
from taurus.tools import topology as topo
topo.load(topo.builtin("two_hosts"), prefix=sys.argv[1]).up(owner=True)
seg = Shm.create(sys.argv[1] + "seg", 4096)      # what a run's engine holds
print("up", flush=True)
time.sleep(600)
"""


@needs_root
def test_a_dead_runs_topology_is_reclaimed_and_a_live_ones_refused(caplog):
    t = topo.load(topo.builtin("two_hosts"), prefix=PREFIX)
    run = subprocess.Popen([sys.executable, "-c", RUN, PREFIX], env=ENV,
                           stdout=subprocess.PIPE, text=True)
    try:
        assert run.stdout.readline().strip() == "up"
        assert PREFIX + "seg" in list_segments()
        with pytest.raises(topo.TopologyError, match=f"run by pid {run.pid}"):
            t.up(owner=True)
        assert len(netns.list_ns(PREFIX)) == 2           # the refusal touched nothing
        run.kill()
        run.wait(10)
        with caplog.at_level(logging.WARNING, "taurus.topo"):
            t.up(owner=True)
        assert f"(pid {run.pid}) is gone" in caplog.text
        assert PREFIX + "seg" not in list_segments()     # the dead run's segment went too
        assert len(netns.list_ns(PREFIX)) == 2 and os.path.exists(t._owner_path())
        t.down()
        assert not netns.list_ns(PREFIX) and not os.path.exists(t._owner_path())
        assert not [s for s in os.listdir("/dev/shm") if PREFIX.rstrip("-") in s]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)
        topo.clean(prefix=PREFIX)


@needs_root
def test_a_topology_brought_up_by_hand_stays_up():
    """`taurus topo up` has no owner: up again is refused (as before), even
    with no process in it."""
    t = topo.load(topo.builtin("two_hosts"), prefix=PREFIX)
    try:
        t.up()
        with pytest.raises(topo.TopologyError, match="already exists: the topology is up"):
            topo.load(topo.builtin("two_hosts"), prefix=PREFIX).up(owner=True)
        assert len(netns.list_ns(PREFIX)) == 2
    finally:
        t.down()
        topo.clean(prefix=PREFIX)
    assert not netns.list_ns(PREFIX)
