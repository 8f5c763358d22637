"""The one way Taurus starts and stops processes.

- ``pidfile()``: a long-lived Taurus process (engine, agent) records itself in
  /run/taurus/<role>-<pid>.pid, so `taurus topo clean` can find it after a
  crash; the file goes away when the process exits normally.
- ``spawn()`` starts a command, optionally inside a namespace, in its own
  process group; ``stop()`` ends it: SIGTERM, a grace period, then SIGKILL of
  the whole group, and always reaps it.
"""
import atexit
import contextlib
import os
import signal
import subprocess
import time

PID_DIR = "/run/taurus"


@contextlib.contextmanager
def pidfile(role: str, pid_dir: str = PID_DIR):
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


def spawn(cmd: list[str], netns: str | None = None, **kw) -> subprocess.Popen:
    """Start cmd (inside namespace `netns` if given) in a new process group."""
    if netns:
        cmd = ["ip", "netns", "exec", netns] + list(cmd)
    return subprocess.Popen(cmd, start_new_session=True, **kw)


def stop(proc: subprocess.Popen, grace_s: float = 3.0) -> int:
    """Terminate proc and its group; returns its exit code."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait()
