"""The message handler's plain-Python path for small batches must agree with
the vectorised path record for record: same deliveries (order, groups,
values), same counters, same decisions written.  Random streams with
reordering, late records, invalid rows, gaps and SEQ going back."""
import itertools
import os

import numpy as np
import pytest

from taurus.agent.agent import Agent
from taurus.agent.config import parse
from taurus.testing.fake_datapath import FakeDatapath, custom_record, record
from taurus.cc_algorithms.base import Algorithm
from taurus.datapath import ccshm as C

_n = itertools.count()
LOG = []


class Echo(Algorithm):
    """Logs what each accessor returns and publishes a cwnd derived from it."""
    name = "echo"
    binds = ("ACK", "ECN", "RTT", "OOO", "CUSTOM")

    def setup(self):
        self.seen = 0

    def _log(self, ev):
        rec = ev.rec
        LOG.append((ev.flow, ev.event, len(ev), ev.total("bytes" if ev.event != C.EV_RTT
                                                          else "rtt_ns"),
                    ev.signals, ev.t_first.tolist(), ev.t_last.tolist(),
                    [tuple(r) for r in rec.tolist()]))
        self.seen += int(ev.t_first.sum()) % 7

    def on_ack(self, ev):
        self._log(ev)
        self.seen += ev.last("psn")

    def on_custom(self, ev):
        LOG.append((ev.flow, "custom", ev.col("segment").tolist(), ev.col("length").tolist()))

    on_ecn = on_rtt = on_ooo = _log

    def decide(self):
        # duplicates, clamps (the bounds below) and rejects (NaN) on purpose
        v = self.seen % 5
        self.result_update(cwnd=[4096.0, 8192.0, -1.0, float("nan"), 1e12][v])


def stream(rng, steps=60):
    """Per step: (rows to push, SEQ perturbation or None)."""
    t = 1_000
    for _ in range(steps):
        n = int(rng.choice([0, 1, 1, 2, 3, 5, 9, 20, 40]))
        rows = []
        for _ in range(n):
            flow = int(rng.integers(-1, 18))                   # 16 flows: some out of range
            ev = int(rng.choice([C.EV_ACK, C.EV_ACK, C.EV_ECN, C.EV_RTT, C.EV_OOO, C.EV_TX,
                                 C.EV_HOST, C.EV_CUSTOM, 42]))
            tf = t + int(rng.integers(-300, 300))             # reordered, sometimes late
            if ev == C.EV_CUSTOM:
                r = custom_record(flow, tf, int(rng.integers(0, 3)), bytes(int(rng.integers(0, 8))))
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


def run(stream_steps, small_max):
    dp = FakeDatapath(f"fp{os.getpid()}-{next(_n)}", max_flows=16, ring_capacity=256)
    try:
        dp.cc.owner[5] = 1                                      # another NIC slot's flow
        a = Agent(dp.name, parse({"agent": {"algorithm": f"{__name__}:Echo",
                                            "custom_segments": {"csig": 1}},
                                  "bounds": {"cwnd_max_bytes": 1 << 20}}),
                  cc=dp.cc, stats_dir=None)
        a.messages.small_max = small_max
        a.start()
        out = []
        for i, (rows, seq) in enumerate(stream_steps):
            if rows:
                head = int(dp.cc.ring.ring.prod[0])
                dp.push(np.array(rows))
                if seq is not None:
                    k, d = seq
                    idx = (head + np.arange(k, len(rows))) % dp.cc.ring.capacity
                    dp.cc.ring.ring.rec[idx, C.SEQ] += d
            LOG.clear()
            a.step(now_ns=1_000 + 200 * i)
            out.append((list(LOG), dp.cc.cwnd.tolist(), dp.cc.version.tolist()))
        stats = (a.messages.stats(), a.handler.filter.c, dict(a.handler.c),
                 dict(a.handler.faults), dp.cc.ctl[[C.CTL_GAPS, C.CTL_BACKPRESSURE]].tolist())
        a.teardown()
        return out, stats
    finally:
        dp.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_small_batch_path_matches_vectorised_path(seed):
    steps = list(stream(np.random.default_rng(seed)))
    fast, fast_stats = run(steps, small_max=1 << 20)
    slow, slow_stats = run(steps, small_max=0)
    for i, (f, s) in enumerate(zip(fast, slow)):
        assert f == s, f"step {i} differs"
    assert fast_stats == slow_stats
    m = fast_stats[0]
    assert m["delivered"] > 100 and m["invalid"] > 10 and m["late"] > 0   # the stream bites
    assert m["gaps"] + m["seq_back"] > 0
    assert m["drained"] == m["delivered"] + m["merged"] + m["evicted"] + m["invalid"]
