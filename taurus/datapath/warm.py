"""Compile (or load from Numba's cache) the engine's loop in a process of
its own, ahead of need:

    python -m taurus.datapath.warm

The first engine a process builds compiles the loop depth-first, in the
order the loop calls its parts: report timers, device timers, then device
polls (minutes on a cold cache, most of it in the polls).  This process
compiles the same parts in the reverse order, each for the types the loop
calls it with, then the loop, then the entries tests and tools call on a
running engine most.  Run beside a process that needs the engine
(the test session starts it: tests/conftest.py), the two meet in the
middle, each loading from the cache what the other has compiled."""
import signal
import sys

from numba import from_dtype, typeof, types

from .byref import ByRef
from .devices.dispatch import device_poll, device_timer
from .engine import Engine
from .report import ReportEngine, report_timer


def loop_parts(state) -> list:
    """(compiled function, argument types) of the loop's largest calls, in
    the reverse of the order the loop's own compile reaches them, for an
    engine's state tuple: the loop hands the state over by reference, and
    timers, their owners and arguments as the wheel holds them."""
    E = ByRef(typeof(state))
    now = from_dtype(state.clk.i.dtype)             # clock_now
    d = types.int64                                 # _due_from
    t, owner = from_dtype(state.expired.dtype), from_dtype(state.wheel.owner.dtype)
    arg = from_dtype(state.wheel.arg.dtype)
    return [(device_poll, (E, d, now)),
            (device_timer, (E, owner, t, now)),
            (report_timer, (report_engine_type(state), arg, now))]


def report_engine_type(state):
    """The type of ``report_engine(E)`` in the loop: E's namedtuple fields
    come by reference (byref.py), its arrays as they are."""
    def field(v):
        t = typeof(v)
        return ByRef(t) if isinstance(t, types.BaseNamedTuple) else t
    return types.NamedTuple([field(state.rep), field(state.wheel), field(state.alg),
                             field(state.ctl)], ReportEngine)


class _WarmingEngine(Engine):
    def _compile(self, now: int) -> None:
        for fn, sig in loop_parts(self.E):
            fn.compile(sig)
        super()._compile(now)


def warm() -> None:
    """The loop, then the entries Python calls on a running engine most:
    a frame into a memory link and out at its other end."""
    with _WarmingEngine(n_frames=64, max_ports=2, max_devices=2, max_flows=16, max_nics=1,
                        ring_capacity=64, timers=64) as eng:
        a = eng.add_mem_port("a")
        b = eng.add_mem_port("b")
        eng.add_l2fwd(a, b)
        eng.inject(a, bytes(64))
        eng.run_for(1000)
        eng.collect(b)


def _exit(signum, frame):
    sys.exit(128 + signum)          # unwinds: the engine removes its shared memory


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit)
    warm()
