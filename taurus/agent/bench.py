"""Agent throughput: records/s drained + dispatched with DCTCP on 32 flows,
in Python and compiled (the agent's fast path), side by side.

    python -m taurus.agent.bench [--records N] [--flows F] [--batch B] [--algorithm A]

A fake datapath fills the ring with a batch of ACK/ECN records (each
aggregated, as the engine reports them); only the agent's step() is timed.
"""
import argparse
import time

import numpy as np

from taurus.datapath.ccshm import EV_ACK, EV_ECN, EVENT, FLOW, T_FIRST, T_LAST, V0

from .agent import Agent
from .config import parse
from .fakedp import FakeDatapath, record


def bench(records: int = 2_000_000, flows: int = 32, batch: int = 16384,
          algorithm: str = "dctcp") -> dict:
    with FakeDatapath(max_flows=max(flows, 64), ring_capacity=1 << 16) as dp:
        agent = Agent(dp.name, parse({"agent": {"batch_max": batch, "algorithm": algorithm}}),
                      cc=dp.cc, stats_dir=None)
        agent.start()
        rows = np.repeat(record(0, EV_ACK, 0, (4096, 1, 0))[None], batch, 0)
        i = np.arange(batch)
        rows[:, FLOW] = i % flows
        rows[:, EVENT] = np.where(i // flows % 4 == 3, EV_ECN, EV_ACK)   # 1 in 4 marked
        t = 0
        busy = 0
        done = 0
        while done < records:
            rows[:, T_FIRST] = rows[:, T_LAST] = t + i
            rows[:, V0 + 2] = t + i
            t += batch
            dp.push(rows)
            t0 = time.perf_counter_ns()
            n = agent.step()
            busy += time.perf_counter_ns() - t0
            done += n
        agent.teardown()
        st = agent.messages.stats()
        return {"records": done, "seconds": busy / 1e9, "records_per_s": done / (busy / 1e9),
                "flows": flows, "batch": batch, "steps": st["steps"], "algorithm": algorithm,
                "cwnd_writes": agent.handler.filter.c["written_cwnd"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m taurus.agent.bench", description=__doc__)
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--flows", type=int, default=32)
    ap.add_argument("--batch", type=int, default=16384)
    ap.add_argument("--algorithm", action="append", help="default: dctcp and dctcp-jit")
    a = ap.parse_args(argv)
    for alg in a.algorithm or ("dctcp", "dctcp-jit"):
        r = bench(a.records, a.flows, a.batch, alg)
        print(f"{r['records_per_s'] / 1e6:.2f} M records/s drained+dispatched "
              f"({alg}, {r['flows']} flows, batch {r['batch']}, {r['records']} records, "
              f"{r['steps']} steps, {r['cwnd_writes']} cwnd writes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
