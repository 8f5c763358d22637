"""The frame pool of an engine with many real ports (datapath/poolsize.py,
fabric.real_port_opts): every port's fill ring at full depth still leaves
the switches and NICs the default pool, and fill depth shrinks as ports
multiply.  Pure arithmetic: no engine, no namespace."""
import pytest

from taurus.datapath import poolsize as P
from taurus.datapath.ports.xdp_ring import FILL_START
from taurus.tools import topology as T
from taurus.tools.fabric import engine_limits, real_port_opts, real_ports


def test_a_pool_without_real_ports_is_the_default():
    assert P.pool_frames(0) == P.POOL_FRAMES == 16384


@pytest.mark.parametrize("n", [1, 8, 16, 17, 96, 768, 5000])
def test_ports_at_full_fill_depth_leave_the_devices_their_frames(n):
    rx = P.rx_frames(n)
    assert P.RX_FRAMES_MIN <= rx <= P.RX_FRAMES_MAX
    assert P.pool_frames(n) - n * (rx + P.TX_SLACK) == P.POOL_FRAMES
    # the lending all ports start with (xdp_prime) fits with room to spare
    assert n * min(rx, FILL_START) < P.pool_frames(n) - P.POOL_FRAMES


def test_fill_depth_shrinks_as_ports_multiply():
    assert P.rx_frames(16) == P.RX_FRAMES_MAX           # a small topology keeps 1,024
    assert P.rx_frames(96) == P.RX_LEND_TOTAL // 96     # spread over the ports
    assert P.rx_frames(768) == P.RX_FRAMES_MIN          # but never below two bursts
    assert P.rx_frames(96) * 96 <= P.RX_LEND_TOTAL


def test_k4_fat_tree_on_namespaces():
    t = T.from_spec("fat_tree:k=4")
    assert real_ports(t) == 96
    rx = real_port_opts(t)["xdp"]["rx_frames"]
    assert rx == 170 and P.pool_frames(96) == 16384 + 96 * (170 + 64)   # 76 MB of 2 KB frames


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="n_ports >= 0"):
        P.pool_frames(-1)
    with pytest.raises(ValueError, match="frames > 0"):
        P.pool_frames(4, frames=0)
    with pytest.raises(ValueError, match="rx > 0"):
        P.pool_frames(4, rx=0)


def test_a_deeper_fill_ring_is_paid_for_in_the_pool():
    """taurus perf lends 2,048 frames per host port on a small topology:
    the pool grows by that much per port, not by the default depth."""
    assert P.pool_frames(2, rx=2048) == 16384 + 2 * (2048 + 64)
    assert P.pool_frames(2, rx=2048) > P.pool_frames(2)


def test_engine_limits_of_a_k4_fat_tree_on_namespaces():
    """fabric.engine_limits: one wall-clock engine over a k = 4 fat-tree
    (taurus engine run, taurus perf) has room for its 96 ports, 20 switches
    and 16 host NICs, and the pool of its ports."""
    lim = engine_limits(T.from_spec("fat_tree:k=4"))
    assert lim == {"max_ports": 96, "max_devices": 38, "max_nics": 16,
                   "n_frames": P.pool_frames(96)}
    small = engine_limits(T.from_spec("leaf_spine:leaves=1,spines=1,hosts_per_leaf=2"))
    assert small["max_ports"] == 64 and small["max_devices"] == 32 and small["max_nics"] == 16
