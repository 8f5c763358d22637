"""Named shared-memory segments in /dev/shm, private to their owner.

Every segment is named ``taurus-...`` (so ``taurus topo clean`` can find
leftovers after a crash), created 0600 with O_EXCL, and unlinked by its
creator on close or at interpreter exit.  Readers attach read-only by name.
"""
import atexit
import mmap
import os

import numpy as np

SHM_DIR = "/dev/shm"
SHM_PREFIX = "taurus-"


class Shm:
    def __init__(self, name: str, fd: int, size: int, owner: bool, writable: bool):
        self.name, self.size, self.owner = name, size, owner
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
        try:
            self._mm = mmap.mmap(fd, size, mmap.MAP_SHARED, prot)
        finally:
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
        fd = os.open(cls._path(name), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(fd, size)
        except BaseException:
            os.close(fd)
            os.unlink(cls._path(name))
            raise
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
        # The mmap is closed when the last numpy view is gone.
        self._mm = None


def list_segments(prefix: str = SHM_PREFIX) -> list[str]:
    try:
        return sorted(n for n in os.listdir(SHM_DIR) if n.startswith(prefix))
    except FileNotFoundError:
        return []
