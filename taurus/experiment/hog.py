"""Host load: a CPU/memory hog in a cgroup inside a host's namespace.

`stress-ng` when installed (tool = "auto" or "stress-ng"), else a small
built-in hog (`python -m taurus.experiment.hog --cpu N --memory BYTES`):
spinning workers and one worker streaming over a buffer.  Each host load
gets a cgroup v2 `taurus-run-<pid>-<host>` (cpu.max / memory.max when asked
and the controller is enabled); stop() ends the processes and removes it.

In virtual time a CPU/memory hog cannot slow anything (there is no host
CPU in the model): the runner records it as skipped.  A load's ``share``
is the hog of the host model instead (devices/nic/host.py, any clock): the
runner gives it to the host's NIC (nic_hog), which drains the host buffer
at the rest of host_bw from start to stop.  In virtual time an agent on
that host acts on the model's hog (ModelHostActions): an MBA limit of p
percent leaves the hog p% of its share, as MBA throttles the hog's memory
traffic; a CPU limit has nothing to act on and fails.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import multiprocessing
import os
import shutil
import sys
import time

from taurus.agent.host_actions import ActionResult, cgroup2_root
from taurus.tools import procs

log = logging.getLogger("taurus.run")


class ModelHostActions:
    """The agent's host actions (agent/host_actions.HostActions' mba and
    cpu_max) on the host model's hog of one host, in virtual time."""

    def __init__(self, runner, host: str, load):
        self.r, self.host, self.load = runner, host, load
        self.counts = {}             # action -> [ok, failed], as HostActions
        self.log: list[tuple] = []   # (engine ns, percent): the MBA limits applied

    def mba(self, percent, domain: int = 0, group: str = "") -> ActionResult:
        r, x = self.r, self.r.x
        pct = min(max(int(percent), 10), 100)          # resctrl's range
        now = r.eng.now()
        start = max(now, r.t0 + self.load.start)
        stop = max(start, r.t0 + (x.duration if self.load.stop is None else self.load.stop))
        from taurus.datapath.devices.nic.setup import nic_hog
        nic_hog(r.eng, r.nics[self.host], self.load.share * pct / 100, start, stop)
        self.counts.setdefault("mba", [0, 0])[0] += 1
        self.log.append((now, pct))
        return ActionResult(True, f"{self.host}: the hog keeps {pct}% of its share")

    def cpu_max(self, quota_us, period_us: int = 100_000) -> ActionResult:
        self.counts.setdefault("cpu", [0, 0])[1] += 1
        return ActionResult(False, "virtual time: the host model has no CPU to limit")

    def teardown(self) -> list:
        return []


class HostLoads:
    def __init__(self, x, clock: str):
        self.x, self.clock = x, clock
        self.pending = [h for h in x.host_load if h.cpu or h.memory]   # processes to run
        self.running: list[tuple] = []       # (load, proc, cgroup dir or None, t_stop)
        self.notes: list[str] = []
        self.t0 = 0

    def start(self, t0: int) -> None:
        self.t0 = t0
        if self.clock == "virtual" and self.pending:
            self.notes.append("host_load skipped: virtual time has no host CPU to load "
                              "(run with --clock wall)")
            self.pending = []
        self.poll(0)

    def poll(self, now: int) -> None:
        for h in [h for h in self.pending if h.start <= now]:
            self.pending.remove(h)
            self.running.append(self._spawn(h))
        for item in [it for it in self.running if it[3] is not None and now >= it[3]]:
            self._end(item)
            self.running.remove(item)

    def _spawn(self, h):
        tool = h.tool
        if tool == "auto":
            tool = "stress-ng" if shutil.which("stress-ng") else "builtin"
        if tool == "stress-ng":
            if not shutil.which("stress-ng"):
                raise RuntimeError("host_load tool = \"stress-ng\" but stress-ng is not installed "
                                   "(apt-get install stress-ng, or tool = \"builtin\")")
            cmd = ["stress-ng", "--quiet"]
            if h.cpu:
                cmd += ["--cpu", str(h.cpu)]
            if h.memory:
                cmd += ["--vm", "1", "--vm-bytes", str(h.memory)]
        else:
            cmd = [sys.executable, "-m", "taurus.experiment.hog", "--cpu", str(h.cpu),
                   "--memory", str(h.memory)]
        cg = self._cgroup(h)
        p = procs.spawn(cmd, netns=self.x.topo.ns_of(h.host), stdout=open(os.devnull, "w"),
                        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        if cg:
            with contextlib.suppress(OSError):
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write(str(p.pid))
        self.notes.append(f"host_load on {h.host}: {' '.join(cmd)} (pid {p.pid}"
                          f"{', cgroup ' + cg if cg else ''})")
        return (h, p, cg, h.stop)

    def _cgroup(self, h):
        root = cgroup2_root()
        if not root:
            self.notes.append("no cgroup2 hierarchy: host load runs without a cgroup")
            return None
        cg = os.path.join(root, f"taurus-run-{os.getpid()}-{h.host}")
        os.makedirs(cg, exist_ok=True)
        for fname, val in (("cpu.max", h.cpu_max and f"{int(h.cpu_max * 100000)} 100000"),
                           ("memory.max", h.memory_max and str(h.memory_max))):
            if val:
                try:
                    with open(os.path.join(cg, fname), "w") as f:
                        f.write(val)
                except OSError as e:
                    self.notes.append(f"{fname} not set on {cg}: {e.strerror}")
        return cg

    def _end(self, item) -> None:
        h, p, cg, _ = item
        procs.stop(p, grace_s=1.0)
        if cg:
            with contextlib.suppress(OSError):
                os.rmdir(cg)

    def stop(self) -> None:
        for item in self.running:
            self._end(item)
        self.running = []
        self.pending = []


# ---------------------------------------------------------------- the built-in hog

def _spin():
    while True:
        pass


def _stream(nbytes: int):
    buf = bytearray(nbytes)
    half = nbytes // 2
    while True:       # memcpy back and forth: memory bandwidth, not just residency
        buf[:half] = buf[half:2 * half]
        buf[half:2 * half] = buf[:half]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="taurus-hog")
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--memory", type=int, default=0)
    a = ap.parse_args(argv)
    workers = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(a.cpu)]
    if a.memory:
        workers.append(multiprocessing.Process(target=_stream, args=(a.memory,), daemon=True))
    for w in workers:
        w.start()
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    sys.exit(main())
