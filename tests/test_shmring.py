"""SPSC shared-memory rings: Numba and Python ends, batches, wrap-around,
sequence numbers, refusals counted, across processes."""
import multiprocessing as mp
import os

import numba as nb
import numpy as np
import pytest

from taurus.datapath.shm import list_segments
from taurus.datapath.shmring import (SEQ, ShmRing, ring_available, ring_consume, ring_peek,
                                     ring_publish, ring_refuse, ring_slot, ring_space)


@nb.njit(cache=True)
def produce(ring, start, n):
    """Push values start..start+n-1 (word 1) as space allows; returns pushed."""
    k = 0
    room = ring_space(ring)
    while k < n and k < room:
        row = ring_slot(ring, k)
        row[1] = start + k
        k += 1
    ring_publish(ring, k, start)
    ring_refuse(ring, n - k)
    return k


@nb.njit(cache=True)
def consume(ring, out):
    n = min(ring_available(ring), out.shape[0])
    for k in range(n):
        out[k] = ring_peek(ring, k)[1]
    ring_consume(ring, n)
    return n


def name():
    return f"taurus-ring-t{os.getpid()}-{np.random.randint(1 << 30)}"


def test_numba_to_python_batches_wrap_and_keep_order():
    r = ShmRing.create(name(), capacity=64, width=4)
    try:
        got, v = [], 0
        for _ in range(50):
            v += produce(r.ring, v, 37)
            rows = r.drain()
            assert list(rows[:, SEQ]) == list(range(len(got), len(got) + len(rows)))
            got += list(rows[:, 1])
        assert got == list(range(v)) and v == 50 * 37
        assert r.refused() == 0
    finally:
        r.close()


def test_full_ring_refuses_and_counts():
    r = ShmRing.create(name(), capacity=16, width=2)
    try:
        assert produce(r.ring, 0, 40) == 16
        assert r.refused() == 24 and r.pending() == 16
        assert r.push(np.zeros((3, 2), np.int64)) == 0 and r.refused() == 27
        out = np.zeros(100, np.int64)
        assert consume(r.ring, out) == 16 and list(out[:16]) == list(range(16))
    finally:
        r.close()


def test_python_to_numba():
    r = ShmRing.create(name(), capacity=8, width=2)
    try:
        rows = np.zeros((5, 2), np.int64)
        rows[:, 1] = np.arange(100, 105)
        assert r.push(rows) == 5
        assert r.push(rows) == 3          # wraps; 2 refused
        out = np.zeros(10, np.int64)
        assert consume(r.ring, out) == 8
        assert list(out[:8]) == [100, 101, 102, 103, 104, 100, 101, 102]
        assert r.refused() == 2
    finally:
        r.close()


def _child_producer(nm, total):
    r = ShmRing.attach(nm)
    v = 0
    while v < total:
        v += produce(r.ring, v, min(1000, total - v))


def test_across_processes_nothing_lost():
    nm = name()
    r = ShmRing.create(nm, capacity=1024, width=4)
    try:
        p = mp.get_context("fork").Process(target=_child_producer, args=(nm, 200_000))
        p.start()
        got = []
        while len(got) < 200_000 and (p.is_alive() or r.pending()):
            rows = r.drain()
            got.append(rows[:, 1].copy()) if len(rows) else None
            if len(got) and sum(map(len, got)) >= 200_000:
                break
        p.join(30)
        allv = np.concatenate(got + [r.drain()[:, 1]])
        assert np.array_equal(allv, np.arange(200_000))
    finally:
        r.close()
    assert nm not in list_segments()


def test_bad_geometry_and_attach():
    with pytest.raises(ValueError):
        ShmRing.create(name(), capacity=100, width=2)
    with pytest.raises(FileNotFoundError):
        ShmRing.attach("taurus-no-such-ring")
