"""byref: a namedtuple of arrays passed to compiled code by pointer reads and
writes exactly like the tuple itself (taurus/datapath/byref.py)."""
from collections import namedtuple

import numba as nb
import numpy as np

from taurus.datapath.byref import ByRef, byref

Inner = namedtuple("Inner", ["a", "b", "k"])
Outer = namedtuple("Outer", ["inner", "c", "flag", "scale"])


@nb.njit(_nrt=False)
def _bump(R, i):
    """Write through nested fields of whatever it is given (tuple or ByRef)."""
    R.inner.a[i] += R.c[i] + R.inner.k
    if R.flag:
        R.c[i] *= 2
    return R.inner.b[i] * R.scale


@nb.njit(_nrt=False)
def _inner_sum(inner):
    return inner.a.sum() + inner.b.sum() + inner.k


@nb.njit
def _by_ref(E, n):
    R = byref(E)
    x = 0.0
    for i in range(n):
        x += _bump(R, i % 4)
    return x + _inner_sum(R.inner)


@nb.njit
def _by_value(E, n):
    x = 0.0
    for i in range(n):
        x += _bump(E, i % 4)
    return x + _inner_sum(E.inner)


def _state():
    return Outer(Inner(np.arange(4, dtype=np.int64), np.arange(10, 14).astype(np.float64), 3),
                 np.ones(4, np.int64), True, 0.5)


def test_byref_reads_and_writes_like_the_tuple():
    a, b = _state(), _state()
    assert _by_ref(a, 11) == _by_value(b, 11)
    for x, y in ((a.inner.a, b.inner.a), (a.c, b.c), (a.inner.b, b.inner.b)):
        np.testing.assert_array_equal(x, y)
    assert a.c.max() > 1                      # the writes did happen


def test_nested_tuples_stay_by_reference():
    _by_ref(_state(), 1)
    _by_value(_state(), 1)
    sigs = [s for s in _inner_sum.signatures]
    assert any(isinstance(s[0], ByRef) for s in sigs)      # R.inner was passed as a pointer
    assert any(not isinstance(s[0], ByRef) for s in sigs)  # E.inner by value


@nb.njit
def _counted(R):
    """Compiled with reference counting: every field read is a counted reference."""
    s = 0
    for _ in range(1000):
        s += R.inner.a[0] + R.c[0]
    return s


@nb.njit
def _counted_by_ref(E):
    return _counted(byref(E))


def test_field_reads_keep_reference_counts_balanced():
    import sys
    E = _state()
    before = sys.getrefcount(E.c), sys.getrefcount(E.inner.a)
    for _ in range(3):
        _counted_by_ref(E)
    assert (sys.getrefcount(E.c), sys.getrefcount(E.inner.a)) == before
