"""The framework's side of an algorithm: its handlers bound into the calls
each mode makes, built once per algorithm class from its one definition.

- ``dispatch(s, p, ev, d)``: the handler of ``ev.event``, or nothing for an
  event it has no handler for;
- ``setup(S, P, D, f)``: flow ``f`` begins: ``init`` runs on its state (the
  caller zeroes it) with ``D[f]`` holding the decision in force, and takes
  what init sets;
- ``drain(S, P, D, rec, rows, faults)``: the agent's loop: the records
  ``rec[rows]`` (int64 ring rows, in the order given) each to its flow's
  handler, decisions accumulating in ``D[flow]`` (fields set later win, set
  bits add up); a handler that raises costs only its record's decision
  (that flow is listed in ``faults``; the count is returned); uncompiled,
  ``Runtime.last_error`` keeps (event id, exception) of the last one;
- ``entry``: the native call, ``(st float64[:], par float64[:], f, rec
  int64[:], dec int64[:]) -> int64`` (0 ok, 1 the handler raised), whose
  machine address the engine calls (ccnative.py) -- the same signature for
  every algorithm, so the engine's code never changes.

``Runtime(cls, jit=True)`` compiles them with Numba (cached on disk, keyed by
the algorithm's source); ``jit=False`` gives the same functions uncompiled.
"""
import hashlib
import inspect
import sys

import numba as nb
import numpy as np
from numba import types
from numba.extending import overload

from taurus.datapath.ccevents import EVENT_DTYPE, EVENT_NAMES

from .algorithm import DECISION_DTYPE, kernel, param_dtype, state_dtype

NATIVE_SIG = types.int64(types.float64[::1], types.float64[::1], types.int64, types.int64[::1],
                         types.int64[::1])


@kernel
def _ignore(s, p, ev, d):
    pass


@kernel
def _no_init(s, p, d):
    pass


def _make_dispatch(handlers, key):
    """The call of ``handlers[ev.event]`` (one per event id, ccevents order).
    Numba cannot index a tuple of functions by a run-time id, so each gets
    a name and a test below.  An id outside the table (a corrupt record)
    raises: the drain counts that record's fault.  The error names ``key``
    (the algorithm's ``source_key``), and so puts it in the closure, which
    Numba's cache keys by: an edit to a plugin's file, which the cache
    directory's hash does not cover (numba_cache.py), is a new entry."""
    (h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12, h13, h14, h15, h16,
     h17, h18) = handlers
    bad_event = f"event id outside ccevents.EVENT_NAMES ({key})"

    def dispatch(s, p, ev, d):
        e = ev.event
        if e == 0:
            h0(s, p, ev, d)
        elif e == 1:
            h1(s, p, ev, d)
        elif e == 2:
            h2(s, p, ev, d)
        elif e == 3:
            h3(s, p, ev, d)
        elif e == 4:
            h4(s, p, ev, d)
        elif e == 5:
            h5(s, p, ev, d)
        elif e == 6:
            h6(s, p, ev, d)
        elif e == 7:
            h7(s, p, ev, d)
        elif e == 8:
            h8(s, p, ev, d)
        elif e == 9:
            h9(s, p, ev, d)
        elif e == 10:
            h10(s, p, ev, d)
        elif e == 11:
            h11(s, p, ev, d)
        elif e == 12:
            h12(s, p, ev, d)
        elif e == 13:
            h13(s, p, ev, d)
        elif e == 14:
            h14(s, p, ev, d)
        elif e == 15:
            h15(s, p, ev, d)
        elif e == 16:
            h16(s, p, ev, d)
        elif e == 17:
            h17(s, p, ev, d)
        elif e == 18:
            h18(s, p, ev, d)
        else:
            raise ValueError(bad_event)
    return dispatch


assert len(EVENT_NAMES) == 19, "_make_dispatch has one handler per event"


def _make_setup(init, key):
    """init on row f; a negative f (which would index from the end) raises,
    naming ``key`` for the cache as _make_dispatch does."""
    bad_flow = f"negative flow row ({key})"

    def setup(S, P, D, f):
        if f < 0:
            raise IndexError(bad_flow)
        d = D[f]
        d.set = 0
        init(S[f], P[f], d)
    return setup


def events(rec):
    """int64 ring rows as event records (np.recarray: fields as attributes)."""
    return rec.reshape(-1).view(EVENT_DTYPE).view(np.recarray)


@overload(events)
def _events_compiled(rec):
    def impl(rec):
        return rec.reshape(-1).view(EVENT_DTYPE)
    return impl


def _make_drain(dispatch):
    def drain(S, P, D, rec, rows, faults):
        evs = events(rec)
        nf = 0
        for i in range(len(rows)):
            ev = evs[rows[i]]
            f = ev.flow
            try:
                dispatch(S[f], P[f], ev, D[f])
            except Exception:
                faults[nf] = f
                nf += 1
        return nf
    return drain


def _make_py_drain(dispatch, rt):
    """_make_drain's loop, uncompiled, keeping the last exception on ``rt``
    (compiled code cannot keep it)."""
    def drain(S, P, D, rec, rows, faults):
        evs = events(rec)
        nf = 0
        for i in range(len(rows)):
            ev = evs[rows[i]]
            f = ev.flow
            try:
                dispatch(S[f], P[f], ev, D[f])
            except Exception as e:
                faults[nf] = f
                nf += 1
                rt.last_error = (int(ev.event), e)
        return nf
    return drain


def _make_entry(dispatch, sdt, pdt):
    def entry(st, par, f, rec, dec):
        S = st.view(sdt)
        P = par.view(pdt)
        d = dec.view(DECISION_DTYPE)[0]
        try:
            dispatch(S[f], P[f], rec.view(EVENT_DTYPE)[0], d)
        except Exception:
            return 1
        return 0
    return entry


def source_key(cls) -> str:
    """A hash of the source the compiled calls are built from: the module
    defining ``cls``, the modules whose functions it uses (a helper kernel
    imported from another file: hostcc.py uses dctcp.py's window), within its
    own top-level package or taurus, and so on; and this framework.  Numba's
    cache checks only the caller's own file."""
    h = hashlib.sha1()
    for name in _source_modules(cls):
        mod = sys.modules[name]
        try:
            h.update(inspect.getsource(mod).encode())
        except (OSError, TypeError):
            h.update(repr(mod).encode())
    return f"{cls.__module__}:{cls.__qualname__}:{h.hexdigest()[:16]}"


def _source_modules(cls) -> list:
    tops = {cls.__module__.split(".")[0], __name__.split(".")[0]}
    seen, todo = {__name__}, [cls.__module__]
    while todo:
        name = todo.pop()
        if name in seen or name not in sys.modules:
            continue
        seen.add(name)
        for v in vars(sys.modules[name]).values():
            m = getattr(v, "__module__", None)
            if inspect.isfunction(v) and m and m.split(".")[0] in tops:
                todo.append(m)
    return sorted(seen)


class Runtime:
    """One algorithm's compiled (or plain, ``jit=False``) calls and record types."""
    _cache = {}

    def __new__(cls, alg, jit: bool = True):
        k = (alg, jit)
        rt = cls._cache.get(k)
        if rt is None:
            rt = super().__new__(cls)
            rt._build(alg, jit)
            cls._cache[k] = rt
        return rt

    def _build(self, alg, jit: bool) -> None:
        self.alg, self.jit = alg, jit
        self.last_error = None
        self.key = source_key(alg)
        self.state_dtype, self.param_dtype = state_dtype(alg), param_dtype(alg)
        hs = [alg.handler(e) or _ignore for e in EVENT_NAMES]
        init = alg.init or _no_init
        raw = _make_dispatch(hs, self.key)
        if not jit:
            self.dispatch = raw
            self.setup = _make_setup(init, self.key)
            self.drain = _make_py_drain(raw, self)
            self._entry = None
            return
        njit = nb.njit(cache=True)
        self.dispatch = njit(raw)
        # The calls below close over this dispatcher, and Numba's cache keys
        # a closure by its pickled cells, which name a dispatcher by a random
        # UUID: name it by its source instead, or every process recompiles.
        self.dispatch._set_uuid(f"taurus-cc-{self.key}")
        self.setup = njit(_make_setup(init, self.key))
        self.drain = njit(_make_drain(self.dispatch))
        self.drain._set_uuid(f"taurus-cc-drain-{self.key}")   # agent/busyloop.py closes over it
        self._entry = nb.njit(NATIVE_SIG, cache=True)(
            _make_entry(self.dispatch, self.state_dtype, self.param_dtype))

    @property
    def entry(self):
        if self._entry is None:
            raise ValueError(f"{self.alg.name}: the native entry exists only compiled")
        return self._entry

    def entry_address(self) -> int:
        """The native entry's machine address (Numba's calling convention)."""
        cres = self.entry.overloads[NATIVE_SIG.args]
        return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)

    # ---- tables -------------------------------------------------------------
    def tables(self, n: int):
        """(S, P, D) for n flows (or receiving NICs): record arrays, zeroed."""
        S = np.zeros(n, self.state_dtype).view(np.recarray)
        P = np.zeros(n, self.param_dtype).view(np.recarray)
        D = np.zeros(n, DECISION_DTYPE).view(np.recarray)
        return S, P, D
