"""Agent throughput: records/s drained + dispatched with DCTCP on 32 flows,
its handlers compiled (``[agent] jit = true``) and as plain Python (``jit =
false``), side by side; then what one wake-up costs.

    python bench/agent_wakeup.py [--records N] [--flows F] [--batch B] [--algorithm A]

A fake datapath fills the ring with a batch of ACK/ECN records (each
aggregated, as the engine reports them); only the agent's step() is timed.

Wake-ups: an agent that sleeps between steps pays for the sleep (the
syscall, the switch out and back) and for a step whose code and data went
cold meanwhile.  Per nap length, the thread CPU of the sleep and of the step
that follows (empty ring / 10 records), beside the same step back to back:
on a VM these, not the records, set the agent's CPU on the wall clock.
"""
import argparse
import time

import numpy as np

from taurus.datapath.ccshm import EV_ACK, EV_ECN, EVENT, FLOW, T_FIRST, T_LAST, V0

from taurus.agent.agent import Agent
from taurus.agent.config import parse
from taurus.testing.fake_datapath import FakeDatapath, record


def bench(records: int = 2_000_000, flows: int = 32, batch: int = 16384,
          algorithm: str = "dctcp", jit: bool = True) -> dict:
    with FakeDatapath(max_flows=max(flows, 64), ring_capacity=1 << 16) as dp:
        agent = Agent(dp.name, parse({"agent": {"batch_max": batch, "algorithm": algorithm,
                                                "jit": jit}}),
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
                "jit": jit, "cwnd_writes": agent.handler.filter.c["written_cwnd"]}


def wake_cost(algorithm: str = "dctcp", naps_us=(0, 100, 1000), records=(0, 10),
              n: int = 1000, jit: bool = True) -> list[dict]:
    """Thread CPU per sleep and per step after it (median of ``n``)."""
    out = []
    with FakeDatapath(max_flows=64, ring_capacity=1 << 14) as dp:
        agent = Agent(dp.name, parse({"agent": {"algorithm": algorithm, "jit": jit}}), cc=dp.cc,
                      stats_dir=None)
        agent.start()
        rows = np.repeat(record(0, EV_ACK, 0, (4096, 1, 0))[None], max(records), 0)
        rows[:, FLOW] = np.arange(len(rows)) % 32
        t = 0
        for nap in naps_us:
            for r in records:
                sleeps, steps = [], []
                for _ in range(n + 20):
                    if r:
                        rows[:r, T_FIRST] = rows[:r, T_LAST] = t + np.arange(r)
                        t += r
                        dp.push(rows[:r])
                    c0 = time.thread_time_ns()
                    if nap:
                        time.sleep(nap / 1e6)
                    c1 = time.thread_time_ns()
                    agent.step(t)
                    c2 = time.thread_time_ns()
                    sleeps.append(c1 - c0)
                    steps.append(c2 - c1)
                out.append({"algorithm": algorithm, "jit": jit, "nap_us": nap, "records": r,
                            "sleep_us": float(np.median(sleeps[20:])) / 1e3,
                            "step_us": float(np.median(steps[20:])) / 1e3})
        agent.teardown()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python bench/agent_wakeup.py", description=__doc__)
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--flows", type=int, default=32)
    ap.add_argument("--batch", type=int, default=16384)
    ap.add_argument("--algorithm", default="dctcp")
    a = ap.parse_args(argv)
    runs = [(a.algorithm, False), (a.algorithm, True)]
    for alg, jit in runs:
        r = bench(a.records, a.flows, a.batch, alg, jit)
        print(f"{r['records_per_s'] / 1e6:.2f} M records/s drained+dispatched "
              f"({alg}, {'jit' if jit else 'python'}, {r['flows']} flows, batch {r['batch']}, "
              f"{r['records']} records, {r['steps']} steps, {r['cwnd_writes']} cwnd writes)")
    print("one wake-up, thread CPU (median of 1000): the nap, then the step after it")
    for alg, jit in runs:
        for w in wake_cost(alg, jit=jit):
            nap = f"after a {w['nap_us']} us nap" if w["nap_us"] else "back to back"
            label = f"{alg} {'jit' if jit else 'python'}"
            print(f"  {label:14s} {nap:20s} {w['records']:2d} records: "
                  f"sleep {w['sleep_us']:5.1f} us, step {w['step_us']:5.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
