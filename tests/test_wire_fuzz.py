"""Fuzz the Numba parser with >100k malformed frames: valid frames truncated
at every length, valid frames with random byte flips, random bytes, and
random bytes behind plausible Ethernet/IPv4/UDP prefixes.  Every frame sits
at the END of its row, so any read past the frame leaves the array; a
second run in a subprocess compiled with NUMBA_BOUNDSCHECK=1 (own cache
directory) turns such a read into an IndexError.  Deterministic: numpy RNG
with fixed seeds."""
import os
import subprocess
import sys
import textwrap

import numpy as np

from taurus.datapath.wire import frames as F
from taurus.datapath.wire import layers as L
from taurus.datapath.wire import parse as P
from taurus.datapath.wire import spec as S
from taurus.datapath.wire.layout import cond_holds

W = 256            # row width: every frame fits, and ends at the row's end


def _rand_values(rng, h, fixed=None):
    vals = {}
    for p in S.PLACED[h.name]:
        f = p.field
        v = int(rng.integers(0, 1 << min(f.bits, 62)))
        vals[f.name] = v - (1 << (f.bits - 1)) if f.signed and v >= 1 << (f.bits - 1) else v
    vals.update(fixed or {})
    return {p.field.name: vals[p.field.name] for p in S.PLACED[h.name] if cond_holds(p.cond, vals)}


def seed_frames(n=160, seed=1):
    """Valid frames of every PDS type, with and without CSIG/probe/SES."""
    rng = np.random.default_rng(seed)
    types = sorted(S.PDS_LAYOUTS)
    out = []
    for i in range(n):
        t = types[i % len(types)]
        fixed = {"type": t}
        if t == S.T_CONTROL:
            fixed["ctl_type"] = int(rng.integers(0, len(S.CTL_TYPES)))
        pds = L.PDS_BY_TYPE[t](**_rand_values(rng, S.PDS_LAYOUTS[t], fixed))
        ses = None
        nhs = [n for n in S.NEXT_HDR_ALLOWED[t] if n != S.NH_NONE]
        if t != S.T_CONTROL and (S.NH_NONE not in S.NEXT_HDR_ALLOWED[t] or rng.integers(2)):
            sh = S.SES_LAYOUTS[nhs[int(rng.integers(len(nhs)))]]
            ses = getattr(L, sh.name)(**_rand_values(rng, sh))
        probe = L.TaurusProbe(**_rand_values(rng, S.PROBE)) if rng.integers(2) else None
        k = int(rng.integers(3))
        csig = None
        if k:
            ch = S.CSIG_C if k == 1 else S.CSIG_W
            cv = _rand_values(rng, ch)
            cv.pop("type")
            csig = getattr(L, ch.name)(**cv)
        payload = rng.integers(0, 256, int(rng.integers(0, 40)), dtype=np.uint8).tobytes()
        fr = F.uet_frame(pds, ses, payload, probe=probe, csig=csig,
                         entropy=int(rng.integers(0, 1 << 16)), ecn=int(rng.integers(4)),
                         native_ip=bool(rng.integers(4) == 0))
        raw = bytes(fr)
        assert len(raw) <= W
        out.append(raw)
    return out


def _place(rows_bytes):
    data = np.zeros((len(rows_bytes), W), np.uint8)
    lengths = np.array([len(r) for r in rows_bytes], np.int64)
    for i, r in enumerate(rows_bytes):
        if r:
            data[i, W - len(r):] = np.frombuffer(r, np.uint8)
    return data, lengths


def build_corpus(seed=7, n_flips=250, n_rand=25000):
    """(data [N, W] uint8, bases, lengths, kind) with kind 0 = intact seed,
    1 = truncated seed, 2 = flipped seed, 3 = random, 4 = random behind a
    plausible Ethernet/[CSIG]/IPv4/UDP prefix.  Frame i is data[i, W-len:]."""
    rng = np.random.default_rng(seed)
    seeds = seed_frames()
    trunc = [raw[:n] for raw in seeds for n in range(len(raw) + 1)]
    d_tr, l_tr = _place(trunc)
    k_tr = np.ones(len(trunc), np.int8)
    k_tr[np.cumsum([len(r) + 1 for r in seeds]) - 1] = 0

    d_seed, l_seed = _place(seeds)
    d_fl = np.repeat(d_seed, n_flips, axis=0)
    l_fl = np.repeat(l_seed, n_flips)
    for _ in range(3):                       # 1-3 flips inside each frame
        pos = W - 1 - (rng.integers(0, 1 << 30, len(l_fl)) % l_fl)
        hit = rng.integers(0, 3, len(l_fl)) > 0
        rows = np.nonzero(hit)[0]
        d_fl[rows, pos[rows]] ^= rng.integers(1, 256, len(rows), dtype=np.uint8)

    d_rn = rng.integers(0, 256, (n_rand, W), dtype=np.uint8)
    l_rn = rng.integers(0, W + 1, n_rand)

    d_st = rng.integers(0, 256, (n_rand, W), dtype=np.uint8)
    l_st = rng.integers(14, W + 1, n_rand)
    b = W - l_st
    r = np.arange(n_rand)
    et = np.array([0x0800, S.CSIG_TPID_COMPACT, S.CSIG_TPID_WIDE])[rng.integers(0, 3, n_rand)]
    d_st[r, b + 12], d_st[r, b + 13] = et >> 8, et & 0xFF
    ip = b + 14 + np.where(et == S.CSIG_TPID_COMPACT, 4, np.where(et == S.CSIG_TPID_WIDE, 8, 0))
    ok = (ip + 24 <= W) & (et != 0x0800)
    d_st[r[ok], ip[ok] - 2], d_st[r[ok], ip[ok] - 1] = 0x08, 0x00
    m = ip + 24 <= W
    rr, ii = r[m], ip[m]
    d_st[rr, ii] = 0x45
    mostly = rng.integers(0, 4, len(rr)) > 0            # mostly unfragmented
    d_st[rr[mostly], ii[mostly] + 6] = 0
    d_st[rr[mostly], ii[mostly] + 7] = 0
    d_st[rr, ii + 9] = np.array([17, 253], np.uint8)[rng.integers(0, 2, len(rr))]
    tot = rng.integers(20, np.maximum(21, W - ii + 8))
    d_st[rr, ii + 2], d_st[rr, ii + 3] = tot >> 8, tot & 0xFF
    d_st[rr, ii + 22], d_st[rr, ii + 23] = S.UET_UDP_PORT >> 8, S.UET_UDP_PORT & 0xFF

    data = np.concatenate([d_tr, d_fl, d_rn, d_st])
    lengths = np.concatenate([l_tr, l_fl, l_rn, l_st]).astype(np.int64)
    kinds = np.concatenate([k_tr, np.full(len(l_fl), 2, np.int8),
                            np.full(n_rand, 3, np.int8), np.full(n_rand, 4, np.int8)])
    return data, W - lengths, lengths, kinds


_CHILD = textwrap.dedent("""
    import sys, numpy as np, numba as nb
    assert nb.config.BOUNDSCHECK, "NUMBA_BOUNDSCHECK not active"

    @nb.njit(_nrt=False)              # compiled like the parser (datapath/hot.py)
    def _overrun(a):
        return a[a.shape[0]]          # must raise with bounds checking on
    try:
        _overrun(np.zeros(4, np.uint8))
        sys.exit("bounds checking did not catch an overrun")
    except IndexError:
        pass
    from taurus.datapath.wire import parse as P
    z = np.load(sys.argv[1])
    descs = P.new_desc(len(z["lengths"]))
    counts = P.new_counts()
    P.parse_rows(z["data"], z["bases"], z["lengths"], P.make_parse_config(), descs, counts)
    np.savez(sys.argv[2], descs=descs, counts=counts)
""")


def test_fuzz_parser_counts_every_frame_and_stays_in_bounds(tmp_path):
    data, bases, lengths, kinds = build_corpus()
    N = len(lengths)
    assert N >= 100_000
    descs = P.new_desc(N)
    counts = P.new_counts()
    P.parse_rows(data, bases, lengths, P.make_parse_config(), descs, counts)
    status = descs[:, P.D_STATUS]
    assert counts.sum() == N
    assert np.array_equal(np.bincount(status, minlength=P.N_STATUS), counts)
    assert status.min() >= 0 and status.max() < P.N_STATUS
    assert (status[kinds == 0] == P.P_OK).all()
    assert (status[kinds == 1] != P.P_OK).all()   # a cut datagram is never "ok"
    seen = {P.PARSE_ERRORS[i] for i in np.unique(status)}
    # every named outcome is reachable by the corpus except the caller bug
    assert set(P.PARSE_ERRORS) - seen <= {"bad_frame_bounds"}, set(P.PARSE_ERRORS) - seen
    ok = status == P.P_OK
    po, pl = descs[ok, P.D_PAYLOAD_OFF], descs[ok, P.D_PAYLOAD_LEN]
    assert (pl >= 0).all() and (po + pl <= W).all() and (po >= bases[ok]).all()

    # Same corpus under NUMBA_BOUNDSCHECK=1: no IndexError, identical results.
    np.savez(tmp_path / "corpus.npz", data=data, bases=bases, lengths=lengths)
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "nbcache"))
    r = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "corpus.npz"),
                        str(tmp_path / "out.npz")], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    z = np.load(tmp_path / "out.npz")
    assert np.array_equal(z["counts"], counts)
    assert np.array_equal(z["descs"], descs)
    print("fuzz status counts:", P.status_counts(counts))
