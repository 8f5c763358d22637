"""Message handler (paper §3.5): drain the report ring in batches, account for
every record, apply back-pressure, and order records by hardware timestamps.

Per step (compiled: _head, _copy_out, then _prepare; in overload the merge and
eviction of step 4 run vectorised in between; the handler's state and
counters are arrays the compiled steps update, and the agent's usual step
fuses them with the selection of what the algorithms take, fastpath._poll):
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
0. copy: the batch is copied out of the ring first, and every later step
   reads only the copy: another process can rewrite the ring at any time,
   and a record checked in the ring and read there again could have changed
   in between (a flow id checked, then used as an index).
2. sequence check: SEQ must continue where the last batch ended; each missing
   number is a gap, counted here and in ctl[CTL_GAPS].  Only a plausible
   jump counts: one past more numbers than the ring holds cannot be records
   lost from it, so it counts as one number gone wrong (``seq_back``, with
   those that went back: the ring was rewritten under us), and garbage
   numbers never inflate or wrap the counter.
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
from collections import namedtuple

import numba as nb
import numpy as np

from taurus.datapath import ccevents
from taurus.datapath.ccshm import (CLS_RAW, COUNT, CTL_BACKPRESSURE, CTL_EVICTED, CTL_GAPS,
                                   CTL_RING_FULL, CUSTOM_MAX, EV_CUSTOM, EVENT,
                                   EVENT_CLASS, FLOW, N_EVENTS, N_VALUES, REC_WIDTH, SEQ, T_FIRST,
                                   T_LAST, V0)
from taurus.datapath.shmring import FULL, HEAD, SINCE, TAIL

# Merge rule of each value of each event (used only in overload): the engine's.
SUM, MAX, LAST, MIN = ccevents.SUM, ccevents.MAX, ccevents.LAST, ccevents.MIN
MERGE = ccevents.MERGE
LAG_SANE_NS = 1_000_000_000  # a lag beyond this means the clocks differ (virtual time)

# The handler's state and counters live in arrays its compiled steps share.
(S_NEXT_SEQ, S_HAVE_SEQ, S_CALM, S_SEEN_AT, S_REFUSED, S_TAIL_AFTER, S_MORE,
 N_STATE) = range(8)
COUNTS = ("drained", "delivered", "merged", "evicted", "invalid", "gaps", "seq_back", "late",
          "steps", "idle_steps", "bp_raised", "bp_lowered", "overload_steps")
(C_DRAINED, C_DELIVERED, C_INVALID, C_GAPS, C_SEQ_BACK, C_LATE, C_STEPS, C_BP_RAISED,
 C_BP_LOWERED) = (COUNTS.index(k) for k in ("drained", "delivered", "invalid", "gaps", "seq_back",
                                           "late", "steps", "bp_raised", "bp_lowered"))
B_HIGH, B_LOW, B_LAG_HIGH_NS, B_MAX_FACTOR, B_CALM_STEPS, B_EVICT = range(6)   # config

PollArrays = namedtuple("PollArrays", "prod cons ring ctl bp st n cap batch_max owner nic "
                                      "last_t scratch copy")
"""What a compiled poll of the handler reads and updates (MessageHandler.poll_arrays)."""


class Counts:
    """Named counters over an int64 array (the compiled steps count in it)."""
    __slots__ = ("a", "_i")

    def __init__(self, names):
        self.a = np.zeros(len(names), np.int64)
        self._i = {k: i for i, k in enumerate(names)}

    def __getitem__(self, k) -> int:
        return self.a.item(self._i[k])

    def __setitem__(self, k, v) -> None:
        self.a[self._i[k]] = v

    def keys(self):
        return self._i.keys()


class RecordBatch:
    """A drain in delivery order: group g is rows[bounds[g]:bounds[g + 1]]
    of ``rec`` (flow ``flows[g]``, event ``events[g]``); each flow's groups
    together, by first arrival; each group's records oldest first.  A view
    of the handler's copy of the ring (and of its scratch): valid until the
    next poll."""
    __slots__ = ("rec", "rows", "bounds", "flows", "events")

    def __init__(self, rec, rows, bounds, flows, events):
        self.rec, self.rows, self.bounds, self.flows, self.events = rec, rows, bounds, flows, events

    def __len__(self):
        return len(self.flows)


@nb.njit(cache=True, nogil=True)
def _backpressure(ctl, bp, st, n, occ, new_refused, lag):
    """Step 1's decision (bp: the config as B_*; lag -1: unknown)."""
    cur = max(ctl[CTL_BACKPRESSURE], 1)
    lag_hi = bp[B_LAG_HIGH_NS]
    new = cur
    if occ >= bp[B_HIGH] or new_refused > 0 or lag >= lag_hi > 0:
        st[S_CALM] = 0
        new = min(cur * 2, np.int64(bp[B_MAX_FACTOR]))
    elif occ <= bp[B_LOW] and lag < lag_hi // 2:
        st[S_CALM] += 1
        if st[S_CALM] >= bp[B_CALM_STEPS] and cur > 1:
            st[S_CALM] = 0
            new = cur // 2
    else:
        st[S_CALM] = 0
    if new != cur:
        n[C_BP_RAISED if new > cur else C_BP_LOWERED] += 1
        ctl[CTL_BACKPRESSURE] = new


@nb.njit(cache=True, nogil=True)
def _release(cons, st):
    """Hand the last drain's records back to the producer (if not yet)."""
    if st[S_TAIL_AFTER] >= 0:
        cons[TAIL] = st[S_TAIL_AFTER]
        st[S_TAIL_AFTER] = -1


@nb.njit(cache=True, nogil=True)
def _head(prod, cons, ctl, bp, st, n, cap, batch_max, now):
    """Release the last batch, then step 1, and where the next batch lies:
    (its first slot, its length -- up to batch_max and the ring's end --,
    ring occupancy before the drain)."""
    _release(cons, st)
    tail, head = np.int64(cons[TAIL]), np.int64(prod[HEAD])    # x86: loads keep order
    since = max(np.int64(prod[SINCE]), st[S_SEEN_AT])
    st[S_SEEN_AT] = now
    pending = head - tail
    occ = pending / cap
    refused = max(ctl[CTL_RING_FULL], np.int64(prod[FULL]))
    new_refused = refused - st[S_REFUSED]
    st[S_REFUSED] = refused
    n[C_STEPS] += 1
    if pending <= 0:
        if pending < 0:                   # the tail ran past the head: rewritten under us
            cons[TAIL] = head
            n[C_SEQ_BACK] += 1
        _backpressure(ctl, bp, st, n, 0.0, new_refused, -1)
        return 0, 0, 0.0
    i = tail % cap
    k = min(pending, batch_max, cap - i)
    st[S_MORE] = k < pending              # capped: more waits
    st[S_TAIL_AFTER] = tail + k
    lag = now - since
    _backpressure(ctl, bp, st, n, occ, new_refused, lag if 0 <= lag < LAG_SANE_NS else -1)
    n[C_DRAINED] += k
    return i, k, occ


@nb.njit(cache=True, nogil=True)
def _seq_check(seq, first, cap):
    """Step 2: (the next expected number, gaps, numbers gone wrong).  Each
    number skipped is a gap, if the jump is plausible: at most ``cap`` (the
    ring's capacity) numbers.  A number not above its predecessor, or
    beyond such a jump, went wrong (the ring was reset or rewritten under
    us) and does not move the next expected number.  Differences are taken
    unsigned: garbage numbers never overflow."""
    gaps = back = 0
    prev = top = first - 1
    for s in seq:
        if s > prev and np.uint64(s) - np.uint64(prev) <= np.uint64(cap) + np.uint64(1):
            gaps += s - prev - 1
            top = max(top, s)
        else:
            back += 1
        prev = s
    return max(first, top + 1) if top < np.iinfo(np.int64).max else first, gaps, back


@nb.njit(cache=True, nogil=True)
def _valid(rec, i, owner, nic):
    """Step 3 for row i.  Flows are engine-wide: never act on a flow another
    NIC slot owns (-1, no owner recorded yet, is accepted)."""
    f, e = rec[i, FLOW], rec[i, EVENT]
    return (0 <= f < len(owner) and 0 <= e < N_EVENTS and rec[i, COUNT] >= 0
            and (owner[f] == nic or owner[f] < 0)
            and (e != EV_CUSTOM or 0 <= rec[i, V0 + 1] <= CUSTOM_MAX))


@nb.njit(cache=True, nogil=True)
def _valid_rows(rec, owner, nic, idx):
    """The valid rows' indices, written to ``idx`` (a view of it returned)."""
    n = 0
    for i in range(len(rec)):
        if _valid(rec, i, owner, nic):
            idx[n] = i
            n += 1
    return idx[:n]


@nb.njit(cache=True, nogil=True)
def _order(rec, idx):
    """Rows ``idx`` of ``rec`` by (flow, event, T_FIRST): (their order as
    positions in idx, sorted keys, group starts, group ends)."""
    key = rec[idx, FLOW] * N_EVENTS + rec[idx, EVENT]
    t = rec[idx, T_FIRST]
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
def _deliver(rec, idx, last_t, rows, bounds, flows, events, firsts):
    """Step 5: the groups (flow, event) of rows ``idx`` of ``rec`` in
    delivery order -- each flow's together, by first arrival -- written as
    group g = rows[bounds[g]:bounds[g + 1]] (row numbers of rec), its
    flow, event and first arrival; counts the late records and advances
    ``last_t`` (per flow * N_EVENTS + event).  Returns (groups, late)."""
    bounds[0] = 0
    if not len(idx):
        return 0, 0
    if len(idx) == 1:      # most steps of a per-event agent: no ordering to do
        i = idx[0]
        k, t1 = rec[i, FLOW] * N_EVENTS + rec[i, EVENT], rec[i, T_FIRST]
        late = t1 < last_t[k]
        last_t[k] = max(last_t[k], t1)
        rows[0], bounds[1] = i, 1
        flows[0], events[0], firsts[0] = rec[i, FLOW], rec[i, EVENT], t1
        return 1, np.int64(late)
    o, ks, start, end = _order(rec, idx)
    t = rec[idx, T_FIRST]
    late = 0
    for g in range(len(start)):
        k, lt = ks[start[g]], last_t[ks[start[g]]]
        for i in range(start[g], end[g]):
            late += t[o[i]] < lt
        last_t[k] = max(lt, t[o[end[g] - 1]])
    gt = t[o[start]]
    go = np.argsort(gt, kind="mergesort")       # by first arrival, then (stable) by flow
    go = go[np.argsort(ks[start][go] // N_EVENTS, kind="mergesort")]
    j = 0
    for g in range(len(go)):
        s = start[go[g]]
        for i in range(s, end[go[g]]):
            rows[j] = idx[o[i]]
            j += 1
        bounds[g + 1] = j
        flows[g], events[g], firsts[g] = ks[s] // N_EVENTS, ks[s] % N_EVENTS, gt[go[g]]
    return len(go), late


@nb.njit(cache=True, nogil=True)
def _seq(seq, st, n, ctl, cap):
    """Step 2, counted (the first batch sets where numbering starts)."""
    if not st[S_HAVE_SEQ]:
        st[S_NEXT_SEQ], st[S_HAVE_SEQ] = seq[0], 1
    st[S_NEXT_SEQ], gaps, back = _seq_check(seq, st[S_NEXT_SEQ], cap)
    if gaps:
        n[C_GAPS] += gaps
        ctl[CTL_GAPS] += gaps
    n[C_SEQ_BACK] += back


@nb.njit(cache=True, nogil=True)
def _checks(rec, st, n, ctl, owner, nic, cap, out):
    """Steps 2 and 3, counted; returns the valid rows' indices (in ``out``)."""
    _seq(rec[:, SEQ], st, n, ctl, cap)
    idx = _valid_rows(rec, owner, nic, out)
    n[C_INVALID] += len(rec) - len(idx)
    return idx


@nb.njit(cache=True, nogil=True)
def _copy_out(ring, i, k, copy):
    """Step 0: records i .. i + k of the ring, copied (the first k rows of
    ``copy``); nothing reads the ring's rows after this."""
    rec = copy[:k]
    rec[:] = ring[i:i + k]
    return rec


@nb.njit(cache=True, nogil=True)
def _prepare(rec, checked, st, n, ctl, owner, nic, last_t, scratch, cap):
    """Steps 2, 3 and 5 in one call on a copy ``rec`` (``checked``: 2 and 3
    were done, in overload), counted; writes the groups to scratch's rows
    (rows, bounds, flows, events, first arrivals; see _deliver) and returns
    how many."""
    idx = np.arange(len(rec)) if checked else _checks(rec, st, n, ctl, owner, nic, cap,
                                                      scratch[5])
    ng, late = _deliver(rec, idx, last_t, scratch[0], scratch[1], scratch[2], scratch[3],
                        scratch[4])
    n[C_DELIVERED] += len(idx)
    n[C_LATE] += late
    return ng


class MessageHandler:
    def __init__(self, cc, bp, batch_max: int = 65536):
        self.cc, self.ring, self.ctl, self.bp = cc, cc.ring, cc.ctl, bp
        r = cc.ring.ring                    # the ring's arrays, looked up once
        self._prod, self._cons, self._rec, self._cap = r.prod, r.cons, r.rec, cc.ring.capacity
        self.batch_max = batch_max
        self.bpa = np.array([bp.high, bp.low, bp.lag_high_us * 1000, bp.max_factor,
                             bp.calm_steps, bp.evict], np.float64)
        self.st = np.zeros(N_STATE, np.int64)
        self.st[S_TAIL_AFTER] = -1          # nothing to release
        self.st[S_REFUSED] = self._refused()
        self.last_t = np.full(cc.max_flows * N_EVENTS, np.iinfo(np.int64).min, np.int64)
        self.c = Counts(COUNTS)
        self.n = self.c.a
        self.occupancy = 0.0
        # Where _prepare writes a drain's groups (the batches are views of these):
        # rows, bounds, flows, events, first arrivals; the last row holds the
        # checks' valid indices (a step allocates none).
        self.scratch = np.empty((6, min(batch_max, self._cap) + 1), np.int64)
        self._rows, self._bounds, self._flows, self._events, self._firsts = self.scratch[:5]
        self.copy = np.empty((min(batch_max, self._cap), REC_WIDTH), np.int64)   # step 0

    def poll_arrays(self) -> PollArrays:
        """The handler's state for compiled code that polls it (the agent's
        busy loop): the ring, the state and counters, the config, the checks'
        owner table, the scratch the drain is prepared in and the copy of
        the batch it reads."""
        return PollArrays(self._prod, self._cons, self._rec, self.ctl, self.bpa, self.st, self.n,
                          self._cap, self.batch_max, self.cc.owner, self.cc.nic, self.last_t,
                          self.scratch, self.copy)

    @property
    def more(self) -> bool:
        """The last poll left published records behind (it was capped)."""
        return bool(self.st[S_MORE])

    @property
    def calm(self) -> int:
        return self.st.item(S_CALM)

    @property
    def refused_seen(self) -> int:
        return self.st.item(S_REFUSED)

    def _refused(self) -> int:
        return max(self.ctl.item(CTL_RING_FULL), self._prod.item(FULL))

    def warm(self) -> None:
        """Compile the compiled steps (or load them from Numba's cache) now,
        before the agent announces itself, not in its first drain."""
        rec = np.zeros((1, REC_WIDTH), np.int64)
        st, n, ctl = self.st.copy(), self.n.copy(), self.ctl.copy()
        _copy_out(self._rec, 0, 1, self.copy)
        for checked in (False, True):
            _prepare(rec, checked, st, n, ctl, self.cc.owner, self.cc.nic, self.last_t.copy(),
                     self.scratch, self._cap)
        st[S_TAIL_AFTER] = -1
        _head(self._prod.copy(), self._cons.copy(), ctl, self.bpa, st, n, self._cap,
              self.batch_max, 0)

    def release(self) -> None:
        """Hand the records of the last poll back to the producer."""
        t = self.st.item(S_TAIL_AFTER)
        if t >= 0:
            self._cons[TAIL] = t
            self.st[S_TAIL_AFTER] = -1

    def head(self, now_ns: int):
        """Release, step 1 and where the next batch lies (see _head)."""
        i, k, occ = _head(self._prod, self._cons, self.ctl, self.bpa, self.st, self.n, self._cap,
                          self.batch_max, now_ns)
        self.occupancy = occ
        return i, k, occ

    def poll(self, now_ns: int) -> RecordBatch | None:
        """Account for, copy, check and order the next batch; call
        ``release()`` after delivering it."""
        i, k, occ = self.head(now_ns)
        return self.finish(i, k, occ) if k else None

    def finish(self, i: int, k: int, occ: float) -> RecordBatch | None:
        """Steps 0 and 2 to 5 for the k records at slot i (after head())."""
        rec = _copy_out(self._rec, i, k, self.copy)
        checked = occ >= self.bp.evict
        if checked:                          # overload: 2 and 3, then 4, then 5
            self.c["overload_steps"] += 1
            ok = _checks(rec, self.st, self.n, self.ctl, self.cc.owner, self.cc.nic, self._cap,
                         self.scratch[5])
            rec = self._merge_evict(rec[ok]) if len(ok) else rec[ok]
        ng = _prepare(rec, checked, self.st, self.n, self.ctl, self.cc.owner, self.cc.nic,
                      self.last_t, self.scratch, self._cap)
        if not ng:
            return None
        return RecordBatch(rec, self._rows[:self._bounds.item(ng)], self._bounds[:ng + 1],
                           self._flows[:ng], self._events[:ng])

    # ---- 1. back-pressure (_backpressure, _head) ------------------------
    def steps_to_lower(self) -> int | None:
        """Calm steps in a row until the factor halves (None: it is at 1)."""
        if self.ctl.item(CTL_BACKPRESSURE) <= 1:
            return None
        return max(self.bp.calm_steps - self.calm, 1)

    def idle_steps(self, k: int) -> None:
        """k empty steps the agent slept through on the doorbell (pacing.py):
        what each would have done, i.e. a calm step (empty ring, no refusal)."""
        self.c["idle_steps"] += k
        st = self.st
        while k > 0:
            if self.ctl.item(CTL_BACKPRESSURE) <= 1:
                st[S_CALM] += k                   # nothing to lower
                return
            n = min(k, max(self.bp.calm_steps - self.calm, 1))
            st[S_CALM] += n - 1
            k -= n
            _backpressure(self.ctl, self.bpa, st, self.n, 0.0, 0, -1)   # the one that may halve

    # ---- 4. overload: merge what merges, evict the oldest of the rest -----
    def _merge_evict(self, rec: np.ndarray) -> np.ndarray:
        order, key, start, end = _order(rec, np.arange(len(rec)))
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
        mins = np.minimum.reduceat(rec, start, axis=0)
        # LAST, and CSIG's WORST / BY_WORST: the latest record's values (a
        # value and its locator stay together)
        merged[:, v] = np.select([rule == SUM, rule == MAX, rule == MIN],
                                 [sums[:, v], maxs[:, v], mins[:, v]], merged[:, v])
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
