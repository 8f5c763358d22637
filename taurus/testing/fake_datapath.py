"""A Python stand-in for the engine's side of the CC contract (tests, bench).

It owns the NIC's CC segment and pushes report records the way the engine
does: a full ring refuses the rest of a batch, counted in ctl[CTL_RING_FULL];
then it rings the doorbell, as the engine's report_publish does.
"""
import os

import numpy as np

from taurus.agent.doorbell import ring_bell
from taurus.datapath.ccshm import (COUNT, CTL_RING_FULL, EVENT, FLOW, REC_WIDTH, T_FIRST,
                                   T_LAST, V0, CcShm)


def record(flow: int, event: int, t_first: int, values=(), count: int = 1,
           t_last: int | None = None) -> np.ndarray:
    r = np.zeros(REC_WIDTH, np.int64)
    r[FLOW], r[EVENT], r[T_FIRST] = flow, event, t_first
    r[T_LAST] = t_first if t_last is None else t_last
    r[COUNT] = count
    r[V0:V0 + len(values)] = values
    return r


def custom_record(flow: int, t_first: int, segment: int, payload: bytes) -> np.ndarray:
    """EV_CUSTOM: V0 segment id, V1 length, V2.. the bytes in wire order."""
    from taurus.datapath.ccshm import CUSTOM_MAX, EV_CUSTOM
    r = record(flow, EV_CUSTOM, t_first, (segment, len(payload)))
    buf = np.zeros(CUSTOM_MAX, np.uint8)
    buf[:len(payload)] = np.frombuffer(payload[:CUSTOM_MAX], np.uint8)
    r[V0 + 2:V0 + 2 + CUSTOM_MAX // 8] = buf.view(np.int64)
    return r


class FakeDatapath:
    def __init__(self, name: str | None = None, max_flows: int = 64, ring_capacity: int = 1024):
        self.name = name or f"fake{os.getpid()}"
        self.cc = CcShm.create(self.name, max_flows, ring_capacity)
        self.attempts = 0

    def push(self, rows, ready_ns: int | None = None) -> int:
        """Publish records as the engine would; ready_ns, when the batch was
        ready, defaults to its latest T_LAST (an unaggregated record is ready
        when its signal arrives)."""
        rows = np.atleast_2d(np.asarray(rows, np.int64))
        if ready_ns is None:
            ready_ns = int(rows[:, T_LAST].max()) if len(rows) else 0
        self.attempts += len(rows)
        f = rows[:, FLOW]
        f = f[(f >= 0) & (f < self.cc.max_flows)]
        self.cc.owner[f[self.cc.owner[f] < 0]] = self.cc.nic   # the engine records who reports a flow
        n = self.cc.ring.push(rows, ready_ns)
        self.cc.ctl[CTL_RING_FULL] += len(rows) - n
        ring_bell(self.cc.ring.ring)
        return n

    def close(self) -> None:
        self.cc.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
