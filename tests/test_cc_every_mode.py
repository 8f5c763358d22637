"""Every registered sender algorithm runs in native, agent and per-event mode
on the demo dumbbell whose 2 Gbit/s bottleneck offers ECN, CSIG, INT and SRC:
>= 75% of the bottleneck, no drops (virtual time, 5 ms)."""
import os
import tomllib

import pytest

from taurus.cc_algorithms import registry
from taurus.experiment import schema
from taurus.experiment.runner import run_experiment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "dctcp_dumbbell.toml")
SENDERS = [n for n in registry.BUILTINS if registry.lookup(n).role == "sender"]


def _experiment(name: str, mode: str):
    with open(DEMO, "rb") as f:
        data = tomllib.load(f)
    data["experiment"].update(duration="5ms", warmup="1ms")
    (bott,) = [lk for lk in data["topology"]["links"] if lk["endpoints"] == ["s1", "s2"]]
    bott["csig"] = True
    bott["int"] = True
    bott["src"] = True
    data["cc"].update(algorithm=name, mode=mode)
    return schema.from_dict(data, DEMO, os.path.dirname(DEMO))


@pytest.mark.parametrize("mode", ["native", "agent", "per-event"])
@pytest.mark.parametrize("name", SENDERS)
def test_algorithm_fills_the_ecn_csig_int_bottleneck(name, mode, tmp_path):
    s = run_experiment(_experiment(name, mode), str(tmp_path), "virtual")
    assert s["complete"] and not s["error"]
    bott = s["ports"][s["busiest_port"]]
    assert s["busiest_port"] == "s1-eth2"
    assert s["throughput_bps"] >= 0.75 * 2e9, s["throughput_bps"]
    assert bott["drops"] == 0
    assert {f["algorithm"] for f in s["flows"]} == {name}
    assert {f["mode"] for f in s["flows"]} == {mode}
