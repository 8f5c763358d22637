"""Malformed input into a switch and two host NICs (bench/reliab_fuzz.py):
Scapy fuzz() of every Taurus layer, truncations, bit flips, random bytes,
wrong lengths and bad checksums; every frame accounted for; the transfer
beside them completes intact."""
import os
import sys

from conftest import needs_root

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import reliab_fuzz  # noqa: E402


def test_corpus_has_every_kind_and_every_layer():
    data, lens, kinds, kind = reliab_fuzz.build_corpus(1200, "02:00:00:00:00:02", "10.0.0.2")
    assert len(lens) == 1200 and set(kind.tolist()) == set(range(len(kinds)))
    assert lens.min() == 0 and lens.max() <= reliab_fuzz.ROW
    names = reliab_fuzz._fuzzed_layers("02:00:00:00:00:02", "10.0.0.2")
    for want in ("pds:PDSRudReq", "pds:PDSAck", "pds:PDSAckCC", "pds:PDSAckCCX", "pds:PDSNack",
                 "pds:PDSNackCCX", "pds:credit", "pds:ack_cc_credit", "csig:CSIGCompact",
                 "csig:CSIGWide", "int", "pfc", "probe", "ses:SESStd"):
        assert want in names, want


def test_fuzz_into_switch_and_nics_virtual():
    r = reliab_fuzz.run_virtual(6000, transfer_bytes=1 << 20)
    assert r["transfer_done"] and r["transfer_intact"]
    assert r["h2"]["frames"] > r["into_h2"] and r["h1"]["frames"] > r["into_h1"]
    assert r["h2"]["parse_errors"] and r["h2"]["to_transport"] > 0
    assert r["frames_in_use"] == 0


@needs_root
def test_fuzz_over_af_xdp():
    r = reliab_fuzz.run_xdp(1000, transfer_bytes=256 << 10)
    assert r["transfer_done"] and r["transfer_intact"] and r["switch_rx"] > 0
