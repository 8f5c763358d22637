"""The type-aware message report engine (TAURUS §3.4), inside the engine.

Signal-level aggregation: every signal a NIC collects goes to its event's
engine class (ccshm.EVENT_CLASS).  Accumulable events are summed, Coalescent
events merged, each over a per-flow period set by the algorithm
(period_ns[flow, class], times the agent's back-pressure factor); Raw events
(and every event when aggregation is off: the CCP-like per-event design) go
out at once.  When a (flow, class) window closes, its aggregates move out as
messages and the slots start empty, so a closed aggregate is never written
again (the role of the paper's ping-pong buffer).  Each message carries the
arrival time of the first and last signal it aggregates.

Message-level aggregation: messages are written straight into free slots of
the NIC's report ring but published only when the staged batch reaches
CTL_BATCH_BYTES or its oldest message CTL_DEADLINE_NS.  A ring without room
refuses the message and counts it (CTL_RING_FULL): never silent.

Periods: > 0 ns, or < 0 RTT-relative (ccshm.RTT_UNIT), resolved from the
flow's srtt each time a window opens, so "once per RTT" follows the RTT.

Also here, the rest of signal collection that the agent configures (§3.3):
RTT probes reach the agent at the cadence it set (every N samples or T ns,
or the next one on its command), and custom feedback segments are cut out
of matching feedback packets into Raw records (``report_segments``).

Native flows (FL_NATIVE): every signal of an event the flow's algorithm
binds goes at once, as one record, to that algorithm compiled into the
engine (ccnative.py), never into the ring; the RTT probe cadence does not
apply to them (each sample is delivered).

TIMER events (ccevents EV_TIMER): a flow whose event_mask has the TIMER bit
and whose ``timer_ns`` is > 0 gets one every timer_ns (values: expiries since
the flow's timer first started, the period), native or agent-owned (into the
ring, Raw).  Its timer starts when set_flow_mode sets the flow up, at the
flow's first reported signal, or on the NIC's TIMER doorbell (the agent
rings it after writing masks or periods: ``report_timer_commands``); it
stops at the first expiry that finds the bit or the period gone.  Each
expiry schedules the next one period after it was due (no drift), in
virtual and wall time alike.

Timers (windows, deadlines, TIMER) live on the engine's wheel with the
reserved owner OWNER_REPORT; the engine loop hands them back to
``report_timer``.
"""
from collections import namedtuple

import numba as nb
import numpy as np

from . import ccevents
from .ccevents import W
from . import ccshm as C
from .ccnative import native_call
from .ctlblock import WAKE_PUBLISH, YIELD
from .hot import hot
from .wire import spec as S
from .wire.codec import get_field
from .shmring import Ring, ring_doorbell, ring_publish, ring_slot, ring_space
from .vagents import vagents_published
from .wheel import wheel_alloc, wheel_armed, wheel_cancel, wheel_schedule

Report = namedtuple("Report", ["acc", "win_timer", "staged", "dl_timer", "hdr",
                               "rings", "ctls", "mask", "period", "owner",
                               "rate", "cwnd", "credit", "flags", "fallback",
                               "srtt", "probe", "probe_n", "probe_t", "segs", "probe_seen",
                               "version", "updated_ns", "ev", "ev_n", "timer_ns",
                               "tm_timer", "tm_on", "tm_ticks", "tm_seen", "delivered",
                               "vals"])
"""acc int64[F, N_EVENTS, A_W]: open aggregates; win_timer int32[F, 3]:
window timer per (flow, class), -1 until first used; staged int64[K, 2]:
messages staged per NIC and when the oldest was staged; dl_timer int32[K];
hdr uint64[8] (a dummy ring header); fallback int64[K]: 1 while NIC k's
agent is silent (ccguard.py); probe_n / probe_t int64[F]: RTT samples since,
and time of, the last one reported; probe_seen int64[K]: the last probe
doorbell NIC k acted on (nic/tx.py: probe_commands); tm_timer int32[F]:
each flow's TIMER timer, -1 until first used; tm_on int64[F]: 1 while it
runs; tm_ticks int64[F]: its expiries; tm_seen int64[K]: the last TIMER
doorbell NIC k acted on; delivered int64[F, N_EVENTS]: records of each
event handed to each flow's algorithm (into the ring, or to its native
entry), a view on the CcShm like the rest (other processes read it);
vals int64[N_VALUES]: the value words of the signal being reported
(report_scratch), copied into the native entry's call record for a native
flow."""

ReportEngine = namedtuple("ReportEngine", ["rep", "wheel", "alg", "ctl"])
"""What every report_* function takes as ``RE``: the report engine's own
state (``rep``: Report), the wheel its window, deadline and TIMER timers
live on, the native algorithms it calls for native flows (ccnative.py)
and the engine's control words (a publish may end the engine's chunk).
``report_engine(E)`` makes it from the engine's state; tests make it from
their own tables."""


@nb.njit(cache=True, inline="always")
def report_engine(E):
    """The report engine's part of the engine's state ``E``."""
    return ReportEngine(E.rep, E.wheel, E.alg, E.ctl)


A_COUNT, A_FIRST, A_LAST, A_V = 0, 1, 2, 3
A_W = A_V + C.N_VALUES
REC_BYTES = C.REC_WIDTH * 8
OWNER_REPORT = -2
TAG_WINDOW = np.int64(1) << 40
TAG_DEADLINE = np.int64(2) << 40
TAG_TIMER = np.int64(4) << 40
TAG_ARG = (np.int64(1) << 40) - 1

SUM, MAX, LAST, MIN = ccevents.SUM, ccevents.MAX, ccevents.LAST, ccevents.MIN
WORST, BY_WORST = ccevents.WORST, ccevents.BY_WORST
MERGE = ccevents.MERGE     # how each value of each event merges inside a window
CSIG_TYPE_WORD = ccevents.W.csig_type


MAX_TIMER_NS = 1 << 50      # a longer TIMER period is refused (now + period must not wrap)


@nb.njit(cache=True, inline="always")
def flow_slot(R, flow):
    """The NIC slot reporting `flow`, -1 if none.  ``owner`` lives in shared
    memory that other processes can write: a value that is no slot counts
    as none, never as an index."""
    k = R.owner[flow]
    return k if 0 <= k < R.ctls.shape[0] else np.int64(-1)


def make_report_state(cc: "C.CcShm") -> Report:
    f, k = cc.max_flows, cc.max_nics
    return Report(acc=np.zeros((f, C.N_EVENTS, A_W), np.int64),
                  win_timer=np.full((f, 3), -1, np.int32),
                  staged=np.zeros((k, 2), np.int64), dl_timer=np.full(k, -1, np.int32),
                  hdr=np.zeros(8, np.uint64), rings=cc.rings, ctls=cc.ctls,
                  mask=cc.event_mask, period=cc.period_ns, owner=cc.owner,
                  rate=cc.rate, cwnd=cc.cwnd, credit=cc.credit, flags=cc.flags,
                  fallback=np.zeros(k, np.int64), srtt=cc.srtt, probe=cc.probe,
                  probe_n=np.zeros(f, np.int64), probe_t=np.full(f, -(1 << 62), np.int64),
                  segs=cc.segs_all, probe_seen=np.zeros(k, np.int64),
                  version=cc.version, updated_ns=cc.updated_ns, ev=cc.ev, ev_n=cc.ev_n,
                  timer_ns=cc.timer_ns, tm_timer=np.full(f, -1, np.int32),
                  tm_on=np.zeros(f, np.int64), tm_ticks=np.zeros(f, np.int64),
                  tm_seen=np.zeros(k, np.int64),
                  delivered=cc.delivered, vals=np.zeros(C.N_VALUES, np.int64))


@nb.njit(cache=True, inline="always")
def _ring(R, k):
    return Ring(R.hdr, R.rings.prod[k], R.rings.cons[k], R.rings.rec[k])


@hot
def report_publish(RE, k, now):
    """NIC k's staged records onto its ring, and the doorbell.  A publish
    ends the engine's chunk once (YIELD) when WAKE_PUBLISH is armed, so an
    agent stepped between chunks (the experiment runner's) wakes only when
    it has records."""
    R = RE.rep
    n = R.staged[k, 0]
    if n > 0:
        ring = _ring(R, k)
        ring_publish(ring, n, R.staged[k, 1])     # staged[k, 1]: its first record's time
        ring_doorbell(ring)          # wakes the agent if it blocked on the bell
        R.ctls[k, C.CTL_REPORTED] += n
        R.staged[k, 0] = 0
        if RE.ctl[WAKE_PUBLISH] != 0:
            RE.ctl[WAKE_PUBLISH] = 0
            RE.ctl[YIELD] = 1
        vagents_published(RE.ctl, now, n)


@hot
def _stage(RE, R, k, flow, ev, count, t_first, t_last, vals, nvals, now):
    """Write one message into NIC k's next free ring slot (unpublished)."""
    ring = _ring(R, k)
    n = R.staged[k, 0]
    if ring_space(ring) <= n:
        R.ctls[k, C.CTL_RING_FULL] += 1
        return
    row = ring_slot(ring, n)
    R.delivered[flow, ev] += 1
    row[C.FLOW] = flow
    row[C.EVENT] = ev
    row[C.T_FIRST] = t_first
    row[C.T_LAST] = t_last
    row[C.COUNT] = count
    for i in range(C.N_VALUES):
        row[C.V0 + i] = vals[i] if i < nvals else 0
    R.staged[k, 0] = n + 1
    if n == 0:
        R.staged[k, 1] = now
        t = R.dl_timer[k]
        if t < 0:
            t = wheel_alloc(RE.wheel, OWNER_REPORT, TAG_DEADLINE | k)
            R.dl_timer[k] = t
        if t >= 0:
            wheel_schedule(RE.wheel, t, now + R.ctls[k, C.CTL_DEADLINE_NS])
    if (n + 1) * REC_BYTES >= R.ctls[k, C.CTL_BATCH_BYTES]:
        report_publish(RE, k, now)
        if R.dl_timer[k] >= 0:
            wheel_cancel(RE.wheel, R.dl_timer[k])


@nb.njit(cache=True, inline="always")
def report_bound(RE, flow, ev):
    """Whether flow's algorithm bound event ev (a signal's first question:
    an unbound one costs nothing more)."""
    R = RE.rep
    return flow_slot(R, flow) >= 0 and ((R.mask[flow] >> ev) & 1) != 0


@hot
def report_signal(RE, flow, ev, now, v0, v1, v2, v3):
    """A synthetic signal with value words V0..V3 given in order (tests and
    tools; the NIC's signals write their values by name: report_scratch)."""
    if report_bound(RE, flow, ev):
        v = report_scratch(RE)
        v[0], v[1], v[2], v[3] = v0, v1, v2, v3
        report_values(RE, flow, ev, now)


@nb.njit(cache=True, inline="always")
def _merge(a, ev, vals):
    """One more signal's values into the open aggregate ``a`` (ccevents
    MERGE: SUM, MAX, MIN, LAST; WORST keeps the worse CSIG value and
    BY_WORST the fields that go with it, e.g. its locator)."""
    won = False                         # WORST: this signal's value is the worse one
    for i in range(C.N_VALUES):
        m = MERGE[ev, i]
        if m == SUM:
            a[A_V + i] += vals[i]
        elif m == MAX:
            a[A_V + i] = max(a[A_V + i], vals[i])
        elif m == MIN:
            a[A_V + i] = min(a[A_V + i], vals[i])
        elif m == WORST:
            won = _worse(vals[CSIG_TYPE_WORD], vals[i], a[A_V + i])
            if won:
                a[A_V + i] = vals[i]
        elif m == BY_WORST:
            if won:
                a[A_V + i] = vals[i]
        else:
            a[A_V + i] = vals[i]


@nb.njit(cache=True, inline="always")
def _worse(csig_type, new, old):
    """Whether CSIG value `new` is worse than `old`: lower for the min types
    (ABW, ABW/C), higher for the max types."""
    if csig_type == ccevents.CSIG_ABW or csig_type == ccevents.CSIG_ABW_C:
        return new < old
    return new > old


@hot
def report_custom(RE, flow, now, seg_id, buf, off, n):
    """A custom feedback segment: forwarded raw (at most CUSTOM_MAX bytes)."""
    R = RE.rep
    k = flow_slot(R, flow)
    if k < 0 or ((R.mask[flow] >> C.EV_CUSTOM) & 1) == 0:
        return
    n = min(n, C.CUSTOM_MAX)
    native = R.flags[flow] & C.FL_NATIVE
    vals = report_scratch(RE)
    vals[W.segment], vals[W.length] = seg_id, n
    for i in range(n):  # little-endian words
        vals[W.w0 + i // 8] |= np.int64(buf[off + i]) << np.int64(8 * (i % 8))
    if native:
        native_call(RE.alg, R, k, flow, C.EV_CUSTOM, now)
        return
    R.ctls[k, C.CTL_SIGNALS] += 1
    _stage(RE, R, k, flow, C.EV_CUSTOM, 1, now, now, vals, C.N_VALUES, now)


@hot
def report_rtt(RE, flow, rtt, psn, srtt, now, send_t, qdelay, hops):
    """An RTT sample: publish the flow's srtt, and report the sample if the
    probe cadence (or the agent's command) says so; a native flow's
    algorithm gets every sample."""
    R = RE.rep
    R.srtt[flow] = srtt
    k = flow_slot(R, flow)
    if k < 0 or ((R.mask[flow] >> C.EV_RTT) & 1) == 0:
        return
    ctl = R.ctls[k]
    R.probe_n[flow] += 1
    every_n, every_t = ctl[C.CTL_PROBE_PKTS], ctl[C.CTL_PROBE_NS]
    due = (every_n <= 0 and every_t <= 0) or (R.flags[flow] & C.FL_NATIVE) != 0
    if every_n > 0 and R.probe_n[flow] >= every_n:
        due = True
    if every_t > 0 and now - R.probe_t[flow] >= every_t:
        due = True
    if R.probe[flow] != 0:              # the agent asked for this one
        R.probe[flow] = 0
        ctl[C.CTL_PROBE_CMD] += 1
        due = True
    if due:
        R.probe_n[flow] = 0
        R.probe_t[flow] = now
        v = report_scratch(RE)
        v[W.rtt], v[W.send_time], v[W.psn], v[W.qdelay], v[W.hops] = rtt, send_t, psn, qdelay, hops
        report_values(RE, flow, C.EV_RTT, now)


@hot
def report_rtt_ls(RE, flow, send_t, rtt, now):
    """One (send time, RTT) sample into the flow's RTT_LS sums, if bound.  x
    counts from x0, the send time of the first sample of the open window
    (ccevents.LS_SCALE: the products' unit)."""
    if not report_bound(RE, flow, C.EV_RTT_LS):
        return
    a = RE.rep.acc[flow, C.EV_RTT_LS]
    x0 = a[A_V + W.x0] if a[A_COUNT] > 0 else send_t
    x = send_t - x0
    v = report_scratch(RE)
    v[W.n], v[W.sx], v[W.sy] = 1, x, rtt
    v[W.sxx], v[W.sxy], v[W.x0] = x * x // ccevents.LS_SCALE, x * rtt // ccevents.LS_SCALE, x0
    report_values(RE, flow, C.EV_RTT_LS, now)


_INT_RATES = np.array(S.INT_RATES_BPS, np.int64)


@hot
def report_int(RE, flow, buf, o, hop, nhops, psn, now):
    """One INT hop record (8 wire bytes at buf[o]) as an INT event."""
    v = report_scratch(RE)
    v[W.hop] = hop
    v[W.qlen] = get_field(buf, o, S.INTHOP_QLEN) * S.INT_QLEN_UNIT
    v[W.psn] = psn
    v[W.tx_bytes] = get_field(buf, o, S.INTHOP_TX_BYTES) * S.INT_TX_UNIT
    v[W.ts] = get_field(buf, o, S.INTHOP_TS)
    v[W.link_rate] = _INT_RATES[get_field(buf, o, S.INTHOP_RATE_CODE)]
    v[W.nhops] = nhops
    report_values(RE, flow, C.EV_INT, now)


@nb.njit(cache=True, inline="always")
def report_scratch(RE):
    """The value words of the signal being reported, zeroed, for a signal
    to write by name (``v[W.bytes] = n``) before report_values reads them."""
    v = RE.rep.vals
    v[:] = 0
    return v


@hot
def report_values(RE, flow, ev, now):
    """One signal of event `ev` for `flow` whose N_VALUES values are in the
    scratch record (``report_scratch``).  Cheap when the flow's algorithm
    did not bind the event."""
    R = RE.rep
    k = flow_slot(R, flow)
    m = R.mask[flow]
    if k < 0 or ((m >> ev) & 1) == 0:
        return
    if R.tm_on[flow] == 0 and (m >> C.EV_TIMER) & 1 and R.timer_ns[flow] > 0:
        report_timer_start(RE, flow, now)
    if R.flags[flow] & C.FL_NATIVE:
        native_call(RE.alg, R, k, flow, ev, now)
        return
    vals = R.vals
    ctl = R.ctls[k]
    ctl[C.CTL_SIGNALS] += 1
    cls = C.EVENT_CLASS[ev]
    period = _period(R, ctl, flow, cls)
    if ctl[C.CTL_AGGREGATE] == 0 or cls == C.CLS_RAW or period <= 0:
        _stage(RE, R, k, flow, ev, 1, now, now, vals, C.N_VALUES, now)
        return
    a = R.acc[flow, ev]
    if a[A_COUNT] == 0:
        _window_open(RE, R, a, flow, cls, period, now)
        for i in range(C.N_VALUES):     # (a slice copy needs reference counting)
            a[A_V + i] = vals[i]
    else:
        _merge(a, ev, vals)
    a[A_COUNT] += 1
    a[A_LAST] = now


@nb.njit(cache=True, inline="always")
def _period(R, ctl, flow, cls):
    """The flow's aggregation period of class cls now (ns)."""
    period = R.period[flow, cls]
    if period < 0:                      # RTT-relative
        rtt = R.srtt[flow] if R.srtt[flow] > 0 else ctl[C.CTL_RTT_INIT_NS]
        period = max(np.int64(1), -period * rtt // C.RTT_UNIT)
    return period * max(np.int64(1), ctl[C.CTL_BACKPRESSURE])


@nb.njit(cache=True, inline="always")
def _window_open(RE, R, a, flow, cls, period, now):
    """The first signal of an aggregate: its window timer runs from now."""
    a[A_FIRST] = now
    t = R.win_timer[flow, cls]
    if t < 0:
        t = wheel_alloc(RE.wheel, OWNER_REPORT, TAG_WINDOW | (np.int64(flow) << 2) | cls)
        R.win_timer[flow, cls] = t
    if t >= 0 and not wheel_armed(RE.wheel, t):
        wheel_schedule(RE.wheel, t, now + period)


@hot
def report_segments(RE, flow, buf, base, length, ptype, now):
    """Cut the configured custom segments out of a feedback packet (PDS header
    at byte `base` of `buf`, `length` bytes long, PDS type `ptype`)."""
    R = RE.rep
    k = flow_slot(R, flow)
    if k < 0 or ((R.mask[flow] >> C.EV_CUSTOM) & 1) == 0:
        return
    for j in range(C.MAX_SEGS):
        s = R.segs[k, j]
        if s[C.SEG_ID] == 0:
            continue
        if s[C.SEG_TYPES] != 0 and ((s[C.SEG_TYPES] >> ptype) & 1) == 0:
            continue
        if s[C.SEG_MMASK] != 0:
            m = base + s[C.SEG_MOFF]
            if m < 0 or m >= length or (np.int64(buf[m]) & s[C.SEG_MMASK]) != s[C.SEG_MVAL]:
                continue
        o, n = base + s[C.SEG_OFF], s[C.SEG_LEN]
        if o < 0 or n <= 0 or n > C.CUSTOM_MAX or o + n > length:
            R.ctls[k, C.CTL_SEG_SHORT] += 1
            continue
        report_custom(RE, flow, now, s[C.SEG_ID], buf, o, n)


@hot
def report_flush(RE, flow, cls, now):
    """Close the (flow, class) window: every open aggregate becomes a message."""
    R = RE.rep
    k = flow_slot(R, flow)
    if k < 0:
        return
    for ev in range(C.N_EVENTS):
        if C.EVENT_CLASS[ev] != cls:
            continue
        a = R.acc[flow, ev]
        if a[A_COUNT] > 0:
            _stage(RE, R, k, flow, ev, a[A_COUNT], a[A_FIRST], a[A_LAST], a[A_V:], C.N_VALUES, now)
            a[:] = 0


@hot
def report_timer(RE, arg, now):
    """A report timer expired: a window closed, a batch's deadline, or a
    flow's TIMER.  Returns the NIC slot it concerned (-1 if none): the
    flow's for a TIMER tick (a native algorithm may decide there) or a
    window, the batch's for a deadline (the engine polls that NIC next)."""
    x = arg & TAG_ARG
    if arg & TAG_TIMER:
        slot = flow_slot(RE.rep, x)
        report_tick(RE, x, now)
        return slot
    if arg & TAG_WINDOW:
        slot = flow_slot(RE.rep, x >> 2)
        report_flush(RE, x >> 2, x & 3, now)
        return slot
    report_publish(RE, x, now)
    return x


@nb.njit(cache=True, inline="always")
def _timer_wanted(R, flow):
    return (flow_slot(R, flow) >= 0 and (R.mask[flow] >> C.EV_TIMER) & 1
            and 0 < R.timer_ns[flow] <= MAX_TIMER_NS)


@hot
def report_timer_start(RE, flow, now):
    """Start flow's TIMER (first expiry one period from now) if it binds
    TIMER with a period and its timer is not running; returns 1 if started."""
    R = RE.rep
    if R.tm_on[flow] != 0 or not _timer_wanted(R, flow):
        return 0
    t = R.tm_timer[flow]
    if t < 0:
        t = wheel_alloc(RE.wheel, OWNER_REPORT, TAG_TIMER | flow)
        if t < 0:
            return 0                        # the wheel is full: tried again at the next signal
        R.tm_timer[flow] = t
    R.tm_on[flow] = 1
    wheel_schedule(RE.wheel, t, now + min(max(R.timer_ns[flow], 1), MAX_TIMER_NS))
    return 1


@hot
def report_tick(RE, flow, now):
    """Flow's TIMER expired: one EV_TIMER event (ticks, period), and the next
    expiry one period after this one was due; or the timer stops, if the
    flow no longer binds TIMER with a period."""
    R = RE.rep
    p = R.timer_ns[flow]                    # read once: shared memory may change
    if not _timer_wanted(R, flow) or not 0 < p <= MAX_TIMER_NS:
        R.tm_on[flow] = 0
        return
    t = R.tm_timer[flow]
    due = RE.wheel.due[t] + p
    if due <= now:                          # fell behind (wall clock): from now on
        due = now + p
    wheel_schedule(RE.wheel, t, due)
    R.tm_ticks[flow] += 1
    if report_bound(RE, flow, C.EV_TIMER):
        v = report_scratch(RE)
        v[W.ticks], v[W.period] = R.tm_ticks[flow], p
        report_values(RE, flow, C.EV_TIMER, now)


@hot
def report_timer_commands(RE, k, now):
    """On a new ring of NIC k's TIMER doorbell, start the TIMER of each flow
    it owns that binds TIMER with a period; returns how many started."""
    R = RE.rep
    bell = R.ctls[k, C.CTL_TIMER_DOORBELL]
    if bell == R.tm_seen[k]:
        return 0
    R.tm_seen[k] = bell
    n = 0
    for f in range(R.owner.shape[0]):
        if R.owner[f] == k:
            n += report_timer_start(RE, f, now)
    return n
