"""Process-unique names for the functions Numba compiles.

Numba names a compiled function's machine symbol by its qualified name and
a per-process counter (``FunctionIdentity._unique_ids``, 1, 2, ...), and its
on-disk cache keeps that symbol.  Closures of one factory share a qualified
name: the per-algorithm calls cc_algorithms/runtime.py builds
(``_make_entry.<locals>.entry`` for every algorithm).  Two processes that
compile two of them in the same order give both the same counter value, so
the same symbol; a later process that loads both from the cache resolves
that symbol to one body for both.  That is how DCTCP's native entry came to
run NSCC's code on DCTCP's rows (a full ``taurus reproduce baselines`` failed
with "When changing to a larger dtype ...": NSCC's state view of DCTCP's
region), depending only on which runs had filled the cache.

So each process's counter starts at a random 60-bit value, drawn again in a
forked child: two processes' compiles never share a symbol.  ``install``
sets the counter when Numba's bytecode module loads (``import taurus``
stays free of Numba), or at once if it is loaded already.
"""
import itertools
import os
import secrets
import sys

from .numba_hooks import after_import

_MODULE = "numba.core.bytecode"


def _reseed(bytecode=None) -> None:
    bytecode = bytecode or sys.modules[_MODULE]
    bytecode.FunctionIdentity._unique_ids = itertools.count(secrets.randbits(60))


_installed = False


def install() -> None:
    """Make this process's (and its forked children's) compiled symbols
    unique; idempotent."""
    global _installed
    if _installed:
        return
    _installed = True
    after_import(_MODULE, _reseed)
    os.register_at_fork(after_in_child=lambda: _MODULE in sys.modules and _reseed())

