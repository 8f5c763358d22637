"""Python API of the host NIC (build, feed, observe).  Call between runs.

    eng.reserve_nics(max_flows=..., win=256, tx_bytes=..., rx_bytes=...)   optional, first
    d = eng.add_nic(port, mac, ip, line_rate_bps=..., ...)
    nic_host_model(eng, d, host_bw, ...); nic_hog(eng, d, share, start, stop)   virtual-time host
    f = add_flow(eng, d, peer_mac, peer_ip, rate_bps=..., cwnd_bytes=..., credit=False)
    nic_post(eng, d, f, data)                 one message (WouldBlock when the ring is full)
    v = nic_send_buffer(eng, d, f, n); ...; nic_commit(eng, d, f, n)    the same, written in place
    nic_generate(eng, f, end); nic_generate_stop(eng, f)   the NIC posts f's bytes itself (gen.py)
    nic_sink(eng, d)                          d discards what it receives, copying nothing
    eng.run_for(...)
    nic_take_delivered(eng, d_rx, src_ip, f)  bytes delivered in order since the last take
    nic_completions(eng)                      [(kind, nic, flow-or-pdc, msg, end, time)]
    nic_counters(eng, d), flow_stats(eng, f), flow_done(eng, f)
    nic_close(eng, d, f)                      close f once its data is acknowledged (close.py)
    flow_closed(eng, f), nic_table_use(eng)

Streams are rings (state.py): a flow holds at most ``buf_bytes`` posted
but unACKed bytes, a receive PDC ``rx_buf_bytes`` delivered but unconsumed
bytes.  ``nic_delivered`` peeks at the unconsumed bytes (the whole stream
while nothing was taken and it fits in the ring); ``nic_take_delivered``
consumes them, which reopens the receiver's window (through the NIC's SQ,
exactly as an app in another process does: app.py).

The tables live in the shared segment ``<engine>-nic`` (shm.py); apps
ask for connections through its request rows, which ``nic_service`` answers
(the engine calls it between run chunks).  What only Python needs (the
segment, neighbours, read marks) is the engine's ``nics`` (NicTables).
"""
import dataclasses
import functools
import ipaddress
import os
import time

import numpy as np

from ... import ccshm as C
from ...ccnative import T_ENTRY, T_ST_OFF, T_ST_ROW
from ...wire import spec as S
from .state import (DR_SLOT, N_QC, QC_CQ_HEAD, QC_CQ_TAIL, NR_HOG_SHARE, NR_HOG_START, NR_HOG_STOP, NR_HOST_BUF, NR_HOST_BW,
                    NR_HOST_DELAY, NR_HOST_PERIOD, NR_HOST_Q, NR_HOST_T, NR_HOST_TIMER, TK_HOST,
                    NR_CNP_GAP, NR_LASTHOP_DSCP, NR_RX_TICK, NR_RX_TTIMER, TK_RXTICK,
                    NR_RX_IDLE, NR_RX_TIMER, TK_RXIDLE, CQ_TIME, CX_CREDIT, CX_CWND, CX_RATE, CX_VERSION, FL_ACKED_OFF,
                        FL_BACKOFF, FL_EV, FL_LOST_SCAN, FL_MAX_INFL, FL_MQ_DONE, FL_MQ_TAIL,
                        FL_NIC, FL_NXT, FL_PEER_IP, FL_PEER_MAC, FL_POSTED, FL_RETX_SCAN,
                        FL_RTO, FL_SCHED, FL_SRTT, FL_START, FL_STATE, FL_T_PACE, FL_T_RTO,
                        FL_TXCAP, FL_TXOFF, FL_UNA, FL_USES_CREDIT, FS_ACTIVE, FL_RWND,
                        RP_BUFCAP, OP_READ, OP_CLOSE, OP_REQ_CLOSE, FS_CLOSED,
                        M_FL_CLOSED, M_NRP, RP_GEN, FL_CLOSING, CL_NONE, RP_NIC, RP_PEER_IP,
                        RP_PEER_PDC, RP_CLOSED, REQ_CREDIT, REQ_NIC, REQ_PEER_IP, REQ_PID,
                        REQ_RESULT,
                        REQ_STATE, RQ_ASKED, RQ_DONE, RQ_FAILED, RQ_FREE,
                        M_NFL, M_NNIC, M_SECRET, M_TX_BUMP, M_YIELD_RX, NIC_COUNTERS, NR_ACK_DELAY,
                        NR_ACK_EVERY, NR_ACK_REQ,
                        NR_BUDGET, NR_CREDIT_WIN, NR_DEV, NR_DUPTHRESH, NR_INIT_CREDIT, NR_IP,
                        NR_LINE, NR_MAC, NR_MSS, NR_PORT, NR_RETRIES, NR_RTO_INIT, NR_RTO_MIN,
                        NR_RXCAP, NR_SINK, NR_TXTIMER, FL_GEN_END, FL_GEN_ONE, RP_BUFOFF, RP_DELIV, RP_READ, SCH_IDLE,
                        SIGNAL_NAMES, TK_PACE, TK_RTO, TK_SHIFT, TK_TX, rx_lookup,
                        FL_PLAN_END, FL_PLAN_STOP, GEN_FOREVER, TK_GEN)
from .app import WouldBlock, cq_drain, ring_read, ring_views, sq_submit
from .shm import NicShm
from ..table import NIC
from ...pinned import at_gen_refill, at_timer_start, at_wake_flow
from ...wheel import wheel_alloc, wheel_cancel, wheel_schedule
from ...clock import clock_is_virtual
from ...wire.desc import status_counts

DATA_HDR = (S.ETH_SIZE + S.IPV4_SIZE + S.UDP_SIZE + S.RUD_CC_REQ_SIZE + S.PROBE_SIZE
            + S.SES_STD_SIZE)


class NicTables:
    """The Python side of an engine's NICs (``Engine.nics``)."""

    def __init__(self):
        self.shm = None     # the NicShm segment holding E.nic, once reserved
        self.neigh = {}     # peer IP -> MAC, for apps' connection requests (nic_service)
        self.rx_read = {}   # rx PDC -> (its RP_GEN, stream offset taken here: its OP_READ
        #                   may be unserved)
        self.rx_pdc = {}    # (device, src ip, flow) -> receive PDC, once found
        self.gen_rings = {}  # ring size -> offset of the send ring generated flows share
        self.app_flows = {}  # flow -> pid of the app it was opened for (nic_service)
        self.isn = None      # the first PSN of this engine's new flow rows (first_psn)

    @property
    def reserved(self) -> bool:
        return self.shm is not None


def mac_int(mac) -> int:
    return mac if isinstance(mac, int) else int(str(mac).replace(":", ""), 16)


def ip_int(ip) -> int:
    return ip if isinstance(ip, int) else _ip_str_int(ip)


@functools.lru_cache(maxsize=4096)
def _ip_str_int(ip: str) -> int:
    """Parsed once: an app between run chunks names its peers by string
    (rx_pdc), and ipaddress takes microseconds a call."""
    return int(ipaddress.IPv4Address(ip))


MAX_PDC_ROWS = 1 << 16
"""Rows of the flow and receive PDC tables (row 0 unused): their indices are
the PDC ids (spdcid / dpdcid), 16 bits on the wire."""


def nic_reserve(eng, max_flows: int | None = None, win: int = 256, tx_bytes: int = 64 << 20,
                rx_bytes: int = 64 << 20, msgs: int = 256, cq: int = 4096,
                sq: int = 1024) -> None:
    """Size the NIC tables of this engine (before any NIC is added and before
    the first run) and place them in the shared segment ``<engine>-nic``,
    released with the engine.  Zero-filled and sparse: unused capacity costs
    no memory.  msgs: messages queued per flow; cq/sq: queue depth per NIC."""
    if eng.nics.reserved:
        raise ValueError("nic_reserve must come before the first add_nic")
    old = eng.E.nic
    F = old.fl.shape[0] if max_flows is None else max_flows + 1
    if F > MAX_PDC_ROWS:
        raise ValueError(f"nic_reserve: at most {MAX_PDC_ROWS - 1} flows, not {F - 1}: a PDC id "
                         f"(a flow or receive PDC row) is 16 bits on the wire")
    seg = NicShm.create(eng.name + "-nic", max_ports=old.nr.shape[0], max_flows=F, win=win,
                        tx_bytes=tx_bytes, rx_bytes=rx_bytes, msgs=msgs, cq=cq, sq=sq)
    eng.install("nic", seg.state, handle=seg)     # closed (and unlinked) with the engine
    eng.nics.shm = seg
    eng.on_chunk.append(lambda: nic_service(eng))


@dataclasses.dataclass(frozen=True)
class NicConfig:
    """A host NIC's settings (add_nic), checked as a whole before anything
    is registered.  ``host_bw`` > 0 models the host behind it (bit/s into
    memory through a ``host_buffer``-byte buffer, HOST samples every
    ``host_sample_ns``: nic_host_model); 0, the default, delivers at once.
    ``rto_min_ns`` floors the RTO's variance margin: RTO = srtt +
    max(4 rttvar, rto_min) (as Linux does), ``rto_init_ns`` is the RTO
    before the first RTT sample.  ``cnp_gap_ns``: the least time between
    two CNPs this NIC sends one sender (DCQCN's 50 us); ``last_hop_dscp``:
    the DSCP of a packet its last switch trimmed (switch config
    trim.last_hop_dscp), NACKed TRIMMED_LASTHOP.  ``ack_requests`` > 0: a
    window-limited flow asks for that many ACKs per window (the AR flag,
    tx.py: _ack_req), so the peer's ``ack_every`` / ``ack_delay_ns`` may
    coalesce more than a window holds; 0 (the default) leaves ACKs to the
    peer's coalescing (and AR at the end of each message)."""
    line_rate_bps: int = 0
    mss: int = 1024
    ack_every: int = 4
    ack_delay_ns: int = 2000
    rto_min_ns: int = 50_000
    rto_init_ns: int = 200_000
    max_retries: int = 15
    init_credit: int = 16384
    credit_window: int = 65536
    rx_buf_bytes: int = 1 << 20
    dupthresh: int = 3
    budget: int = 32
    host_bw: int = 0
    host_buffer: int = 256 << 10
    host_sample_ns: int = 10_000
    cnp_gap_ns: int = 50_000
    last_hop_dscp: int = 47
    ack_requests: int = 0

    def check(self, max_mss: int) -> None:
        """ValueError naming what is wrong (max_mss: the frame pool's room)."""
        if not 64 <= self.mss <= max_mss:
            raise ValueError(f"mss must be in 64..{max_mss}")
        if self.ack_every < 1 or self.ack_delay_ns < 0 or self.budget < 1 or self.dupthresh < 1:
            raise ValueError("ack_every, budget, dupthresh >= 1 and ack_delay_ns >= 0 required")
        if self.ack_requests < 0:
            raise ValueError("ack_requests >= 0 required")
        if self.cnp_gap_ns < 0 or not 0 <= self.last_hop_dscp < 64:
            raise ValueError("cnp_gap_ns >= 0 and last_hop_dscp in 0..63 required")
        if self.rx_buf_bytes < self.mss:
            raise ValueError("rx_buf_bytes must hold at least one MSS")


def add_nic(eng, port: int, mac, ip, cfg: NicConfig | None = None, name: str | None = None,
            **settings) -> int:
    """A host NIC on engine port `port` with settings ``cfg`` (NicConfig, or
    its fields as keywords); returns its device index.  Everything is
    checked before the NIC is registered: a bad setting leaves no part of
    one behind."""
    cfg = cfg if cfg is not None else NicConfig(**settings)
    if not eng.nics.reserved:
        nic_reserve(eng)
    N = eng.E.nic
    n = int(N.meta[M_NNIC])
    if n >= N.nr.shape[0]:
        raise ValueError("too many NICs")
    if N.meta[M_SECRET] == 0:
        N.meta[M_SECRET] = nic_secret(eng)
    cfg.check(eng.E.pool.data.shape[1] - DATA_HDR)
    d = eng.add_device(NIC, [port], name)
    eng.E.devs.regs[d, DR_SLOT] = n
    r = N.nr[n]
    r[NR_DEV], r[NR_PORT], r[NR_MAC], r[NR_IP] = d, port, mac_int(mac), ip_int(ip)
    r[NR_LINE], r[NR_MSS] = cfg.line_rate_bps, cfg.mss
    r[NR_ACK_EVERY], r[NR_ACK_DELAY] = cfg.ack_every, cfg.ack_delay_ns
    r[NR_RTO_MIN], r[NR_RTO_INIT], r[NR_RETRIES] = (cfg.rto_min_ns, cfg.rto_init_ns,
                                                    cfg.max_retries)
    r[NR_INIT_CREDIT], r[NR_CREDIT_WIN] = cfg.init_credit, cfg.credit_window
    r[NR_RXCAP], r[NR_DUPTHRESH], r[NR_BUDGET] = cfg.rx_buf_bytes, cfg.dupthresh, cfg.budget
    r[NR_CNP_GAP], r[NR_LASTHOP_DSCP] = cfg.cnp_gap_ns, cfg.last_hop_dscp
    r[NR_ACK_REQ] = cfg.ack_requests
    eng.nics.shm.set_name(n, name or f"nic{n}")
    eng.nics.neigh[ip_int(ip)] = mac_int(mac)
    r[NR_TXTIMER] = _nic_timer(eng, d, n, TK_TX)
    N.meta[M_NNIC] = n + 1
    if cfg.host_bw:
        nic_host_model(eng, d, cfg.host_bw, cfg.host_buffer, cfg.host_sample_ns)
    return d


def _nic_timer(eng, d: int, n: int, kind: int) -> int:
    """A wheel timer of NIC n (device d) for timer kind ``kind`` (TK_*)."""
    t = wheel_alloc(eng.E.wheel, d, (kind << TK_SHIFT) | n)
    if t < 0:
        raise ValueError("timing wheel full (Engine(timers=...))")
    return t


def nic_rx_tick(eng, d: int, period_ns: int) -> None:
    """NIC `d`'s receiver algorithm gets TIMER for each of its active
    senders every period_ns (rxcc.py); 0: never."""
    N = eng.E.nic
    n = int(eng.E.devs.regs[d, DR_SLOT])
    if period_ns < 0:
        raise ValueError("period_ns must be >= 0")
    N.nr[n, NR_RX_TICK] = int(period_ns)
    if period_ns and N.nr[n, NR_RX_TTIMER] <= 0:
        N.nr[n, NR_RX_TTIMER] = _nic_timer(eng, d, n, TK_RXTICK)
    if period_ns:
        wheel_schedule(eng.E.wheel, int(N.nr[n, NR_RX_TTIMER]), eng.now() + int(period_ns))


def nic_init_credit(eng, d: int, nbytes: int) -> None:
    """The credit NIC `d` grants a new credit sender before any decision
    (its receive PDC's first cumulative credit)."""
    if nbytes < 0:
        raise ValueError("init credit must be >= 0")
    eng.E.nic.nr[int(eng.E.devs.regs[d, DR_SLOT]), NR_INIT_CREDIT] = int(nbytes)


def nic_rx_idle(eng, d: int, idle_ns: int) -> None:
    """Senders of NIC `d` silent for idle_ns leave its receiver algorithm's
    table (rxcc.py: LEAVE); 0: never.  Starts the NIC's idle scan."""
    N = eng.E.nic
    n = int(eng.E.devs.regs[d, DR_SLOT])
    if idle_ns < 0:
        raise ValueError("idle_ns must be >= 0")
    N.nr[n, NR_RX_IDLE] = int(idle_ns)
    if idle_ns and N.nr[n, NR_RX_TIMER] <= 0:
        N.nr[n, NR_RX_TIMER] = t = _nic_timer(eng, d, n, TK_RXIDLE)
        wheel_schedule(eng.E.wheel, t, eng.now() + max(idle_ns // 2, 1))


def nic_host_model(eng, d: int, host_bw: int, buffer_bytes: int = 256 << 10,
                   sample_ns: int = 10_000) -> None:
    """The host behind NIC `d` (host.py): payload reaches host memory at
    host_bw bit/s through a host buffer of buffer_bytes (overflow: counted
    drops, drop_host_buf); every sample_ns the NIC raises HOST samples and
    its ACKs echo the delivery delay.  host_bw 0: unlimited, no model (the
    sampling stops).  Between runs only; the buffer starts empty."""
    N = eng.E.nic
    n = int(eng.E.devs.regs[d, DR_SLOT])
    if host_bw < 0:
        raise ValueError(f"host_bw must be >= 0 bit/s, got {host_bw}")
    if host_bw and (buffer_bytes < int(N.nr[n, NR_MSS]) or sample_ns <= 0):
        raise ValueError(f"host buffer must hold one MSS ({int(N.nr[n, NR_MSS])} B) and "
                         f"sample_ns be > 0, got {buffer_bytes} B, {sample_ns} ns")
    r = N.nr[n]
    r[NR_HOST_BW], r[NR_HOST_BUF], r[NR_HOST_PERIOD] = host_bw, buffer_bytes, sample_ns
    r[NR_HOST_Q], r[NR_HOST_T], r[NR_HOST_DELAY] = 0, eng.now(), 0
    if host_bw == 0:
        if r[NR_HOST_TIMER] > 0:
            wheel_cancel(eng.E.wheel, int(r[NR_HOST_TIMER]) - 1)
        return
    if r[NR_HOST_TIMER] <= 0:
        r[NR_HOST_TIMER] = _nic_timer(eng, d, n, TK_HOST) + 1
    wheel_schedule(eng.E.wheel, int(r[NR_HOST_TIMER]) - 1, eng.now() + sample_ns)


def nic_hog(eng, d: int, share: float, start_ns: int, stop_ns: int) -> None:
    """A hog on NIC `d`'s host takes `share` (0..1) of its host bandwidth
    from start_ns to stop_ns (engine clock); share 0: none.  Needs a host
    model (nic_host_model)."""
    N = eng.E.nic
    n = int(eng.E.devs.regs[d, DR_SLOT])
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"hog share must be in 0..1, got {share}")
    if share and N.nr[n, NR_HOST_BW] <= 0:
        raise ValueError("a hog needs the NIC's host model (host_bw > 0)")
    if stop_ns < start_ns:
        raise ValueError(f"hog stop ({stop_ns} ns) before its start ({start_ns} ns)")
    r = N.nr[n]
    r[NR_HOG_SHARE], r[NR_HOG_START], r[NR_HOG_STOP] = round(share * 1_000_000), start_ns, stop_ns


def add_flow(eng, d: int, peer_mac, peer_ip, rate_bps: int = 0, cwnd_bytes: int = 0,
             credit: bool = False, init_credit: int | None = None, buf_bytes: int = 1 << 20,
             start_psn: int | None = None, ev: int | None = None, rwnd_bytes: int | None = None,
             shared_ring: bool = False) -> int:
    """A sending flow (one PDC + one CCC) from NIC `d` to a peer.  rate_bps
    (0: unpaced) and cwnd_bytes (0: none) fill its CC context row; credit:
    RCCC (RUD_CC_REQ, sends only within cumulative credit, starting from
    init_credit, default the NIC's).  buf_bytes: its send ring; shared_ring:
    one ring of that size shared by every flow asking for it (generated
    flows, whose bytes nobody reads: nic_generate); rwnd_bytes: the
    receiver's ring capacity (default: this NIC's rx_buf_bytes; NICs are
    configured alike).  start_psn: its first PSN; by default first_psn on a
    new row and, on the row of a closed flow, one past the last connection's
    CLOSE: the receiver tells a new connection on the same PDC id from late
    packets of the old one by it (state.py: RP_START)."""
    N = eng.E.nic
    n = int(eng.E.devs.regs[d, DR_SLOT])
    rwnd = int(N.nr[n, NR_RXCAP]) if rwnd_bytes is None else int(rwnd_bytes)
    if buf_bytes < 1 or rwnd < N.nr[n, NR_MSS]:
        raise ValueError("buf_bytes must be >= 1 and rwnd_bytes >= the MSS")
    f, off, cap, tp, tr = _reuse_flow(eng, d, buf_bytes)
    if start_psn is None:
        start_psn = int(N.fl[f, FL_NXT]) + 1 if f else first_psn(eng)
    eng.nics.app_flows.pop(f, None)             # a reused row belongs to no app yet
    if f == 0:
        f = int(N.meta[M_NFL]) + 1
        if f >= N.fl.shape[0]:
            raise ValueError("too many flows (nic_reserve(max_flows=...))")
        tp = wheel_alloc(eng.E.wheel, d, (TK_PACE << TK_SHIFT) | f)
        tr = wheel_alloc(eng.E.wheel, d, (TK_RTO << TK_SHIFT) | f)
        if tp < 0 or tr < 0:
            raise ValueError("timing wheel full (Engine(timers=...))")
        off, cap = _tx_ring(eng, buf_bytes, shared_ring), buf_bytes
        N.meta[M_NFL] = f
    row = N.fl[f]
    row[:] = 0
    row[FL_NIC], row[FL_STATE] = n + 1, FS_ACTIVE
    row[FL_PEER_MAC], row[FL_PEER_IP] = mac_int(peer_mac), ip_int(peer_ip)
    row[FL_EV] = (0xC000 | (f & 0x3FFF)) if ev is None else ev & 0xFFFF
    for c in (FL_START, FL_NXT, FL_UNA, FL_RETX_SCAN, FL_LOST_SCAN):
        row[c] = start_psn
    row[FL_TXOFF], row[FL_TXCAP], row[FL_RWND] = off, cap, rwnd
    row[FL_T_PACE], row[FL_T_RTO] = tp, tr
    row[FL_RTO], row[FL_BACKOFF] = N.nr[n, NR_RTO_INIT], 1
    row[FL_USES_CREDIT] = int(bool(credit))
    N.ctx[f, CX_RATE], N.ctx[f, CX_CWND] = rate_bps, cwnd_bytes
    N.ctx[f, CX_CREDIT] = (N.nr[n, NR_INIT_CREDIT] if init_credit is None else init_credit) \
        if credit else 0
    N.ctx[f, CX_VERSION] = 1
    N.sig[f] = 0
    A = eng.E.alg
    if f < A.flow_alg.shape[0]:
        A.flow_alg[f] = -1
    _register_cc(eng, n, f)
    return f


def nic_secret(eng) -> int:
    """The key of the engine's reset cookies (reset.py): random on the wall
    clock, a constant in virtual time (a run repeats exactly)."""
    if clock_is_virtual(eng.clk):
        return 0x5EC12E7
    return int.from_bytes(os.urandom(8), "little") >> 1 or 1


def first_psn(eng) -> int:
    """The first PSN of the engine's new flow rows: 0 in virtual time (a run
    repeats exactly); on the wall clock the microseconds of the system
    clock when the engine made its first row, modulo 2**31 (TCP's ISN clock,
    RFC 6528, ticks every 4 us).  A sender process that restarts therefore
    starts its connections after its predecessor's on the same PDC ids
    (unless that one sent more packets on a row than microseconds passed,
    or the clock wrapped: every 36 minutes), and a long-lived receiver
    takes the new connection at once (rx._pdc_of).  Below 2**31: a flow's
    32-bit wire PSN wraps only after 2**31 packets."""
    t = eng.nics
    if t.isn is None:
        t.isn = 0 if clock_is_virtual(eng.clk) else (time.time_ns() // 1000) & 0x7FFFFFFF
    return t.isn


def _tx_ring(eng, n: int, shared: bool) -> int:
    """The offset of an n-byte send ring in the arena: a new one, or the one
    shared by every flow asking for a shared ring of that size."""
    N = eng.E.nic
    if shared and n in eng.nics.gen_rings:
        return eng.nics.gen_rings[n]
    off = int(N.meta[M_TX_BUMP])
    if off + n > N.txbuf.shape[0]:
        raise ValueError("send arena full (nic_reserve(tx_bytes=...))")
    N.meta[M_TX_BUMP] = off + n
    if shared:
        eng.nics.gen_rings[n] = off
    return off


def _reuse_flow(eng, d: int, buf_bytes: int):
    """A closed flow row (close.py) whose send ring holds buf_bytes and which
    is off the ready list: (f, ring offset, ring size, pace timer, RTO
    timer), its timers now owned by device d; f = 0 when there is none."""
    N = eng.E.nic
    if N.meta[M_FL_CLOSED] <= 0:
        return 0, 0, 0, 0, 0
    rows = N.fl[1:int(N.meta[M_NFL]) + 1]
    ok = np.flatnonzero((rows[:, FL_STATE] == FS_CLOSED) & (rows[:, FL_SCHED] == SCH_IDLE)
                        & (rows[:, FL_TXCAP] >= buf_bytes))
    if len(ok) == 0:
        return 0, 0, 0, 0, 0
    f = int(ok[0]) + 1
    N.meta[M_FL_CLOSED] -= 1
    N.sl_state[f] = 0
    tp, tr = int(N.fl[f, FL_T_PACE]), int(N.fl[f, FL_T_RTO])
    eng.E.wheel.owner[tp] = eng.E.wheel.owner[tr] = d
    return f, int(N.fl[f, FL_TXOFF]), int(N.fl[f, FL_TXCAP]), tp, tr


def nic_close(eng, d: int, f: int) -> None:
    """Close flow f (its PDC and CCC) once everything posted on it is
    acknowledged: CLOSE to the receiver, which frees its receive PDC; the
    flow's row is then reused by a later add_flow (close.py).  Served at
    the next run (an OP_CLOSE on the NIC's SQ, as an app in another
    process submits it).  A failed flow (retransmissions exhausted) is
    freed at once.  Nothing may be posted on f after this."""
    N = eng.E.nic
    if N.fl[f, FL_NIC] != int(eng.E.devs.regs[d, DR_SLOT]) + 1:
        raise ValueError(f"flow {f} does not belong to device {d}")
    sq_submit(N, int(eng.E.devs.regs[d, DR_SLOT]), OP_CLOSE, f, 0)


def nic_req_close(eng, d: int, src_ip, f: int) -> None:
    """At the receiver: ask the sender of flow f of src_ip to close
    (REQ_CLOSE); it closes once its data is acknowledged."""
    r = rx_pdc(eng, d, src_ip, f)
    if r == 0:
        raise ValueError(f"no open receive PDC of flow {f} of {src_ip} at device {d}")
    sq_submit(eng.E.nic, int(eng.E.devs.regs[d, DR_SLOT]), OP_REQ_CLOSE, r, 0)


def flow_closed(eng, f: int) -> bool:
    """Flow f's PDC is closed (its row is free for reuse)."""
    return int(eng.E.nic.fl[f, FL_STATE]) == FS_CLOSED


def nic_table_use(eng) -> dict:
    """How full the per-connection tables are: sending flow rows in use
    (open or closing), allocated and closed; receive PDC rows open, closed
    and waiting for their sender's next connection (close.py), and
    allocated; PDC hash entries of open PDCs."""
    N = eng.E.nic
    nfl, nrp = int(N.meta[M_NFL]), int(N.meta[M_NRP])
    st = N.fl[1:nfl + 1, FL_STATE]
    rp = N.rp[1:nrp + 1]
    live = rp[:, RP_NIC] != 0
    waiting = live & (rp[:, RP_CLOSED] != 0)
    return {"flows": int(np.count_nonzero((st != FS_CLOSED) & (st != 0))), "flow_rows": nfl,
            "flows_closed": int(N.meta[M_FL_CLOSED]),
            "pdcs": int(np.count_nonzero(live & ~waiting)),
            "pdcs_closed": int(np.count_nonzero(waiting)), "pdc_rows": nrp,
            "hash": int(np.count_nonzero(N.hkey)) - int(np.count_nonzero(waiting))}


CC_MODES = ("static", "agent", "per-event", "native")


def _register_cc(eng, n: int, f: int) -> None:
    """Announce flow f of NIC n on the agent contract: its reports go to NIC
    n's ring, with the events the agent asked new flows to report."""
    cc = eng.cc
    if f >= cc.max_flows or n >= cc.max_nics:
        raise ValueError(f"flow {f} of NIC {n} exceeds the engine's contract "
                         f"(Engine(max_flows={cc.max_flows}, max_nics={cc.max_nics}))")
    cc.owner[f] = n
    cc.event_mask[f] = cc.ctls[n, C.CTL_DEFAULT_MASK]
    cc.rate[f] = cc.cwnd[f] = cc.credit[f] = cc.flags[f] = cc.timer_ns[f] = 0
    cc.ev[f] = cc.ev_n[f] = 0            # no entropy decision: the flow's own EV
    cc.delivered[f] = 0                  # a reused row counts its new connection's messages
    cc.conn[f] += 1                      # a new connection on this row: the agent sets it
    cc.ctls[n, C.CTL_OPENED] += 1        # up afresh (agent/handler.py: forget_reused)


def set_flow_mode(eng, f: int, mode: str, alg: int = -1, event_mask: int | None = None,
                  timer_ns: int | None = None) -> None:
    """Who decides flow f's rate and window:
    static     the values given to add_flow / set_flow_cc, no reports;
    agent      the agent (TAURUS), through aggregated reports;
    per-event  the agent with aggregation off on this flow's NIC (CCP-like);
    native     algorithm `alg` of the engine's native table (Engine(native=
               ...), ccnative.py), compiled into the engine, one call per
               event (the in-datapath baseline).
    event_mask (bit EV_x per event) and timer_ns (the TIMER period, 0 none)
    are what the flow's algorithm binds with its parameters; native mode
    needs the mask (cc_algorithms/native.py: NativeTable.start computes
    both, writes the flow's parameter row and runs the algorithm's init);
    agent modes take them if given (the agent writes its own otherwise).
    A native flow's state row starts zeroed; its TIMER starts here."""
    if mode not in CC_MODES:
        raise ValueError(f"cc mode must be one of {CC_MODES}, got {mode!r}")
    cc, A = eng.cc, eng.E.alg
    n = int(cc.owner[f])
    if f < A.flow_alg.shape[0]:
        A.flow_alg[f] = -1
    if mode == "static":
        cc.flags[f], cc.event_mask[f], cc.timer_ns[f] = 0, 0, 0
        return
    if mode in ("agent", "per-event"):
        cc.flags[f] = C.FL_CC_ACTIVE
        cc.event_mask[f] = cc.event_mask[f] or cc.ctls[n, C.CTL_DEFAULT_MASK]
        cc.ctls[n, C.CTL_AGGREGATE] = 0 if mode == "per-event" else 1
    else:
        if not eng.has_native:
            raise ValueError("cc mode native: this engine has no native algorithm "
                             "(Engine(native=...))")
        if not 0 <= alg < A.tab.shape[0] or A.tab[alg, T_ENTRY] == 0:
            raise ValueError(f"cc mode native: no algorithm {alg} in the engine's native "
                             f"table (0..{A.tab.shape[0] - 1})")
        if f >= A.flow_alg.shape[0]:
            raise ValueError(f"cc mode native: flow {f} is beyond the native table's "
                             f"{A.flow_alg.shape[0]} flows")
        if event_mask is None:
            raise ValueError("cc mode native: give the flow's event_mask (its algorithm's "
                             "bindings)")
        so, sr = int(A.tab[alg, T_ST_OFF]), int(A.tab[alg, T_ST_ROW])
        A.st[so + f * sr:so + (f + 1) * sr] = 0.0
        A.flow_alg[f] = alg
        cc.flags[f] = C.FL_NATIVE
    if event_mask is not None:
        cc.event_mask[f] = int(event_mask)
    if timer_ns is not None:
        cc.timer_ns[f] = max(0, int(timer_ns))
    at_timer_start(eng.state_addr(), f, eng.now())


def flow_nic(eng, f: int) -> dict:
    """What an algorithm is told of flow f's NIC: mss (bytes), line_rate
    (bit/s, 0 unknown), slot (its NIC index)."""
    N = eng.E.nic
    n = int(N.fl[f, FL_NIC]) - 1
    if n < 0:
        raise ValueError(f"no flow {f}")
    return {"mss": int(N.nr[n, NR_MSS]), "line_rate": int(N.nr[n, NR_LINE]), "slot": n}


def set_flow_cc(eng, f: int, rate_bps: int | None = None, cwnd_bytes: int | None = None):
    """What the agent will do through the shared context table."""
    N = eng.E.nic
    if rate_bps is not None:
        N.ctx[f, CX_RATE] = rate_bps
    if cwnd_bytes is not None:
        N.ctx[f, CX_CWND] = cwnd_bytes
    N.ctx[f, CX_VERSION] += 1


def _send_room(eng, d: int, f: int, n: int) -> int:
    """Where an n-byte message would start in flow f's stream; WouldBlock
    when its send ring or message queue has no room.  Reads with .item():
    an app calls this per message, and numpy's scalar indexing costs
    several times as much."""
    E = eng.E
    fl = E.nic.fl
    if fl.item(f, FL_NIC) != E.devs.regs.item(d, 0) + 1:
        raise ValueError(f"flow {f} does not belong to device {d}")
    if fl.item(f, FL_STATE) == FS_CLOSED or fl.item(f, FL_CLOSING) != 0:
        raise ValueError(f"flow {f} is closed")
    if n <= 0:
        raise ValueError("empty message")
    cap = fl.item(f, FL_TXCAP)
    if n > cap:
        raise ValueError(f"message larger than the flow's send ring ({cap})")
    if fl.item(f, FL_MQ_TAIL) - fl.item(f, FL_MQ_DONE) >= E.nic.mq.shape[1]:
        raise WouldBlock("message queue full")
    pos = fl.item(f, FL_POSTED)
    if pos + n - fl.item(f, FL_ACKED_OFF) > cap:
        raise WouldBlock("send ring full")
    return pos


def nic_send_buffer(eng, d: int, f: int, n: int) -> list[memoryview]:
    """Zero-copy send: the place of the next n-byte message in flow f's send
    ring, as one writable view (two where the ring wraps); WouldBlock as
    nic_post.  Write the message there, then nic_commit(eng, d, f, n).  The
    views hold what was sent through them before: a sender that writes
    only what changed keeps the rest."""
    pos = _send_room(eng, d, f, n)
    N = eng.E.nic
    return ring_views(N.txbuf, N.fl.item(f, FL_TXOFF), N.fl.item(f, FL_TXCAP), pos, n)


def nic_commit(eng, d: int, f: int, n: int, msg_id: int | None = None) -> int:
    """Post the n bytes at nic_send_buffer's views as one message; returns
    its message id (16 bits on the wire)."""
    pos = _send_room(eng, d, f, n)
    N = eng.E.nic
    fl = N.fl
    tail = fl.item(f, FL_MQ_TAIL)
    mid = tail & 0xFFFF if msg_id is None else msg_id & 0xFFFF
    k = tail % N.mq.shape[1]
    N.mq[f, k, 0] = pos + n
    N.mq[f, k, 1] = mid
    fl[f, FL_POSTED] = pos + n
    fl[f, FL_MQ_TAIL] = tail + 1
    if fl.item(f, FL_SCHED) == SCH_IDLE:  # a queued or timed flow finds the message itself
        at_wake_flow(eng.state_addr(), f, eng.now())
    return mid


def nic_post(eng, d: int, f: int, data, msg_id: int | None = None) -> int:
    """Queue one message on flow f; returns its message id (16 bits on the
    wire).  WouldBlock when its send ring or message queue has no room."""
    try:
        buf = memoryview(data).cast("B")
    except TypeError:                  # not a contiguous buffer (a list of ints, ...)
        buf = memoryview(bytes(data))
    a = 0
    for v in nic_send_buffer(eng, d, f, len(buf)):
        v[:] = buf[a:a + len(v)]
        a += len(v)
    return nic_commit(eng, d, f, len(buf), msg_id)


def rx_pdc(eng, d, src_ip, f):
    """The receive PDC of flow f of src_ip at NIC d, or 0 while none (or
    closed: its data is gone with the connection).  One
    found is remembered while its row still holds that connection (a lookup
    from Python costs microseconds of argument checks; a sink asks every
    run chunk); a closed PDC's row is reused (close.py)."""
    key = (d, src_ip, f)
    E = eng.E
    N = E.nic
    rp = N.rp
    n = E.devs.regs.item(d, 0)
    r = eng.nics.rx_pdc.get(key)
    if r is not None and (rp.item(r, RP_NIC) != n + 1 or rp.item(r, RP_PEER_IP) != ip_int(src_ip)
                          or rp.item(r, RP_PEER_PDC) != f):
        del eng.nics.rx_pdc[key]
        r = None
    if r is None:
        r = int(rx_lookup(N, n, ip_int(src_ip), f, False))
        if r:
            eng.nics.rx_pdc[key] = r
    return r if r and rp.item(r, RP_CLOSED) == 0 else 0


def _unread(eng, r):
    """Stream offsets [a, b) delivered at rx PDC r and not yet taken (what
    was taken here counts for the connection now in row r only)."""
    rp = eng.E.nic.rp
    gen, took = eng.nics.rx_read.get(r, (0, 0))
    if gen != rp.item(r, RP_GEN):
        took = 0
    return max(took, rp.item(r, RP_READ)), rp.item(r, RP_DELIV)


def _read(eng, r, a, b) -> bytes:
    N = eng.E.nic
    return ring_read(N.rxbuf, int(N.rp[r, RP_BUFOFF]), int(N.rp[r, RP_BUFCAP]), a, b - a)


def _release(eng, d, r, a, b) -> int:
    """Give [a, b) back to the receive ring (an OP_READ on the NIC's SQ,
    served at the next run)."""
    if b > a:
        E = eng.E
        sq_submit(E.nic, E.devs.regs.item(d, 0), OP_READ, r, b)
        eng.nics.rx_read[r] = (E.nic.rp.item(r, RP_GEN), b)
    return b - a


def nic_delivered(eng, d: int, src_ip, f: int) -> bytes:
    """The bytes flow f of host src_ip delivered in order at NIC d and not
    yet taken (the whole stream while nothing was taken)."""
    r = rx_pdc(eng, d, src_ip, f)
    return _read(eng, r, *_unread(eng, r)) if r else b""


def nic_take_delivered(eng, d: int, src_ip, f: int) -> bytes:
    """The in-order bytes delivered since the last take; frees their ring
    space."""
    r = rx_pdc(eng, d, src_ip, f)
    if r == 0:
        return b""
    a, b = _unread(eng, r)
    data = _read(eng, r, a, b)
    _release(eng, d, r, a, b)
    return data


def nic_skip_delivered(eng, d: int, src_ip, f: int) -> int:
    """Like nic_take_delivered for a sink that does not look at the bytes:
    frees their ring space without copying them; returns how many."""
    r = rx_pdc(eng, d, src_ip, f)
    return _release(eng, d, r, *_unread(eng, r)) if r else 0



def nic_generate(eng, f: int, end: int | None = None) -> None:
    """Let the NIC post flow f's messages itself up to stream offset `end`
    (None: open-ended) as ACKs free room (gen.py).  Only the message ending
    at `end` completes; a finite flow is one transfer, so the sender asks
    for an immediate ACK at its end only, not at each GEN_CHUNK piece (an
    open-ended stream is a sequence of GEN_CHUNK messages, each asked)."""
    N = eng.E.nic
    if N.fl[f, FL_STATE] != FS_ACTIVE:
        raise ValueError(f"flow {f} is not active")
    one = end is not None
    end = GEN_FOREVER if end is None else int(end)
    if end <= N.fl[f, FL_POSTED]:
        raise ValueError(f"flow {f} already posted {int(N.fl[f, FL_POSTED])} bytes (>= {end})")
    N.fl[f, FL_GEN_END] = end
    N.fl[f, FL_GEN_ONE] = int(one)
    at_gen_refill(eng.state_addr(), f, eng.now())


def nic_generate_at(eng, f: int, start_ns: int, end: int | None = None,
                    stop_ns: int = 0) -> None:
    """Plan flow f's generated stream (nic_generate's `end`) to start at
    start_ns and, if stop_ns > 0, stop at stop_ns (engine ns), on a timer
    of the flow's NIC (gen.py: gen_timer): nobody acts between the
    engine's passes for it.  The flow must be active and not yet posted."""
    N = eng.E.nic
    if N.fl[f, FL_STATE] != FS_ACTIVE or N.fl[f, FL_POSTED] > 0 or N.fl[f, FL_GEN_END] > 0:
        raise ValueError(f"flow {f} is not an active flow with nothing posted")
    if stop_ns and stop_ns < start_ns:
        raise ValueError(f"flow {f}: stop ({stop_ns} ns) before start ({start_ns} ns)")
    n = int(N.fl[f, FL_NIC]) - 1
    d = int(N.nr[n, NR_DEV])
    N.fl[f, FL_PLAN_END] = GEN_FOREVER if end is None else int(end)
    N.fl[f, FL_PLAN_STOP] = int(stop_ns)
    wheel_schedule(eng.E.wheel, _nic_timer(eng, d, f, TK_GEN), int(start_ns))


def nic_generate_stop(eng, f: int) -> None:
    """End flow f's generated stream where it is posted now."""
    N = eng.E.nic
    if N.fl[f, FL_GEN_END] > 0:
        N.fl[f, FL_GEN_END] = max(1, int(N.fl[f, FL_POSTED]))


def nic_sink(eng, d: int, window: int = 1 << 30) -> None:
    """Make NIC d a sink (gen.py): what it receives is consumed as it is
    delivered and never copied, and senders see a window of `window`
    bytes.  Before any connection reaches it."""
    N = eng.E.nic
    n = int(eng.E.devs.regs[d, DR_SLOT])
    if any(int(N.rp[r, RP_NIC]) == n + 1 for r in range(1, int(N.meta[M_NRP]) + 1)):
        raise ValueError("nic_sink: the NIC already has receive PDCs")
    N.nr[n, NR_SINK] = 1
    N.nr[n, NR_RXCAP] = int(window)


def nic_yield_on_message(eng, on: bool = True) -> None:
    """With on, the engine ends its run chunk whenever a NIC delivers a whole
    message, so the apps between chunks (Engine.on_chunk) see it at once, not
    up to a chunk later: a server answering requests in the engine's process.
    Costs a chunk boundary per message; bulk receivers leave it off."""
    eng.E.nic.meta[M_YIELD_RX] = int(on)


def nic_completions(eng) -> list[tuple]:
    """Drain every NIC's completion queue: (kind 1=TX 2=RX, nic, flow or rx
    PDC, msg id, end offset in the stream, time ns), in time order."""
    N = eng.E.nic
    k = int(N.meta[M_NNIC])
    heads = N.qc[QC_CQ_HEAD:k * N_QC:N_QC]
    busy = np.flatnonzero(heads != N.qc[QC_CQ_TAIL:k * N_QC:N_QC])   # only NICs with records
    if not len(busy):
        return []
    recs = np.concatenate([cq_drain(N, int(n)) for n in busy])
    # Sorted and converted by numpy: an app drains this every run chunk,
    # and per-element int() on hundreds of records took as long as
    # the rest of its work.
    recs = recs[np.argsort(recs[:, CQ_TIME], kind="stable"), :CQ_TIME + 1]
    return [tuple(r) for r in recs.tolist()]


def nic_neighbour(eng, ip, mac) -> None:
    """The MAC to use for a peer that is not a NIC of this engine."""
    eng.nics.neigh[ip_int(ip)] = mac_int(mac)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # someone else's process: alive
        pass
    return True


def nic_reap(eng) -> int:
    """Close the flows opened for apps that are gone (killed, or exited
    without closing): each closes once what was posted is acknowledged,
    and the receiver frees its PDC (close.py); free the request rows they
    left answered but unread.  Returns how many flows."""
    N = eng.E.nic
    owners = eng.nics.app_flows
    dead = {pid for pid in set(owners.values()) if not _alive(pid)}
    for row in N.req:
        if row[REQ_STATE] in (RQ_DONE, RQ_FAILED) and int(row[REQ_PID]) in dead:
            row[REQ_STATE] = RQ_FREE
    n = 0
    for f, pid in list(owners.items()):
        if N.fl[f, FL_STATE] != FS_ACTIVE:
            del owners[f]                     # closed by its app, or failed
        elif pid in dead:
            del owners[f]
            if N.fl[f, FL_CLOSING] == CL_NONE:
                nic_close(eng, int(N.nr[int(N.fl[f, FL_NIC]) - 1, NR_DEV]), f)
                n += 1
    return n


def nic_service(eng) -> int:
    """Answer apps' connection requests (state.py REQ_* rows): open a flow
    from the asking NIC to the peer IP; a credit flow when the request asks
    (REQ_CREDIT), starting from the peer NIC's initial credit
    (nic_init_credit) when the peer is a NIC of this engine; close the flows
    of apps that are gone (nic_reap).  Returns how many requests were
    answered."""
    N = eng.E.nic
    if eng.nics.app_flows:
        nic_reap(eng)
    done = 0
    # Only the rows asked (checked at once: this runs every chunk).
    for k in np.flatnonzero(N.req[:, REQ_STATE] == RQ_ASKED):
        row = N.req[k]
        n, ip = int(row[REQ_NIC]), int(row[REQ_PEER_IP])
        try:
            if not 0 <= n < int(N.meta[M_NNIC]):
                raise ValueError(f"no NIC {n}")
            mac = eng.nics.neigh.get(ip)
            if mac is None:
                raise ValueError(f"no MAC known for {ipaddress.IPv4Address(ip)}")
            credit = bool(row[REQ_CREDIT])
            init = None
            if credit:
                peer = np.flatnonzero(N.nr[:int(N.meta[M_NNIC]), NR_IP] == ip)
                init = int(N.nr[peer[0], NR_INIT_CREDIT]) if len(peer) else None
            row[REQ_RESULT] = f = add_flow(eng, int(N.nr[n, NR_DEV]), mac, ip, credit=credit,
                                           init_credit=init)
            eng.nics.app_flows[f] = int(row[REQ_PID])
            row[REQ_STATE] = RQ_DONE
        except ValueError:
            row[REQ_RESULT] = -1
            row[REQ_STATE] = RQ_FAILED
        done += 1
    return done


def nic_counters(eng, d: int) -> dict:
    N = eng.E.nic
    n = int(eng.E.devs.regs[d, DR_SLOT])
    out = {name: int(N.ncnt[n, k]) for k, name in enumerate(NIC_COUNTERS)}
    out["parse"] = status_counts(N.pcnt[n])
    return out


def flow_stats(eng, f: int) -> dict:
    N = eng.E.nic
    out = {name: int(N.sig[f, k]) for k, name in enumerate(SIGNAL_NAMES)}
    out.update(posted=int(N.fl[f, FL_POSTED]), acked=int(N.fl[f, FL_ACKED_OFF]),
               psn_next=int(N.fl[f, FL_NXT]), psn_una=int(N.fl[f, FL_UNA]),
               max_inflight=int(N.fl[f, FL_MAX_INFL]), srtt=int(N.fl[f, FL_SRTT]),
               rto=int(N.fl[f, FL_RTO]),
               state=int(N.fl[f, FL_STATE]), credit=int(N.ctx[f, CX_CREDIT]))
    return out


def flow_done(eng, f: int) -> bool:
    N = eng.E.nic
    return bool(N.fl[f, FL_ACKED_OFF] >= N.fl[f, FL_POSTED] > 0)
