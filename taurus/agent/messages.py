"""Message handler (paper §3.5): drain the report ring in batches, account for
every record, apply back-pressure, and order records by hardware timestamps.

Per step (a small batch in plain Python over row lists, a large one, any
batch in overload and every batch for a compiled algorithm compiled with
Numba or vectorised with numpy; all give the same results):
1. back-pressure: ring occupancy before the drain, records the producer
   refused since last step (ctl[CTL_RING_FULL] / the ring's own counter) and
   drain lag decide: how long the oldest pending record has been ready, i.e.
   since the ring last went non-empty (the engine stamps prod[SINCE] with the
   time its batch's first record was written) or since the previous poll,
   whichever is later (each poll takes all it sees).  Not since T_FIRST:
   that includes the aggregation window, which back-pressure itself
   lengthens, so a raised factor would keep itself raised.  Hot (occupancy >= high, any
   refusal, or lag >= lag_high): the multiplier ctl[CTL_BACKPRESSURE] doubles
   (<= max_factor), which the engine applies to every aggregation period.
   Calm (occupancy <= low, lag < lag_high/2) for calm_steps steps in a row:
   it halves.  The gap between the two is the hysteresis.
2. sequence check: SEQ must continue where the last batch ended; each missing
   number is a gap, counted here and in ctl[CTL_GAPS].
3. bounds check: flow, event and custom length out of range, and flows
   owned by another NIC slot, are dropped and counted (the agent trusts
   nothing it reads).
4. overload (occupancy >= evict before the drain): Accumulable and
   Coalescent records of the same flow and event are merged into one
   (sums, max PSN, latest value — the engine's own merge rules); Raw records
   (RTT samples, custom segments) cannot merge, so only the newest raw_keep
   per flow and event are kept and the older ones are evicted, counted here
   and in ctl[CTL_EVICTED].
5. order: records are sorted by (flow, event, T_FIRST); groups of one flow
   are delivered in order of their first arrival.  A record older than one
   already delivered for its flow and event (reordered across batches) is
   delivered anyway and counted as ``late``.

Conservation: producer attempts == drained + refused (+ still pending), and
drained == delivered + merged + evicted + invalid.
"""
from operator import itemgetter

import numba as nb
import numpy as np

from taurus.datapath.ccshm import (CLS_RAW, COUNT, CTL_BACKPRESSURE, CTL_EVICTED, CTL_GAPS,
                                   CTL_RING_FULL, CUSTOM_MAX, EV_ACK, EV_CREDIT, EV_CUSTOM,
                                   EV_ECN, EV_HOST, EV_NACK, EV_OOO, EV_RTO, EV_TX, EVENT,
                                   EVENT_CLASS, FLOW, N_EVENTS, N_VALUES, REC_WIDTH, SEQ, T_FIRST,
                                   T_LAST, V0)
from taurus.cc_algorithms.base import BatchEvents, Events
from taurus.datapath.shmring import FULL, HEAD, SINCE, TAIL

# Merge rule of each value of each event (used only in overload).
SUM, MAX, LAST = 0, 1, 2
MERGE = np.full((N_EVENTS, N_VALUES), LAST, np.int64)
MERGE[EV_ACK, [0, 1, 3]], MERGE[EV_ACK, 2] = SUM, MAX     # bytes, packets, ECN bytes; highest PSN
MERGE[EV_ECN, :2] = SUM
MERGE[EV_OOO, 0] = SUM
MERGE[EV_RTO, 0] = SUM                                     # timeouts; last PSN
MERGE[EV_TX, :2] = SUM                                     # bytes, packets; in-flight now
MERGE[EV_NACK, :2] = SUM                                   # NACKs, trimmed; last PSN
MERGE[EV_CREDIT, 0] = MAX                                  # cumulative credit
SMALL_MAX = 128   # batches up to this size: plain Python (the two cross near here, 32 flows)
_BY_KEY_TIME = itemgetter(FLOW, EVENT, T_FIRST)
_BY_FLOW_ARRIVAL = itemgetter(0, 1, 2)
LAG_SANE_NS = 1_000_000_000  # a lag beyond this means the clocks differ (virtual time)


class Batch:
    """``groups``: (flow, first T_FIRST, event, Events) in delivery order,
    i.e. sorted: each flow's groups together, by first arrival; each
    group's records oldest first.
    The Events may be views of the ring: valid until the handler's
    ``release()``."""
    __slots__ = ("groups",)

    def __init__(self, groups):
        self.groups = groups

    def __len__(self):
        return len(self.groups)


class RecordBatch:
    """The same delivery order as arrays, for compiled algorithms: group g is
    rows[bounds[g]:bounds[g + 1]] of ``rec`` (flow ``flows[g]``, event
    ``events[g]``).  A view of the ring: valid until ``release()``."""
    __slots__ = ("rec", "rows", "bounds", "flows", "events")

    def __init__(self, rec, rows, bounds, flows, events):
        self.rec, self.rows, self.bounds, self.flows, self.events = rec, rows, bounds, flows, events

    def __len__(self):
        return len(self.flows)


class GroupSums:
    """A large batch's per-group column sums, each column computed once for
    all groups (so an algorithm's ``ev.total(...)`` costs a lookup).  Group g
    is rows ``rows[bounds[g]:bounds[g + 1]]`` of ``rec``."""
    __slots__ = ("rec", "rows", "bounds", "cache")

    def __init__(self, rec, rows, bounds):
        self.rec, self.rows, self.bounds, self.cache = rec, rows, bounds, {}

    def group_sum(self, j: int) -> np.ndarray:
        s = self.cache.get(j)
        if s is None:
            s = self.cache[j] = np.add.reduceat(self.rec[self.rows, j], self.bounds[:-1])
        return s


@nb.njit(cache=True, nogil=True)
def _seq_follows(seq, first):
    for i in range(len(seq)):
        if seq[i] != first + i:
            return False
    return True


@nb.njit(cache=True, nogil=True)
def _valid_rows(rec, owner, nic):
    """Step 3: None if every record is valid, else which are.  Flows are
    engine-wide: never act on a flow another NIC slot owns (-1, no owner
    recorded yet, is accepted)."""
    ok = np.ones(len(rec), np.bool_)
    bad = 0
    for i in range(len(rec)):
        f, e = rec[i, FLOW], rec[i, EVENT]
        if not (0 <= f < len(owner) and 0 <= e < N_EVENTS and e != EV_HOST
                and rec[i, COUNT] >= 0 and (owner[f] == nic or owner[f] < 0)
                and (e != EV_CUSTOM or 0 <= rec[i, V0 + 1] <= CUSTOM_MAX)):
            ok[i] = False
            bad += 1
    return ok if bad else None


@nb.njit(cache=True, nogil=True)
def _order(rec):
    """(order, sorted keys, group starts, group ends) by (flow, event, T_FIRST)."""
    key = rec[:, FLOW] * N_EVENTS + rec[:, EVENT]
    t = rec[:, T_FIRST]
    n = len(t)
    if n > 1 and np.any(t[1:] < t[:-1]):
        o = np.argsort(t, kind="mergesort")     # two stable passes: by time, then by key
        o = o[np.argsort(key[o], kind="mergesort")]
    else:
        o = np.argsort(key, kind="mergesort")
    ks = key[o]
    start = np.empty(n, np.int64)
    g = 0
    for i in range(n):
        if i == 0 or ks[i] != ks[i - 1]:
            start[g] = i
            g += 1
    start = start[:g]
    end = np.empty(g, np.int64)
    end[:g - 1] = start[1:]
    end[g - 1] = n
    return o, ks, start, end


@nb.njit(cache=True, nogil=True)
def _delivery(rec, last_t):
    """Step 5 in one pass: the groups (flow, event) of ``rec`` in delivery
    order -- each flow's together, by first arrival -- as (rows, bounds,
    flow, event, first arrival) per group; counts the late records and
    advances ``last_t`` (per flow * N_EVENTS + event)."""
    o, ks, start, end = _order(rec)
    t = rec[:, T_FIRST]
    late = 0
    for g in range(len(start)):
        k, lt = ks[start[g]], last_t[ks[start[g]]]
        for i in range(start[g], end[g]):
            late += t[o[i]] < lt
        last_t[k] = max(lt, t[o[end[g] - 1]])
    gt = t[o[start]]
    go = np.argsort(gt, kind="mergesort")       # by first arrival, then (stable) by flow
    go = go[np.argsort(ks[start][go] // N_EVENTS, kind="mergesort")]
    rows = np.empty(len(o), np.int64)
    bounds = np.empty(len(go) + 1, np.int64)
    bounds[0] = 0
    j = 0
    for g in range(len(go)):
        for i in range(start[go[g]], end[go[g]]):
            rows[j] = o[i]
            j += 1
        bounds[g + 1] = j
    gk = ks[start][go]
    return rows, bounds, gk // N_EVENTS, gk % N_EVENTS, gt[go], late


class MessageHandler:
    def __init__(self, cc, bp, batch_max: int = 65536, small_max: int = SMALL_MAX):
        self.cc, self.ring, self.ctl, self.bp = cc, cc.ring, cc.ctl, bp
        r = cc.ring.ring                    # the ring's arrays, looked up once
        self._prod, self._cons, self._rec, self._cap = r.prod, r.cons, r.rec, cc.ring.capacity
        self.batch_max = batch_max
        self.small_max = small_max          # batches up to this size take the plain-Python path
        self.next_seq = None
        self.refused_seen = self._refused()
        self.last_t = np.full(cc.max_flows * N_EVENTS, np.iinfo(np.int64).min, np.int64)
        self.calm = 0
        self._seen_at = 0                    # when the previous poll read the head
        self.c = dict(drained=0, delivered=0, merged=0, evicted=0, invalid=0, gaps=0,
                      seq_back=0, late=0, steps=0, idle_steps=0, bp_raised=0, bp_lowered=0,
                      overload_steps=0)
        self.occupancy = 0.0
        self._tail_after = None
        self.as_records = False             # poll() returns RecordBatch (compiled algorithms)
        self.more = False                   # the last poll left published records behind

    def _refused(self) -> int:
        return max(self.ctl.item(CTL_RING_FULL), self._prod.item(FULL))

    def _peek(self, tail: int, head: int):
        """The oldest published records, as a view of the ring (no copy; up to
        the ring's end, so a wrapped batch comes in two steps)."""
        i = tail % self._cap
        n = min(head - tail, self.batch_max, self._cap - i)
        self.more = n < head - tail          # capped (batch_max, the ring's end): more waits
        self._tail_after = tail + n
        return self._rec[i:i + n]

    def warm(self) -> None:
        """Compile the compiled steps (or load them from Numba's cache) now,
        before the agent announces itself, not in its first drain."""
        rec = np.zeros((1, REC_WIDTH), np.int64)
        _seq_follows(rec[:, SEQ], 0)
        _valid_rows(rec, self.cc.owner, self.cc.nic)
        _delivery(rec, self.last_t.copy())

    def release(self) -> None:
        """Hand the records of the last poll back to the producer."""
        if self._tail_after is not None:
            self._cons[TAIL] = self._tail_after
            self._tail_after = None

    def poll(self, now_ns: int) -> Batch | None:
        """Account for, check and order the next batch; call ``release()`` after
        delivering it (the batch may be a view of the ring)."""
        self.release()
        tail = self._cons.item(TAIL)
        head = self._prod.item(HEAD)     # x86: loads keep order
        since = max(self._prod.item(SINCE), self._seen_at)
        self._seen_at = now_ns
        pending = head - tail
        occ = pending / self._cap
        self.occupancy = occ
        refused = self._refused()
        new_refused, self.refused_seen = refused - self.refused_seen, refused
        self.c["steps"] += 1
        if not pending:
            self._backpressure(occ, new_refused, -1)
            return None
        rec = self._peek(tail, head)
        n = len(rec)
        # A few records: plain Python over row lists (numpy's per-call cost
        # would dominate); many, or overload: vectorised.  Same results.
        small = n <= self.small_max and occ < self.bp.evict and not self.as_records
        lag = now_ns - since
        if small:
            rows = rec.tolist()
        self._backpressure(occ, new_refused, lag if 0 <= lag < LAG_SANE_NS else -1)
        self.c["drained"] += n
        if small:
            return self._poll_small(rows)
        self._check_seq(rec[:, SEQ])
        rec = self._valid(rec)
        if occ >= self.bp.evict and len(rec):
            self.c["overload_steps"] += 1
            rec = self._merge_evict(rec)
        if not len(rec):
            return None
        self.c["delivered"] += len(rec)
        rows, bounds, flow, event, t0, late = _delivery(rec, self.last_t)
        if late:
            self.c["late"] += int(late)
        if self.as_records:
            return RecordBatch(rec, rows, bounds, flow, event)
        sums = GroupSums(rec, rows, bounds)
        b = bounds.tolist()
        return Batch([(f, t, e, BatchEvents(f, e, rec, rows[b[g]:b[g + 1]], None, sums, g))
                      for g, (f, t, e) in enumerate(zip(flow.tolist(), t0.tolist(),
                                                        event.tolist()))])

    def _poll_small(self, rows: list) -> Batch | None:
        """Steps 2, 3 and 5 over row lists (no overload here: step 4 is vectorised)."""
        n = len(rows)
        first = rows[0][SEQ] if self.next_seq is None else self.next_seq
        if rows[0][SEQ] == first and rows[-1][SEQ] == first + n - 1 and \
                (n < 3 or [x[SEQ] for x in rows] == list(range(first, first + n))):
            self.next_seq = first + n
        else:
            self._seq_irregular(first, [x[SEQ] for x in rows])
        # 3 and 5 in one pass: sort everything (invalid rows too; the sort is
        # stable, so valid rows keep their order), then check and group.
        if n > 1:
            rows.sort(key=_BY_KEY_TIME)
        mf, owner, nic = self.cc.max_flows, self.cc.owner, self.cc.nic
        groups = []                           # (flow, first T_FIRST, event, Events)
        pf = pe = of = -1                     # the current group's flow and event; owner memo
        mine = False
        delivered = 0
        for x in rows:
            f, e = x[FLOW], x[EVENT]
            if x[COUNT] < 0 or (e == EV_CUSTOM and not 0 <= x[V0 + 1] <= CUSTOM_MAX):
                continue
            if f == pf and e == pe:           # the current group passed the other checks
                g.append(x)
                delivered += 1
                continue
            if not (0 <= f < mf and 0 <= e < N_EVENTS and e != EV_HOST):
                continue
            if f != of:                       # sorted by flow: its owner is read once
                of, o = f, owner.item(f)
                mine = o == nic or o < 0
            if mine:
                pf, pe, g = f, e, [x]
                groups.append((f, x[T_FIRST], e, Events(f, e, g)))
                delivered += 1
        if delivered < n:
            self.c["invalid"] += n - delivered
        if not delivered:
            return None
        self.c["delivered"] += delivered
        late = 0
        last_t = self.last_t
        for f, t0, e, ev in groups:
            k = f * N_EVENTS + e
            lt = last_t.item(k)
            if t0 < lt:                       # oldest first: only a prefix can be late
                late += sum([y[T_FIRST] < lt for y in ev.rows])
            t1 = ev.rows[-1][T_FIRST]
            if t1 > lt:
                last_t[k] = t1
        if late:
            self.c["late"] += late
        if len(groups) > 1:
            groups.sort(key=_BY_FLOW_ARRIVAL)  # per flow, by first arrival
        return Batch(groups)

    # ---- 1. back-pressure -------------------------------------------------
    def _backpressure(self, occ: float, new_refused: int, lag: int) -> None:
        cfg = self.bp
        cur = max(self.ctl.item(CTL_BACKPRESSURE), 1)
        lag_hi = cfg.lag_high_us * 1000
        new = cur
        if occ >= cfg.high or new_refused > 0 or lag >= lag_hi > 0:
            self.calm = 0
            new = min(cur * 2, cfg.max_factor)
        elif occ <= cfg.low and lag < lag_hi // 2:
            self.calm += 1
            if self.calm >= cfg.calm_steps and cur > 1:
                self.calm, new = 0, cur // 2
        else:
            self.calm = 0
        if new != cur:
            self.c["bp_raised" if new > cur else "bp_lowered"] += 1
            self.ctl[CTL_BACKPRESSURE] = new

    def steps_to_lower(self) -> int | None:
        """Calm steps in a row until the factor halves (None: it is at 1)."""
        if self.ctl.item(CTL_BACKPRESSURE) <= 1:
            return None
        return max(self.bp.calm_steps - self.calm, 1)

    def idle_steps(self, k: int) -> None:
        """k empty steps the agent slept through on the doorbell (pacing.py):
        what each would have done, i.e. a calm step (empty ring, no refusal)."""
        self.c["idle_steps"] += k
        while k > 0:
            if self.ctl.item(CTL_BACKPRESSURE) <= 1:
                self.calm += k                    # nothing to lower
                return
            n = min(k, max(self.bp.calm_steps - self.calm, 1))
            self.calm += n - 1
            k -= n
            self._backpressure(0.0, 0, -1)        # the one that may halve

    # ---- 2. sequence numbers --------------------------------------------
    def _check_seq(self, seq: np.ndarray) -> None:
        if self.next_seq is None:
            self.next_seq = int(seq[0])
        first = self.next_seq
        if _seq_follows(seq, first):
            self.next_seq = first + len(seq)
            return
        self._seq_irregular(first, seq.tolist())

    def _seq_irregular(self, first: int, seq: list) -> None:
        """Each number skipped is a gap; each one not above its predecessor
        went back (the ring was reset or rewritten under us)."""
        gaps = back = 0
        prev = first - 1
        for s in seq:
            if s - prev > 1:
                gaps += s - prev - 1
            elif s - prev < 1:
                back += 1
            prev = s
        self.c["gaps"] += gaps
        self.c["seq_back"] += back
        if gaps:
            self.ctl[CTL_GAPS] += gaps
        self.next_seq = max(first, max(seq) + 1)

    # ---- 3. bounds ------------------------------------------------------
    def _valid(self, rec: np.ndarray) -> np.ndarray:
        ok = _valid_rows(rec, self.cc.owner, self.cc.nic)
        if ok is not None:
            self.c["invalid"] += len(rec) - int(np.count_nonzero(ok))
            rec = rec[ok]
        return rec

    # ---- 4. overload: merge what merges, evict the oldest of the rest -----
    def _merge_evict(self, rec: np.ndarray) -> np.ndarray:
        order, key, start, end = _order(rec)
        rec = rec[order]
        ev = key[start] % N_EVENTS
        raw = EVENT_CLASS[ev] == CLS_RAW
        sums = np.add.reduceat(rec, start, axis=0)
        maxs = np.maximum.reduceat(rec, start, axis=0)
        merged = rec[end - 1].copy()                 # latest values, SEQ, T_LAST
        merged[:, T_FIRST] = rec[start, T_FIRST]
        merged[:, T_LAST] = maxs[:, T_LAST]
        merged[:, COUNT] = sums[:, COUNT]
        rule = MERGE[ev]
        v = slice(V0, V0 + N_VALUES)
        merged[:, v] = np.where(rule == SUM, sums[:, v], np.where(rule == MAX, maxs[:, v],
                                                                  merged[:, v]))
        lens = end - start
        pos = np.arange(len(rec)) - np.repeat(start, lens)      # index within its group
        is_raw = np.repeat(raw, lens)
        keep_raw = is_raw & (pos >= np.repeat(lens - self.bp.raw_keep, lens))
        evicted = int(is_raw.sum()) - int(keep_raw.sum())
        self.c["merged"] += int((lens[~raw] - 1).sum())
        if evicted:
            self.c["evicted"] += evicted
            self.ctl[CTL_EVICTED] += evicted
        return np.concatenate([merged[~raw], rec[keep_raw]])

    def stats(self) -> dict:
        return dict(self.c, backpressure=int(self.ctl[CTL_BACKPRESSURE]),
                    occupancy=round(self.occupancy, 4), refused=self.refused_seen)
