"""Shared fixtures.  Real-packet tests make their own namespaces (prefix
taurus-t<pid>-) and remove them whatever happens.

`make test` runs the suite in two passes: the virtual-time tests on both
cores (pytest-xdist, ``-m "not serial"``), then the ``serial`` ones alone,
one at a time: real packets, the wall clock, timeouts and rates that a
neighbour's load would bend.  A ``netns`` test, and one skipped without
root, is ``serial`` too."""
import os

import pytest
from pyroute2 import IPRoute

from taurus.tools import netns

# The session's warmers (below) compile beside the tests: an engine built on a
# cold cache starts no warmer of its own (datapath/first_compile.py).
os.environ["TAURUS_WARMING"] = "1"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")


@pytest.fixture
def veth_ns():
    """A namespace holding one veth pair (ifaces 'va' and 'vb', both up,
    MTU 1500, tx checksum/TSO not offloaded).  Yields (ns_name, 'va', 'vb')."""
    name = f"{netns.PREFIX}t{os.getpid()}-veth"
    netns.delete_ns(name)
    netns.create_ns(name)
    try:
        with IPRoute(netns=name) as ipr:
            ipr.link("add", ifname="va", kind="veth", peer="vb")
            for ifn in ("va", "vb", "lo"):
                idx = ipr.link_lookup(ifname=ifn)[0]
                ipr.link("set", index=idx, state="up", mtu=1500 if ifn != "lo" else 65536)
        yield name, "va", "vb"
    finally:
        netns.delete_ns(name)


def _needs_root(item) -> bool:
    return any("root" in str(m.kwargs.get("reason", "")) for m in item.iter_markers("skipif"))


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("netns") or _needs_root(item):
            item.add_marker(pytest.mark.serial)


_warmers = []


def pytest_sessionstart(session):
    """Compile the engine's loop (taurus/datapath/warm.py) and the
    algorithms (taurus/cc_algorithms/warm.py) on the other core while this
    process runs the first tests and compiles the engine itself; a warm
    cache makes them no-ops.  Under pytest-xdist only the controller
    starts them."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for module in ("taurus.datapath.warm", "taurus.cc_algorithms.warm"):
        _warmers.append(subprocess.Popen([sys.executable, "-m", module], cwd=root,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))


def pytest_sessionfinish(session):
    import subprocess
    for w in _warmers:
        if w.poll() is None:
            w.terminate()               # the engine's warmer removes its shared memory
        try:
            w.wait(timeout=20)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()
