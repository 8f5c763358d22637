"""Pid files: a long-lived Taurus process (engine, agent, run) records itself
in /run/taurus/<role>-<pid>.pid (or $TAURUS_PID_DIR: tests and benchmarks
keep theirs apart from other users' processes), so that `taurus topo clean`
can find it after a crash; the file goes away when the process exits
normally.  The file holds the pid and the namespace prefix the process
works under (the default's, "taurus-", unless it serves a topology brought
up with another): `topo clean --prefix P` stops only processes under P."""
import atexit
import contextlib
import os

PID_DIR = os.environ.get("TAURUS_PID_DIR", "/run/taurus")
PREFIX = "taurus-"                  # tools/netns.py's default namespace prefix


@contextlib.contextmanager
def pidfile(role: str, pid_dir: str | None = None, prefix: str = PREFIX):
    pid_dir = pid_dir or PID_DIR
    os.makedirs(pid_dir, exist_ok=True)
    path = os.path.join(pid_dir, f"{role}-{os.getpid()}.pid")
    with open(path, "w") as f:
        f.write(f"{os.getpid()} {prefix}\n")

    def remove():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    atexit.register(remove)
    try:
        yield path
    finally:
        remove()


def read(path: str) -> tuple[int | None, str]:
    """(pid, prefix) of a pid file; (None, "") when it is unreadable.  A
    file of one word (an older writer's) is under the default prefix."""
    try:
        with open(path) as f:
            words = f.read().split()
        return int(words[0]), (words[1] if len(words) > 1 else PREFIX)
    except (OSError, ValueError, IndexError):
        return None, ""
