"""One definition decides the same in every mode: a recorded event stream
replayed through the plain-Python handlers, the agent's compiled drain and
the native entry gives identical decisions and state -- for every built-in
algorithm, with default and non-default parameters."""
import dataclasses

import numpy as np
import pytest

from taurus.cc_algorithms import registry
from taurus.cc_algorithms.algorithm import D_CWND, D_RATE, FlowContext
from taurus.cc_algorithms.dctcp import Dctcp
from taurus.testing.replay import random_stream, replay


def _variants(cls):
    """Default parameters, and each bool flipped (the code paths they select)."""
    p = cls.Params()
    out = [p]
    for f in dataclasses.fields(p):
        if isinstance(getattr(p, f.name), bool):
            out.append(dataclasses.replace(p, **{f.name: not getattr(p, f.name)}))
    return out


CASES = [(name, i) for name in registry.BUILTINS
         for i in range(len(_variants(registry.lookup(name))))]


@pytest.mark.parametrize("name,variant", CASES)
def test_same_stream_same_decisions_in_every_mode(name, variant):
    cls = registry.lookup(name)
    params = _variants(cls)[variant]
    rec = random_stream(cls, params, n=300, flows=3, seed=variant)
    ctx = FlowContext(mss=4096, line_rate=100e9, max_cwnd=float(1 << 24))
    py, s_py = replay(cls, params, rec, "python", ctx)
    ag, s_ag = replay(cls, params, rec, "agent", ctx)
    nat, s_nat = replay(cls, params, rec, "native", ctx)
    assert (py["set"] >= 0).all(), "a handler raised"
    assert (py["set"] != 0).sum() > 10, "the stream should make the algorithm decide"
    for other in (ag, nat):
        assert np.array_equal(py.view(np.int64), other.view(np.int64))
    assert np.array_equal(np.asarray(s_py).view(np.float64), np.asarray(s_ag).view(np.float64))
    assert np.array_equal(np.asarray(s_py).view(np.float64), np.asarray(s_nat).view(np.float64))


def test_dctcp_params_change_what_it_decides():
    """g reaches the handlers in every mode (native included)."""
    rec = random_stream(Dctcp, Dctcp.Params(), n=300, flows=1, seed=4)
    cw = {}
    for g in (1 / 16, 1.0):
        params = Dctcp.Params(g=g)
        d, _ = replay(Dctcp, params, rec, "native")
        cw[g] = d["cwnd"][d["set"] & D_CWND != 0]
    assert not np.array_equal(cw[1 / 16], cw[1.0])


def test_pace_publishes_rate_only_with_rtt():
    params = Dctcp.Params(pace=True)
    rec = random_stream(Dctcp, params, n=200, flows=1, seed=1)
    d, _ = replay(Dctcp, params, rec, "agent")
    assert (d["set"] & D_RATE).any()
    d, _ = replay(Dctcp, Dctcp.Params(), random_stream(Dctcp, Dctcp.Params(), 200, 1, 1), "agent")
    assert not (d["set"] & D_RATE).any()
