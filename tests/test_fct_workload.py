"""The large-scale FCT setting's traffic and table (reproduce/fct_fabric.py,
tools/workload.py incast_bursts, tools/analysis.py slowdown_table): each
host's offered load, the flow sizes' distribution, the 8:1 incast
background's pattern and load, and the slowdown table's format.  Plans
only (no run): deterministic and fast."""
import numpy as np
import pytest

from taurus.experiment import schema
from taurus.experiment.traffic import build_plan
from taurus.reproduce import fct_fabric as FF
from taurus.tools.analysis import format_slowdown, slowdown_table
from taurus.tools.workload import SizeCdf, incast_bursts

SC = FF.Scale(4)
DUR, DRAIN = 4_000_000, 1_000_000


def _plan(cdf="hadoop", load=0.5, incast_load=0.1, tree=FF.SMALL_TREE):
    d = FF.fct_x("t", SC, tree, cdf, load, incast_load, DUR, DRAIN, {"algorithm": "dctcp"})
    return build_plan(schema.from_dict(d)), d


def test_each_host_offers_its_load_to_random_others():
    plan, _ = _plan(load=0.5, incast_load=0)
    span = (DUR - DRAIN) / 1e9
    sent: dict[str, float] = {}
    for f in plan.flows:
        assert f.kind == "workload" and f.src != f.dst and f.start < DUR - DRAIN
        sent[f.src] = sent.get(f.src, 0) + f.size
    hosts = [f"h{i}" for i in range(1, 33)]
    assert sorted(sent) == sorted(hosts)
    load = np.array([sent[h] * 8 / span / SC.host for h in hosts])
    assert 0.45 < load.mean() < 0.55                 # the mean host: its load
    assert len({f.dst for f in plan.flows}) == 32    # every host receives


def test_sizes_follow_the_cdf_scaled():
    plan, _ = _plan(cdf="websearch", load=0.8, incast_load=0)
    sizes = np.array([f.size for f in plan.flows]) * SC.s
    cdf = SizeCdf.load("websearch")
    assert len(sizes) > 500
    for q in (0.3, 0.5, 0.7):
        # the share below a CDF point's size is its probability
        x = float(np.interp(q, cdf.probs, cdf.sizes))
        assert abs(np.mean(sizes < x) - q) < 0.06, q


def test_incast_background_is_8_to_1_bursts_of_500kb_at_its_load():
    plan, d = _plan(load=0.3, incast_load=0.2)
    bursts: dict[tuple, list] = {}
    for f in plan.flows:
        if f.kind == "incast":
            bursts.setdefault((f.group, f.start), []).append(f)
    assert len(bursts) >= 10
    for fl in bursts.values():
        dst = {f.dst for f in fl}
        assert len(fl) == 8 and len(dst) == 1                    # 8 senders, one receiver
        assert len({f.src for f in fl}) == 8 and not dst & {f.src for f in fl}
        assert all(f.size == 500_000 // SC.s for f in fl)
    inc = sum(f.size for fl in bursts.values() for f in fl)
    load = inc * 8 / ((DUR - DRAIN) / 1e9) / (32 * SC.host)      # per host downlink
    assert 0.1 < load < 0.3


def test_incast_bursts_rate_and_receivers():
    rng = np.random.default_rng(3)
    b = incast_bursts(rng, 320, 8, 500_000, 0.05, 100e9, 0.01)
    lam = 0.05 * 100e9 * 320 / (8 * 8 * 500_000)             # bursts per second
    assert abs(len(b) - lam * 0.01) < 4 * np.sqrt(lam * 0.01)
    assert all(len(set(x.srcs)) == 8 and x.dst not in x.srcs for x in b)
    assert len({x.dst for x in b}) > 40                         # receivers spread
    with pytest.raises(ValueError):
        incast_bursts(rng, 8, 8, 1, 0.1, 1e9, 0.01)


def test_slowdown_table_avg_and_percentiles_per_bin():
    size = [1_000, 5_000, 50_000, 60_000, 70_000, 2_000_000]
    sd = [1.0, 3.0, 2.0, 4.0, 6.0, 10.0]
    t = slowdown_table(size, sd, (0, 10_000, 100_000, 1_000_000, 10**12))
    assert [r["count"] for r in t] == [2, 3, 0, 1]
    assert t[0]["avg"] == 2.0 and t[1]["avg"] == 4.0 and t[1]["p50"] == 4.0
    assert t[1]["p99"] == pytest.approx(5.96)
    assert t[2]["avg"] is None and t[2]["p99"] is None
    lines = format_slowdown({"DCTCP native": t, "DCTCP agent": t})
    assert lines[0].split() == ["<10KB", "10KB-100KB", "100KB-1MB", ">=1MB"]
    assert lines[1].split() == ["DCTCP", "native", "n", "2", "3", "0", "1"]
    assert lines[2].split() == ["avg", "2.000", "4.000", "-", "10.000"]
    assert [ln.split()[0] for ln in lines[3:6]] == ["p50", "p95", "p99"]
    assert len(lines) == 1 + 2 * 5


def test_frames_sizes_the_pool_and_is_checked():
    _, d = _plan()
    assert schema.from_dict(d).frames == 1 << 17
    d["experiment"]["frames"] = 10
    with pytest.raises(schema.ExperimentError) as e:
        schema.from_dict(d)
    assert "experiment.frames" in str(e.value)
