"""The agent's gaps counter under garbage sequence numbers (a hostile or
broken writer of the report ring): whatever int64 values the SEQ column
holds, gaps and seq_back never go negative or wrap, each record adds at
most the ring's capacity to gaps, and the next expected number only moves
forward (agent/messages.py: _seq_check)."""
import numpy as np

from taurus.agent.messages import _seq_check


def test_garbage_sequence_numbers_never_wrap_the_gaps_counter():
    rng = np.random.default_rng(43)
    cap = 4096
    nxt, total, back_total = 0, 0, 0
    for k in range(2000):
        n = int(rng.integers(1, 64))
        kind = k % 4
        if kind == 0:                       # any int64 at all
            seq = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n,
                               dtype=np.int64, endpoint=True)
        elif kind == 1:                     # the extremes
            seq = rng.choice(np.array([np.iinfo(np.int64).min, -1, 0, 1,
                                       np.iinfo(np.int64).max - 1, np.iinfo(np.int64).max],
                                      np.int64), n)
        elif kind == 2:                     # plausible jumps, the largest allowed
            seq = nxt - 1 + np.arange(1, n + 1, dtype=np.int64) * (cap + 1)
        else:                               # near the next expected number
            seq = nxt + rng.integers(-cap, cap, n).astype(np.int64)
        new, gaps, back = _seq_check(seq, nxt, cap)
        assert 0 <= gaps <= n * cap and 0 <= back <= n
        assert new >= nxt
        nxt = new
        total += gaps
        back_total += back
    assert 0 <= total <= 2000 * 64 * cap
    assert nxt < np.iinfo(np.int64).max
