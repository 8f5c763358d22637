"""The nic device (stub: state, poll and timer entry points)."""
from collections import namedtuple

import numba as nb
import numpy as np

NicState = namedtuple("NicState", ["regs"])


def make_nic_state(max_ports: int, max_flows: int) -> NicState:
    return NicState(regs=np.zeros(1, np.int64))


@nb.njit(cache=True)
def nic_poll(E, d, now):
    return 0


@nb.njit(cache=True)
def nic_timer(E, d, timer, now):
    return 0
