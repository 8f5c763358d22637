"""`taurus reproduce oscar-*` --quick: each completes, writes figures.json
and its plots, ends with the issue's headline; OSCAR's release takes a
constant few rounds over the burst sizes (the seed's O(1))."""
import os
import re


from taurus.reproduce.ledger import assert_claims
from taurus.testing.quick import run_quick

NUM = r"(\d+|-)"


def _run(name, tmp_path, capsys):
    out = str(tmp_path / name)
    text, fig = run_quick(name, out, capsys)
    line = text.strip().splitlines()[-1]
    assert_claims(name, fig)                  # the ledger's orderings, as in the full run
    for p in fig.get("plots", []):
        assert os.path.getsize(os.path.join(out, p)) > 0
    return line, fig


def test_convergence_quick(tmp_path, capsys):
    line, fig = _run("oscar-convergence", tmp_path, capsys)
    order = r"(O\(1\)|O\(log Delta\)|O\(Delta\)|growing|shrinking|-)"
    pat = ("oscar-convergence: rounds to reach the level, growth over Delta \\(onset/release\\): "
           + ", ".join(f"{n} {order}/{order}"
                       for n in ("OSCAR", "DCTCP", "DCQCN", "Swift", "HPCC", "PowerTCP")))
    assert re.fullmatch(pat, line), line
    assert fig["burst_flows"] == [3, 9, 27]
    # as in the full run: OSCAR's release is O(1) in rounds, Swift's grows
    assert fig["fits"]["oscar"]["release_reach"]["order"] == "O(1)" or \
        fig["fits"]["oscar"]["release_reach"]["per_doubling"] < 1.5
    assert fig["fits"]["swift"]["release_reach"]["per_doubling"] > 1.5
    assert fig["plots"] == ["convergence.png"]


def test_bls_quick(tmp_path, capsys):
    line, fig = _run("oscar-bls", tmp_path, capsys)
    m = re.fullmatch(r"oscar-bls: MSE BLS ([\d.e+-]+), divide\+EWMA ([\d.e+-]+) "
                     r"\(([\d.]+)\u00d7 smaller\)", line)
    assert m, line
    assert fig["batches"] > 20 and float(m[1]) < float(m[2])


def test_fairness_quick(tmp_path, capsys):
    line, fig = _run("oscar-fairness", tmp_path, capsys)
    m = re.fullmatch(r"oscar-fairness: Jain 2 / 8 flows: authors' AI ([\d.]+) / ([\d.]+), "
                     r"AI per tau \(ours\) ([\d.]+) / ([\d.]+)", line)
    assert m, line
    assert float(m[1]) >= 0.9 and float(m[3]) >= 0.9 and float(m[4]) >= 0.8
