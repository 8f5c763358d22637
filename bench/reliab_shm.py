"""Hostile shared memory (bench/reliability.py part 3): another process
writes garbage, as fast as it can, into NIC h1's report ring (records and
both indices), the CC context rows of h1's flows (rate, cwnd, credit,
flags, event mask, periods, owner, probe, TIMER period, entropy) and h1's
app queues (submission entries with random ops, flows, stream ends and
message ids; the SQ and CQ indices), while the engine runs in virtual time
with an agent per NIC stepped in this process.  The engine and both agents
must keep running; the bad records and submissions are refused and
counted; the flows of NICs h2 and h3 (their own agent and rings) deliver
every byte intact.

Out-of-bounds accesses are caught by a build with NUMBA_BOUNDSCHECK=1 (its
own Numba cache: a full engine compile, several minutes):
bench/reliability.py --boundscheck.
"""
import hashlib
import os
import subprocess
import sys

import numpy as np

_WRITER = r"""
import sys, time
import numpy as np
from taurus.datapath.ccshm import CcShm
from taurus.datapath.devices.nic.shm import NicShm
from taurus.datapath.devices.nic.state import N_QC, QC_CQ_TAIL, QC_SQ_HEAD
name, flows, seconds, seed = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], float(sys.argv[3]), int(sys.argv[4])
kinds = [int(x) for x in sys.argv[5].split(",")]
rng = np.random.default_rng(seed)
cc = CcShm.attach(name + "-cc", nic=0)
N = NicShm.attach(name + "-nic").state
ring = cc.ring.ring
cols = ("rate", "cwnd", "credit", "flags", "event_mask", "owner", "probe", "timer_ns", "ev", "ev_n")
M64 = 2**64 - 1
big = np.array([0, 1, -1, 2**31, -2**31, 2**62, -2**63, 2**63 - 1, 7, 1000], np.int64)
def val():
    return int(big[rng.integers(len(big))]) if rng.integers(2) else int(rng.integers(-2**63, 2**63 - 1))
writes = 0
end = time.monotonic() + seconds
print("writing", flush=True)
while time.monotonic() < end:
    for _ in range(200):
        w = kinds[rng.integers(len(kinds))]
        if w == 0:                       # a report record, any word
            ring.rec[rng.integers(ring.rec.shape[0]), rng.integers(ring.rec.shape[1])] = val()
        elif w == 1:                     # the ring's indices
            (ring.prod if rng.integers(2) else ring.cons)[0] = np.uint64(val() & M64)
        elif w == 2:                     # a context column of one of h1's flows
            f = flows[rng.integers(len(flows))]
            getattr(cc, cols[rng.integers(len(cols))])[f] = val()
        elif w == 3:
            cc.period_ns[flows[rng.integers(len(flows))], rng.integers(3)] = val()
        elif w == 4:                     # a submission entry, then publish it
            sq = N.sq[0]
            s = rng.integers(sq.shape[0])
            sq[s, 0] = rng.integers(0, 6)
            sq[s, 1:] = [val() if rng.integers(3) == 0 else int(rng.integers(0, 64))
                         for _ in range(sq.shape[1] - 1)]
            N.qc[QC_SQ_HEAD] = np.uint64((int(N.qc[QC_SQ_HEAD]) + int(rng.integers(0, 4))) & M64)
        else:                            # the queues' indices
            N.qc[QC_CQ_TAIL if rng.integers(2) else QC_SQ_HEAD] = np.uint64(val() & M64)
        writes += 1
print(writes, flush=True)
"""


def _topology():
    from taurus.tools.topology import Topology
    t = Topology("hostile")
    for h in ("h1", "h2", "h3"):
        t.add_host(h)
    t.add_switch("s1")
    for h in ("h1", "h2", "h3"):
        t.add_link(h, "s1", rate="10Gbit", delay="2us", buffer="1MB")
    return t


KINDS = ("report records", "ring indices", "context columns", "periods", "submissions",
         "queue indices")


# One phase, every kind at once: the agent copies each batch out of the
# ring before it checks it, so rows rewritten under it cannot change a
# record between its check and its use.
PHASES = ((0, 1, 2, 3, 4, 5),)


def run(seconds=3.0, nbytes=4 << 20, seed=5, phases=PHASES, log=print):
    """Returns the figures; raises AssertionError if an agent failed or a
    flow of h2/h3 lost or altered a byte."""
    import tomllib

    from taurus.agent.agent import Agent
    from taurus.agent.config import parse
    from taurus.datapath.ccshm import CcShm
    from taurus.datapath.devices.nic.app import WouldBlock
    from taurus.datapath.devices.nic.setup import (add_flow, flow_done, nic_counters, nic_post,
                                                   nic_take_delivered, set_flow_mode)
    from taurus.datapath.engine import Engine
    from taurus.tools.fabric import build_virtual, nic_host

    t = _topology()
    cfg = parse(tomllib.loads('[agent]\nalgorithm = "dctcp"\nmss = 1024\nline_rate_bps = 10e9\n'))
    eng = Engine(clock="virtual", max_flows=64, max_nics=3, n_frames=32768)
    with eng:
        fab = build_virtual(eng, t, host_factory=nic_host)
        H = fab["hosts"]
        slots = {h: int(eng.E.devs.regs[H[h], 0]) for h in H}
        assert slots["h1"] == 0
        agents = {}
        for h in ("h1", "h2"):
            agents[h] = Agent(eng.name + "-cc", cfg, cc=CcShm.attach(eng.name + "-cc",
                                                                      nic=slots[h]),
                              stats_dir=None, slot=slots[h])
            agents[h].start()
        rng = np.random.default_rng(seed)
        rows = []
        for src, dst, mode in (("h1", "h2", "agent"), ("h1", "h3", "static"),
                               ("h2", "h3", "agent"), ("h3", "h2", "static")):
            f = add_flow(eng, H[src], t.mac_of(dst), t.ip_of(dst), cwnd_bytes=128 << 10)
            if mode == "agent":
                set_flow_mode(eng, f, "agent")
            rows.append(dict(src=src, dst=dst, f=f, data=rng.integers(0, 256, nbytes, np.uint8)
                             .tobytes(), posted=0, got=hashlib.sha256(), n=0))
        attacked = [r["f"] for r in rows if r["src"] == "h1"]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        faults = 0

        def pump():
            nonlocal faults
            for r in rows:
                while r["posted"] < len(r["data"]):
                    m = r["data"][r["posted"]:r["posted"] + (256 << 10)]
                    try:
                        nic_post(eng, H[r["src"]], r["f"], m)
                    except (WouldBlock, ValueError):
                        break
                    r["posted"] += len(m)
                b = nic_take_delivered(eng, H[r["dst"]], t.ip_of(r["src"]), r["f"])
                r["got"].update(b)
                r["n"] += len(b)
            for a in agents.values():
                try:
                    a.step(eng.now())
                except Exception:               # an agent that fails is the finding
                    faults += 1
                    raise
        pump()                       # load the engine and the agents' code first, so the
        eng.run_for(200_000)         # writer's time goes to running under its garbage
        steps = writes = 0
        for ph, kinds in enumerate(phases):
            writer = subprocess.Popen([sys.executable, "-c", _WRITER, eng.name,
                                       ",".join(map(str, attacked)), str(seconds / len(phases)),
                                       str(seed + ph), ",".join(map(str, kinds))],
                                      env=env, stdout=subprocess.PIPE, text=True)
            assert writer.stdout.readline().strip() == "writing"
            while writer.poll() is None:
                pump()
                eng.run_for(200_000)
                steps += 1
            out = writer.stdout.read().split()
            assert writer.returncode == 0 and out, "the writer failed"
            writes += int(out[-1])
        others = [r for r in rows if r["src"] != "h1"]
        for _ in range(20_000):
            if all(flow_done(eng, r["f"]) and r["n"] == len(r["data"]) for r in others):
                break
            pump()
            eng.run_for(1_000_000)
        intact = sum(r["got"].digest() == hashlib.sha256(r["data"]).digest() for r in others)
        c1 = nic_counters(eng, H["h1"])
        m0 = agents["h1"].messages.c
        figs = dict(writes=writes, engine_slices=steps, agent_faults=faults,
                    sq_bad=c1["sq_bad"], cq_overflow=c1["cq_overflow"],
                    agent_refused={k: int(m0[k]) for k in ("invalid", "gaps", "seq_back")},
                    others_intact=f"{intact}/{len(others)}",
                    others_mib=round(sum(len(r["data"]) for r in others) / 2**20, 1),
                    h1_delivered=[r["n"] for r in rows if r["src"] == "h1"])
        for a in agents.values():
            a.teardown()
    log(f"  {writes} garbage writes by another process during {seconds:.0f} s "
        f"({steps} engine slices): engine and agents kept running, agent faults {faults}; "
        f"refused: {c1['sq_bad']} submissions (sq_bad), agent records {figs['agent_refused']}; "
        f"h2/h3 flows intact {figs['others_intact']} ({figs['others_mib']} MiB)")
    assert intact == len(others), "a flow of another NIC lost or altered bytes"
    return figs

