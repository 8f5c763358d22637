"""The datapath <-> agent contract segment: NIC slots, shared columns,
per-NIC rings and control blocks, cleanup."""
import os

import numpy as np
import pytest

from taurus.datapath import ccshm as C
from taurus.datapath.shm import list_segments


def test_create_attach_share_memory_and_clean_up():
    name = f"t{os.getpid()}"
    a = C.CcShm.create(name, max_nics=2, max_flows=100, ring_capacity=64)
    try:
        b = C.CcShm.attach(name, nic=1)
        assert b.max_flows == 100 and b.ring.width == C.REC_WIDTH and b.ring.capacity == 64
        a.rate[7] = 5_000_000_000
        assert b.rate[7] == 5_000_000_000
        assert b.ctl[C.CTL_AGGREGATE] == 1 and list(a.period_ns[3]) == list(C.DEFAULT_PERIOD_NS)
        rec = np.zeros((1, C.REC_WIDTH), np.int64)
        rec[0, C.FLOW], rec[0, C.EVENT] = 7, C.EV_ACK
        assert a.ring_of(1).push(rec) == 1
        assert a.ring.pending() == 0                 # NIC 0's ring is separate
        assert b.ring.drain()[0, C.FLOW] == 7
        b.ctl[C.CTL_HEARTBEAT_NS] = 123
        assert a.ctls[1, C.CTL_HEARTBEAT_NS] == 123 and a.ctl[C.CTL_HEARTBEAT_NS] == 0
        b.ring.close()                               # a NIC's ring never unlinks the segment
        assert f"taurus-cc-{name}" in list_segments()
        b.close()
    finally:
        a.close()
    assert not [s for s in list_segments() if name in s]


def test_attach_errors():
    with pytest.raises(FileNotFoundError):
        C.CcShm.attach("no-such-nic")
    name = f"t{os.getpid()}x"
    a = C.CcShm.create(name, max_nics=1, max_flows=4, ring_capacity=8)
    try:
        with pytest.raises(ValueError, match="NIC slots 0..0"):
            C.CcShm.attach(name, nic=3)
    finally:
        a.close()
