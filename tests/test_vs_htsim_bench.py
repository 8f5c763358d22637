"""bench/vs_htsim.py's Taurus side (htsim itself is absent in CI): htsim's
printed defaults are parsed, and the experiment written from them is one
`taurus run --check` accepts in virtual time, with htsim's queues, ECN
thresholds and a 4150-byte frame."""
import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("bench_vs_htsim",
                                               os.path.join(HERE, "bench", "vs_htsim.py"))
vs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(vs)

# What htsim_uec -sender_cc_only prints on the incast (lines the bench reads).
HTSIM_OUT = """\
Setting ECN to parameters low 37350 high 145250 enable on tor downlink 1
network_max_unloaded_rtt 14.0227
Flow Uec_9_0 flowId 1 uecSrc 0 starting at 0
Flow Uec_9_0 flowId 1 uecSrc 0 finished at 1021.18 total messages 1 total packets 490
Flow Uec_49_0 flowId 6 uecSrc 5 finished at 1131.26 total messages 1 total packets 490
New: 3920 Rtx: 403 RTS: 0 Bounced: 0 ACKs: 3900 NACKs: 403 Pulls: 0
"""


def test_htsim_output_is_parsed():
    h = vs.parse_htsim(HTSIM_OUT)
    assert h["fct_ns"] == [pytest.approx(1021180), pytest.approx(1131260)]
    assert (h["new"], h["rtx"], h["nacks"], h["acks"]) == (3920, 403, 403, 3900)
    assert (h["ecn_low"], h["ecn_high"]) == (37350, 145250)
    assert h["rtt_ns"] == pytest.approx(14022.7)
    assert vs.htsim_queue(h["ecn_high"]) == 178450          # 43 packets: 1 BDP


def test_scenarios_are_a_derangement_and_an_8_to_1_incast():
    perm = vs.scenario("perm")
    assert len(perm) == vs.HOSTS and sorted(d for _, d, _ in perm) == list(range(vs.HOSTS))
    assert all(s != d for s, d, _ in perm)
    inc = vs.scenario("incast")
    assert len(inc) == 8 and {d for _, d, _ in inc} == {0}
    assert len({s // (vs.K // 2) for s, _, _ in inc}) == 8  # one sender a rack


@pytest.mark.parametrize("name", ["perm", "incast"])
def test_taurus_experiment_passes_check_with_htsims_fabric(tmp_path, name):
    from taurus.experiment import frames, schema
    path = tmp_path / f"{name}.toml"
    path.write_text(vs.taurus_toml(vs.scenario(name), vs.parse_htsim(HTSIM_OUT), name))
    x = schema.load(str(path))
    assert frames.problems(x, "virtual") == []
    assert frames.frame_bytes(x.host_cc("h1").mss) == vs.MTU == 4150
    assert frames.problems(x, "wall")                       # a page-sized chunk cannot hold it
    sw = path.read_text()
    assert 'kmin = "37350B", kmax = "145250B"' in sw and 'threshold = "178450B"' in sw
    assert "ev_spray = 64" in sw and "trimming = true" in sw
