"""The heartbeat's interpreter-lock hand-over, without the engine
(taurus/datapath/watchdog.py): the main thread holds the lock in compiled
code for a chunk (like engine_run), then takes a short Python step; a
thread like watchdog.Heartbeat's beats every 20 ms.  Prints the beat's age
(as a watcher would see it) per variant:

    python bench/beat_convoy.py [seconds]

- plain: the step releases nothing; CPython asks the main thread for the
  lock after 5 ms without a switch, and it hands it over after its chunk.
- poll: the step calls os.waitpid(..., WNOHANG), as Popen.poll() does: a
  microsecond release, and the main thread takes the lock back before the
  waiting thread runs -- a switch, so nobody asks again for 5 ms.
- poll+loopbeat: poll, and the main thread beats after each chunk (what
  Engine.run_until does).
Run it beside CPU hogs (``python -c 'while 1: pass' &``) to see the tail."""
import os
import subprocess
import sys
import threading
import time

import numba as nb


@nb.njit
def spin(n):                        # holds the GIL, like engine_run
    s = 0
    for i in range(n):
        s += i ^ (s >> 3)
    return s


def run(variant: str, secs: float, chunk_ms: float = 5.0) -> list:
    spin(1000)
    t = time.perf_counter()
    spin(10_000_000)
    n = int(chunk_ms / 1e3 / ((time.perf_counter() - t) / 10_000_000))
    child = subprocess.Popen(["sleep", str(secs + 5)])
    last, ages, stop = [time.monotonic_ns()], [], threading.Event()

    def beat():
        now = time.monotonic_ns()
        ages.append(now - last[0])
        last[0] = now

    def beater():
        while not stop.wait(0.02):
            beat()

    th = threading.Thread(target=beater, daemon=True)
    th.start()
    end = time.monotonic() + secs
    while time.monotonic() < end:
        spin(n)
        if "loopbeat" in variant:
            beat()
        if "poll" in variant:
            os.waitpid(child.pid, os.WNOHANG)
    stop.set()
    th.join()
    child.kill()
    child.wait()
    return sorted(ages)


if __name__ == "__main__":
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
    for v in ("plain", "poll", "poll+loopbeat"):
        a = run(v, secs)
        print(f"{v:14s} beat age p50 {a[len(a) // 2] / 1e6:5.1f}  p99 {a[int(len(a) * .99)] / 1e6:5.1f}"
              f"  max {a[-1] / 1e6:6.1f} ms  ({len(a)} beats)")
