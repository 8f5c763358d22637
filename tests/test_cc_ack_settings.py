"""[cc] ack_every / ack_delay: the host NICs' ACK coalescing, from the file
(both clocks; absent, the NIC's defaults, so existing runs are unchanged)."""
import os

import pytest

from taurus.experiment import schema
from taurus.experiment.runner import run_experiment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "dctcp_dumbbell.toml")
SHORT = ['experiment.duration="3ms"', 'experiment.warmup="1ms"', "outputs.plots=false"]


def test_the_keys_parse_and_hosts_inherit_them():
    x = schema.load(DEMO, ['cc.ack_every=16', 'cc.ack_delay="50us"',
                           'cc.hosts.h3.ack_every=2'])
    assert (x.host_cc("h1").ack_every, x.host_cc("h1").ack_delay) == (16, 50_000)
    assert (x.host_cc("h3").ack_every, x.host_cc("h3").ack_delay) == (2, 50_000)
    assert schema.load(DEMO).host_cc("h1").ack_every is None
    with pytest.raises(schema.ExperimentError, match="ack_every"):
        schema.load(DEMO, ["cc.ack_every=0"])


def test_coalesced_acks_are_fewer(tmp_path):
    acks = {}
    for every in (1, 16):
        s = run_experiment(schema.load(DEMO, SHORT + [f"cc.ack_every={every}",
                                                      'cc.ack_delay="20us"']),
                           str(tmp_path / str(every)), "virtual")
        assert s["complete"], s["error"]
        acks[every] = sum(n["tx_ack"] for n in s["nics"].values())
    # (the senders still ask for ACKs of their own, ack_requests: not 16x fewer)
    assert 0 < acks[16] * 2 < acks[1], acks
