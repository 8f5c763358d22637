"""Is the engine still there?  The engine's heartbeat, and the watch that
agents and apps in other processes keep on it.

The engine writes its identity into the header of its segment (``E``, the
first page) when it starts: pid, the pid's start time, a random generation
id and its clock kind.  A wall-clock engine also beats: a thread of its
process writes a beat counter and the CLOCK_MONOTONIC time every 20 ms
until the engine closes.  The run loop beats too, after each run chunk
(``Engine.run_until``): a thread cannot be relied on alone, because it
needs the interpreter lock to beat, and the engine's thread, which holds
it through each chunk, hands it over only when asked (CPython asks after
5 ms without a switch) -- and a thread that releases it for a moment
between chunks (a ``Popen.poll()``, any I/O) takes it straight back, before
the waiting thread has run, which resets the 5 ms.  Measured in
tests/test_agent_restart.py (whose run loop polls the agent every 5 ms
slice): the beat thread waited 193 ms for the lock with no runqueue wait
of its own (it was woken 36 times, and lost each time), its engine running
38 chunks of 5 ms meanwhile (bench/beat_convoy.py shows the effect alone).
The thread still beats while the engine's own Python between run chunks
takes longer than the watchers' patience (loading compiled code when a
flow first takes a mode, an app's work), so a process that is stopped, or
stuck in compiled code, stops beating.  None of it is on the per-packet
path.

``EngineWatch`` (an agent, ``transport.client.Endpoint``, ``taurus perf
-c``) reads it and calls the engine gone when

- its pid is no longer alive (or is a zombie, or was reused: another start
  time),
- its segment was removed (the engine closed) or replaced (a new engine
  under the same name: another generation id),
- or, only for an engine on the wall clock that has started running
  (``H_SERVING``: before, it may be compiling, which holds the
  interpreter), its beat is older than ``stale_ns`` (1.5 s: the engine's
  process is stopped or hung).  Not less: on a 2-core machine whose
  engine spins on one core while an agent starts on the other, the beat
  was measured 0.4-0.74 s old when only the thread beat (the lock
  hand-over above; 1.0 s in bench/beat_convoy.py).  With the loop
  beating, what is left is the scheduler: the engine's thread runnable
  but not running on a loaded machine, which stops the engine too.  The
  beat's age as a watcher saw it in tests/test_agent_restart.py beside two
  CPU hogs: at most 46 ms while serving (134 ms with the thread alone);
  before serving, which is not judged, 0.41 s (the engine's thread waiting
  0.34 s for a core).

An engine in virtual time does not beat and is never judged by its beat:
paused or slow, it steps with whoever drives it, so only pid and
generation count.

Exit status of the commands that wait on an engine (``taurus agent run``,
``taurus perf -c``): ``EXIT_ENGINE_GONE`` (3).
"""
import logging
import mmap
import os
import sys
import threading
import time

SHM_DIR = "/dev/shm"
MAGIC = 0x5441555255530001  # "TAURUS" v1: an engine segment
HDR_WORDS = 16
# Header words (int64) of an engine segment.
(H_MAGIC, H_MAX_PORTS, H_N_COUNTERS, H_PID, H_GEN, H_CLOCK, H_BEATS, H_BEAT_NS,
 H_PID_START, H_SERVING) = range(10)
CLOCK_VIRTUAL, CLOCK_WALL = 0, 1

BEAT_EVERY_S = 0.02
STALE_NS = 1_500_000_000      # 75 beats missed (below: what a loaded machine delays)
CHECK_EVERY_NS = 50_000_000   # how often a watcher looks (a few syscalls)
EXIT_ENGINE_GONE = 3


def exit_now(status: int = EXIT_ENGINE_GONE) -> None:
    """Leave the process at once, once it has released what it holds
    (processes, files, cgroups): finalizing the interpreter frees the
    compiler's ~10^6 objects one by one, which takes seconds on a loaded
    machine -- past the second a process whose engine is gone has to exit."""
    logging.shutdown()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


class EngineGone(RuntimeError):
    """The engine a process works with is gone; str() says which and why."""

    def __init__(self, name: str, reason: str):
        self.name, self.reason = name, reason
        super().__init__(f"engine {name} is gone ({reason})")


def pid_start(pid: int) -> int:
    """The start time of process `pid` (clock ticks since boot), 0 if it
    does not exist or is a zombie: with the pid, it names one process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return 0
    if fields[0] in (b"Z", b"X"):
        return 0
    return int(fields[19])


class Heartbeat:
    """The engine's side: its identity in `hdr` (the int64 header words of
    its segment), and for a wall-clock engine the beating thread, until
    ``close()``."""

    def __init__(self, hdr, wall: bool):
        pid = os.getpid()
        self.hdr = hdr
        hdr[H_PID] = pid
        hdr[H_PID_START] = pid_start(pid)
        hdr[H_GEN] = int.from_bytes(os.urandom(8), "little") >> 2 | 1
        hdr[H_CLOCK] = CLOCK_WALL if wall else CLOCK_VIRTUAL
        self.beat()
        self._stop = threading.Event()
        self._thread = None
        if wall:
            self._thread = threading.Thread(target=self._run, name="taurus-engine-heartbeat",
                                            daemon=True)
            self._thread.start()

    def serving(self) -> None:
        """The engine runs (Engine.run_until): from now on a stale beat means
        trouble, not the compiler."""
        if not self.hdr[H_SERVING]:
            self.hdr[H_SERVING] = 1

    def beat(self) -> None:
        """One beat; the run loop's after each chunk, the thread's every 20 ms
        (both hold the interpreter lock: one writer at a time)."""
        self.hdr[H_BEAT_NS] = time.monotonic_ns()
        self.hdr[H_BEATS] += 1

    def _run(self) -> None:
        while not self._stop.wait(BEAT_EVERY_S):
            self.beat()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()


def engine_of(segment: str) -> str:
    """The engine name behind one of its segments (``E-cc``, ``E-nic``, ``E``)."""
    for tail in ("-cc", "-nic"):
        if segment.endswith(tail):
            return segment[:-len(tail)]
    return segment


class EngineWatch:
    """A read-only view of engine `name`'s header, checked at most every
    `every_ns`.  ``reason()`` is None while the engine is there, else why
    not; ``check()`` raises EngineGone instead."""

    def __init__(self, name: str, stale_ns: int = STALE_NS, every_ns: int = CHECK_EVERY_NS):
        self.name, self.stale_ns, self.every_ns = name, stale_ns, every_ns
        self.path = os.path.join(SHM_DIR, name)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            st = os.fstat(fd)
            if st.st_size < HDR_WORDS * 8:
                raise ValueError(f"{name} is not a Taurus engine segment")
            self._mm = mmap.mmap(fd, HDR_WORDS * 8, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            os.close(fd)
        self.hdr = memoryview(self._mm).cast("q")
        if self.hdr[H_MAGIC] != MAGIC:
            raise ValueError(f"{name} is not a Taurus engine segment")
        self.ino = (st.st_dev, st.st_ino)
        self.pid, self.gen = int(self.hdr[H_PID]), int(self.hdr[H_GEN])
        self.start = int(self.hdr[H_PID_START])
        self._next = 0
        self.gone: str | None = None

    @classmethod
    def for_segment(cls, segment: str, **kw) -> "EngineWatch | None":
        """The watch on the engine behind `segment`, or None when there is no
        engine segment beside it (a contract segment made by a test double)."""
        try:
            return cls(engine_of(segment), **kw)
        except (OSError, ValueError):
            return None

    def reason(self, now_ns: int | None = None, force: bool = False) -> str | None:
        if self.gone is not None:
            return self.gone
        now = time.monotonic_ns() if now_ns is None else now_ns
        if not force and now < self._next:
            return None
        self._next = now + self.every_ns
        start = pid_start(self.pid)
        if start == 0 or (self.start and start != self.start):
            why = f"pid {self.pid} exited"
        else:
            why = None
            try:
                st = os.stat(self.path)
                if (st.st_dev, st.st_ino) != self.ino:
                    why = f"replaced by a new engine; pid {self.pid} still runs"
            except FileNotFoundError:
                why = f"closed; pid {self.pid} still runs"
            if why is None and self.hdr[H_GEN] != self.gen:
                why = "replaced by a new engine"
            if why is None and self.hdr[H_CLOCK] == CLOCK_WALL and self.hdr[H_SERVING]:
                age = time.monotonic_ns() - int(self.hdr[H_BEAT_NS])
                if age > self.stale_ns:
                    why = f"no heartbeat for {age / 1e9:.1f} s from pid {self.pid}"
        self.gone = why
        return why

    def check(self, now_ns: int | None = None) -> None:
        why = self.reason(now_ns)
        if why is not None:
            raise EngineGone(self.name, why)

    def close(self) -> None:
        self.hdr.release()
        self._mm.close()
