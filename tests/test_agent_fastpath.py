"""One drain path, three ways to drive it, the same results record for
record: the algorithms compiled (jit) and as plain Python, and the step's
fused poll + selection (fastpath._poll) against the message handler's own
poll followed by AlgorithmHandler.dispatch.  Random streams with
reordering, late records, invalid rows, gaps and SEQ going back, over two
algorithm classes (an override); then DCTCP compiled against DCTCP in
Python on engine-like reports."""
import itertools
import os

import numpy as np
import pytest

from taurus.agent.agent import Agent
from taurus.agent.config import parse
from taurus.datapath import ccshm as C
from taurus.testing.fake_datapath import FakeDatapath, custom_record, record

_n = itertools.count()
ECHO2_FLOWS = [2, 9, 14]


def stream(rng, steps=60):
    """Per step: (rows to push, SEQ perturbation or None)."""
    t = 1_000
    for _ in range(steps):
        n = int(rng.choice([0, 1, 1, 2, 3, 5, 9, 20, 40, 150, 230]))   # 230: overload
        rows = []
        for _ in range(n):
            flow = int(rng.integers(-1, 18))                   # 16 flows: some out of range
            ev = int(rng.choice([C.EV_ACK, C.EV_ACK, C.EV_ECN, C.EV_RTT, C.EV_OOO, C.EV_TX,
                                 C.EV_HOST, C.EV_CUSTOM, 42]))
            tf = t + int(rng.integers(-300, 300))             # reordered, sometimes late
            if ev == C.EV_CUSTOM:
                r = custom_record(flow, tf, int(rng.integers(0, 3)),
                                  bytes(rng.integers(0, 256, int(rng.integers(0, 12)))))
                if rng.random() < 0.2:
                    r[C.V0 + 1] = 999                          # a length out of range
            else:
                r = record(flow, ev, tf, (int(rng.integers(1, 5000)), 1, int(rng.integers(0, 99)),
                                          int(rng.integers(0, 50))),
                           count=int(rng.integers(-1, 4)) if rng.random() < 0.1 else 1)
            rows.append(r)
        t += 200
        seq = None
        if n and rng.random() < 0.15:                           # producer lost or rewrote SEQs
            seq = (int(rng.integers(0, n)), int(rng.integers(-3, 4)))
        yield rows, seq


def run(stream_steps, jit, fused):
    dp = FakeDatapath(f"fp{os.getpid()}-{next(_n)}", max_flows=16, ring_capacity=256)
    try:
        dp.cc.owner[5] = 1                                      # another NIC slot's flow
        a = Agent(dp.name, parse({"agent": {"algorithm": "agent_algs:Echo", "jit": jit},
                                  "override": [{"flows": ECHO2_FLOWS,
                                                "algorithm": "agent_algs:Echo2"}],
                                  "bounds": {"cwnd_max_bytes": 1 << 20}}),
                  cc=dp.cc, stats_dir=None)
        a.start()
        h = a.handler
        out = []
        for i, (rows, seq) in enumerate(stream_steps):
            if rows:
                head = int(dp.cc.ring.ring.prod[0])
                dp.push(np.array(rows))
                if seq is not None:
                    k, d = seq
                    idx = (head + np.arange(k, len(rows))) % dp.cc.ring.capacity
                    dp.cc.ring.ring.rec[idx, C.SEQ] += d
            now = 1_000 + 200 * i
            if fused:
                a.step(now_ns=now)
            else:
                b = a.messages.poll(now)
                if b is not None:
                    h.dispatch(b, now)
                a.messages.release()
            out.append(([x.S.h.tolist() for x in h.algs], [x.S.n.tolist() for x in h.algs],
                        dp.cc.cwnd.tolist(), dp.cc.rate.tolist(), dp.cc.version.tolist()))
        stats = (a.messages.stats(), h.filter.c, dict(h.c), dict(h.faults),
                 dp.cc.ctl[[C.CTL_GAPS, C.CTL_BACKPRESSURE]].tolist(), h.falg.tolist())
        a.teardown()
        return out, stats
    finally:
        dp.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_compiled_python_fused_and_unfused_agree(seed):
    steps = list(stream(np.random.default_rng(seed)))
    runs = {(jit, fused): run(steps, jit, fused)
            for jit, fused in ((True, True), (False, True), (True, False))}
    ref, ref_stats = runs[True, True]
    for k, (out, st) in runs.items():
        for i, (f, s) in enumerate(zip(ref, out)):
            assert f == s, f"{k}: step {i} differs"
        assert st == ref_stats, k
    m, h = ref_stats[0], ref_stats[2]
    assert m["delivered"] > 300 and m["invalid"] > 10 and m["late"] > 0   # the stream bites
    assert m["gaps"] + m["seq_back"] > 0 and m["overload_steps"] > 0 and m["merged"] > 0
    assert m["drained"] == m["delivered"] + m["merged"] + m["evicted"] + m["invalid"]
    assert h["unbound"] > 0 and h["calls"] > 100
    assert m["delivered"] == h["calls"] + h["unbound"] + h["no_algorithm"]
    assert {ref_stats[5][f] for f in ECHO2_FLOWS} == {1}        # the override's flows
    assert ref_stats[1]["rejected_cwnd"] > 0 and ref_stats[1]["written_rate"] > 0


# ---- DCTCP compiled against DCTCP in Python, through the agent --------------------------
MSS = 1024


def reports(seed, steps=60, flows=12):
    """Random report batches like the engine's: per step, records of a few
    flows (ACKs with some ECN-echoed bytes, RTT samples, now and then an
    RTO), sometimes more than a few hundred."""
    rng = np.random.default_rng(seed)
    t = 1_000
    out = []
    for _ in range(steps):
        rows = []
        for _ in range(int(rng.choice([1, 5, 40, 200]))):
            t += int(rng.integers(1, 500))
            t0 = t - 20_000 if rng.random() < 0.05 else t      # late: behind the last batch
            f = int(rng.integers(0, flows))
            kind = rng.random()
            if kind < 0.75:
                acked = int(rng.integers(1, 40)) * MSS
                marked = int(acked * rng.choice([0, 0, 0.25, 1.0]))
                rows.append(record(f, C.EV_ACK, t0, (acked, acked // MSS, 7, marked)))
            elif kind < 0.97:
                rows.append(record(f, C.EV_RTT, t0, (int(rng.integers(5_000, 90_000)), 7, -1, -1)))
            else:
                rows.append(record(f, C.EV_RTO, t0, (1, 0, 7)))
        # the engine publishes in batch order, not always by T_FIRST
        out.append([rows[i] for i in rng.permutation(len(rows))] if rng.random() < 0.3 else rows)
    return out


def table(dp):
    cc = dp.cc
    cols = ("rate", "cwnd", "credit", "version", "event_mask", "flags", "timer_ns")
    return {k: getattr(cc, k).copy() for k in cols} | {"period": cc.period_ns.copy()}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("pace", [False, True])
def test_compiled_dctcp_decides_exactly_as_the_python_one(seed, pace):
    got = {}
    for jit in (True, False):
        with FakeDatapath(f"cj{next(_n)}", max_flows=32, ring_capacity=4096) as dp:
            cfg = parse({"agent": {"algorithm": "dctcp", "mss": MSS, "line_rate_bps": 10 ** 10,
                                   "jit": jit, "params": {"pace": pace}}})
            a = Agent(dp.name, cfg, cc=dp.cc, stats_dir=None)
            a.start()
            for k, rows in enumerate(reports(seed)):
                dp.push(rows)
                a.step(10_000 * (k + 1))
            h = a.handler
            got[jit] = (table(dp), h.filter.c, a.messages.stats()["late"],
                        {k: h.c[k] for k in ("flows", "unbound", "no_algorithm", "calls")},
                        h.algs[0].S.copy())
            a.teardown()
    jit, py = got[True], got[False]
    for k in py[0]:
        assert np.array_equal(py[0][k], jit[0][k]), k
    assert py[1:4] == jit[1:4]
    assert np.array_equal(py[4], jit[4])
    assert py[1]["written_cwnd"] > 50 and (py[1]["written_rate"] > 0) == pace
    assert py[2] > 0 and (py[3]["unbound"] > 0) != pace     # RTT is bound only to pace
