"""Parser cost: ``python bench/parse.py [n_frames]``.

Builds 4096 distinct valid frames (every PDS type, with/without CSIG, probe,
SES), then times ``parse_frame`` in a Numba loop over n frames (default 1M):
one frame repeated (every branch predicted), the 4096 frames cycled (cache
hot, types mixed: branch mispredictions), and n distinct rows (memory-bound,
like frames fresh from a ring).  Prints ns/frame, best of 5, loop included.
"""
import sys
import time

import numba as nb
import numpy as np

from taurus.datapath.wire import parse as P

ROW = 256


@nb.njit(cache=True, _nrt=False)   # like the parser: no refcounts per row view
def _loop(data, lengths, n, mask, cfg, d, counts):
    acc = np.int64(0)
    for k in range(n):
        i = k & mask              # not k % rows: a 64-bit division costs ~30 ns here
        acc += P.parse_frame(data[i], 0, lengths[i], cfg, d, counts)
        acc += d[P.D_PSN]
    return acc



def sample_frames(n=4096, seed=3):
    from taurus.datapath.wire import frames as F
    from taurus.datapath.wire import layers as L
    from taurus.datapath.wire import spec as S
    rng = np.random.default_rng(seed)
    data = np.zeros((n, ROW), np.uint8)
    lengths = np.zeros(n, np.int64)
    types = sorted(S.PDS_LAYOUTS)
    for i in range(n):
        t = types[i % len(types)]
        kw = {"type": t}
        if "psn" in S.LOCS[S.PDS_LAYOUTS[t].name]:
            kw["psn"] = int(rng.integers(1 << 31))
        ses = None
        if t != S.T_CONTROL:
            nh = [x for x in S.NEXT_HDR_ALLOWED[t] if x][int(rng.integers(3))]
            ses = getattr(L, S.SES_LAYOUTS[nh].name)()
        csig = [None, L.CSIGCompact(s=3), L.CSIGWide(s=99)][int(rng.integers(3))]
        probe = L.TaurusProbe(ts=i) if rng.integers(2) else None
        raw = bytes(F.uet_frame(L.PDS_BY_TYPE[t](**kw), ses, b"x" * int(rng.integers(0, 64)),
                                probe=probe, csig=csig))
        data[i, :len(raw)] = np.frombuffer(raw, np.uint8)
        lengths[i] = len(raw)
    return data, lengths


def main(n=1_000_000):
    data, lengths = sample_frames()
    cfg, d, counts = P.make_parse_config(), P.new_desc(), P.new_counts()
    _loop(data, lengths, 1000, len(data) - 1, cfg, d, counts)     # compile / load cache
    big = np.tile(data, (n // len(data) + 1, 1))[:n]
    big_len = np.tile(lengths, n // len(lengths) + 1)[:n]
    same = np.repeat(data[:1], len(data), axis=0)
    same_len = np.repeat(lengths[:1], len(data))
    for name, (dd, ll, mask) in (
            ("one frame repeated (branches predicted)", (same, same_len, len(data) - 1)),
            ("4096 mixed frames cycled (cache-hot)", (data, lengths, len(data) - 1)),
            (f"{n} distinct rows (memory-bound)", (big, big_len, -1))):
        best = 1e9
        for _ in range(5):
            counts[:] = 0
            t = time.perf_counter()
            _loop(dd, ll, n, mask, cfg, d, counts)
            best = min(best, time.perf_counter() - t)
        assert counts[P.P_OK] == n, P.status_counts(counts)
        print(f"{name}: {n} frames, {best * 1e9 / n:.1f} ns/frame (best of 5)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
