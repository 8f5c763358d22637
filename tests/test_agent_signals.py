"""Custom-signal parsers (vectorised, from wire/spec locations) and host samplers."""
import os

import numpy as np
import pytest

from taurus.agent import signals as S
from taurus.testing.fake_datapath import custom_record
from taurus.datapath.wire import spec
from taurus.datapath.wire.codec import set_field


def parse(name, payloads):
    rec = np.array([custom_record(0, 0, 1, p) for p in payloads])
    return S.CUSTOM_PARSERS[name](*S.raw_bytes(rec))


def int_trailer(hops):
    buf = np.zeros(len(hops) * 8 + 4, np.uint8)
    for h, (code, ts, tx, q) in enumerate(hops):
        for loc, v in ((spec.INTHOP_RATE_CODE, code), (spec.INTHOP_TS, ts),
                       (spec.INTHOP_TX_BYTES, tx), (spec.INTHOP_QLEN, q)):
            set_field(buf, h * 8, loc, v)
    t = len(hops) * 8
    set_field(buf, t, spec.INTTAIL_MAGIC, spec.INT_MAGIC)
    set_field(buf, t, spec.INTTAIL_NHOP, len(hops))
    set_field(buf, t, spec.INTTAIL_MAX_HOP, spec.INT_MAX_HOPS)
    return buf.tobytes()


def test_int_parser():
    good = int_trailer([(6, 1000, 10, 3), (3, 2000, 20, 0)])
    out = parse("int", [good, good[:-1], b"\x00" * 12])
    assert list(out["valid"]) == [True, False, False] and out["nhop"][0] == 2
    assert out["rate_bps"][0, :2].tolist() == [100 * 10**9, 10 * 10**9]
    assert out["tx_bytes"][0, 1] == 20 * spec.INT_TX_UNIT and out["qlen_bytes"][0, 0] == 3 * 80
    assert out["ts"][0, 0] == 1000 and out["rate_bps"][0, 2] == 0


def test_csig_parser_whole_header_and_rejects():
    hdr = np.zeros(spec.ACK_CCX_SIZE, np.uint8)
    set_field(hdr, 0, spec.ACK_CCX_RCSIG_FMT, spec.CSIG_COMPACT)
    set_field(hdr, 0, spec.ACK_CCX_RCSIG_S, 999)
    set_field(hdr, 0, spec.ACK_CCX_SERVICE_TIME, 42)
    out = parse("csig", [hdr.tobytes(), b"\x00" * 8, b"\x40" * 5])
    assert out["valid"].tolist() == [True, False, False]       # fmt NONE, bad length
    assert out["s"][0] == 999 and out["service_time"][0] == 42


def test_credit_parser():
    out = parse("credit", [(70000).to_bytes(3, "big"), (5_000_000).to_bytes(4, "big"), b"\x01"])
    assert out["credit"][:2].tolist() == [70000, 5_000_000] and out["valid"].tolist() == [True, True, False]


def test_cpu_sampler_reads_proc_stat():
    s = S.CpuSampler()
    sum(range(200000))
    v = s.sample()
    assert 0.0 <= v["busy"] <= 1.0 and 0.0 <= v["iowait"] <= 1.0 and v["ticks"] >= 0


@pytest.mark.parametrize("res", ["cpu", "memory", "io"])
def test_psi_samplers(res):
    if not os.path.exists(f"/proc/pressure/{res}"):
        pytest.skip("no PSI on this kernel")
    v = S.SAMPLERS[f"psi_{res}"]().sample()
    assert v["some_avg10"] >= 0 and v["some_stall_us"] >= 0


def test_netdev_and_cgroup_memory_samplers():
    v = S.NetdevDropsSampler("lo").sample()
    assert v["rx_dropped"] >= 0 and v["rx_dropped_delta"] >= 0
    try:
        m = S.CgroupMemorySampler("").sample()
    except S.Unavailable:
        pytest.skip("no memory controller")
    assert m["current"] > 0


def test_sampler_set_periods_and_errors():
    ss = S.SamplerSet()
    ss.add("cpu", 1000)
    with pytest.raises(S.Unavailable, match="unknown host sampler"):
        ss.add("msr")
    assert [n for n, _ in ss.due(10_000)] == ["cpu"]
    assert ss.due(10_500) == [] and ss.next_due() == 11_000
    with pytest.raises(S.Unavailable):
        S.EngineDropsSampler("taurus-no-such-engine")
