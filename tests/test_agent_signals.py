"""Custom-signal parsers (vectorised, from wire/spec locations) and host samplers."""

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


def test_cpu_sampler_reads_proc_stat(tmp_path):
    """Fractions of the ticks between two samples: of 400 ticks, 150 idle and
    100 iowait -> busy 1 - 250/400, iowait 100/400."""
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
    s = S.CpuSampler(str(stat))
    stat.write_text("cpu  200 0 100 950 150 0 0 0 0 0\n")
    v = s.sample()
    assert v == {"busy": 0.375, "iowait": 0.25, "ticks": 400}
    assert S.CpuSampler.fields(v) == (375_000, 250_000)             # ppm
    assert 0.0 <= S.CpuSampler().sample()["busy"] <= 1.0            # the machine's own


def test_psi_sampler_reads_pressure(tmp_path):
    f = tmp_path / "cpu"
    f.write_text("some avg10=1.50 avg60=0.50 avg300=0.10 total=1000\n"
                 "full avg10=0.00 avg60=0.00 avg300=0.00 total=10\n")
    s = S.SAMPLERS["psi_memory"](str(f))
    f.write_text("some avg10=2.25 avg60=0.75 avg300=0.10 total=1600\n"
                 "full avg10=0.10 avg60=0.00 avg300=0.00 total=25\n")
    v = s.sample()
    assert (v["some_avg10"], v["some_stall_us"], v["full_stall_us"]) == (2.25, 600, 15)
    assert S.SAMPLERS["psi_memory"].fields(v) == (225, 600)        # 1/100 %, us
    f.write_text("cpu 1 2 3\n")
    with pytest.raises(S.Unavailable, match="not a PSI file"):
        s.sample()


def test_netdev_and_cgroup_memory_samplers(tmp_path):
    st = tmp_path / "net" / "veth0" / "statistics"
    st.mkdir(parents=True)
    for k, v in (("rx_dropped", 5), ("tx_dropped", 1), ("rx_errors", 0), ("tx_errors", 2)):
        (st / k).write_text(f"{v}\n")
    n = S.NetdevDropsSampler("veth0", root=str(tmp_path / "net"))
    (st / "rx_dropped").write_text("12\n")
    (st / "tx_errors").write_text("3\n")
    v = n.sample()
    assert (v["rx_dropped"], v["rx_dropped_delta"], v["tx_errors_delta"]) == (12, 7, 1)
    assert S.NetdevDropsSampler.fields(v) == (7, 1)
    cg = tmp_path / "cg" / "job"
    cg.mkdir(parents=True)
    (cg / "memory.current").write_text("123456\n")
    (cg / "memory.high").write_text("max\n")
    (cg / "memory.stat").write_text("anon 1000\nfile 2000\nshmem 7\n")
    m = S.CgroupMemorySampler("job", root=str(tmp_path / "cg")).sample()
    assert m == {"current": 123456, "high": -1, "anon": 1000, "file": 2000}
    assert S.CgroupMemorySampler.fields(m) == (123456, -1)


def test_sampler_set_periods_and_errors():
    ss = S.SamplerSet()
    ss.add("cpu", 1000)
    with pytest.raises(S.Unavailable, match="unknown host sampler"):
        ss.add("msr")
    assert [n for n, _ in ss.due(10_000)] == ["cpu"]
    assert ss.due(10_500) == [] and ss.next_due() == 11_000
    with pytest.raises(S.Unavailable):
        S.EngineDropsSampler("taurus-no-such-engine")
