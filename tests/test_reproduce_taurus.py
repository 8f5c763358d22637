"""`taurus reproduce` --quick of the TAURUS paper's evaluation: the Fig 9
pairs (each algorithm in an agent behind the modelled PCIe separation
against the same algorithm in the datapath), the Fig 8 micro-benchmarks and
§5.4's frameworks; the claims the ledger records for the full runs hold in
the quick ones."""
import json
import os

import pytest

from taurus.reproduce.ledger import assert_claims
from taurus.reproduce.taurus_eval import ALGORITHMS
from taurus.testing.quick import run_quick


@pytest.mark.parametrize("name", ["taurus-converge", "taurus-mice"])
def test_quick(tmp_path, capsys, name):
    out = str(tmp_path / name)
    _, fig = run_quick(name, out, capsys)
    assert fig["separation"] == "pcie"
    for alg in ALGORITHMS:
        agent = json.load(open(os.path.join(out, f"{alg}-agent", "summary.json")))
        native = json.load(open(os.path.join(out, f"{alg}-native", "summary.json")))
        assert agent["separation"] == {"report_ns": 500, "decision_ns": 500,
                                       "per_message_ps": 1400}
        assert native["separation"] is None and agent["agent"]["messages"] > 0
    assert_claims(name, fig)


@pytest.mark.parametrize("name", ["taurus-aggregation", "taurus-filter"])
def test_micro_benchmarks_quick(tmp_path, capsys, name):
    """Fig 8's micro-benchmarks: aggregation against per-event messages (and
    agent CPU), and the update filters' share, with the ledger's claims."""
    _, fig = run_quick(name, str(tmp_path / name), capsys)
    assert_claims(name, fig)


def test_frameworks_quick(tmp_path, capsys):
    """§5.4: agent (TAURUS), per-event (CCP-like) and native (DOCA-PCC-like)
    at rising load: native costs no host CPU and no messages, per-event
    sends the most, and the line rate at which it needs a core is stated."""
    text, fig = run_quick("taurus-frameworks", str(tmp_path / "fw"), capsys)
    assert "paper: CPU CCP 86.1...198.7%" in text
    for r in fig["rows"].values():
        assert r["native"]["messages"] == 0 and r["native"]["goodput_bps"] > 0
        assert r["per-event"]["messages"] > r["agent"]["messages"] > 0
    assert fig["per_event_core_at_gbps"] > 0
    assert_claims("taurus-frameworks", fig)
