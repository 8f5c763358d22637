"""The engine over memory links in virtual time: frames forwarded through the
L2 forwarder, counters exact, timing exact, runs deterministic."""
import os

import numpy as np
import pytest

from taurus.datapath.engine import Engine, attach_stats
from taurus.datapath.shm import list_segments


def frames(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, int(rng.integers(60, 1515)), dtype=np.uint8).tobytes()
            for _ in range(n)]


def build(delay_ns=1000, rate=10_000_000_000):
    eng = Engine(clock="virtual")
    a, b = eng.add_mem_link("h1", "s1-eth0", delay_ns=delay_ns, rate_bps=rate)
    c, d = eng.add_mem_link("s1-eth1", "h2", delay_ns=delay_ns, rate_bps=rate)
    eng.add_l2fwd(b, c)
    return eng, a, d


def test_forwarder_moves_frames_both_ways_with_exact_counters():
    eng, a, d = build()
    with eng:
        fwd, back = frames(500, 1), frames(300, 2)
        for f in fwd:
            assert eng.inject(a, f)
        for f in back:
            assert eng.inject(d, f)
        assert eng.run_for(1_000_000_000) == "idle"
        assert eng.collect(d) == fwd
        assert eng.collect(a) == back
        c = eng.counters()
        nf, bf = len(fwd), sum(map(len, fwd))
        nb_, bb = len(back), sum(map(len, back))
        assert (c["h1"]["tx_pkts"], c["h1"]["tx_bytes"]) == (nf, bf)
        assert (c["s1-eth0"]["rx_pkts"], c["s1-eth0"]["rx_bytes"]) == (nf, bf)
        assert (c["s1-eth1"]["tx_pkts"], c["s1-eth1"]["tx_bytes"]) == (nf, bf)
        assert (c["h2"]["rx_pkts"], c["h2"]["rx_bytes"]) == (nf, bf)
        assert (c["s1-eth1"]["rx_pkts"], c["s1-eth0"]["tx_pkts"]) == (nb_, nb_)
        assert (c["h1"]["rx_bytes"], c["h2"]["tx_bytes"]) == (bb, bb)
        assert all(v["tx_drop"] == 0 and v["rx_nobuf"] == 0 for v in c.values())
        assert eng.frames_in_use() == 0


def test_virtual_time_is_exact():
    """Two 10 Gbit/s hops with 1 us delay each: a frame of L bytes arrives at
    2 * (L*8/10 ns + 1000 ns); back-to-back frames queue behind each other."""
    eng, a, d = build(delay_ns=1000, rate=10_000_000_000)
    with eng:
        eng.inject(a, b"\x00" * 1250)          # 1000 ns on the wire
        assert eng.run_until(3999) == "until"
        assert eng.collect(d) == []
        assert eng.run_until(4000) == "until"  # 1000 + 1000 + 1000 + 1000
        assert len(eng.collect(d)) == 1
        for _ in range(3):
            eng.inject(a, b"\x01" * 1250)
        eng.run_for(10**9)
        # The third frame finishes serializing at h1 at +3000, reaches the
        # forwarder at +4000, finishes serializing there at +5000 (the wire
        # is free by then), and arrives at +6000.
        assert eng.now() == 4000 + 6000
        assert len(eng.collect(d)) == 3


def test_runs_are_deterministic():
    def once():
        eng, a, d = build(delay_ns=777, rate=3_000_000_000)
        with eng:
            for i, f in enumerate(frames(200, 7)):
                eng.inject(a, f)
                eng.run_for(100 * (i % 5))
            eng.run_for(10**9)
            return eng.now(), eng.collect(d), eng.counters(), int(eng.ctl[4])
    assert once() == once()


def test_full_link_is_a_counted_drop_not_a_loss():
    eng = Engine(clock="virtual", n_frames=20000)
    with eng:
        a, b = eng.add_mem_link("src", "s1-eth0")
        c, d = eng.add_mem_link("s1-eth1", "dst", rate_bps=1_000_000)  # very slow egress
        eng.add_l2fwd(b, c)
        sent = 0
        for f in frames(5000, 3):
            sent += eng.inject(a, f)
            if sent % 1000 == 0:
                eng.run_for(1)
        eng.run_for(1)
        cnt = eng.counters()
        # everything the forwarder received either is on the slow link or was dropped, counted
        assert cnt["s1-eth0"]["rx_pkts"] == cnt["s1-eth1"]["tx_pkts"] + cnt["s1-eth1"]["tx_drop"]
        assert cnt["s1-eth1"]["tx_drop"] > 0


def test_counters_are_readable_from_shared_memory_and_segment_is_removed():
    eng, a, d = build()
    name = eng.name
    eng.inject(a, b"x" * 100)
    eng.run_for(10**6)
    assert len(eng.collect(d)) == 1  # an open end receives when Python collects
    st = attach_stats(name)
    assert st["pid"] == os.getpid()
    assert st["ports"]["h2"]["rx_pkts"] == 1 and st["ports"]["h1"]["kind"] == "mem"
    assert oct(os.stat(f"/dev/shm/{name}").st_mode & 0o777) == "0o600"
    eng.close()
    assert name not in list_segments()


def test_bad_builds_are_refused():
    with Engine(clock="virtual", max_ports=2) as eng:
        eng.add_mem_port("p0")
        with pytest.raises(ValueError, match="used twice"):
            eng.add_mem_port("p0")
        eng.add_mem_port("p1")
        with pytest.raises(ValueError, match="more than 2 ports"):
            eng.add_mem_port("p2")
        with pytest.raises(ValueError, match="does not exist"):
            eng.add_l2fwd(0, 5)
        with pytest.raises(ValueError, match="wall clock"):
            eng.add_port("x", "eth0")


def test_pktgen_paces_by_the_wheel_in_virtual_time():
    """1 Mpps for 1000 frames: departures every 1000 ns exactly, so the last
    frame (sent at 999 us) arrives at 999 us + serialization + delay."""
    with Engine(clock="virtual") as eng:
        a, b = eng.add_mem_link("gen", "sink", delay_ns=500, rate_bps=100_000_000_000)
        d = eng.add_pktgen(a, b"\xaa" * 125, rate_pps=1e6, count=1000)
        assert eng.run_for(10**9) == "idle"
        assert eng.now() == 999_000 + 10 + 500
        got = eng.collect(b)
        assert len(got) == 1000 and set(got) == {b"\xaa" * 125}
        from taurus.datapath.devices import pktgen
        assert eng.device_regs(d)[pktgen.SENT] == 1000
        assert eng.frames_in_use() == 1  # the template


def test_pktgen_bursts_and_open_ended_runs():
    with Engine(clock="virtual") as eng:
        a, b = eng.add_mem_link("gen", "sink")
        eng.add_pktgen(a, b"x" * 64, rate_pps=4e6, burst=4)   # a burst every 1 us
        assert eng.run_until(100_000 - 1) == "until"
        assert len(eng.collect(b)) == 400
        with pytest.raises(ValueError):
            eng.add_pktgen(a, b"x", rate_pps=0)
