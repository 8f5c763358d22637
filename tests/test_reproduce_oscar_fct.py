"""`taurus reproduce oscar-fct --quick`: OSCAR, HPCC and HPCC* on a small
fat-tree with Cache Follower, Hadoop + incast and per-packet spraying;
the slowdown tables, OSCAR's change against each beside the seed's, and
the ledger's claims.  Virtual time: deterministic."""
import re

from taurus.reproduce import fct_fabric as FF
from taurus.reproduce.ledger import assert_claims
from taurus.reproduce.oscar_fct import ALGS, BASES, WORKLOADS
from taurus.testing.quick import run_quick


def test_oscar_fct_quick(tmp_path, capsys):
    text, fig = run_quick("oscar-fct", str(tmp_path / "o"), capsys)
    line = text.strip().splitlines()[-1]
    pct = r"[-+]\d+%"
    vs = (rf"vs HPCC avg {pct} tail {pct} \(seed (?:{pct[:-1]}/{pct}|avg -17\.\.-76%)\), "
          rf"vs HPCC\* avg {pct} tail {pct} \(seed (?:{pct[:-1]}/{pct}|avg -17\.\.-76%)\)")
    assert re.fullmatch(rf"oscar-fct: OSCAR FCT slowdown: Cache Follower {vs}; "
                        rf"Hadoop \+ Incast {vs}; Cache Follower, per-packet {vs}", line), line
    assert_claims("oscar-fct", fig)          # the ledger's claims, as in the full run
    for wl in WORKLOADS:
        for alg in ALGS:
            r = fig[wl][alg]
            assert r["flows"] >= 150 and r["drops"] == 0
            assert [(b["lo"], b["hi"]) for b in r["table"]] == list(zip(FF.BINS[:-1], FF.BINS[1:]))
            assert r["every"]["count"] == r["all"]["count"] + r["incast"]["count"]
        assert (fig[wl]["hpcc"]["incast"]["count"] > 0) == (wl == "hadoop_incast")
        for b in BASES:
            v = fig[wl]["vs"][b]
            o, h = fig[wl]["oscar"]["every"], fig[wl][b]["every"]
            assert v["avg"] == 100 * (o["avg"] / h["avg"] - 1)
            assert v["tail"] == 100 * (o["p99"] / h["p99"] - 1)
    assert any("scaling: rates x 1/4" in ln for ln in text.splitlines())
    assert any("OSCAR against" in ln for ln in text.splitlines())
