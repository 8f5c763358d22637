"""`taurus perf --verify`'s receiving side (tools/perf_verify.py): the
client's pattern, checked at any split of the stream, and a wrong byte
found at its offset."""
import numpy as np

from taurus.tools.perf_verify import Verifier, pattern


def _stream(length, n):
    return np.resize(pattern(length), n).tobytes()


def test_the_pattern_checks_clean_at_any_split():
    data = _stream(1000, 12_345)
    rng = np.random.default_rng(3)
    v, i = Verifier(1000), 0
    while i < len(data):
        k = int(rng.integers(1, 2500))        # pieces below and above one message
        v.feed(data[i:i + k])
        i += k
    assert (v.n, v.wrong, v.first_wrong) == (12_345, 0, -1)
    assert v.line("10.0.0.1", 3) == "taurus perf: verified 10.0.0.1 pdc 3: 12345 bytes, 0 wrong"


def test_a_wrong_byte_is_counted_at_its_offset():
    data = bytearray(_stream(1000, 5000))
    data[2345] ^= 0xFF
    data[4000] ^= 0x01
    v = Verifier(1000)
    v.feed(bytes(data[:2000]))
    v.feed(bytes(data[2000:]))
    assert (v.n, v.wrong, v.first_wrong) == (5000, 2, 2345)
    assert "2 wrong (first at offset 2345)" in v.line("10.0.0.1", 1)


def test_a_missing_byte_shifts_the_rest_and_is_seen():
    data = _stream(1000, 3000)
    v = Verifier(1000)
    v.feed(data[:1500] + data[1501:])          # one byte lost in the middle
    assert v.wrong > 0 and v.first_wrong == 1500
