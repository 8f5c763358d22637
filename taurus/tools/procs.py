"""The one way Taurus starts and stops processes.

- ``taurus.pidfiles.pidfile()`` records a long-lived process (engine, agent,
  run) so that `taurus topo clean` finds it after a crash.
- ``spawn()`` starts a command, optionally inside a namespace, in its own
  process group; ``stop()`` ends it: SIGTERM, a grace period, then SIGKILL of
  the whole group, and always reaps it; ``interrupt()`` ends a child the
  way Ctrl-C would (SIGINT, then SIGKILL past a grace period).
"""
import contextlib
import os
import signal
import subprocess
import time

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


def interrupt(proc: subprocess.Popen, grace_s: float = 20.0) -> int | None:
    """Stop proc as Ctrl-C would (SIGINT, to it alone), so it tears down what
    it made; SIGKILL if it has not exited within grace_s.  Returns its exit
    code (None for no process)."""
    if proc is None:
        return None
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()
