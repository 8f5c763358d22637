"""DCQCN (taurus/cc_algorithms/dcqcn.py): its signature behaviour.

End to end (virtual time; ``pytest -s`` prints the figures), on the DCQCN
paper's own setting, nothing scaled: a 2:1 incast at 40 Gbit/s (the
authors' sample topology, bobzhuyb/ns3-rdma mix/topology.txt: 40 Gbit/s
links) whose switch marks RED-style at the paper's Kmin 5 KB, Kmax 200 KB,
Pmax 1% (Zhu et al., SIGCOMM'15, for its 40 Gbit/s testbed), 1 KB MSS
(RoCE's 1 KB MTU); h1 sends 85 MB from 0, h2 from 1 ms to the end (70
ms); no window, only DCQCN's rate.  Measured over 15-35 ms (native /
agent / per-event): h1's share 0.483 / 0.482 / 0.535, utilisation 90.5% /
90.5% / 90.4%, queue median 26 / 25 / 26 KB; from 15 ms to the end the
queue's max is 97 / 86 / 81 KB, no sample above Kmax (200 KB), no drops.
After h1 ends (38.8 ms native) h2's CNPs stop: from 19.1 Gbit/s, fast
recovery 38.22-38.59 ms, additive increase (R_AI per T) to 58.04 ms
(33.5 Gbit/s), then hyper increase once the byte counter passed F too,
at 99% of the line rate by 58.96 ms.

Why 40 Gbit/s: scaled down to 2 Gbit/s (thresholds x 1/20 as delays, Kmin
250 B, Kmax 10 KB) a flow sends 1/20 the packets per CNP interval, so
Pmax 1% gives too few CNPs: the queue sat above Kmax in 15% of the
samples (with Pmax scaled up to 20%, 1.6%, by a frame).

Handler level (the plain-Python handlers, fed made-up events): the stage
sequence fast recovery -> additive -> hyper, at most one cut per N, alpha
on its timer, and TCD's UE-only CNPs.
"""
import functools

import numpy as np
import pytest

from taurus.cc_algorithms.algorithm import DECISION_DTYPE, FlowContext, param_row
from taurus.cc_algorithms.dcqcn import Dcqcn
from taurus.cc_algorithms.native import NativeTable
from taurus.cc_algorithms.runtime import Runtime, events
from taurus.datapath.ccevents import EVENT_IDS
from taurus.datapath.ccshm import REC_WIDTH, CcShm
from taurus.datapath.devices.nic.setup import (add_flow, nic_post, nic_reserve,
                                                nic_skip_delivered, set_flow_mode)
from taurus.datapath.devices.switch.setup import switch_stats
from taurus.datapath.engine import Engine
from taurus.tools.fabric import build_virtual, nic_host
from taurus.tools.topology import Topology

RATE = 40e9                          # the paper's testbed: no scaling
KMIN, KMAX, PMAX = 5_000, 200_000, 0.01
H1_BYTES = 85_000_000                # h1 ends around 37-41 ms, h2 goes on alone
DUR, H2_START, STEP = 70_000_000, 1_000_000, 10_000
FAIR = (15_000_000, 35_000_000)      # both flows active and converged
MODES = ("native", "agent", "per-event")


@functools.lru_cache(maxsize=None)
def run(mode="native"):
    """Per 10 us: time, bottleneck queue, and per flow (rc, rt, alpha, stage,
    cuts, tc, bytes delivered); plus the bottleneck's counters.  In agent
    modes the agent (in-process, stepped every 10 us) holds the state: rc is
    then the rate in force, the other state columns NaN."""
    t = Topology("dcqcn")
    for h in ("h1", "h2", "h3"):
        t.add_host(h)
    t.add_switch("s1")
    t.add_link("h1", "s1", rate="40Gbit", delay="2us")
    t.add_link("h2", "s1", rate="40Gbit", delay="2us")
    t.add_link("s1", "h3", rate="40Gbit", delay="2us", buffer="1MB",
               features={"ecn": {"kmin": f"{KMIN}B", "kmax": f"{KMAX}B", "pmax": PMAX}})
    tab = NativeTable(64)
    alg = tab.add(Dcqcn)
    eng = Engine(clock="virtual", max_flows=64, max_nics=4, native=tab.native)
    agents = []
    try:
        size = int(DUR * RATE / 8e9)
        nic_reserve(eng, tx_bytes=int(1.2 * (size + H1_BYTES)))   # both whole streams posted
        fab = build_virtual(eng, t, host_factory=lambda *a: nic_host(*a, rx_buf_bytes=16 << 20))
        nics, bott = fab["hosts"], fab["ports"]["s1-eth2"]
        flows, got = {}, {"h1": 0, "h2": 0}
        if mode != "native":
            from taurus.agent.agent import Agent        # here: native runs need no agent
            from taurus.agent.config import parse
            cfg = parse({"agent": {"algorithm": "dcqcn", "line_rate_bps": 40_000_000_000}})
            for h in ("h1", "h2"):
                slot = int(eng.E.devs.regs[nics[h], 0])
                a = Agent(eng.name + "-cc", cfg, cc=CcShm.attach(eng.name + "-cc", nic=slot),
                          stats_dir=None, slot=slot)
                a.start()
                agents.append(a)

        def start(h, n):
            f = add_flow(eng, nics[h], t.mac_of("h3"), t.ip_of("h3"), cwnd_bytes=0,
                         buf_bytes=n + (1 << 20))      # no window: DCQCN is rate-based
            if mode == "native":
                tab.start(eng, f, alg)
            else:
                set_flow_mode(eng, f, mode)
            nic_post(eng, nics[h], f, np.zeros(n, np.uint8).tobytes())
            flows[h] = f

        start("h1", H1_BYTES)
        rows = []
        while eng.now() < DUR:
            if "h2" not in flows and eng.now() >= H2_START:
                start("h2", size)
            eng.run_until(eng.now() + STEP, stop_idle=False)
            for a in agents:
                a.step(eng.now())
            S = tab.state(alg)
            row = [eng.now(), int(eng.E.sw.qb[bott].sum())]
            for h in ("h1", "h2"):
                if h in flows:
                    f = flows[h]
                    s = [S[f][k] for k in ("rc", "rt", "alpha", "stage", "cuts", "tc")] \
                        if mode == "native" else [eng.cc.rate[f]] + [np.nan] * 5
                    got[h] += nic_skip_delivered(eng, nics["h3"], t.ip_of(h), f)
                    row += s + [got[h]]
                else:
                    row += [0.0] * 7
            rows.append(row)
        return np.array(rows), switch_stats(eng, [bott])["s1-eth2"]
    finally:
        for a in agents:
            a.teardown()
        eng.close()


T, Q = 0, 1
RC, RT, ALPHA, STAGE, CUTS, TC, GOT = range(2, 9)
H2 = 7                               # h2's columns: h1's + 7


def _at(tr, t):
    return tr[np.searchsorted(tr[:, T], t)]


@pytest.mark.parametrize("mode", MODES)
def test_two_flows_converge_to_fair_share(mode):
    tr, st = run(mode)
    a, b = _at(tr, FAIR[0]), _at(tr, FAIR[1])
    got1, got2 = b[GOT] - a[GOT], b[H2 + GOT] - a[H2 + GOT]
    share = got1 / (got1 + got2)
    util = (got1 + got2) * 8 / ((b[T] - a[T]) / 1e9) / RATE
    print(f"{mode}: h1 share {share:.3f}, utilisation {util:.3f}")
    assert abs(share - 0.5) <= 0.05                  # each within 10% of its fair share
    assert util >= 0.85
    assert st["drop"] == 0 and st["ecn_mark"] > 0


@pytest.mark.parametrize("mode", MODES)
def test_queue_stays_below_kmax_after_convergence(mode):
    """Every 10 us sample from the convergence point to the end."""
    tr, st = run(mode)
    q = tr[tr[:, T] >= FAIR[0], Q]
    fair = tr[(tr[:, T] >= FAIR[0]) & (tr[:, T] <= FAIR[1]), Q]
    print(f"{mode}: queue over {FAIR[0] / 1e6:.0f}-{FAIR[1] / 1e6:.0f} ms median "
          f"{np.median(fair):.0f} B, p99 {np.percentile(fair, 99):.0f} B; max from "
          f"{FAIR[0] / 1e6:.0f} ms to the end {q.max():.0f} B, Kmax {KMAX} B")
    assert q.max() < KMAX
    assert np.median(fair) > KMIN                    # it is the marks that hold it there
    assert st["drop"] == 0


def test_rate_recovers_through_fast_recovery_then_additive_increase():
    """h1 ends; h2's CNPs stop; its rate climbs from its last cut: F
    timer rounds of fast recovery towards R_T (stage 0), then additive
    increase beyond it (stage 1), then hyper increase (stage 2) once the
    byte counter passed F too, back to the line rate."""
    tr, _ = run()
    done = tr[np.argmax(tr[:, GOT] >= H1_BYTES), T]
    cuts = tr[-1, H2 + CUTS]                         # alone on the link h2 is cut no more
    j = np.argmax(tr[:, H2 + CUTS] == cuts)          # just after its last cut ...
    assert FAIR[1] < tr[j, T] < done                 # ... as h1's last packets left
    i = j + np.argmax(tr[j:, H2 + STAGE] == 1)       # its first additive increase after
    calm = tr[j:i + 1]
    assert (calm[:-1, H2 + STAGE] == 0).all()        # fast recovery ...
    assert calm[-1, H2 + TC] > Dcqcn.Params().F      # ... for F rounds, then additive
    rc = calm[:, H2 + RC]
    assert (np.diff(rc) >= 0).all() and rc[-1] > rc[0]
    gap = calm[:, H2 + RT] - rc                      # fast recovery halves the gap to R_T
    assert gap[-2] < gap[0] / 4
    after = tr[i:]
    h = np.argmax(after[:, H2 + STAGE] == 2)         # hyper increase ...
    assert h > 0 and (after[:h, H2 + STAGE] == 1).all()
    assert after[h - 1, H2 + RC] > 1.2 * tr[i, H2 + RC]   # ... after a long additive climb
    top = np.argmax(after[:, H2 + RC] >= 0.99 * RATE)   # ... to the line rate
    assert top > h
    print(f"h2 after h1 ends: {rc[0] / 1e9:.2f} Gbit/s; fast recovery {calm[0, T] / 1e6:.2f}-"
          f"{calm[-1, T] / 1e6:.2f} ms, additive to {after[h, T] / 1e6:.2f} ms "
          f"({after[h - 1, H2 + RC] / 1e9:.2f} Gbit/s), hyper to the line rate at "
          f"{after[top, T] / 1e6:.2f} ms")


# ---- handler level --------------------------------------------------------------------
LINE = 10e9


def feed(params, evs):
    """The plain-Python handlers of one flow, fed (t_ns, event, fields)
    records; its state after each."""
    rt = Runtime(Dcqcn, jit=False)
    S, P, D = rt.tables(1)
    P[:] = param_row(Dcqcn, params, FlowContext(mss=4096, line_rate=LINE))[0]
    D[0] = np.zeros(1, DECISION_DTYPE)[0]
    rt.setup(S, P, D, 0)
    rec = np.zeros((len(evs), REC_WIDTH), np.int64)
    ev = events(rec)
    faults = np.zeros(1, np.int64)
    out = []
    for i, (t, name, fields) in enumerate(evs):
        r = ev[i]
        r.seq, r.flow, r.event, r.t_first, r.t_last, r.count = i, 0, EVENT_IDS[name], t, t, 1
        for k, v in fields.items():
            setattr(r, k, v)
        assert rt.drain(S, P, D, rec, np.array([i], np.int64), faults) == 0, rt.last_error
        out.append(S[0].copy())
    return out


def ticks(t0, t1, tick=5_000):
    return [(t, "TIMER", {"ticks": t // tick, "period": tick}) for t in range(t0, t1, tick)]


def test_stages_fast_recovery_additive_hyper():
    """After a cut: F timer rounds of fast recovery, additive increase by
    R_AI once T passed F, hyper increase once the byte counter did too."""
    p = Dcqcn.Params(B=100_000)
    evs = [(1_000, "CNP", {"ce": 1}), (60_000, "CNP", {"ce": 1})]   # R_T below line rate
    evs += ticks(5_000, 1_000_000)
    evs += [(t, "TX", {"bytes": 40_000, "packets": 10}) for t in range(100_000, 1_000_000, 50_000)]
    evs.sort(key=lambda e: e[0])
    st = feed(p, evs)
    stages = [int(s["stage"]) for s in st]
    firsts = [stages.index(k) for k in (1, 2)]
    assert 0 < firsts[0] < firsts[1]                 # 0 -> 1 -> 2
    assert int(st[0]["cuts"]) == 1 and st[0]["rc"] == pytest.approx(LINE * (1 - st[0]["alpha"] / 2))
    assert int(st[-1]["cuts"]) == 2
    i = firsts[0]
    assert st[i]["rt"] == pytest.approx(st[i - 1]["rt"] + p.R_AI)
    assert st[-1]["rt"] == LINE or st[-1]["rt"] > st[firsts[1] - 1]["rt"] + p.R_HAI


def test_at_most_one_cut_per_n_and_a_late_cnp_is_kept():
    p = Dcqcn.Params()
    evs = [(1_000, "CNP", {"ce": 1}), (11_000, "CNP", {"ce": 1})] + ticks(5_000, 100_000)
    evs.sort(key=lambda e: e[0])
    st = feed(p, evs)
    cuts = np.array([s["cuts"] for s in st])
    t = np.array([e[0] for e in evs])
    assert cuts[t < 51_000].max() == 1               # the second CNP came inside N
    assert cuts[-1] == 2 and t[np.argmax(cuts == 2)] == 55_000   # at the first tick N after


def test_alpha_rises_on_cnps_and_decays_on_its_timer():
    p = Dcqcn.Params()
    st = feed(p, [(1_000, "CNP", {"ce": 1})] + ticks(5_000, 2_000_000))
    a0 = p.alpha_init * (1 - p.g) + p.g
    assert st[0]["alpha"] == pytest.approx(a0)
    decays = (2_000_000 - 5_000 - 1_000) // p.K       # once per K after the cut
    assert st[-1]["alpha"] == pytest.approx(a0 * (1 - p.g) ** decays, rel=1e-3)


@pytest.mark.parametrize("tcd", [False, True])
def test_tcd_ue_only_cnps_do_not_cut(tcd):
    p = Dcqcn.Params(tcd=tcd)
    st = feed(p, [(1_000, "CNP", {"ue": 1}), (200_000, "CNP", {"ce": 1, "ue": 1})])
    assert int(st[0]["cuts"]) == (0 if tcd else 1)
    assert int(st[1]["cuts"]) == (1 if tcd else 2)
    if tcd:                                          # TCD's deeper cut on CE: 1.2 alpha
        assert st[1]["rc"] == pytest.approx(LINE * (1 - p.tcd_factor * st[1]["alpha"]))
