"""The impairment device between two open ends: seeded loss, reordering by
holding a frame back (K frames or a delay), duplication, ECN marking."""
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from taurus.datapath.devices.impair import add_impair, impair_counters
from taurus.datapath.engine import Engine


def build(**kw):
    eng = Engine(clock="virtual")
    a, x = eng.add_mem_link("a", "im0", delay_ns=100)
    y, b = eng.add_mem_link("im1", "b", delay_ns=100)
    d = add_impair(eng, x, y, **kw)
    return eng, a, b, d


def tagged(k, tos=0):
    return bytes(Ether() / IP(tos=tos, src="10.0.0.1", dst="10.0.0.2") / UDP(sport=k, dport=9))


def send(eng, a, n, gap=1000, tos=0):
    for k in range(n):
        eng.inject(a, tagged(k, tos))
        eng.run_for(gap)


def order(frames):
    return [Ether(f)[UDP].sport for f in frames]


def test_seeded_loss_rate_and_determinism():
    def once():
        eng, a, b, d = build(loss=0.1, seed=5)
        with eng:
            for k in range(2000):
                eng.inject(a, tagged(k))
            eng.run_for(10**6)
            return order(eng.collect(b)), impair_counters(eng, d)
    got, cnt = once()
    assert 150 < cnt["dropped"] < 250 and len(got) == 2000 - cnt["dropped"]
    assert got == sorted(got) and (got, cnt) == once()


def test_reorder_releases_after_k_frames():
    eng, a, b, d = build(reorder=1.0, reorder_k=3)
    with eng:
        send(eng, a, 8)
        eng.run_for(10**6)
        # frame 0 held, released after 1, 2, 3; then 4 held, released after 5, 6, 7
        assert order(eng.collect(b)) == [1, 2, 3, 0, 5, 6, 7, 4]
        assert impair_counters(eng, d)["reordered"] == 2


def test_reorder_releases_after_a_delay():
    eng, a, b, d = build(reorder=1.0, reorder_k=0, reorder_delay_ns=5000)
    with eng:
        eng.inject(a, tagged(0))
        eng.run_for(5000)
        assert eng.collect(b) == []
        eng.run_for(10**6)
        assert order(eng.collect(b)) == [0]
        assert eng.now() >= 5000 + 200 and eng.frames_in_use() == 0


def test_duplicate_and_ecn_mark():
    eng, a, b, d = build(dup=1.0, ecn_mark=1.0)
    with eng:
        send(eng, a, 3, tos=2)                    # ECT(0)
        send(eng, a, 1, tos=0)                    # not ECN-capable: never marked
        eng.run_for(10**6)
        got = [Ether(f) for f in eng.collect(b)]
        assert [p[UDP].sport for p in got] == [0, 0, 1, 1, 2, 2, 0, 0]
        assert [p[IP].tos & 3 for p in got] == [3] * 6 + [0, 0]
        for p in got:                             # checksums stay valid
            chk = p[IP].chksum
            del p[IP].chksum
            assert IP(bytes(p[IP])).chksum == chk
        c = impair_counters(eng, d)
        assert c["duplicated"] == 4 and c["marked"] == 3


def test_bad_parameters_are_refused():
    eng = Engine(clock="virtual")
    with eng:
        x, y = eng.add_mem_link("x", "y")
        with pytest.raises(ValueError):
            add_impair(eng, x, y, loss=1.5)
        with pytest.raises(ValueError):
            add_impair(eng, x, y, reorder=0.5, reorder_k=0, reorder_delay_ns=0)
