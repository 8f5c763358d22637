"""Host-congestion CC (cc_algorithms/hostcc.py): the receiving host's echoed
delay counts as ECN next to the fabric's, so under a memory hog the host
buffer stops overflowing; the optional MBA response steps like hostCC's."""
import numpy as np
import pytest

from taurus.cc_algorithms.algorithm import D_CWND, D_HOST_MBA, FlowContext
from taurus.cc_algorithms.hostcc import Hostcc
from taurus.cc_algorithms.runtime import events
from taurus.datapath import ccevents as V
from taurus.datapath.ccshm import REC_WIDTH
from taurus.testing.replay import replay

MSS = 1024
CTX = FlowContext(mss=MSS, line_rate=10e9, max_cwnd=float(1 << 24))
T_HOST = 70 * 64 * 8e9 / 10e9            # I_T cache lines at 10 Gbit/s: 3584 ns


def stream(items):
    """Records for flow 0 from (event, fields) pairs, 1 us apart."""
    rec = np.zeros((len(items), REC_WIDTH), np.int64)
    ev = events(rec)
    for i, (name, fields) in enumerate(items):
        r = ev[i]
        r.seq, r.flow, r.event, r.count = i, 0, V.EVENT_IDS[name], 1
        r.t_first = r.t_last = (i + 1) * 1000
        for k, v in fields.items():
            setattr(r, k, v)
    return rec


def acks(n, ecn=0):
    return [("ACK", {"bytes": 10 * MSS, "packets": 10, "ecn_bytes": ecn})] * n


@pytest.mark.parametrize("mode", ["python", "native"])
def test_a_congested_receiving_host_cuts_the_window_like_ecn(mode):
    """Unmarked ACKs grow the window; the same ACKs after a peer delay above
    T_host cut it, and once a delay below T_host comes (and the window open
    then closes) it grows again."""
    peer = V.HOST_SRC_PEER_DELAY
    rec = stream(acks(20)
                 + [("HOST", {"source": peer, "value": int(2 * T_HOST)})] + acks(20)
                 + [("HOST", {"source": peer, "value": int(T_HOST / 2)})] + acks(60))
    d, _ = replay(Hostcc, Hostcc.Params(), rec, mode, CTX)
    cw = [(i, c) for i, (s, c) in enumerate(zip(d["set"], d["cwnd"])) if s & D_CWND]
    i1, i2 = 1 + 20, 1 + 41              # first record after each HOST (one init row first)
    grow = [c for i, c in cw if i <= i1]
    cut = [c for i, c in cw if i1 < i <= i2]
    again = [c for i, c in cw if i > i2]
    assert grow[-1] > grow[0] and cut[-1] < grow[-1] and cut[-1] < 0.75 * grow[-1]
    low = int(np.argmin(again))
    assert low <= 1 and again[-1] > again[low] and (np.diff(again[low:]) > 0).all()


def test_memory_psi_counts_only_above_psi_t():
    """Local memory PSI ("some" avg10, 1/100 %) above psi_T cuts like a
    congested peer; off by default (psi_T = 0)."""
    rec = stream(acks(20) + [("HOST", {"source": 3, "value": 2_000})] + acks(20))
    on, _ = replay(Hostcc, Hostcc.Params(psi_T=1_000.0), rec, "native", CTX)
    off, _ = replay(Hostcc, Hostcc.Params(), rec, "native", CTX)
    last = lambda d: d["cwnd"][(d["set"] & D_CWND) != 0][-1]
    assert last(on) < 0.75 * last(off)


def test_mba_steps_up_while_the_host_is_congested_and_down_slowly():
    """With mba on, the local host_delay sample above T_host while the
    network gets less than B_T raises the MBA level (100 -> 70 -> 40 -> 10
    percent, no further); samples below T_host with the bandwidth back lower
    it, at most once per reduction_timeout (150 us)."""
    local = V.HOST_SRC_DELAY
    hot = [("HOST", {"source": local, "value": int(2 * T_HOST), "aux": int(5e9)})] * 5
    cool = [("HOST", {"source": local, "value": 0, "aux": int(10e9)})] * 500
    p = Hostcc.Params(mba=True)
    d, _ = replay(Hostcc, p, stream(hot + cool), "native", CTX)
    set_ = (d["set"] & D_HOST_MBA) != 0
    levels = d["host_mba"][set_]
    assert list(levels) == [70, 40, 10, 40, 70, 100]
    t = np.flatnonzero(set_)[3:] * 1000            # record times (1 us apart), the step-downs
    assert (np.diff(t) >= 150_000).all()
    off, _ = replay(Hostcc, Hostcc.Params(), stream(hot + cool), "native", CTX)
    assert not (off["set"] & D_HOST_MBA).any()     # host actions only when asked for


@pytest.mark.parametrize("mode", ["native", "agent"])
def test_host_drops_fall_by_90_percent_under_the_hog(tmp_path, mode):
    """The host-congestion scenario (2 senders, the receiver's memory
    bandwidth halved by a hog for 4 ms): against fabric-only DCTCP, hostcc
    loses >= 90% fewer packets in the host buffer, none in the fabric, with
    its network response alone and with the host-local one; the host-local
    response (MBA on the model's hog) gives the senders more than DCTCP."""
    from taurus.reproduce.host_congestion import host_congestion_pair
    res = host_congestion_pair(str(tmp_path), quick=True, mode=mode)
    f = res["fabric-only"]
    assert f["host_drops"] > 50, res
    for key in ("network-only", "host-aware"):
        h = res[key]
        assert h["host_drops"] <= 0.1 * f["host_drops"], res
        assert h["switch_drops"] == 0 and h["jain"] > 0.95
    assert res["network-only"]["goodput_bps"] > 0.8 * f["goodput_bps"]
    assert res["host-aware"]["goodput_bps"] > 1.2 * f["goodput_bps"]
    assert res["host-aware"]["host_actions"]["mba"][0] >= 3       # applied, up and down
    assert not res["network-only"]["host_actions"]
