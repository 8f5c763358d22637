"""The datapath <-> agent contract (overview: docs/DESIGN.md).

Each NIC device shares three things with its agent, in one shared-memory
segment per engine named ``<engine name>-cc`` (see CcShm, segment_name):

1. **Report ring** (engine -> agent): an SPSC ``shmring`` of REC_WIDTH-word
   records, one aggregated signal message each:

       word  0 SEQ      ring sequence number (gaps = loss, never silent)
             1 FLOW     flow index
             2 EVENT    EV_* below
             3 T_FIRST  arrival time (ns) of the first signal aggregated here
             4 T_LAST   arrival time (ns) of the last one
             5 COUNT    how many signals were aggregated
             6..15      values V0..V9 (meaning per event, below)

   The values of each event, their words and how they aggregate are one
   table, ccevents.EVENTS (``taurus algorithms --events`` prints it).

2. **CC context table** (agent -> engine), one column array per field so the
   engine can use the columns directly as its per-flow state:
       rate (bit/s), cwnd (bytes), credit (bytes), flags, version, updated_ns;
   beside it, srtt (engine -> agent: the flow's smoothed RTT, ns) and probe
   (agent -> engine: 1 = probe now and report that RTT sample at once; the
   engine sets 2 once the probe packet is out and 0 when it reported it).
   timer_ns (agent -> engine: the period of the flow's TIMER events, ns; 0:
   none) and ev, ev_n (the entropy decision: ev_n 0 use ev, n > 0 spray over
   ev .. ev+n-1, -1 rotate; the engine sets ev_n back to 0 after a rotation).
   conn (engine -> agent): how many connections the row has carried (a
   closed flow's row is reused: CTL_OPENED below).
   Each value is one aligned int64, so readers never see a torn value; the
   agent bumps ``version`` after writing a flow's row.  A rate or cwnd of 0
   means "no limit from CC" (the port's line rate and the receive window
   still apply).  A native flow (FL_NATIVE, ccnative.py) has these columns
   written by the engine, from its compiled algorithm's decisions, and puts
   nothing into the ring.

3. **Control block** (both ways): CTL_* words (batching thresholds, heartbeat,
   fallback, back-pressure, counters) and per-flow arrays: which events to
   report (event_mask, bit EV_x) and the aggregation period of each engine
   class (period_ns[flow, CLS_*]).  A period > 0 is in ns; a period < 0 is
   RTT-relative, -p meaning p/RTT_UNIT of the flow's srtt (CTL_RTT_INIT_NS
   until the first sample): an algorithm that decides once per RTT gets one
   message per RTT however the RTT moves.

4. **Custom feedback segments** (paper §3.3): per NIC, up to MAX_SEGS rules
   segs[k, j, SEG_*]: on feedback (ACK) packets whose PDS type is in
   SEG_TYPES (bit per type; 0 = any) and whose byte at SEG_MOFF matches
   (byte & SEG_MMASK) == SEG_MVAL (mask 0 = no byte match), the engine copies
   SEG_LEN bytes at SEG_OFF (offsets from the PDS header) into an EV_CUSTOM
   record with segment id SEG_ID (0 = rule unused).  A segment that does
   not fit the packet is counted in CTL_SEG_SHORT.

5. **Delivered counts** (engine -> anyone): delivered[flow, EV_*], the
   records of each event handed to each flow's algorithm (into its NIC's
   ring, or to its native entry): the report engine's per-flow message
   counts (report.py), readable by other processes (`taurus perf`'s
   per-stream agent messages).
"""
from collections import namedtuple

import numpy as np

from .shm import Shm
from .shmring import Ring, ShmRing

# ---- events (paper Table 3, plus the seeds' signals): ccevents.py ----------
from .ccevents import (CLS_ACCUMULABLE, CLS_COALESCENT, CLS_RAW, EV_ACK,  # noqa: E402,F401
                       EV_CNP, EV_CREDIT, EV_CSIG, EV_CUSTOM, EV_DATA, EV_ECN, EV_HOST, EV_INT,
                       EV_JOIN, EV_LEAVE, EV_NACK, EV_OOO, EV_RTO, EV_RTT, EV_RTT_LS, EV_SRC, EV_TIMER, EV_TX,
                       EVENT_CLASS, EVENT_NAMES, N_EVENTS, N_VALUES, RTT_UNIT)

# ---- report record layout ----------------------------------------------------
SEQ, FLOW, EVENT, T_FIRST, T_LAST, COUNT, V0 = 0, 1, 2, 3, 4, 5, 6
REC_WIDTH = V0 + N_VALUES          # 16 words = 128 bytes
CUSTOM_MAX = (N_VALUES - 2) * 8    # 64 bytes of raw custom segment

# ---- context table flags --------------------------------------------------------
FL_CC_ACTIVE = 1        # an algorithm owns this flow
FL_FALLBACK = 2         # engine: agent silent, fallback rate in force
FL_NATIVE = 4           # the algorithm runs compiled in the engine (native mode)

# ---- control block words ----------------------------------------------------------
(CTL_MAGIC, CTL_MAX_FLOWS, CTL_BATCH_BYTES, CTL_DEADLINE_NS, CTL_HEARTBEAT_NS,
 CTL_HB_TIMEOUT_NS, CTL_FALLBACK_RATE, CTL_BACKPRESSURE, CTL_AGGREGATE, CTL_REPORTED,
 CTL_SIGNALS, CTL_RING_FULL, CTL_EVICTED, CTL_FALLBACKS, CTL_AGENT_PID,
 CTL_PROBE_CMD, CTL_DEFAULT_MASK, CTL_GAPS, CTL_MAX_NICS, CTL_CAPACITY,
 CTL_RTT_INIT_NS, CTL_PROBE_PKTS, CTL_PROBE_NS, CTL_SEG_SHORT, CTL_PROBE_DOORBELL,
 CTL_TIMER_DOORBELL, CTL_NATIVE_CALLS, CTL_NATIVE_FAULTS, CTL_NATIVE_REJECTED,
 CTL_NATIVE_CLAMPED, CTL_OPENED) = range(31)
N_CTL = 32
MAGIC = 0x5441555243430001  # "TAURCC" v1
"""BATCH_BYTES / DEADLINE_NS: message-level aggregation (publish the pending
batch when it reaches this many bytes or its oldest record this age).
HEARTBEAT_NS: the agent's last sign of life (engine clock).  HB_TIMEOUT_NS /
FALLBACK_RATE: past the timeout the engine applies the fallback rate.
BACKPRESSURE: multiplier (>= 1) the agent sets on every aggregation period
when it falls behind.  AGGREGATE: 0 turns signal aggregation off (every
signal its own message: the CCP-like per-event design).  REPORTED / SIGNALS:
messages published / signals aggregated into them.  RING_FULL: messages the
ring refused; EVICTED: records dropped oldest-first to make room.
DEFAULT_MASK: events a new flow reports until the agent sets its own mask
(the agent writes it at start from its default algorithm's bindings).
GAPS: sequence gaps the agent saw (written by the agent).
RTT_INIT_NS: the RTT an RTT-relative period assumes before the first sample.
PROBE_PKTS / PROBE_NS: RTT probes reach the agent every PROBE_PKTS samples or
PROBE_NS ns, whichever comes first (both 0: every sample); PROBE_CMD counts
probes reported on the agent's command (the per-flow ``probe`` column).
PROBE_DOORBELL: the agent adds 1 after setting ``probe`` of some flows; the
NIC then sends each of them a probe packet at once (nic/tx.py: probe_commands).
SEG_SHORT: custom segments that did not fit their packet (not reported).
TIMER_DOORBELL: the agent adds 1 after writing ``timer_ns`` or the TIMER bit
of some flows' event_mask; the engine then starts the TIMER of every flow of
that NIC that binds it with a period (report.py: report_timer_commands).  A
flow's TIMER also starts at its first reported signal, and at set_flow_mode.
NATIVE_*: native mode (ccnative.py): handler calls, calls whose handler
raised (the flow keeps its last decision), decision values rejected (not a
finite number) and clamped (out of the flow's bounds).
OPENED: connections opened on this NIC (nic/setup.py: add_flow, which first
bumps the flow row's ``conn``): a closed flow's row is reused by a later
connection, so an agent that sees OPENED change sets up afresh every row
whose ``conn`` differs from the one it set up (agent/handler.py)."""

DEFAULTS = {CTL_BATCH_BYTES: 512, CTL_DEADLINE_NS: 10_000, CTL_HB_TIMEOUT_NS: 100_000_000,
            CTL_FALLBACK_RATE: 1_000_000_000, CTL_BACKPRESSURE: 1, CTL_AGGREGATE: 1,
            CTL_RTT_INIT_NS: 20_000}
DEFAULT_PERIOD_NS = (2_000, 2_000, 0)   # Accumulable, Coalescent, Raw (0: at once)

# ---- custom segment rules -------------------------------------------------------
MAX_SEGS = 4
SEG_ID, SEG_TYPES, SEG_MOFF, SEG_MMASK, SEG_MVAL, SEG_OFF, SEG_LEN = range(7)
SEG_W = 8

_COLUMNS = ("rate", "cwnd", "credit", "flags", "version", "updated_ns",
            "event_mask", "owner", "srtt", "probe", "timer_ns", "ev", "ev_n", "conn")

RingSet = namedtuple("RingSet", ["prod", "cons", "rec"])
"""Every NIC's report ring, for the engine: prod/cons uint64[K, 8], rec
int64[K, capacity, REC_WIDTH].  ``shmring.Ring(hdr, prod[k], cons[k], rec[k])``
is NIC k's ring, so the shmring functions serve both ends."""


class CcShm:
    """The contract segment of one engine: K NIC slots (ring + control block
    each) and a context table over every flow of the engine (flows are
    engine-wide indices; ``owner[flow]`` is the NIC slot that reports it).

    The engine creates it; the agent of NIC k uses ``attach(name, nic=k)``,
    whose ``ring`` and ``ctl`` are that NIC's; the per-flow columns are shared.
    """

    def __init__(self, shm: Shm, max_nics: int, max_flows: int, capacity: int, nic: int):
        self.shm, self.max_nics, self.max_flows, self.nic = shm, max_nics, max_flows, nic
        lay = _layout(max_nics, max_flows, capacity)
        self.ctls = shm.array(lay["ctl"], np.int64, (max_nics, N_CTL))
        self.ctl = self.ctls[nic]
        for name in _COLUMNS:
            setattr(self, name, shm.array(lay[name], np.int64, (max_flows,)))
        self.period_ns = shm.array(lay["period"], np.int64, (max_flows, 3))
        self.segs_all = shm.array(lay["segs"], np.int64, (max_nics, MAX_SEGS, SEG_W))
        self.segs = self.segs_all[nic]
        self.rings = RingSet(shm.array(lay["prod"], np.uint64, (max_nics, 8)),
                             shm.array(lay["cons"], np.uint64, (max_nics, 8)),
                             shm.array(lay["rec"], np.int64, (max_nics, capacity, REC_WIDTH)))
        self.delivered = shm.array(lay["delivered"], np.int64, (max_flows, N_EVENTS))
        self.ring = self.ring_of(nic)

    def ring_of(self, nic: int) -> ShmRing:
        hdr = np.array([0, self.rings.rec.shape[1], REC_WIDTH, 0, 0, 0, 0, 0], np.uint64)
        return ShmRing(self.shm, Ring(hdr, self.rings.prod[nic], self.rings.cons[nic],
                                      self.rings.rec[nic]), owner=False)

    @classmethod
    def create(cls, name: str, max_flows: int = 1024, ring_capacity: int = 1 << 14, *,
               max_nics: int = 1) -> "CcShm":
        if ring_capacity < 2 or ring_capacity & (ring_capacity - 1):
            raise ValueError(f"ring capacity must be a power of two, got {ring_capacity}")
        lay = _layout(max_nics, max_flows, ring_capacity)
        shm = Shm.create(segment_name(name), lay["size"])
        c = cls(shm, max_nics, max_flows, ring_capacity, 0)
        c.ctls[:, CTL_MAGIC] = MAGIC
        c.ctls[:, CTL_MAX_FLOWS] = max_flows
        c.ctls[:, CTL_MAX_NICS] = max_nics
        c.ctls[:, CTL_CAPACITY] = ring_capacity
        for k, v in DEFAULTS.items():
            c.ctls[:, k] = v
        c.period_ns[:] = DEFAULT_PERIOD_NS
        c.owner[:] = -1
        return c

    @classmethod
    def attach(cls, name: str, nic: int = 0) -> "CcShm":
        seg = segment_name(name)
        shm = Shm.attach(seg, writable=True)
        ctl = shm.array(0, np.int64, (N_CTL,))
        if int(ctl[CTL_MAGIC]) != MAGIC:
            raise ValueError(f"{seg} is not a Taurus CC segment")
        max_nics = int(ctl[CTL_MAX_NICS])
        if not 0 <= nic < max_nics:
            raise ValueError(f"{seg} has NIC slots 0..{max_nics - 1}, not {nic}")
        return cls(shm, max_nics, int(ctl[CTL_MAX_FLOWS]), int(ctl[CTL_CAPACITY]), nic)

    def close(self) -> None:
        self.shm.close()


def segment_name(name: str) -> str:
    """An engine's segment is `<engine name>-cc` (so everything an engine
    creates shares its prefix); a bare name gets `taurus-cc-`."""
    return name if name.startswith("taurus-") else f"taurus-cc-{name}"


def _layout(max_nics: int, max_flows: int, capacity: int) -> dict:
    lay, off = {}, 0
    for name, nbytes in (("ctl", max_nics * N_CTL * 8),
                         *((c, max_flows * 8) for c in _COLUMNS),
                         ("period", max_flows * 3 * 8), ("segs", max_nics * MAX_SEGS * SEG_W * 8),
                         ("prod", max_nics * 64),
                         ("cons", max_nics * 64), ("rec", max_nics * capacity * REC_WIDTH * 8),
                         ("delivered", max_flows * N_EVENTS * 8)):
        lay[name] = off
        off += (nbytes + 63) // 64 * 64  # cache-line aligned
    lay["size"] = off
    return lay
