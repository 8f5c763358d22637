"""Agents stepped inside the loop (virtual clock).

An in-process agent is stepped at the grid point (a multiple of the
runner's step) after each report publish.  When the runner registers its
agents' steps here (machine addresses: agent/inloop.py makes them), the loop
calls them itself at that grid point, at the start of its pass (after the
sample, before any device), instead of returning to Python twice per
publish; the steps and their times are the ones Python's stepping gives.

State: ``E.vag`` rows (step address, argument address), and the engine's
ctl words below.  A step returns 0 (done), 1 (its drain was capped: every
agent steps again one grid step later) or 2 (Python must finish it: the
loop ends its run with R_AGENT and VAG_AT names the agent; the runner
finishes it and steps the agents after it at the same time).

The separation model (``Engine.separate_agents``): a publish of n records
makes the agents due exactly SEP_NS ns + n SEP_PER_MSG_PS ps later -- the
records' way to the host, the decision's way back and the bus time of the
records -- instead of at the next grid point, whether the loop steps them
or Python does (it reads VAG_DUE when the publish wakes it).  A decision
then lands that long after the report that caused it.  Records published
while the agents wait are taken at the same step, up to SEP_NS early: a
step serves every record on the ring, as a polling agent's does.
"""
import numba as nb
import numpy as np
from numba import types
from numba.extending import intrinsic

from .ccnative import _codegen
from .ctlblock import SEP_NS, SEP_PER_MSG_PS, VAG_AT, VAG_DUE, VAG_N, VAG_STEP
from .hot import hot

MAX_AGENTS = 256
DONE, MORE, PYTHON = 0, 1, 2

STEP_SIG = types.int64(types.int64, types.int64)


@intrinsic
def _call_step(typingctx, fn, args, now):
    """The step at address `fn` (STEP_SIG) on its arguments at `args`."""
    return types.int64(fn, args, now), _codegen(STEP_SIG)


def make_vagents():
    return np.zeros((MAX_AGENTS, 2), np.int64)


@hot
def vagents_published(ctl, now, n):
    """n records were published at `now`: the agents are due at the next
    grid point, or with the separation model SEP_NS ns + n SEP_PER_MSG_PS
    ps later (unless due earlier)."""
    if ctl[SEP_NS] > 0:
        g = now + ctl[SEP_NS] + n * ctl[SEP_PER_MSG_PS] // 1000
    elif ctl[VAG_N] > 0:
        step = ctl[VAG_STEP]
        g = (now // step + 1) * step
    else:
        return
    if ctl[VAG_DUE] == 0 or g < ctl[VAG_DUE]:
        ctl[VAG_DUE] = g


@nb.njit(cache=True)
def vagents_from(vag, n, first, now):
    """Step agents first..n-1 of ``vag`` in order at `now` (Python's
    stepping between runs, with the loop's compiled steps); returns -1, or
    the index of the first that Python must finish (the later ones are not
    stepped)."""
    for j in range(first, n):
        if _call_step(vag[j, 0], vag[j, 1], now) == PYTHON:
            return j
    return -1


@nb.njit(cache=True)
def vagents_step(E, now):
    """Step every registered agent (they are due); returns -1, or the index
    of the agent Python must finish (the later ones are not stepped)."""
    ctl = E.ctl
    ctl[VAG_DUE] = 0
    more = False
    for j in range(ctl[VAG_N]):
        r = _call_step(E.vag[j, 0], E.vag[j, 1], now)
        if r == PYTHON:
            ctl[VAG_AT] = j
            return j
        if r == MORE:
            more = True
    if more:
        ctl[VAG_DUE] = now + ctl[VAG_STEP]
    return -1
