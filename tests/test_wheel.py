"""The timing wheel: exact due times, O(1) re-arm/cancel, deterministic order."""
import numpy as np
import pytest

from taurus.datapath.ports.common import INF
from taurus.datapath.wheel import (LATE_BUCKETS, LATE_MAX, LB, LB_EXACT, NSLOTS, SHIFT,
                                   late_bucket, late_bucket_bounds, make_wheel, slot_shift,
                                   wheel_alloc, wheel_armed, wheel_cancel, wheel_expire,
                                   wheel_next_due, wheel_schedule)


def drain(w, until, step):
    """Expire in steps of `step` ns; returns [(time, timer)] in firing order."""
    out = np.zeros(64, np.int32)
    fired = []
    t = 0
    while t <= until:
        n = wheel_expire(w, t, out, 64)
        fired += [(t, int(x)) for x in out[:n]]
        t += step
    return fired


def test_fires_each_timer_once_at_or_after_due():
    w = make_wheel(capacity=1000, n_slots=64, shift=4)
    rng = np.random.default_rng(1)
    dues = rng.integers(0, 5000, 1000)  # spans many rotations (64 * 16 ns = 1024 ns)
    for i, d in enumerate(dues):
        t = wheel_alloc(w, 0, i)
        wheel_schedule(w, t, int(d))
    fired = drain(w, 5100, 7)
    assert sorted(t for _, t in fired) == list(range(1000))
    for when, t in fired:
        assert dues[t] <= when < dues[t] + 7
    assert wheel_next_due(w) == INF


def test_next_due_is_exact_across_rotations():
    w = make_wheel(capacity=8, n_slots=64, shift=10)
    a, b, c = (wheel_alloc(w, 0, 0) for _ in range(3))
    wheel_schedule(w, a, 10_000_000)      # many rotations away
    assert wheel_next_due(w) == 10_000_000
    wheel_schedule(w, b, 1_234)
    wheel_schedule(w, c, 65 * 1024 + 3)   # same slot as b, next rotation
    assert wheel_next_due(w) == 1_234
    wheel_cancel(w, b)
    assert wheel_next_due(w) == 65 * 1024 + 3
    assert not wheel_armed(w, b)


def test_rearm_moves_timer_and_past_due_fires_next():
    w = make_wheel(capacity=4, n_slots=64, shift=4)
    t = wheel_alloc(w, 3, 42)
    wheel_schedule(w, t, 500)
    wheel_schedule(w, t, 100)             # re-arm: only the new time counts
    out = np.zeros(4, np.int32)
    assert wheel_expire(w, 99, out, 4) == 0
    assert wheel_expire(w, 100, out, 4) == 1 and out[0] == t
    assert wheel_expire(w, 600, out, 4) == 0
    wheel_schedule(w, t, 50)              # in the past: fires at the next expiry
    assert wheel_expire(w, 601, out, 4) == 1
    assert w.owner[t] == 3 and w.arg[t] == 42


def test_ties_fire_in_arming_order_and_overflow_resumes():
    w = make_wheel(capacity=100, n_slots=64, shift=4)
    ids = [wheel_alloc(w, 0, i) for i in range(100)]
    for t in ids:
        wheel_schedule(w, t, 1000)
    out = np.zeros(30, np.int32)
    got = []
    while True:
        n = wheel_expire(w, 1000, out, 30)
        if n == 0:
            break
        got += list(out[:n])
    assert got == ids


def test_expiry_leaves_the_exact_next_due_and_scans_from_it():
    """After an expiry the earliest timer left in now's slot is known exactly
    (the next query needs no scan), and the next expiry starts at its slot:
    a timer rotations away in an earlier slot does not fire early."""
    w = make_wheel(capacity=8, n_slots=64, shift=4)
    a, b, c, d = (wheel_alloc(w, 0, i) for i in range(4))
    far = 3 * 64 * 16 + 20                # slot 1, three rotations on
    for t, due in ((d, far), (a, 100), (b, 105), (c, 110)):     # a, b, c: slot 6
        wheel_schedule(w, t, due)
    out = np.zeros(8, np.int32)
    assert wheel_expire(w, 100, out, 8) == 1 and out[0] == a
    assert w.meta[LB] == 105 and w.meta[LB_EXACT] == 1
    assert wheel_next_due(w) == 105
    assert wheel_expire(w, 104, out, 8) == 0
    assert wheel_expire(w, 64 * 16 + 30, out, 8) == 2 and list(out[:2]) == [b, c]
    assert wheel_next_due(w) == far
    assert wheel_expire(w, far - 1, out, 8) == 0
    assert wheel_expire(w, far, out, 8) == 1 and out[0] == d


def test_capacity_and_bad_geometry():
    w = make_wheel(capacity=2, n_slots=64)
    assert wheel_alloc(w, 0, 0) == 0 and wheel_alloc(w, 0, 0) == 1
    assert wheel_alloc(w, 0, 0) == -1
    with pytest.raises(ValueError):
        make_wheel(n_slots=100)


def test_lateness_histogram_counts_each_fire_from_due_or_arming_time():
    w = make_wheel(capacity=8, n_slots=64, shift=4)
    out = np.zeros(8, np.int32)
    a, b, c = (wheel_alloc(w, 0, i) for i in range(3))
    wheel_schedule(w, a, 100)
    wheel_schedule(w, b, 130)
    assert wheel_expire(w, 160, out, 8) == 2          # 60 and 30 ns late
    wheel_schedule(w, c, 20)                          # armed at 160 with a past due time
    assert wheel_expire(w, 165, out, 8) == 1          # 5 ns after arming, not 145
    h = w.late
    assert h.sum() == 3 and w.meta[LATE_MAX] == 60
    for v in (5, 30, 60):
        assert h[late_bucket(v)] >= 1


def test_late_bucket_bounds_invert_the_bucket():
    for v in [0, 1, 7, 8, 9, 15, 16, 100, 1000, 12345, 10**6, 10**9, 2**62]:
        i = late_bucket(v)
        lo, hi = late_bucket_bounds(i)
        assert i < LATE_BUCKETS and lo <= v < hi
        assert hi - lo <= max(1, v // 4)              # at most a quarter of the value wide


def test_lower_bound_keeps_expiry_and_next_due_exact():
    """Random arming, re-arming, cancelling, expiring and next-due queries
    (the wheel's lower bound short-cuts both): next_due is always the
    earliest armed due time, and an expiry fires exactly the timers due
    (also when `out` is too small for them)."""
    rng = np.random.default_rng(5)
    for _ in range(4):
        w = make_wheel(capacity=128, n_slots=64, shift=4)
        ids = [wheel_alloc(w, 0, i) for i in range(100)]
        armed, now = {}, 0
        out = np.zeros(int(rng.integers(1, 20)), np.int32)
        for _ in range(1000):
            r = rng.random()
            if r < 0.4:         # near, far (rotations away) or already past
                t = ids[rng.integers(len(ids))]
                due = now + int(rng.choice([rng.integers(-20, 20), rng.integers(0, 3000)]))
                wheel_schedule(w, t, due)
                armed[t] = due
            elif r < 0.5:
                t = ids[rng.integers(len(ids))]
                wheel_cancel(w, t)
                armed.pop(t, None)
            elif r < 0.8:
                assert wheel_next_due(w) == min(armed.values(), default=INF)
            else:
                now += int(rng.integers(0, 40))
                n = out.shape[0]
                while n == out.shape[0]:
                    n = wheel_expire(w, now, out, out.shape[0])
                    for t in out[:n]:
                        assert armed.pop(int(t)) <= now
                assert all(d > now for d in armed.values())


def test_slot_width_follows_the_engine_size_one_rotation_either_way():
    """1 us slots for an engine of up to 64 ports, 32 ns beyond; the
    default slot count keeps a 2**22 ns rotation."""
    assert slot_shift(8) == slot_shift(64) == 10 and slot_shift(65) == slot_shift(768) == 5
    for ports in (64, 96):
        w = make_wheel(16, shift=slot_shift(ports))
        assert w.meta[NSLOTS] << w.meta[SHIFT] == 1 << 22
