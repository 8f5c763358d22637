"""Compiled functions that share a qualified name, for test_numba_uids.py:
closures of one factory, and two algorithms whose runtime calls
(cc_algorithms/runtime.py) are such closures.  Each is compiled in a
process of its own against one cache, then loaded together."""
from dataclasses import dataclass

import numba as nb

from taurus.cc_algorithms.algorithm import Algorithm, kernel, set_cwnd
from taurus.cc_algorithms.params import Params


def constant(k):
    @nb.njit(cache=True)
    def value():
        return k
    return value


def pair(f, g):
    @nb.njit(cache=True)
    def both():
        return 10 * f() + g()
    return both


@dataclass
class NoParams(Params):
    pass


@kernel
def one_on_ack(s, p, ev, d):
    s.x += 1.0
    set_cwnd(d, 1000.0 + s.x)


@kernel
def two_on_ack(s, p, ev, d):
    s.z += 1.0
    set_cwnd(d, 2000.0 + s.z)


class UidOne(Algorithm):
    """cwnd 1000 + the ACKs seen; one state word."""
    name = "uid-one"
    Params = NoParams
    state = ("x",)
    binds = ("ACK",)
    on_ack = staticmethod(one_on_ack)


class UidTwo(Algorithm):
    """cwnd 2000 + the ACKs seen; three state words (another row size)."""
    name = "uid-two"
    Params = NoParams
    state = ("x", "y", "z")
    binds = ("ACK",)
    on_ack = staticmethod(two_on_ack)
