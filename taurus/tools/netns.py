"""Network-namespace primitives every other tool builds on.

Names Taurus creates always start with PREFIX, so cleanup never touches
anything else on the machine.
"""
import ctypes
import errno
import fcntl
import multiprocessing as mp
import os
import signal
import time
import traceback

from pyroute2 import netns as _netns

from taurus.nsenter import in_ns  # noqa: F401  (the tools' entry to a namespace)

PREFIX = "taurus-"
NETNS_DIR = "/var/run/netns"


def _plain_signals_in_forked_child():
    # pyroute2 (namespace creation, sockets in a namespace) and run_in_ns fork
    # helpers that inherit our Python signal handlers.  A KeyboardInterrupt
    # raised in such a helper unwinds through the *parent's* cleanup code
    # (Topology.up, runners) and deletes the parent's namespaces.  A forked
    # child therefore ends on SIGINT/SIGTERM like a plain process; a child
    # that wants handlers installs its own after the fork.
    for s in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(s) != signal.SIG_IGN:
            signal.signal(s, signal.SIG_DFL)


os.register_at_fork(after_in_child=_plain_signals_in_forked_child)


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


# ---------------------------------------------------------------- cleanup
# A namespace outlives `ip netns del` while any process is in it, holds an
# fd to it, or holds a socket created in it (the engine opens its AF_XDP
# sockets from inside each node's namespace while living elsewhere).  These
# helpers find such processes so teardown can end them first.

def write_sysctl(ns: str | None, key: str, value) -> bool:
    """Set net sysctl `key` (e.g. "net/ipv6/conf/default/disable_ipv6")
    inside `ns`; /proc/sys/net follows the opening thread's namespace.
    Returns False when the key does not exist (e.g. IPv6 compiled out)."""
    with in_ns(ns):
        try:
            with open(f"/proc/sys/{key}", "w") as f:
                f.write(str(value))
        except FileNotFoundError:
            return False
    return True


def read_sysctl(ns: str | None, key: str) -> str:
    with in_ns(ns):
        with open(f"/proc/sys/{key}") as f:
            return f.read().strip()


def ns_inodes(names) -> dict[int, str]:
    """nsfs inode -> namespace name for the given named namespaces."""
    out = {}
    for n in names:
        try:
            out[os.stat(os.path.join(NETNS_DIR, n)).st_ino] = n
        except OSError:
            pass
    return out


def proc_cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    """True while pid exists and is not a zombie (a zombie holds nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _ancestors() -> set[int]:
    """This process and its ancestors: never killed by cleanup (a shell that
    ran `taurus topo clean` from inside a namespace must survive)."""
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return out


_SIOCGSKNS = 0x894C          # socket ioctl: fd of the socket's netns
_SYS_pidfd_getfd = 438       # same number on x86_64 and aarch64
_libc = None


def _socket_ns_inode(pidfd: int, fd: int) -> int | None:
    """Inode of the namespace a socket of another process was created in."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    mine = _libc.syscall(_SYS_pidfd_getfd, pidfd, fd, 0)
    if mine < 0:
        return None
    try:
        nsfd = fcntl.ioctl(mine, _SIOCGSKNS)
        try:
            return os.fstat(nsfd).st_ino
        finally:
            os.close(nsfd)
    except OSError:
        return None
    finally:
        os.close(mine)


def ns_holders(names, sockets: bool = True) -> dict[int, str]:
    """pid -> reason, for processes keeping any of these namespaces alive:
    a thread inside it, an fd to it, or (sockets=True) a socket created in
    it.  This process and its ancestors are left out."""
    inodes = ns_inodes(names)
    if not inodes:
        return {}
    skip, found = _ancestors(), {}
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in skip:
            continue
        pid = int(d)
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                ino = os.stat(f"/proc/{pid}/task/{tid}/ns/net").st_ino
                if ino in inodes:
                    found[pid] = f"runs in {inodes[ino]}"
                    break
            if pid in found:
                continue
            socks = []
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("net:["):
                    ino = int(link[5:-1])
                    if ino in inodes:
                        found[pid] = f"holds {inodes[ino]} open"
                        break
                elif link.startswith("socket:"):
                    socks.append(int(fd))
            if pid in found or not sockets or not socks:
                continue
            pidfd = os.pidfd_open(pid)
            try:
                for fd in socks:
                    ino = _socket_ns_inode(pidfd, fd)
                    if ino in inodes:
                        found[pid] = f"has a socket in {inodes[ino]}"
                        break
            finally:
                os.close(pidfd)
        except (OSError, ValueError):  # process exited or not inspectable
            continue
    return found


def kill_pids(pids, grace: float = 1.0) -> list[int]:
    """SIGTERM, wait up to `grace` s, then SIGKILL; returns the pids still
    alive afterwards (normally none)."""
    pids = [p for p in pids if _alive(p)]
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 3.0)):
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            time.sleep(0.02)
            pids = [p for p in pids if _alive(p)]
        if not pids:
            break
    return pids


def remove_ns(name: str) -> None:
    """delete_ns that also copes with a stale entry whose mount is gone."""
    path = os.path.join(NETNS_DIR, name)
    try:
        _netns.remove(name)
    except OSError as e:
        if e.errno != errno.ENOENT:
            raise
    if os.path.exists(path):
        os.unlink(path)
