"""The datapath <-> agent contract segment: create, attach, defaults, cleanup."""
import os

import numpy as np
import pytest

from taurus.datapath import ccshm as C
from taurus.datapath.shm import list_segments


def test_create_attach_share_memory_and_clean_up():
    name = f"t{os.getpid()}"
    a = C.CcShm.create(name, max_flows=100, ring_capacity=64)
    try:
        b = C.CcShm.attach(name)
        assert b.max_flows == 100 and b.ring.width == C.REC_WIDTH
        a.rate[7] = 5_000_000_000
        assert b.rate[7] == 5_000_000_000
        assert a.ctl[C.CTL_AGGREGATE] == 1 and list(a.period_ns[3]) == list(C.DEFAULT_PERIOD_NS)
        rec = np.zeros((1, C.REC_WIDTH), np.int64)
        rec[0, C.FLOW], rec[0, C.EVENT] = 7, C.EV_ACK
        assert a.ring.push(rec) == 1 and b.ring.drain()[0, C.FLOW] == 7
        b.close()
    finally:
        a.close()
    assert not [s for s in list_segments() if name in s]


def test_attach_to_wrong_segment_is_refused():
    with pytest.raises(FileNotFoundError):
        C.CcShm.attach("no-such-nic")
