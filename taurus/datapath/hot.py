"""``hot``: Numba's njit for per-packet code that never allocates.

Such functions are compiled without reference counting (Numba's private
``_nrt=False``).  With it, each array argument costs an atomic incref/decref
pair per call that Numba's pruning does not remove when a function has
several returns: 27-47 ns against 2 ns for a 3-field parse step
(``python bench/parse.py`` measures the parser that is built this way).  A
``hot`` function must not allocate (no new arrays, no tuples of arrays
returned), or it leaks.
"""
import numba as nb


def hot(fn=None, *, nogil: bool = False):
    """njit(cache=True) without reference counting, for code that never
    allocates; ``@hot`` or ``@hot(nogil=True)`` (released GIL: a loop other
    Python threads run beside)."""
    opts = {"cache": True, "_nrt": False, **({"nogil": True} if nogil else {})}
    return nb.njit(**opts)(fn) if fn is not None else nb.njit(**opts)


def hot_stage(fn):
    """``hot``, inlined by Numba into every caller (``inline="always"``): a
    named stage of a longer per-packet function.  LLVM inlines only small
    callees, and a stage of a few header fields is not small to it; called
    rather than inlined, the parser's stages cost twice as much per frame
    (``python bench/parse.py``)."""
    return nb.njit(cache=True, _nrt=False, inline="always")(fn)
