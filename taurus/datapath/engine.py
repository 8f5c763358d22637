"""The engine: one Numba poll loop servicing every device and port of a
process, run-to-completion, in the shape of DPDK's l2fwd main loop:

    timers due  ->  each device: rx-burst -> process -> tx-burst  ->  each port: service

Under the wall clock it busy-polls; under the virtual clock, when an
iteration does no work, time jumps to the next due timer or link arrival.
The loop runs in chunks (about 20 ms of wall time, or a bounded number of
virtual iterations) and returns to Python in between, so signals are handled
and control requests take effect.

Counters, the control block and port names live in one shared-memory segment
so that other processes (``taurus engine stats``, tests, the agent) can read
them while the engine runs; captured frames in another, ``<name>-cap``
(ports/capture.py), which a capture process attaches to.
"""
import gc
import itertools
import logging
import os
import signal
import time
from collections import namedtuple

import numba as nb
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from .byref import pin, unpin
from .pinned import STATE_T, at_collect, at_inject, at_pktgen_start, state_at
from .clock import WALL, clock_advance_to, clock_is_virtual, clock_now, clock_resync, make_clock
from .devices.dispatch import device_poll, device_timer
from .first_compile import FirstCompile
from .devices import pktgen
from .devices.nic import setup as nic_setup
from .devices.nic.poll import make_nic_state
from .devices.nic.state import DR_SLOT
from .devices.switch import setup as switch_setup
from .devices.switch.poll import make_switch_state
from .ctlblock import (IDLE_ITERS, IDLE_NS, ITERS, N_CTL, NDEVS, NOW, NPORTS, OUT_AT, PAUSE_MAX,
                       PAUSE_NS, PAUSES, POLL_ALL, POLLS, REASON, RUN_NS, SEP_NS, SEP_PER_MSG_PS, STATE, STOP, VAG_AT, VAG_DUE,
                       VAG_N, VAG_STEP, WAKE_PUBLISH, YIELD)
from .devices.table import KIND_NAMES as DEV_KIND_NAMES, L2FWD, NIC, PKTGEN, SWITCH, make_devices
from .mbuf import make_pool, mbuf_in_use
from .ports import memlink
from .ports.capture import CaptureShm
from .ports.common import COUNTER_NAMES, INF, KIND_NAMES, MEM, N_COUNTERS, XDP
from .ports.dispatch import port_next_event, port_service
from .ports.memlink import arrivals_due, mem_due_ports, mem_next_arrival
from .ports.table import make_ports
from .ccnative import NativeCC, n_algorithms, no_native
from .ccshm import CcShm
from .sampler import (NEXT as SMP_NEXT, ROWS as SMP_ROWS, TAKEN as SMP_TAKEN, make_sampler,
                      rows_for, sampler_drain, sampler_start, sampler_take)
from .report import OWNER_REPORT, make_report_state, report_engine, report_timer
from .shm import Shm
from .vagents import make_vagents, vagents_from, vagents_step
from .hot import hot, hot_stage
from . import watchdog
from .watchdog import H_MAGIC, H_MAX_PORTS, H_N_COUNTERS, H_PID, MAGIC
from .wheel import (LATE_MAX, make_wheel, slot_shift, wheel_alloc, wheel_expire, wheel_next_due,
                    wheel_quiet)

log = logging.getLogger("taurus.engine")

Engine_ = namedtuple("Engine_", ["clk", "pool", "ports", "wheel", "devs", "ctl",
                                 "burst", "expired", "sw", "nic", "rep", "alg", "smp", "vag",
                                 "loop"])
"""Everything the loop touches, passed to every device as `E`.  `sw` and
`nic` hold the state of every switch / host NIC of this engine (each kind
sizes its own arrays; see devices/switch/ and devices/nic/); `rep` is the
report engine with its views on the agent contract segment (report.py);
`alg` the native (in-engine) algorithms handed to the engine (ccnative.py);
`smp` the sampler of the run's time series (sampler.py); `vag` the agents
the loop steps itself (vagents.py); `loop` the loop's own scratch
(LoopScratch)."""

ST_INIT, ST_RUNNING, ST_STOPPED = 0, 1, 2
# Why engine_run returned.
R_UNTIL, R_STOP, R_IDLE, R_CHUNK, R_AGENT = 1, 2, 3, 4, 5
REASONS = {R_UNTIL: "until", R_STOP: "stopped", R_IDLE: "idle", R_CHUNK: "chunk",
           R_AGENT: "agent"}

VIRTUAL_CHUNK_ITERS = 1 << 20
_ENGINE_IDS = itertools.count()
NAME_LEN = 32


@hot
def _next_event(E, now):
    """The earliest future event.  Frames already due at a port that no
    device polls (an open end) wait for Python, so they are not events."""
    t = min(wheel_next_due(E.wheel), E.smp.meta[SMP_NEXT])
    if E.ctl[VAG_DUE] != 0 and E.ctl[VAG_DUE] < t:
        t = E.ctl[VAG_DUE]
    a = mem_next_arrival(E.ports)
    if a > now:                   # the heap's top: the next arrival at any port
        return min(t, a)
    for p in range(E.ctl[NPORTS]):    # a frame waits at the top (an open end's): ask each
        e = port_next_event(E.ports, p, now)
        if e < t:
            t = e
    return t


@hot
def _quiet_kind(kind):
    """A kind whose poll does nothing without a frame, a timer or Python
    (checked kind by kind; a kind not listed is polled every pass)."""
    return kind == NIC or kind == SWITCH or kind == L2FWD or kind == PKTGEN


@hot
def _frame_driven(kind):
    """A kind whose poll only takes the frames due at its ports (a switch:
    its timers do their own work, and what its RX burst leaves stays at the
    top of the arrivals heap): polled only when a frame is due, not after
    its timers nor again after a poll that did work."""
    return kind == SWITCH


@hot_stage
def _set_due(due, d):
    due[d >> 6] |= np.uint64(1) << np.uint64(d & 63)


@hot_stage
def _all_due(due):
    for k in range(due.shape[0]):
        due[k] = ~np.uint64(0)      # bits past the last device too: _due_from stops at nd


@hot_stage
def _or_due(due, mask):
    for k in range(due.shape[0]):
        due[k] |= mask[k]


@hot
def _due_from(due, d, nd):
    """The first device from d on that is due (nd: none): a bitmap of 64
    devices a word, so a pass over hundreds of quiet devices costs a few
    words, not a test per device."""
    k = d >> 6
    if k >= due.shape[0]:
        return nd
    word = due[k] & (~np.uint64(0) << np.uint64(d & 63))
    while word == 0:
        k += 1
        if k >= due.shape[0]:
            return nd
        word = due[k]
    r = (k << 6) + np.int64(trailing_zeros(word))
    return r if r < nd else nd


@hot_stage
def _none_due(due):
    for k in range(due.shape[0]):
        if due[k] != 0:
            return False
    return True


@hot
def _settled(E, now, due):
    """After a pass that did work: would the next pass at `now` do none?
    So when no device is due, no frame is due at any port, and nothing
    asks the loop to stop or yield; _next_event then says whether a timer,
    a sample or an agent step is due at `now`."""
    return (_none_due(due) and mem_next_arrival(E.ports) > now and E.ctl[STOP] == 0
            and E.ctl[YIELD] == 0)


@hot
def _mark_arrived(E, now, pdev, arrived, due):
    """Mark due the devices with a frame due at one of their ports."""
    for k in range(mem_due_ports(E.ports, now, arrived)):
        d = pdev[arrived[k]]
        if d >= 0:
            _set_due(due, d)


@hot
def _clock(clk):
    """clock_now, compiled without reference counting (in _loop it would be
    inlined with it)."""
    return clock_now(clk)


@hot
def _advance(clk, t):
    clock_advance_to(clk, t)


@nb.njit(cache=True)
def engine_pin(state):
    """A heap copy of the state tuple (byref.pin): its address."""
    return pin(state)


@nb.njit(cache=True)
def engine_unpin(addr, state):
    unpin(addr, state)


@nb.njit(cache=True)
def engine_run(addr, until, chunk_ns):
    """Run the engine whose state engine_pin put at `addr` until `until`
    (ns), a stop request, idleness (virtual clock only), or the end of a
    chunk; returns the reason.  Every device call below gets a pointer to
    the state (byref.py), not ~150 arrays."""
    return _loop(state_at(addr), until, chunk_ns)


LoopScratch = namedtuple("LoopScratch", ["due", "wake", "nicdev", "pdev", "arrived"])
"""The loop's own arrays, sized by the engine's limits and filled at the
start of each run (_scratch_init): ``due`` a bitmap of the devices to poll
this pass, ``wake`` those due after an agent's decisions, ``nicdev`` the
device of each NIC slot, ``pdev`` the device of each port, ``arrived`` the
ports with a frame due (memlink.mem_due_ports' stack and answer)."""


def make_loop_scratch(max_devices: int, max_ports: int, max_nics: int) -> LoopScratch:
    w = max(1, (max_devices + 63) >> 6)
    return LoopScratch(due=np.zeros(w, np.uint64), wake=np.zeros(w, np.uint64),
                       nicdev=np.full(max(1, max_nics), -1, np.int64),
                       pdev=np.full(max(1, max_ports), -1, np.int64),
                       arrived=np.zeros(2 * max_ports + 2, np.int64))


@hot_stage
def _scratch_init(E, nd):
    """Which devices to poll.  On the wall clock, all, every pass: other
    processes (apps, agents) give them work at any time.  On the virtual
    clock, only Python gives work besides frames and timers, and only
    between runs: so all in the first pass, then a quiet kind only if its
    last poll did work, one of its timers fired, or a frame waits at one of
    its ports (a switch: only the last, _frame_driven).  A skipped poll
    would have done nothing, so the run is the one polling every device
    every pass gives.  A decision may free a flow on any NIC: after one,
    every device but the frame-driven ones is due (``wake``); a report timer
    concerns one NIC slot: after one, that NIC is due (``nicdev``).  The
    devices with a frame due are found at the top of the memory links'
    arrivals heap (``pdev``: the device of each port)."""
    L = E.loop
    kinds = E.devs.kind
    for k in range(L.due.shape[0]):
        L.due[k] = ~np.uint64(0)      # bits past the last device too: _due_from stops at nd
        L.wake[k] = 0
    for k in range(L.nicdev.shape[0]):
        L.nicdev[k] = -1
    for k in range(L.pdev.shape[0]):
        L.pdev[k] = -1
    for d in range(nd):
        if not _frame_driven(kinds[d]):
            _set_due(L.wake, d)
        n = E.devs.regs[d, DR_SLOT]
        if kinds[d] == NIC and 0 <= n < L.nicdev.shape[0]:
            L.nicdev[n] = d
        for k in range(E.devs.nports[d]):
            L.pdev[E.devs.ports[d, k]] = d


@hot_stage
def _reason_to_return(E, now, until, due):
    """Before a pass: the sample due at `now` is taken (the state before
    anything acts at `now`), then whether to return (R_*; 0: go on).  The
    in-loop agents due now are stepped; one that needs Python ends the run."""
    ctl = E.ctl
    if now >= E.smp.meta[SMP_NEXT]:
        sampler_take(E, now)
    if now >= until:
        return R_UNTIL
    if ctl[STOP] != 0:
        return R_STOP
    if ctl[YIELD] != 0:
        ctl[YIELD] = 0
        return R_CHUNK
    if ctl[VAG_DUE] != 0 and now >= ctl[VAG_DUE]:
        if vagents_step(E, now) >= 0:
            return R_AGENT                # one needs Python (vagents.py)
        _or_due(due, E.loop.wake)         # a decision may free a flow on any NIC
    return 0


@hot_stage
def _fire_timers(E, now, nd, due):
    """The timers due: the report engine's and the devices'; each makes its
    device due.  Returns how many fired."""
    # Asked inline first: most passes find no timer due.
    W = E.wheel
    n = 0 if wheel_quiet(W.meta, now) else wheel_expire(W, now, E.expired, E.expired.shape[0])
    nicdev, kinds = E.loop.nicdev, E.devs.kind
    for k in range(n):
        t = E.expired[k]
        owner = W.owner[t]
        if owner == OWNER_REPORT:
            slot = report_timer(report_engine(E), W.arg[t], now)
            if 0 <= slot < nicdev.shape[0] and nicdev[slot] >= 0:
                _set_due(due, nicdev[slot])
        else:
            device_timer(E, owner, t, now)
            if 0 <= owner < nd and not _frame_driven(kinds[owner]):
                _set_due(due, owner)
    return n


@hot_stage
def _poll_devices(E, now, nd, due, skip):
    """Poll each device due, in order; returns (work done, polls).  A frame
    a poll sends that is due at once makes its device due in this pass, so
    a device polled later sees it, as asking each of its ports did."""
    sent = E.ports.arr        # the arrivals heap; its last word: frames sent due at once
    last = sent.shape[0] - 1
    kinds = E.devs.kind
    if skip and arrivals_due(sent, now):
        _mark_arrived(E, now, E.loop.pdev, E.loop.arrived, due)
    work = 0
    polls = 0
    d = _due_from(due, 0, nd)
    while d < nd:
        sent_now = sent[last]
        w = device_poll(E, d, now)
        if skip and sent[last] != sent_now and arrivals_due(sent, now):
            _mark_arrived(E, now, E.loop.pdev, E.loop.arrived, due)
        polls += 1
        work += w
        kd = kinds[d]
        if skip and (w == 0 and _quiet_kind(kd) or _frame_driven(kd)):
            due[d >> 6] &= ~(np.uint64(1) << np.uint64(d & 63))   # else it stays due
        d = _due_from(due, d + 1, nd)
    return work, polls


@hot_stage
def _service_ports(E, now):
    """The real ports' own service (TX completions, fill rings)."""
    work = 0
    for p in range(E.ctl[NPORTS]):
        if E.ports.kind[p] != MEM:
            work += port_service(E.ports, E.pool, p, now)
    return work


@hot_stage
def _skip_ahead(E, now, until, due):
    """Virtual clock, after a pass that did work: if the next pass would find
    nothing to do at `now` (a fabric's switch timers make half of all
    passes so), the clock moves on at once; True if it did (the pass it
    skipped counts as idle)."""
    if not _settled(E, now, due):
        return False
    nxt = _next_event(E, now)
    if now < nxt < INF:
        _advance(E.clk, min(nxt, until))
        return True
    return False


@hot
def _loop(E, until, chunk_ns):
    """Pass after pass: timers -> devices -> ports (the real ones, on the wall
    clock), until `until`, a stop, a yield, an agent that needs Python, the
    end of a chunk or (virtual clock) nothing left to do; returns why.  On
    the virtual clock an idle pass moves the clock to the next event."""
    clk, ctl = E.clk, E.ctl
    virtual = clock_is_virtual(clk)
    skip = virtual and ctl[POLL_ALL] == 0
    nd = ctl[NDEVS]
    _scratch_init(E, nd)
    due = E.loop.due[:max(1, (nd + 63) >> 6)]
    start = prev = _clock(clk)
    if not virtual:
        _paused(ctl, start)
    it = idle = idle_ns = polls = 0
    prev_idle = False
    while True:
        now = _clock(clk)
        if prev_idle:
            idle_ns += now - prev
        prev = now
        reason = _reason_to_return(E, now, until, due)
        if reason != 0:
            break
        work = _fire_timers(E, now, nd, due)
        w, p = _poll_devices(E, now, nd, due, skip)
        work += w
        polls += p
        if not virtual:                      # virtual: memory links only, which need no service
            work += _service_ports(E, now)
        it += 1
        prev_idle = work == 0
        if work == 0:
            idle += 1
            if virtual:
                nxt = _next_event(E, now)
                if nxt >= INF:
                    reason = R_IDLE
                    break
                _advance(clk, min(nxt, until))
                continue
        if virtual:
            reason = R_CHUNK
            if it >= VIRTUAL_CHUNK_ITERS:
                break
            if skip and _skip_ahead(E, now, until, due):
                it += 1
                idle += 1
                prev_idle = True
        elif (it & 255) == 0 and now - start >= chunk_ns:
            reason = R_CHUNK
            break
    end = _clock(clk)
    _account(ctl, start, end, it, idle, idle_ns, polls, reason)
    if not virtual:
        ctl[OUT_AT] = end
    return reason


@hot_stage
def _paused(ctl, start):
    """Count the time since the loop last returned as a pause (ctlblock.py
    OUT_AT), if counting."""
    if ctl[OUT_AT] > 0:
        gap = start - ctl[OUT_AT]
        ctl[PAUSES] += 1
        ctl[PAUSE_NS] += gap
        if gap > ctl[PAUSE_MAX]:
            ctl[PAUSE_MAX] = gap


@hot_stage
def _account(ctl, start, end, it, idle, idle_ns, polls, reason):
    """The run's counts into the control block (ctlblock.py)."""
    ctl[NOW] = end
    ctl[RUN_NS] += end - start
    ctl[ITERS] += it
    ctl[IDLE_ITERS] += idle
    ctl[IDLE_NS] += idle_ns
    ctl[POLLS] += polls
    ctl[REASON] = reason


def _layout(max_ports: int):
    """Byte offsets of the shared segment: header (watchdog.py: identity and
    heartbeat), ctl, counters, names, kinds."""
    hdr = 0
    ctl = hdr + watchdog.HDR_WORDS * 8
    cnt = ctl + N_CTL * 8
    names = cnt + max_ports * N_COUNTERS * 8
    kinds = names + max_ports * NAME_LEN
    size = kinds + max_ports * 8
    return hdr, ctl, cnt, names, kinds, size


def _native_or_default(native):
    """The native algorithms, checked before the loop compiles: a NativeCC of
    other array types would compile the loop anew (minutes), not fail."""
    default = no_native()
    if native is None:
        return default
    if nb.typeof(native) != nb.typeof(default):
        raise TypeError(f"native: expected a NativeCC of contiguous float64 st, par (1-d), "
                        f"int64 tab (2-d), flow_alg (1-d), float64 lim (2-d) and its scratch "
                        f"(ccnative.native_cc, or cc_algorithms.native.NativeTable.native, "
                        f"makes one), got {nb.typeof(native)}")
    return native


_frozen = False


def _freeze_compiler_objects() -> None:
    """The compiler leaves ~10^6 long-lived objects behind; a full garbage
    collection walks them all (~0.1 s), and apps between run chunks allocate
    enough to trigger one every second or so: 17% of a wall-clock run's CPU.
    They are never garbage, so after the first engine's compile they leave
    the collector's view.  Once per process, after a collection, so that no
    garbage of the moment (a closed engine's arrays) is frozen with them."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
        gc.freeze()


class Engine:
    """Build an engine from Python, then run it.

    >>> eng = Engine(clock="virtual")
    >>> a, b = eng.add_mem_link("h1", "fwd0", delay_ns=1000)
    >>> c, d = eng.add_mem_link("fwd1", "h2")
    >>> eng.add_l2fwd(b, c)
    >>> eng.inject(a, frame); eng.run_for(10_000); eng.collect(d)

    Devices are added through its methods (add_l2fwd, add_pktgen, add_nic,
    add_switch); a kind with state of its own puts it into ``E`` with
    ``install``.  ``nics`` and ``switches`` hold what only Python needs of
    those kinds (devices/nic/setup.py, devices/switch/setup.py).
    """

    def __init__(self, clock: str = "virtual", name: str | None = None, n_frames: int = 16384,
                 buf_size: int = 2048, max_ports: int = 64, max_devices: int = 32,
                 burst: int = 32, timers: int = 1 << 16, max_flows: int = 16384,
                 max_nics: int = 16, ring_capacity: int = 1 << 12, chunk_ms: float = 20.0,
                 native: NativeCC | None = None):
        """native: the algorithms flows in native mode run, compiled into the
        engine and called through their addresses (ccnative.py; built by
        cc_algorithms.native.NativeTable); without any, no flow may be
        native."""
        self._pin = 0               # engine_pin's copy of E (0: none yet)
        self._rows = []             # sampler rows drained between chunks
        self.name = name or f"taurus-eng-{os.getpid()}-{next(_ENGINE_IDS)}"
        if not self.name.startswith("taurus-"):
            self.name = "taurus-" + self.name
        self.clk = make_clock(clock)
        self._next_sync = 0         # wall clock: next TSC resync (CLOCK_MONOTONIC ns)
        self.chunk_ns = int(chunk_ms * 1e6)
        self.max_ports = max_ports
        self._handles = []          # open sockets etc., closed in reverse order
        self._port_handles = {}     # real port -> its socket's handle
        self._port_names: list[str] = []
        self._dev_names: list[str] = []
        self._closed = False
        self.on_chunk = []          # Python work between run chunks (apps' requests)
        self.nics = nic_setup.NicTables()
        self.switches = switch_setup.SwitchTables()
        alg = _native_or_default(native)          # a TypeError before anything is created
        self.has_native = n_algorithms(alg) > 0
        h, c, n, nm, kd, size = _layout(max_ports)
        self.shm = Shm.create(self.name, size)
        self.cc = None
        self.capture = None
        self._heartbeat = None
        try:
            # The agent contract: one report ring + control block per NIC slot.
            self.cc = CcShm.create(self.name + "-cc", max_flows, ring_capacity,
                                   max_nics=max_nics)
            self._hdr = hdr = self.shm.array(h, np.int64, (watchdog.HDR_WORDS,))
            hdr[H_MAX_PORTS], hdr[H_N_COUNTERS] = max_ports, N_COUNTERS
            self._heartbeat = watchdog.Heartbeat(hdr, wall=self.clk.i[0] == WALL)
            hdr[H_MAGIC] = MAGIC           # last: a complete header
            self.ctl = self.shm.array(c, np.int64, (N_CTL,))
            counters = self.shm.array(n, np.uint64, (max_ports, N_COUNTERS))
            self._names = self.shm.array(nm, np.uint8, (max_ports, NAME_LEN))
            self._kinds = self.shm.array(kd, np.int64, (max_ports,))
            self.capture = CaptureShm.create(self.name + "-cap", max_ports, buf_size, self.ctl,
                                             virtual=bool(clock_is_virtual(self.clk)))
            ports = make_ports(np.zeros(max_ports, np.int32), counters, self.capture.cap)
            now = int(clock_now(self.clk))
            self.E = Engine_(clk=self.clk, pool=make_pool(n_frames, buf_size), ports=ports,
                             wheel=make_wheel(timers, start_ns=now, shift=slot_shift(max_ports)),
                             devs=make_devices(max_devices),
                             ctl=self.ctl, burst=np.zeros(burst, np.int32),
                             expired=np.zeros(256, np.int32),
                             sw=make_switch_state(max_ports, max_flows),
                             nic=make_nic_state(max_ports, max_flows),
                             rep=make_report_state(self.cc),
                             alg=alg, smp=make_sampler(), vag=make_vagents(),
                             loop=make_loop_scratch(max_devices, max_ports, max_ports))
            if not STATE_T:
                STATE_T.append(nb.typeof(self.E))
            self._compile(now)
            _freeze_compiler_objects()
        except BaseException:
            self._unpin()
            if self.capture is not None:
                self.capture.close()
            if self._heartbeat is not None:
                self._heartbeat.close()
            if self.cc is not None:
                self.cc.close()
            self.shm.close()
            raise

    def _compile(self, now: int) -> None:
        """Compile (or load from cache) the loop now, before any port is
        open: a socket that is not polled while the JIT runs overflows.
        A cold cache is said, and its compile split (first_compile.py)."""
        with FirstCompile(engine_run):
            engine_run(self._pinned(), now, 0)

    # ---- building -------------------------------------------------------
    def _new_port(self, name: str, kind: int) -> int:
        p = int(self.ctl[NPORTS])
        if p >= self.max_ports:
            raise ValueError(f"engine {self.name}: more than {self.max_ports} ports")
        if name in self._port_names:
            raise ValueError(f"engine {self.name}: port name {name!r} used twice")
        self.E.ports.kind[p] = kind
        raw = name.encode()[:NAME_LEN - 1]
        self._names[p, :len(raw)] = np.frombuffer(raw, np.uint8)
        self._kinds[p] = kind
        self._port_names.append(name)
        return p

    def _commit_port(self) -> None:
        self.ctl[NPORTS] += 1

    def add_mem_port(self, name: str) -> int:
        p = self._new_port(name, MEM)
        self.E.ports.regs[p, memlink.PEER] = -1
        self._commit_port()
        return p

    def add_mem_link(self, name_a: str, name_b: str, delay_ns: int = 0,
                     rate_bps: int = 0, fifo_frames: int = memlink.CAP) -> tuple[int, int]:
        """Two MEM ports joined by a wire with this delay and line rate, each
        with a receive ring of fifo_frames (0: none yet, memlink.memlink_fifo
        before the first frame)."""
        a = self.add_mem_port(name_a)
        b = self.add_mem_port(name_b)
        memlink.memlink_connect(self.E.ports, a, b, delay_ns, rate_bps, fifo_frames)
        return a, b

    def add_port(self, name: str, ifname: str, netns: str | None = None,
                 kind: str = "auto", **opts) -> int:
        """Open a real port on interface `ifname` (inside namespace `netns`).
        kind: "af_xdp", "af_packet", or "auto" (AF_XDP, else AF_PACKET with a
        log line saying why)."""
        if self.clk.i[0] != 0:
            raise ValueError("real ports need the wall clock (Engine(clock='wall'))")
        if kind not in ("auto", "af_xdp", "af_packet"):
            raise ValueError(f"port kind must be auto, af_xdp or af_packet, got {kind!r}")
        p = self._new_port(name, XDP)
        handle = None
        if kind in ("auto", "af_xdp"):
            from .ports.xdp import XdpUnavailable, open_xdp_port
            try:
                handle = open_xdp_port(self.E.ports, self.E.pool, p, ifname, netns=netns,
                                       **opts.get("xdp", {}))
            except XdpUnavailable as e:
                if kind == "af_xdp":
                    self._port_names.pop()
                    raise
                log.warning("AF_XDP unavailable on %s (%s): falling back to AF_PACKET",
                            ifname, e)
        if handle is None:
            from .ports.afpacket import open_packet_port
            try:
                handle = open_packet_port(self.E.ports, p, ifname, netns=netns,
                                          **opts.get("af_packet", {}))
            except BaseException:
                self._port_names.pop()
                raise
        self._kinds[p] = self.E.ports.kind[p]
        self._handles.append(handle)
        self._port_handles[p] = handle
        self._commit_port()
        log.info("port %d %s: %s on %s%s", p, name, KIND_NAMES[int(self.E.ports.kind[p])],
                 ifname, f" (netns {netns})" if netns else "")
        return p

    def install(self, field: str, state, handle=None, first: bool = False) -> None:
        """Put a device kind's state into ``E.<field>`` in place of the small
        default (before the first device of that kind and the first run), and
        close `handle` (its shared segment, ...) with the engine; handles
        close in reverse order, `first` puts this one first, so it closes
        last.  The state must have the default's Numba type: the compiled
        loop would recompile for another."""
        if handle is not None:
            if first:
                self._handles.insert(0, handle)
            else:
                self._handles.append(handle)
        old = getattr(self.E, field)
        if nb.typeof(state) != nb.typeof(old):
            raise AssertionError(f"E.{field}: state layout changed: the compiled loop "
                                 "would recompile")
        self.E = self.E._replace(**{field: state})

    def add_l2fwd(self, port_a: int, port_b: int, name: str | None = None) -> int:
        """Forward every frame from port_a to port_b and back."""
        return self.add_device(L2FWD, [port_a, port_b], name)

    def reserve_nics(self, **sizes) -> None:
        """Size the NIC tables before the first add_nic (nic/setup.py
        nic_reserve: max_flows, win, tx_bytes, rx_bytes, msgs, cq, sq)."""
        nic_setup.nic_reserve(self, **sizes)

    def add_nic(self, port: int, mac, ip, cfg=None, **opts) -> int:
        """A host NIC on `port` with settings ``cfg`` (nic/setup.py NicConfig,
        or its fields as keywords); returns its device index."""
        return nic_setup.add_nic(self, port, mac, ip, cfg, **opts)

    def reserve_switches(self, **sizes):
        """Size the switch tables before the first add_switch (switch/setup.py
        install_switch_state: qcap, fcap, tel_len, telemetry_shm, seed)."""
        return switch_setup.install_switch_state(self, **sizes)

    def add_switch(self, ports: list[int], config: dict | None = None,
                   name: str | None = None) -> int:
        """A switch on these ports; returns its device index (switch/setup.py
        for the config)."""
        return switch_setup.add_switch(self, ports, config, name)

    def add_pktgen(self, port: int, frame: bytes, rate_pps: float, count: int = -1,
                   burst: int = 1, start_ns: int | None = None, name: str | None = None) -> int:
        """Send `count` copies of `frame` (-1: until stopped) on `port` at
        `rate_pps`, `burst` frames per departure."""
        if rate_pps <= 0 or not 1 <= burst <= self.E.burst.shape[0]:
            raise ValueError(f"pktgen needs rate_pps > 0 and 1 <= burst <= "
                             f"{self.E.burst.shape[0]}, got {rate_pps}, {burst}")
        d = self.add_device(PKTGEN, [port], name)
        regs = self.E.devs.regs[d]
        regs[pktgen.INTERVAL] = max(1, round(burst * 1e9 / rate_pps))
        regs[pktgen.REMAINING] = count
        regs[pktgen.BURST] = burst
        regs[pktgen.TIMER] = wheel_alloc(self.E.wheel, d, 0)
        start = self.now() if start_ns is None else int(start_ns)
        if regs[pktgen.TIMER] < 0 or not at_pktgen_start(
                self.state_addr(), d, np.frombuffer(bytes(frame), np.uint8), start):
            raise ValueError("pktgen: no free timer or frame")
        return d

    def device_regs(self, d: int) -> np.ndarray:
        return self.E.devs.regs[d]

    def add_device(self, kind: int, ports: list[int], name: str | None = None) -> int:
        """Register a device of `kind` (devices/table.py) on these engine ports;
        kind-specific set-up then fills E.devs.regs[d] and its own state."""
        d = int(self.ctl[NDEVS])
        if d >= self.E.devs.kind.shape[0]:
            raise ValueError(f"engine {self.name}: too many devices")
        for p in ports:
            if not 0 <= p < self.ctl[NPORTS]:
                raise ValueError(f"device port {p} does not exist")
        self.E.devs.kind[d] = kind
        self.E.devs.ports[d, :len(ports)] = ports
        self.E.devs.nports[d] = len(ports)
        self._dev_names.append(name or f"{DEV_KIND_NAMES[kind]}{d}")
        self.ctl[NDEVS] += 1
        return d

    # ---- running --------------------------------------------------------
    @property
    def E(self) -> Engine_:
        return self._E

    @E.setter
    def E(self, state: Engine_) -> None:
        self._unpin()           # the loop must see the new tuple
        self._E = state

    def state_addr(self) -> int:
        """The address of a pinned copy of E, for compiled entries that
        take the state by address (pinned.py); valid until E changes."""
        return self._pinned()

    def _pinned(self) -> int:
        if not self._pin:
            self._pin = int(engine_pin(self._E))
        return self._pin

    def _unpin(self) -> None:
        if self._pin:
            engine_unpin(self._pin, self._E)
            self._pin = 0

    def now(self) -> int:
        return int(clock_now(self.clk))

    def run_until(self, until_ns: int, stop_idle: bool = True,
                  wake_on_publish: bool = False) -> str:
        """Run until the clock reaches until_ns, stop() is called, or (virtual
        clock, stop_idle) nothing is left to do.  Returns "until", "stopped"
        or "idle".  With stop_idle=False an idle virtual clock moves on to
        until_ns, so Python can act at exact times.  wake_on_publish: return
        "woken" as soon as the report engine publishes a batch for an agent
        (the clock is then at the publish)."""
        self.ctl[STOP] = 0
        self.ctl[STATE] = ST_RUNNING
        self.ctl[WAKE_PUBLISH] = int(wake_on_publish)
        self._heartbeat.serving()
        try:
            while True:
                r = engine_run(self._pinned(), int(until_ns), self.chunk_ns)
                if self.clk.i[0] == WALL:
                    self._heartbeat.beat()      # the loop ran a chunk: alive (watchdog.py)
                    if time.monotonic_ns() >= self._next_sync:
                        self._next_sync = time.monotonic_ns() + 1_000_000_000
                        clock_resync(self.clk)
                woken = wake_on_publish and self.ctl[WAKE_PUBLISH] == 0
                if r == R_IDLE and not stop_idle and not woken:
                    clock_advance_to(self.clk, int(until_ns))
                    return REASONS[R_UNTIL]
                m = self._E.smp.meta
                if 2 * (m[SMP_ROWS] - m[SMP_TAKEN]) >= self._E.smp.buf.shape[0]:
                    self._rows.append(sampler_drain(self._E.smp))   # the sampler yielded
                for cb in self.on_chunk:
                    cb()
                if woken and r in (R_CHUNK, R_IDLE):
                    return "woken"
                if r != R_CHUNK:
                    return REASONS[r]
        finally:
            self.ctl[WAKE_PUBLISH] = 0
            self.ctl[STATE] = ST_STOPPED

    def run_for(self, duration_ns: int) -> str:
        return self.run_until(self.now() + int(duration_ns))

    def loop_timing(self) -> dict:
        """How the loop spent its time so far: passes (all, idle), device
        polls, clock ns
        inside the loop and in idle passes, and how late timers fired (the
        wheel's histogram, wheel.late_bucket, and its largest lateness)."""
        return {"iters": int(self.ctl[ITERS]), "idle_iters": int(self.ctl[IDLE_ITERS]),
                "polls": int(self.ctl[POLLS]),
                "run_ns": int(self.ctl[RUN_NS]), "idle_ns": int(self.ctl[IDLE_NS]),
                "late_hist": self.E.wheel.late.copy(),
                "late_max_ns": int(self.E.wheel.meta[LATE_MAX])}

    def pauses_reset(self) -> None:
        """Start counting the loop's pauses (ctlblock.py OUT_AT) from its next
        return on, from zero."""
        self.ctl[OUT_AT] = 0
        self.ctl[PAUSES] = self.ctl[PAUSE_NS] = self.ctl[PAUSE_MAX] = 0

    def pauses(self) -> dict:
        """The loop's pauses since pauses_reset (wall clock): how many times it
        returned and went on, and the clock ns it was out, in all and at most."""
        return {"count": int(self.ctl[PAUSES]), "total_ns": int(self.ctl[PAUSE_NS]),
                "max_ns": int(self.ctl[PAUSE_MAX])}

    def run_forever(self) -> str:
        """Run until SIGINT/SIGTERM or stop(); signals end the run cleanly."""
        old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

        def _stop(signum, frame):
            self.ctl[STOP] = 1
        for s in old:
            signal.signal(s, _stop)
        try:
            return self.run_until(int(INF))
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    def stop(self) -> None:
        self.ctl[STOP] = 1

    # ---- open ends of memory links -------------------------------------
    def inject(self, port: int, frame: bytes) -> bool:
        """Send `frame` into the memory link from open end `port`."""
        buf = np.frombuffer(bytes(frame), np.uint8)
        return bool(at_inject(self.state_addr(), port, self.now(), buf, len(buf)))

    def collect(self, port: int, max_frames: int = 4096) -> list[bytes]:
        """Frames that reached open end `port` by now."""
        data = np.zeros((max_frames, self.E.pool.data.shape[1]), np.uint8)
        lens = np.zeros(max_frames, np.int32)
        n = at_collect(self.state_addr(), port, self.now(), data, lens)
        return [data[k, :lens[k]].tobytes() for k in range(n)]

    # ---- observing ------------------------------------------------------
    def port_index(self, name: str) -> int:
        return self._port_names.index(name)

    def port_name(self, p: int) -> str:
        return self._port_names[p]

    def port_handle(self, p: int):
        """The socket object behind real port `p` (XdpPortHandle or PacketPortHandle:
        its ring counters and statistics), for benchmarks and diagnostics."""
        return self._port_handles[p]

    @property
    def port_names(self) -> tuple[str, ...]:
        """Port names by port index."""
        return tuple(self._port_names)

    def counters(self) -> dict[str, dict[str, int]]:
        return read_counters(self.ctl, self.E.ports.cnt, self._port_names,
                             [int(k) for k in self._kinds[:len(self._port_names)]])

    def start_sampler(self, fids, qports, period_ns: int, origin_ns: int) -> None:
        """Sample these NIC flow rows and switch ports every period_ns from
        origin_ns on, inside the loop (sampler.py); drain_samples() reads
        the rows.  A running sampler is an event: the virtual clock is never
        idle while it runs."""
        S = make_sampler(fids, qports, rows_for(1 + 2 * len(fids) + len(qports)))
        self._rows = []             # rows taken out when the sampler yielded
        self.install("smp", S)
        sampler_start(S, int(period_ns), int(origin_ns))

    def step_agents_in_loop(self, steps: list, grid_ns: int) -> None:
        """Let the loop step these agents at the grid point (a multiple of
        grid_ns) after each report publish (vagents.py; virtual clock):
        ``steps`` are (step address, argument address) pairs, stepped in
        this order; [] hands the stepping back to Python."""
        if len(steps) > self.E.vag.shape[0] or (steps and grid_ns <= 0):
            raise ValueError(f"{len(steps)} in-loop agents on a grid of {grid_ns} ns")
        if steps and not clock_is_virtual(self.clk):
            raise ValueError("agents step inside the loop only on the virtual clock")
        self.ctl[VAG_N] = 0
        if steps:
            self.E.vag[:len(steps)] = steps
        self.ctl[VAG_STEP] = grid_ns
        self.ctl[VAG_DUE] = 0
        self.ctl[VAG_N] = len(steps)

    def separate_agents(self, latency_ns: int, per_message_ps: int = 0) -> None:
        """The NIC-host separation model (virtual clock; vagents.py): after a
        publish of n records the agents are due latency_ns + n per_message_ps
        / 1000 ns later, not at the next grid point; latency_ns 0: the grid."""
        if latency_ns < 0 or per_message_ps < 0 or (per_message_ps and not latency_ns):
            raise ValueError(f"separation of {latency_ns} ns + {per_message_ps} ps a message: "
                             f"both >= 0, and a per-message cost needs a latency")
        if latency_ns and not clock_is_virtual(self.clk):
            raise ValueError("the separation model is for the virtual clock (on the wall "
                             "clock the separation is real)")
        self.ctl[SEP_NS] = int(latency_ns)
        self.ctl[SEP_PER_MSG_PS] = int(per_message_ps)

    def agents_due_at(self) -> int:
        """When the agents are next due (engine ns; 0: not due)."""
        return int(self.ctl[VAG_DUE])

    def agents_due(self, t_ns: int) -> None:
        """When the in-loop agents step next (0: at the grid point after the
        next publish); Python sets it after stepping them itself."""
        self.ctl[VAG_DUE] = t_ns

    def step_agents(self, first: int, now_ns: int) -> int:
        """Step the in-loop agents from `first` on at now_ns, here (between
        runs: the steps Python's own would be); returns -1, or the agent
        that needs Python (finish it, then step the ones after it)."""
        return int(vagents_from(self.E.vag, int(self.ctl[VAG_N]), int(first), int(now_ns)))

    def agent_at(self) -> int:
        """The agent a run that returned "agent" stopped at (it needs Python)."""
        return int(self.ctl[VAG_AT])

    def drain_samples(self) -> np.ndarray:
        """The sampler's rows since the last drain: int64[rows, 1 + 2F + Q],
        each t (engine ns), acked[F], cwnd[F], queue bytes[Q]."""
        rows = self._rows + [sampler_drain(self.E.smp)]
        self._rows = []
        return np.concatenate(rows)

    def frames_in_use(self) -> int:
        return mbuf_in_use(self.E.pool)

    # ---- teardown -------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._unpin()           # the copy holds every array, shared memory's too
        errors = []
        for h in reversed(self._handles):
            try:
                h.close()
            except Exception as e:  # keep releasing the rest
                errors.append(e)
        self._handles.clear()
        self.capture.close()
        self._heartbeat.close()
        self.cc.close()
        self.shm.close()
        if errors:
            raise errors[0]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_counters(ctl, cnt, names, kinds) -> dict[str, dict[str, int]]:
    out = {}
    for p, name in enumerate(names):
        row = {COUNTER_NAMES[k]: int(cnt[p, k]) for k in range(len(COUNTER_NAMES))}
        row["kind"] = KIND_NAMES.get(kinds[p], "?")
        out[name] = row
    return out


def attach_stats(name: str) -> dict:
    """Read a running engine's counters from its shared segment (read-only)."""
    shm = Shm.attach(name)
    hdr = shm.array(0, np.int64, (watchdog.HDR_WORDS,))
    if hdr[H_MAGIC] != MAGIC:
        raise ValueError(f"{name} is not a Taurus engine segment")
    max_ports = int(hdr[H_MAX_PORTS])
    h, c, n, nm, kd, _ = _layout(max_ports)
    ctl = shm.array(c, np.int64, (N_CTL,))
    cnt = shm.array(n, np.uint64, (max_ports, N_COUNTERS))
    names_raw = shm.array(nm, np.uint8, (max_ports, NAME_LEN))
    kinds = shm.array(kd, np.int64, (max_ports,))
    nports = int(ctl[NPORTS])
    names = [bytes(names_raw[p]).rstrip(b"\0").decode() for p in range(nports)]
    return {"pid": int(hdr[H_PID]), "now": int(ctl[NOW]), "iters": int(ctl[ITERS]),
            "state": int(ctl[STATE]),
            "ports": read_counters(ctl, cnt, names, [int(k) for k in kinds[:nports]])}
