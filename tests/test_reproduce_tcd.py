"""TCD (seed 002) reproduced: `taurus reproduce tcd-victim --quick` marks
fewer victim packets CE with TCD than with plain ECN, over 5 seeds; `tcd-states
--quick` marks the victim UE (TCD) or CE (ECN) while the burst runs; DCQCN
with ``tcd`` cuts harder than DCQCN on the same CE CNP (synthetic events).
Runs in virtual time: deterministic."""
import json
import os
import re

import pytest

from taurus.cc_algorithms.dcqcn import Dcqcn
from taurus.cli import main
from taurus.reproduce.ledger import assert_claims
from taurus.testing.quick import run_quick

from test_cc_dcqcn import LINE, feed


def _last_line(capsys):
    return capsys.readouterr().out.strip().splitlines()[-1]


def _figures(out):
    with open(os.path.join(out, "figures.json")) as f:
        fig = json.load(f)
    assert_claims(fig["scenario"], fig)     # the ledger's orderings, as in the full run
    return fig


def test_dcqcn_tcd_cuts_harder_on_ce_and_not_on_ue():
    """Two flows fed the same CNPs: UE-only first (TCD: no cut, DCQCN: a
    cut), then CE once N has passed (TCD cuts by 1.2 alpha, DCQCN by alpha/2)."""
    evs = [(1_000, "CNP", {"ue": 1}), (100_000, "CNP", {"ce": 1})]
    plain, tcd = feed(Dcqcn.Params(), evs), feed(Dcqcn.Params(tcd=True), evs)
    assert tcd[0]["rc"] == LINE and plain[0]["rc"] < LINE
    assert tcd[0]["alpha"] == Dcqcn.Params().alpha_init    # UE: alpha untouched too
    a = tcd[1]["alpha"]
    assert tcd[1]["rc"] == pytest.approx(LINE * (1 - 1.2 * a))
    cut_tcd = 1 - tcd[1]["rc"] / tcd[0]["rc"]
    cut_plain = 1 - plain[1]["rc"] / plain[0]["rc"]
    assert cut_tcd > 2 * cut_plain                            # 1.2 alpha vs alpha / 2


def test_tcd_victim_quick(tmp_path, capsys):
    out = str(tmp_path / "v")
    assert main(["reproduce", "tcd-victim", "--quick", "--out", out]) == 0
    line = _last_line(capsys)
    m = re.fullmatch(r"tcd-victim: victim packets CE ECN ([\d.]+)%, TCD ([\d.]+)%; flows ECN "
                     r"([\d.]+)%, TCD ([\d.]+)% \(5 seeds' mean\); victim mean FCT DCQCN "
                     r"([\d.]+) us, DCQCN\+TCD ([\d.]+) us", line)
    assert m, line
    fig = _figures(out)
    assert fig["headline"] == line
    e, t, c = fig["ecn"], fig["tcd"], fig["tcd-cc"]
    assert e["seeds"] == t["seeds"] == c["seeds"] == 5 and len(e["per_seed"]) == 5
    assert min(e["victims"], t["victims"], c["victims"]) >= 125
    # as in the full run: TCD leaves (next to) no victim packet CE, ECN marks some
    assert t["pkt_ce_pct"] < e["pkt_ce_pct"] and c["pkt_ce_pct"] < e["pkt_ce_pct"]
    assert e["pkt_ce_pct_max"] > 0 and e["p0_pfc_rx"] > 0     # ECN marks the paused victims CE
    assert t["pkt_ue_pct"] > 0 and t["p0_pfc_rx"] > 0         # TCD: UE at the paused port
    assert c["mean_fct_us"] < e["mean_fct_us"]
    assert e["drops"] == t["drops"] == c["drops"] == 0        # lossless
    assert os.path.getsize(os.path.join(out, "victim_fct.png")) > 0


def test_tcd_states_quick(tmp_path, capsys):
    out = str(tmp_path / "s")
    assert main(["reproduce", "tcd-states", "--quick", "--out", out]) == 0
    line = _last_line(capsys)
    m = re.fullmatch(r"tcd-states: F0 marked during A0: ECN ([\d.]+)% CE, "
                     r"TCD ([\d.]+)% UE / ([\d.]+)% CE", line)
    assert m, line
    fig = _figures(out)
    assert float(m[1]) > 0 and float(m[2]) > 0 and float(m[3]) == 0
    assert fig["tcd"]["outside_ce_pct"] == 0.0                # never CE, before or after A0
    assert fig["tcd"]["t_ns"][0] > 0 and max(fig["tcd"]["ue"][:5]) == 0   # unmarked before it
    assert fig["ecn"]["drops"] == fig["tcd"]["drops"] == 0
    assert os.path.getsize(os.path.join(out, "states.png")) > 0


def test_tcd_epsilon_quick(tmp_path, capsys):
    out = str(tmp_path / "e")
    assert main(["reproduce", "tcd-epsilon", "--quick", "--out", out]) == 0
    line = _last_line(capsys)
    m = re.fullmatch(r"tcd-epsilon: largest eps with no victim packet CE in any of 5 seeds: "
                     r"([\d.]+|none) \(flows: ([\d.]+|none)\)", line)
    assert m, line
    fig = _figures(out)
    assert list(fig["epsilon"]) == ["0.01", "0.05", "0.1", "0.2", "0.5"]
    assert all(r["seeds"] == 5 for r in fig["epsilon"].values())
    ue = [r["pkt_ue_pct"] for r in fig["epsilon"].values()]
    assert ue[0] > ue[-1] > 0          # a smaller epsilon: a longer max(T_on), more UE


def test_tcd_fct_quick(tmp_path, capsys):
    """The full run's direction (k = 10 fat-tree, ~44,000 flows): TCD lowers
    the small flows' median and tail, sends fewer PAUSEs, and marks UE
    only when on."""
    out = str(tmp_path / "f")
    assert main(["reproduce", "tcd-fct", "--quick", "--out", out]) == 0
    line = _last_line(capsys)
    m = re.fullmatch(r"tcd-fct: <80KB median slowdown DCQCN ([\d.]+), DCQCN\+TCD ([\d.]+)", line)
    assert m, line
    fig = _figures(out)
    e, t = fig["DCQCN"], fig["DCQCN+TCD"]
    assert fig["hosts"] == 16 and fig["tree"] == {"k": 4}
    assert e["flows"] == t["flows"] > 500                 # one plan for both
    assert e["drops"] == t["drops"] == 0 and e["pfc_xoff"] > t["pfc_xoff"] > 0
    assert e["ue_marks"] == 0 < t["ue_marks"]
    assert float(m[2]) <= float(m[1])
    assert t["small"]["p95"] < e["small"]["p95"] and t["small"]["p99"] < e["small"]["p99"]
    assert [b["lo"] for b in e["table"]] == [0, 10_000, 50_000, 80_000, 200_000, 1_000_000]


def test_tcd_websearch_quick(tmp_path, capsys):
    """WebSearch on the k = 4 tree: the full run's direction (its ledger
    claims) and the < 500 KB summary beside the seed's."""
    _, fig = run_quick("tcd-websearch", str(tmp_path / "w"), capsys)
    m = re.fullmatch(r"tcd-websearch: <500KB median slowdown DCQCN ([\d.]+), "
                     r"DCQCN\+TCD ([\d.]+)", fig["headline"])
    assert m, fig["headline"]
    assert_claims(fig["scenario"], fig)     # the ledger's orderings, as in the full run
    e, t = fig["DCQCN"], fig["DCQCN+TCD"]
    assert fig["seed"]["small_p50"] == [4.6, 2.5]
    assert e["flows"] == t["flows"] > 100 and e["small"]["count"] == t["small"]["count"] > 50
    assert [b["lo"] for b in e["table"]] == [0, 100_000, 500_000, 1_000_000, 5_000_000]
