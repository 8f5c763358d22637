"""The switch device (stub: state, poll and timer entry points)."""
from collections import namedtuple

import numba as nb
import numpy as np

SwitchState = namedtuple("SwitchState", ["regs"])


def make_switch_state(max_ports: int, max_flows: int) -> SwitchState:
    return SwitchState(regs=np.zeros(1, np.int64))


@nb.njit(cache=True)
def switch_poll(E, d, now):
    return 0


@nb.njit(cache=True)
def switch_timer(E, d, timer, now):
    return 0
