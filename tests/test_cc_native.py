"""Native (in-engine) DCTCP against its agent-mode twin: fed the same
windows of ACKed and ECN-echoed bytes, both follow the same alpha and cwnd."""
import numpy as np
import pytest

from taurus.cc_algorithms.native.dctcp import dctcp_on_ack, dctcp_on_rto, make_native_dctcp
from test_cc_dctcp import MSS, make, window


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_native_matches_agent_window_by_window(seed):
    rng = np.random.default_rng(seed)
    agent = make()
    S = make_native_dctcp(4, mss=MSS, max_cwnd=float(1 << 30))
    cwnd = np.zeros(4, np.int64)
    cwnd[2] = 10 * MSS
    for step in range(60):
        acked = int(max(agent.cwnd, cwnd[2])) + 1          # exactly one window for both
        marked = int(acked * rng.choice([0.0, 0.0, 0.1, 0.5, 1.0]))
        window(agent, acked, marked)
        dctcp_on_ack(S, cwnd, 2, acked, marked)
        assert S.alpha[2] == pytest.approx(agent.alpha, rel=1e-9)
        assert cwnd[2] == pytest.approx(agent.cwnd, rel=1e-3, abs=2)
    assert cwnd[[0, 1, 3]].tolist() == [0, 0, 0]             # other flows untouched


def test_native_waits_for_a_full_window_and_rto_collapses():
    S = make_native_dctcp(1, mss=MSS, alpha_init=0.0)
    cwnd = np.array([10 * MSS], np.int64)
    dctcp_on_ack(S, cwnd, 0, 5 * MSS, 5 * MSS)
    assert cwnd[0] == 10 * MSS                                # half a window: no decision
    dctcp_on_ack(S, cwnd, 0, 5 * MSS, 5 * MSS)
    assert cwnd[0] == int(10 * MSS * (1 - 1 / 32))
    dctcp_on_rto(S, cwnd, 0)
    assert cwnd[0] == MSS


def test_an_engine_runs_the_native_algorithm_it_is_handed():
    """The datapath names no algorithm: a flow is native only on an engine
    that was handed one, and then the engine's callbacks are that algorithm's."""
    from taurus.cc_algorithms.native.dctcp import native_dctcp
    from taurus.datapath.ccnative import cc_native_ack
    from taurus.datapath.devices.nic.setup import add_flow, add_nic, set_flow_mode
    from taurus.datapath.engine import Engine
    for native in (None, native_dctcp(8, alpha_init=0.0)):
        with Engine(clock="virtual", max_flows=8, native=native) as eng:
            a, b = eng.add_mem_link("h1", "h2")
            d = add_nic(eng, a, "02:00:00:00:00:01", "10.0.0.1", mss=1024)
            f = add_flow(eng, d, "02:00:00:00:00:02", "10.0.0.2", cwnd_bytes=10 * 1024)
            if native is None:
                with pytest.raises(ValueError, match="no native algorithm"):
                    set_flow_mode(eng, f, "native")
                continue
            set_flow_mode(eng, f, "native")
            assert eng.E.alg.par[0] == 1024                   # the NIC's MSS
            cc_native_ack(eng.E, f, 10 * 1024, 10 * 1024)     # one window, all marked
            assert eng.cc.cwnd[f] == int(10 * 1024 * (1 - 1 / 32))


def test_an_engine_refuses_a_native_algorithm_of_other_array_types():
    """It would otherwise compile the loop anew for them, for minutes."""
    import numpy as np
    from taurus.datapath.ccnative import NativeCC
    from taurus.datapath.engine import Engine
    bad = NativeCC(st=np.zeros((2, 4), np.float32), par=np.zeros(2), fn=np.zeros(2, np.int64))
    with pytest.raises(TypeError, match="NativeCC"):
        Engine(clock="virtual", max_flows=4, native=bad)
