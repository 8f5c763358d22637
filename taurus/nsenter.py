"""Entering a network namespace, for the few lines of the datapath and tools
that open sockets in one (the rest of namespace handling is tools/netns.py)."""
import contextlib

from pyroute2 import netns as _netns


@contextlib.contextmanager
def in_ns(name: str | None):
    """Run the body with this thread inside namespace `name` (None: stay).
    Sockets opened here stay bound to that namespace's interfaces after the
    body returns, which is how one engine process serves ports in many
    namespaces."""
    if name is None:
        yield
        return
    if name not in _netns.listnetns():
        # pyroute2 would silently create it; a typo must be an error.
        raise FileNotFoundError(f"network namespace {name!r} does not exist")
    _netns.pushns(name)
    try:
        yield
    finally:
        _netns.popns()
