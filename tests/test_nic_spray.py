"""A flow sprayed over paths of unequal delay (NSCC ev_spray): its packets
pass one another, and the NIC must not take that for loss (no
retransmission, no NACK reaching the algorithm) while a flow on one EV
keeps TCP's dupthresh rule."""
from taurus.experiment import schema
from taurus.experiment.runner import run_experiment


def exp(spray: int) -> dict:
    fast, slow = {"rate": "100Gbit", "delay": "1us"}, {"rate": "100Gbit", "delay": "4us"}
    return {"experiment": {"name": "spray", "duration": "400us"},
            "topology": {"name": "two-paths",
                         "hosts": [{"name": "h1"}, {"name": "h2"}],
                         "switches": [{"name": n} for n in ("s1", "sa", "sb", "s2")],
                         "links": [{"endpoints": ["h1", "s1"], **fast},
                                   {"endpoints": ["s1", "sa"], **fast},
                                   {"endpoints": ["s1", "sb"], **slow},
                                   {"endpoints": ["sa", "s2"], **fast},
                                   {"endpoints": ["sb", "s2"], **slow},
                                   {"endpoints": ["s2", "h2"], **fast}]},
            "cc": {"algorithm": "nscc", "mode": "native", "mss": 4040,
                   "params": {"ev_spray": spray, "network_rtt": 20_000.0}},
            "traffic": [{"kind": "bulk", "from": "h1", "to": "h2", "size": "1MB"}]}


def test_sprayed_flow_tolerates_reordering(tmp_path):
    s = run_experiment(schema.from_dict(exp(16), "x.toml"), str(tmp_path / "spray"))
    assert s["complete"], s["error"]
    (f,) = s["flows"]
    tx, rx = s["nics"]["h1"], s["nics"]["h2"]
    assert f["done"] and rx["rx_ooo"] > 0, rx          # the paths did reorder it ...
    assert rx["tx_nack"] > 0 and tx["rx_nack"] > 0      # ... and the receiver NACKed the holes
    assert tx["tx_retx"] == 0 and rx["rx_dup"] == 0, (tx, rx)
    # 1 MB at 100 Gbit/s in 4150-byte frames is ~83 us, plus the slow path's RTT
    assert f["fct_ns"] < 83_000 * 1.6, f["fct_ns"]
