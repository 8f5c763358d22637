"""Flows whose packets pass one another on unequal paths (NSCC ev_spray,
or ev_lb moving a flow's EV): the NIC must not take that for loss (no
spurious retransmission), yet still repairs real losses from SACKs."""
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


def moved(ev_lb: bool) -> dict:
    """Two flows share the fast path's ECN-marking ports; NSCC with ev_lb
    moves a flow to a new EV (the slow or the fast path) on a mark."""
    d = exp(0)
    d["topology"]["switches"] = [{"name": n, "ecn": {"k": "20KB"}} for n in ("s1", "sa", "sb", "s2")]
    d["topology"]["hosts"].append({"name": "h3"})
    d["topology"]["links"].append({"endpoints": ["h3", "s1"], "rate": "100Gbit", "delay": "1us"})
    d["cc"]["params"] = {"ev_lb": ev_lb, "network_rtt": 20_000.0}
    d["traffic"].append({"kind": "bulk", "from": "h3", "to": "h2", "size": "1MB"})
    return d


def test_a_moved_flow_is_not_retransmitted_for_being_overtaken(tmp_path):
    s = run_experiment(schema.from_dict(moved(True), "x.toml"), str(tmp_path / "lb"))
    assert s["complete"], s["error"]
    assert all(f["done"] for f in s["flows"])
    lost = sum(p["drops"] + p["counters"]["trim"] for p in s["ports"].values())
    retx = s["nics"]["h1"]["tx_retx"] + s["nics"]["h3"]["tx_retx"]
    assert s["nics"]["h2"]["rx_ooo"] > 0               # moving EVs did reorder
    # every retransmission repairs a real loss (a drop here), found by SACK
    # before any RTO; none is a duplicate at the receiver
    assert retx == lost > 0 and s["nics"]["h2"]["rx_dup"] == 0, (lost, retx)
    assert s["nics"]["h1"]["rto_fire"] + s["nics"]["h3"]["rto_fire"] == 0
