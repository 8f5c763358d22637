"""Pid files: a long-lived Taurus process (engine, agent, run) records itself
in /run/taurus/<role>-<pid>.pid (or $TAURUS_PID_DIR: tests and benchmarks
keep theirs apart from other users' processes), so that `taurus topo clean`
can find it after a crash; the file goes away when the process exits
normally."""
import atexit
import contextlib
import os

PID_DIR = os.environ.get("TAURUS_PID_DIR", "/run/taurus")


@contextlib.contextmanager
def pidfile(role: str, pid_dir: str | None = None):
    pid_dir = pid_dir or PID_DIR
    os.makedirs(pid_dir, exist_ok=True)
    path = os.path.join(pid_dir, f"{role}-{os.getpid()}.pid")
    with open(path, "w") as f:
        f.write(f"{os.getpid()}\n")

    def remove():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    atexit.register(remove)
    try:
        yield path
    finally:
        remove()
