"""Network-namespace primitives every other tool builds on.

Names Taurus creates always start with PREFIX, so cleanup never touches
anything else on the machine.
"""
import contextlib
import multiprocessing as mp
import os
import traceback

from pyroute2 import netns as _netns

PREFIX = "taurus-"


def list_ns(prefix: str = PREFIX) -> list[str]:
    return sorted(n for n in _netns.listnetns() if n.startswith(prefix))


def create_ns(name: str) -> None:
    if not name.startswith(PREFIX):
        raise ValueError(f"namespace {name!r} must start with {PREFIX!r}")
    if name in _netns.listnetns():
        raise FileExistsError(f"namespace {name!r} already exists (try `taurus topo clean`)")
    _netns.create(name)


def delete_ns(name: str) -> None:
    if name in _netns.listnetns():
        _netns.remove(name)


@contextlib.contextmanager
def in_ns(name: str | None):
    """Run the body with this thread inside namespace `name` (None: stay).
    Sockets opened here stay bound to that namespace's interfaces after the
    body returns, which is how one engine process serves ports in many
    namespaces."""
    if name is None:
        yield
        return
    _netns.pushns(name)
    try:
        yield
    finally:
        _netns.popns()


def _child(name, fn, args, kwargs, conn):
    try:
        with in_ns(name):
            conn.send((True, fn(*args, **kwargs)))
    except BaseException as e:  # report any failure to the parent
        conn.send((False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    finally:
        conn.close()


def run_in_ns(name: str | None, fn, *args, timeout: float = 30.0, **kwargs):
    """Call fn(*args, **kwargs) in a forked child inside namespace `name` and
    return its (picklable) result; the child is always reaped."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(name, fn, args, kwargs, child), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            raise TimeoutError(f"{getattr(fn, '__name__', fn)} in {name} took over {timeout}s")
        ok, val = parent.recv()
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()
    if not ok:
        raise RuntimeError(f"in namespace {name}: {val}")
    return val


def start_in_ns(name: str | None, fn, *args, **kwargs) -> mp.Process:
    """Start fn in a forked child inside namespace `name` (caller joins it)."""
    ctx = mp.get_context("fork")

    def body():
        with in_ns(name):
            fn(*args, **kwargs)
    proc = ctx.Process(target=body, daemon=True)
    proc.start()
    return proc


def is_root() -> bool:
    return os.geteuid() == 0
