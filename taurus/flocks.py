"""Owner locks: a file whose creator holds an flock on it for as long as it
lives (shared-memory segments, datapath/shm.py; a run's topology owner file,
tools/topology.py).  The kernel drops the lock when the owner dies, however
it dies, so a free lock means the owner is gone and what it left may be
removed; a held one names a live owner (/proc/locks)."""
import contextlib
import fcntl
import os


@contextlib.contextmanager
def abandoned(path: str):
    """The file at path, open, if its owner is gone: yields its fd while this
    process holds the lock, or None if a live owner holds it.  Raises
    FileNotFoundError if there is no such file."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
        else:
            yield fd
    finally:
        os.close(fd)


def holder(path: str) -> str:
    """"pid N (command)" of the process holding path's flock, from /proc/locks."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as f:
            for line in f:
                w = line.split()            # N: FLOCK ADVISORY WRITE pid maj:min:inode ...
                if len(w) > 5 and w[1] == "FLOCK":
                    dev_ino = w[5].split(":")
                    if len(dev_ino) == 3 and int(dev_ino[2]) == st.st_ino:
                        pid = int(w[4])
                        with open(f"/proc/{pid}/cmdline", "rb") as c:
                            cmd = c.read().replace(b"\0", b" ").decode(errors="replace").strip()
                        return f"pid {pid} ({cmd[:60]})"
    except (OSError, ValueError):
        pass
    return "a live process"
