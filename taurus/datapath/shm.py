"""Named shared-memory segments in /dev/shm, private to their owner.

Every segment is named ``taurus-...`` (so ``taurus topo clean`` can find
leftovers after a crash), created 0600 with O_EXCL, and unlinked by its
creator on close or at interpreter exit.  Readers attach read-only by name.

The creator holds an exclusive ``flock`` on the segment for as long as it
lives, so liveness is the kernel's to tell: a segment whose lock is free
was left by an owner that died without unlinking it (kill -9, a crash).
``create`` reclaims such a segment and refuses one a live owner holds with
a one-line error that names it; ``reclaim_stale`` removes every one
(``taurus topo down``).  Others that lock a segment's file for their own
ends take POSIX record locks (``fcntl.lockf``), which flock never blocks.
"""
import atexit
import contextlib
import fcntl
import mmap
import os

import numpy as np

from taurus.errors import SegmentBusy
from taurus.flocks import abandoned, holder

SHM_DIR = "/dev/shm"
SHM_PREFIX = "taurus-"


class Shm:
    def __init__(self, name: str, fd: int, size: int, owner: bool, writable: bool):
        self.name, self.size, self.owner = name, size, owner
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
        self._lock_fd = fd if owner else -1       # the owner's flock lives with this fd
        try:
            self._mm = mmap.mmap(fd, size, mmap.MAP_SHARED, prot)
        finally:
            if not owner:
                os.close(fd)
        self._writable = writable
        if owner:
            atexit.register(self.close)

    @staticmethod
    def _path(name: str) -> str:
        if not name.startswith(SHM_PREFIX) or "/" in name:
            raise ValueError(f"shared-memory name must start with {SHM_PREFIX!r} and have no '/': {name!r}")
        return os.path.join(SHM_DIR, name)

    @classmethod
    def create(cls, name: str, size: int) -> "Shm":
        """A new segment; one of that name left by a dead owner is removed
        first, one of a live owner raises SegmentBusy naming it."""
        path = cls._path(name)
        # Made and locked under a private name, then linked to its own: the
        # name never shows an unlocked segment, which another process's
        # reclaim (a new run, `topo down`) would take for a dead owner's.
        tmp = os.path.join(SHM_DIR, f".{name}.{os.getpid()}.{os.urandom(4).hex()}")
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.ftruncate(fd, size)
            try:
                os.link(tmp, path)
            except FileExistsError:
                if not _reclaim(path):
                    raise SegmentBusy(f"shared-memory segment {name} is in use by "
                                      f"{holder(path)}; stop it, or `taurus topo clean`") from None
                os.link(tmp, path)
        except BaseException:
            os.close(fd)
            raise
        finally:
            os.unlink(tmp)
        return cls(name, fd, size, owner=True, writable=True)

    @classmethod
    def attach(cls, name: str, writable: bool = False) -> "Shm":
        path = cls._path(name)
        fd = os.open(path, os.O_RDWR if writable else os.O_RDONLY)
        size = os.fstat(fd).st_size
        return cls(name, fd, size, owner=False, writable=writable)

    def array(self, offset: int, dtype, shape) -> np.ndarray:
        a = np.ndarray(shape, dtype=dtype, buffer=self._mm, offset=offset)
        if not self._writable:
            a.flags.writeable = False
        return a

    def close(self) -> None:
        """Unmap (views made earlier stay valid until they are dropped) and,
        for the creator, unlink the name."""
        if self.owner:
            self.owner = False
            try:
                os.unlink(self._path(self.name))
            except FileNotFoundError:
                pass
            os.close(self._lock_fd)               # the name is gone first: no one reclaims it
            self._lock_fd = -1
        # The mmap is closed when the last numpy view is gone.
        self._mm = None


def _reclaim(path: str) -> bool:
    """Remove the segment at path if its owner is gone (its lock is free);
    False if a live owner holds it."""
    try:
        with abandoned(path) as fd:
            if fd is None:
                return False
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    except FileNotFoundError:
        pass
    return True


def reclaim_stale(prefix: str = SHM_PREFIX) -> list[str]:
    """Remove every segment whose owner is gone (and a half-made one that
    create's owner died before naming); returns their names."""
    names = list_segments(prefix) + list_segments("." + prefix)
    return [n for n in names if _reclaim(os.path.join(SHM_DIR, n))]


def list_segments(prefix: str = SHM_PREFIX) -> list[str]:
    try:
        return sorted(n for n in os.listdir(SHM_DIR) if n.startswith(prefix))
    except FileNotFoundError:
        return []
