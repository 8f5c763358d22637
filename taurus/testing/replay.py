"""Replay a recorded event stream through an algorithm in each mode and
return its decisions, so a test can assert that the one definition decides
the same everywhere (every registered algorithm gets that test for free:
tests/test_cc_replay.py).

Modes, each fed one record at a time as the engine and agent feed them:
- ``python``: the handlers uncompiled (the agent with ``jit = false``);
- ``agent``: the agent's compiled drain;
- ``native``: the native entry, the compiled function whose address the
  engine calls, with its flat state/param buffers and decision buffer.

``random_stream(cls, params, n, flows, seed)`` makes a plausible stream of
the events the algorithm binds (ACK bytes in MSS units with some marked,
RTT samples around 20 us, RTT_LS sums of a few, SRCs of queues past 10 KB,
rare timeouts, timer ticks, ...).
"""
import numpy as np

from taurus.cc_algorithms.algorithm import (DECISION_DTYPE, N_DECISION, FlowContext, param_row)
from taurus.cc_algorithms.runtime import Runtime, events
from taurus.datapath.ccevents import EVENT_IDS, EVENT_NAMES, LS_SCALE
from taurus.datapath.ccshm import REC_WIDTH

MODES = ("python", "agent", "native")


def random_stream(cls, params, n: int = 400, flows: int = 3, seed: int = 0,
                  mss: int = 4096) -> np.ndarray:
    """int64[n, REC_WIDTH]: records of the events ``cls`` binds with ``params``."""
    rng = np.random.default_rng(seed)
    bound = [EVENT_IDS[str(b).upper()] for b in cls.bindings(params)]
    rec = np.zeros((n, REC_WIDTH), np.int64)
    ev = events(rec)
    psn = np.zeros(flows, np.int64)
    t = 0
    common = [e for e in bound if EVENT_NAMES[e] not in ("RTO", "LEAVE")]
    rare = [e for e in bound if EVENT_NAMES[e] in ("RTO", "LEAVE")]
    for i in range(n):
        t += int(rng.integers(100, 5000))
        f = int(rng.integers(flows))
        e = int(rng.choice(rare)) if rare and rng.random() < 0.02 or not common \
            else int(rng.choice(common))
        r = ev[i]
        r.seq, r.flow, r.event, r.t_first, r.t_last, r.count = i, f, e, t, t, 1
        name = EVENT_NAMES[e]
        pk = int(rng.integers(1, 9))
        psn[f] += pk
        if name in ("ACK", "DATA", "TX"):
            r.bytes, r.packets, r.psn = pk * mss, pk, psn[f]
            marked = int(rng.integers(0, pk + 1)) if rng.random() < 0.4 else 0
            if name == "ACK":
                r.ecn_bytes = marked * mss
                r.ue_bytes = int(rng.integers(0, marked + 1)) * mss if rng.random() < 0.1 else 0
            elif name == "DATA":
                r.ecn_bytes, r.backlog = marked * mss, int(rng.integers(0, 1 << 20))
            else:
                r.inflight = int(rng.integers(0, 64)) * mss
        elif name == "ECN":
            r.ce_bytes, r.ce_packets = pk * mss, pk
        elif name == "RTT":
            r.rtt = int(rng.integers(8_000, 60_000))
            r.send_time, r.psn, r.qdelay, r.hops = t - r.rtt, psn[f], r.rtt - 8_000, 4
        elif name == "RTT_LS":      # pk samples summed as the report engine sums them
            rtt = rng.integers(8_000, 60_000, pk)
            x = np.sort(rng.integers(0, 4_000, pk))
            x -= x[0]
            r.n, r.sx, r.sy, r.x0 = pk, x.sum(), rtt.sum(), t - 60_000 - 4_000
            r.sxx, r.sxy = (x * x // LS_SCALE).sum(), (x * rtt // LS_SCALE).sum()
            r.count, r.t_first = pk, t - int(x[-1])
        elif name == "RTO":
            r.timeouts, r.psn = 1, psn[f]
        elif name == "NACK":
            r.nacks, r.trimmed, r.psn, r.last_hop = 1, int(rng.random() < 0.5), psn[f], 0
        elif name == "CNP":
            r.ce, r.ue, r.psn = int(rng.random() < 0.7), int(rng.random() < 0.3), psn[f]
        elif name == "CSIG":
            r.csig_type, r.value, r.locator, r.fmt = 0, int(rng.integers(0, 50_000)), 3, 1
        elif name == "INT":
            r.hop, r.qlen, r.psn, r.nhops = 0, int(rng.integers(0, 200_000)), psn[f], 1
            r.tx_bytes, r.ts, r.link_rate = psn[f] * mss, t, 100_000_000_000
        elif name == "SRC":         # a queue past a 10 KB threshold, 100G, 1-3 hops away
            r.qlen, r.link_rate, r.psn = int(rng.integers(10_000, 200_000)), 100_000_000_000, psn[f]
            r.rtt, r.hops = int(rng.integers(1_000, 20_000)), int(rng.integers(1, 4))
        elif name == "TIMER":
            r.ticks, r.period = i, 10_000
        elif name == "CREDIT":
            r.credit = psn[f] * mss
        elif name in ("JOIN",):
            r.backlog = int(rng.integers(0, 1 << 20))
        elif name == "OOO":
            r.ooo = pk
        elif name == "HOST":        # memory PSI; the NIC's host model: local and echoed delay
            r.source = int(rng.choice([3, 9, 10]))
            r.value, r.aux = int(rng.integers(0, 2_000)), int(rng.integers(0, 101)) * 10**9
    return rec


def records(evs) -> np.ndarray:
    """Ring rows of flow 0 from [(event name, t_ns, {field: value})]: one
    signal each, arriving at t_ns (for hand-made event sequences)."""
    rec = np.zeros((len(evs), REC_WIDTH), np.int64)
    r = events(rec)
    for i, (name, t, fields) in enumerate(evs):
        r[i].seq, r[i].flow, r[i].event = i, 0, EVENT_IDS[name]
        r[i].t_first = r[i].t_last = t
        r[i].count = 1
        for k, v in fields.items():
            setattr(r[i], k, v)
    return rec


def replay(cls, params, rec: np.ndarray, mode: str, ctx: FlowContext | None = None,
           flows: int | None = None):
    """(decisions, state): decisions int64-viewed rows, one per record plus
    one per flow's init (DECISION_DTYPE, ``set`` 0 when nothing was decided);
    state the final per-flow state table."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    ctx = ctx or FlowContext()
    n = flows if flows is not None else int(rec[:, 1].max()) + 1 if len(rec) else 1
    rt = Runtime(cls, jit=mode != "python")
    S, P, D = rt.tables(n)
    row = param_row(cls, params, ctx)
    P[:] = row[0]
    out = np.zeros(len(rec) + n, DECISION_DTYPE)
    for f in range(n):
        D[f] = np.zeros(1, DECISION_DTYPE)[0]
        rt.setup(S, P, D, f)
        out[f] = D[f]
    faults = np.zeros(1, np.int64)
    if mode == "native":
        st = np.asarray(S).view(np.float64).reshape(-1)
        par = np.asarray(P).view(np.float64).reshape(-1)
        dec = np.zeros(N_DECISION, np.int64)
        dview = dec.view(DECISION_DTYPE)
        for i in range(len(rec)):
            dec[:] = 0
            status = rt.entry(st, par, int(rec[i, 1]), np.ascontiguousarray(rec[i]), dec)
            if status:
                dview[0]["set"] = -1          # the handler raised
            out[n + i] = dview[0]
        return out, S
    for i in range(len(rec)):
        f = int(rec[i, 1])
        D[f] = np.zeros(1, DECISION_DTYPE)[0]
        if rt.drain(S, P, D, rec, np.array([i], np.int64), faults):
            D[f].set = -1
        out[n + i] = D[f]
    return out, S
