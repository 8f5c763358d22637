"""Transfers through loss, reordering, duplication, corruption and a 100 ms
outage (bench/reliab_faults.py): every stream's SHA-256 equals the sent
one's; retransmissions are counted."""
import os
import sys

from conftest import needs_root

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import reliab_faults  # noqa: E402


def _check(rows):
    for r in rows:
        assert r["done"] and r["bytes_lost"] == 0 and r["sha256_equal"] == r["streams"], r
        if r["case"] != "reorder 5%" and r["case"] != "duplicate 5%":
            assert r["tx_retx"] > 0, r
        if r["case"].startswith("corrupt"):
            assert r["drop_csum"] > 0, r
        if r["case"].startswith("duplicate"):
            assert r["rx_dup"] > 0, r


def test_every_fault_virtual():
    _check(reliab_faults.run_virtual(n_flows=1, nbytes=256 << 10))


@needs_root
def test_loss_and_corruption_over_af_xdp():
    _check(reliab_faults.run_xdp(cases=("loss 10%", "corrupt 2%"), n_flows=1, nbytes=128 << 10))
