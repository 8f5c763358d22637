"""Shared fixtures.  Real-packet tests make their own namespaces (prefix
taurus-t<pid>-) and remove them whatever happens."""
import os

import pytest
from pyroute2 import IPRoute

from taurus.tools import netns

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


_warmer = None


def pytest_sessionstart(session):
    """Compile the algorithms on the other core while this process compiles
    the engine (taurus/cc_algorithms/warm.py); a warm cache makes it a no-op."""
    global _warmer
    import subprocess
    import sys
    _warmer = subprocess.Popen([sys.executable, "-m", "taurus.cc_algorithms.warm"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_sessionfinish(session):
    if _warmer is not None and _warmer.poll() is None:
        _warmer.kill()
        _warmer.wait()
