"""The events a congestion-control algorithm can bind: one table, read by
the engine (which writes them), the agent (which drains them) and the
algorithms (which read their fields by name).

Every event is one 16-word int64 record (ccshm.REC_WIDTH): a header of six
words (SEQ, FLOW, EVENT, T_FIRST, T_LAST, COUNT) and ten values V0..V9.
Each field name has one word wherever it appears (``psn`` is always V2), so
one numpy record type, EVENT_DTYPE, names every event's fields at once:
``ev.bytes``, ``ev.psn`` and ``ev.rtt`` read the same record in compiled and
in plain Python code.  Units: bytes, packets, ns, bit/s unless a field says.

Each event belongs to an aggregation class (report engine, TAURUS §3.4):
Accumulable events are summed over a period, Coalescent ones merged, Raw
ones forwarded one by one.  ``merge`` says how each value combines when
records of one flow and event are aggregated: SUM, MAX, MIN, LAST, or
WORST / BY_WORST for CSIG, whose worst value is the lowest for the min
types (ABW, ABW/C) and the highest for the max types (delay, queue depth):
WORST keeps the worst value by the record's csig_type, BY_WORST keeps the
word of the record whose value that is (the bottleneck's locator).

Above the event bits, a flow's event mask carries what its algorithm asks
of the datapath beyond reports (``mask_requests``): the CSIG tag its data
packets carry (type and format, MASK_CSIG_SHIFT).  A sender whose mask
binds CNP asks its receivers to act as notification point (spec.F_REQ_NP).
"""
from collections import namedtuple

import numpy as np

CLS_ACCUMULABLE, CLS_COALESCENT, CLS_RAW = range(3)
SUM, MAX, LAST, MIN, WORST, BY_WORST = range(6)
ROLES = ("sender", "receiver")

HEADER = ("seq", "flow", "event", "t_first", "t_last", "count")
N_HEADER = len(HEADER)
N_VALUES = 10

# name, class, role, ((field, word, merge, meaning), ...)
EVENTS = (
    ("ACK", CLS_ACCUMULABLE, "sender", (
        ("bytes", 0, SUM, "payload bytes newly acknowledged"),
        ("packets", 1, SUM, "ACKs"),
        ("psn", 2, MAX, "highest cumulatively acknowledged PSN"),
        ("ecn_bytes", 3, SUM, "of `bytes`, those the receiver echoed CE on"),
        ("ue_bytes", 4, SUM, "of `bytes`, those the receiver echoed UE on (TCD)"))),
    ("ECN", CLS_ACCUMULABLE, "sender", (
        ("ce_bytes", 0, SUM, "bytes covered by CE echoes"),
        ("ce_packets", 1, SUM, "ACKs echoing CE"),
        ("ue_bytes", 4, SUM, "bytes covered by UE echoes (TCD)"),
        ("ue_packets", 5, SUM, "ACKs echoing UE"))),
    ("OOO", CLS_COALESCENT, "sender", (
        ("ooo", 0, SUM, "packets the receiver saw out of order"),)),
    ("RTO", CLS_COALESCENT, "sender", (
        ("timeouts", 0, SUM, "retransmission timeouts"),
        ("psn", 2, LAST, "first PSN retransmitted"))),
    ("RTT", CLS_RAW, "sender", (
        ("rtt", 0, LAST, "round-trip time of one packet (ns)"),
        ("send_time", 1, LAST, "when that packet was sent (ns, engine clock)"),
        ("psn", 2, LAST, "its PSN"),
        ("qdelay", 3, LAST, "queueing delay: rtt minus the flow's minimum (ns), -1 unknown"),
        ("hops", 4, LAST, "switch hops on the path, -1 unknown"))),
    ("TX", CLS_ACCUMULABLE, "sender", (
        ("bytes", 0, SUM, "payload bytes sent"),
        ("packets", 1, SUM, "packets sent"),
        ("inflight", 3, LAST, "bytes in flight after the last of them"))),
    ("CUSTOM", CLS_RAW, "sender", (
        ("segment", 0, LAST, "custom segment id"),
        ("length", 1, LAST, "bytes copied"),
        *((f"w{i}", 2 + i, LAST, f"segment bytes {8 * i}..{8 * i + 7}, little-endian")
          for i in range(8)))),
    ("HOST", CLS_RAW, "sender", (
        ("source", 0, LAST, "host sampler id (SAMPLER_IDS)"),
        ("value", 1, LAST, "the sampler's main reading (its unit)"),
        ("aux", 2, LAST, "a second reading, sampler-specific"))),
    ("NACK", CLS_COALESCENT, "sender", (
        ("nacks", 0, SUM, "NACKs"),
        ("trimmed", 1, SUM, "of which for trimmed packets"),
        ("psn", 2, LAST, "last NACKed PSN"),
        ("last_hop", 3, SUM, "of the trimmed, those trimmed at the last hop"))),
    ("CREDIT", CLS_COALESCENT, "sender", (
        ("credit", 0, MAX, "cumulative credit granted by the receiver (bytes)"),)),
    ("CNP", CLS_COALESCENT, "sender", (
        ("ce", 0, SUM, "CNPs for CE marks"),
        ("ue", 1, SUM, "CNPs for UE marks (TCD: undetermined, no cut); a CNP may count in both"),
        ("psn", 2, LAST, "PSN that triggered the last one"))),
    ("CSIG", CLS_COALESCENT, "sender", (
        ("csig_type", 0, LAST, "0 max delay (ns), 1 min ABW (bit/s), 2 min ABW/C (ppm), "
                               "3 max queue depth (ppm)"),
        ("value", 1, WORST, "the reflected value in those units (aggregated: the worst)"),
        ("locator", 2, BY_WORST, "the bottleneck's locator (of the worst value)"),
        ("fmt", 3, LAST, "1 compact (4 bytes), 2 wide (8 bytes)"))),
    ("INT", CLS_RAW, "sender", (
        ("hop", 0, LAST, "hop index (0: first switch)"),
        ("qlen", 1, LAST, "egress queue (bytes)"),
        ("psn", 2, LAST, "PSN of the data packet whose hop stack the ACK reflected"),
        ("tx_bytes", 3, LAST, "egress bytes sent, cumulative modulo 2^27 (the wire field's)"),
        ("ts", 4, LAST, "switch timestamp (ns, modulo 2^24)"),
        ("link_rate", 5, LAST, "egress line rate (bit/s)"),
        ("nhops", 6, LAST, "hops in this packet's record stack"))),
    ("TIMER", CLS_RAW, "any", (
        ("ticks", 0, SUM, "timer expiries since the flow began"),
        ("period", 1, LAST, "the timer's period (ns)"))),
    ("DATA", CLS_ACCUMULABLE, "receiver", (
        ("bytes", 0, SUM, "payload bytes received from this sender"),
        ("packets", 1, SUM, "packets"),
        ("psn", 2, MAX, "highest PSN"),
        ("ecn_bytes", 3, SUM, "of `bytes`, those that arrived CE-marked"),
        ("backlog", 5, LAST, "the sender's backlog as it last announced it (bytes)"),
        ("active", 6, LAST, "senders in the NIC's active-sender table"),
        ("backlog_sum", 7, LAST, "the sum of their announced backlogs (bytes)"))),
    ("JOIN", CLS_RAW, "receiver", (
        ("backlog", 5, LAST, "the new sender's backlog (bytes)"),
        ("active", 6, LAST, "senders in the NIC's active-sender table, this one included"),
        ("backlog_sum", 7, LAST, "the sum of their announced backlogs (bytes)"))),
    ("LEAVE", CLS_RAW, "receiver", (
        ("reason", 0, LAST, "0 closed, 1 idle timeout"),
        ("active", 6, LAST, "senders left in the NIC's active-sender table"),
        ("backlog_sum", 7, LAST, "the sum of their announced backlogs (bytes)"))),
    ("RTT_LS", CLS_ACCUMULABLE, "sender", (
        ("n", 0, SUM, "RTT samples (x: send time, y: RTT) summed here"),
        ("sx", 1, SUM, "sum of x: ns since x0"),
        ("sy", 2, SUM, "sum of y: RTT (ns)"),
        ("sxx", 3, SUM, "sum of x*x / LS_SCALE (ns^2)"),
        ("sxy", 4, SUM, "sum of x*y / LS_SCALE (ns^2)"),
        ("x0", 5, MIN, "the send time x counts from (ns, engine clock): the period's first sample's"))),
    ("SRC", CLS_RAW, "sender", (
        ("rtt", 0, LAST, "since that data packet was sent (ns; -1 unknown): Bolt's rttBts"),
        ("qlen", 1, LAST, "the congested egress queue the data packet met (bytes)"),
        ("psn", 2, LAST, "PSN of the data packet"),
        ("hops", 4, LAST, "switch hops from the sender to the congested one"),
        ("link_rate", 5, LAST, "that port's line rate (bit/s)"))),
)

CSIG_DELAY, CSIG_ABW, CSIG_ABW_C, CSIG_QDEPTH = range(4)
CSIG_TYPE_NAMES = {"delay": CSIG_DELAY, "abw": CSIG_ABW, "abw_c": CSIG_ABW_C,
                   "qdepth": CSIG_QDEPTH}
"""An EV_CSIG record's csig_type (the wire's t differs: spec.CSIG_T_*)."""
CSIG_FROM_WIRE = np.array([CSIG_ABW, CSIG_ABW_C, CSIG_DELAY, CSIG_QDEPTH], np.int64)
CSIG_TO_WIRE = np.array([2, 0, 1, 3], np.int64)
CSIG_FORMATS = {"compact": 1, "wide": 2}
CSIG_MIN_TYPES = (CSIG_ABW, CSIG_ABW_C)

MASK_CSIG_SHIFT = 48
"""Mask bits 48..51: the wire CSIG type (spec.CSIG_T_*), 52..53: its format
(spec.CSIG_COMPACT / CSIG_WIDE; 0: no tag)."""
MASK_EVENTS = (1 << MASK_CSIG_SHIFT) - 1


def mask_requests(csig_type: str | None = None, csig_fmt: str = "compact") -> int:
    """The request bits of an event mask: a CSIG tag of this type
    (CSIG_TYPE_NAMES) and format (CSIG_FORMATS), or none."""
    if csig_type is None:
        return 0
    t = CSIG_TO_WIRE[CSIG_TYPE_NAMES[csig_type]]
    return ((CSIG_FORMATS[csig_fmt] << 4) | int(t)) << MASK_CSIG_SHIFT


EVENT_NAMES = tuple(e[0] for e in EVENTS)
N_EVENTS = len(EVENTS)
EVENT_IDS = {n: i for i, n in enumerate(EVENT_NAMES)}
(EV_ACK, EV_ECN, EV_OOO, EV_RTO, EV_RTT, EV_TX, EV_CUSTOM, EV_HOST, EV_NACK, EV_CREDIT,
 EV_CNP, EV_CSIG, EV_INT, EV_TIMER, EV_DATA, EV_JOIN, EV_LEAVE) = range(17)
EV_RTT_LS = EVENT_IDS["RTT_LS"]
EV_SRC = EVENT_IDS["SRC"]
LS_SCALE = 1024
"""RTT_LS (least squares of RTT over send time, OSCAR's delay gradient):
x and y are in ns and the products are summed divided by LS_SCALE, so a
period of 0.1 s with 10^6 samples stays inside int64; the slope is
(n sxy - sx sy / LS_SCALE) / (n sxx - sx^2 / LS_SCALE) (dimensionless:
ns of RTT per ns of send time).  ``ls_slope`` computes it."""
EVENT_CLASS = np.array([e[1] for e in EVENTS], np.int64)
RTT_UNIT = 16
"""A class's report period -p (p > 0) is p/RTT_UNIT of the flow's srtt:
-16 is one srtt, -8 half of one (ccshm.py's control block)."""

HOST_SOURCES = {"host_buffer": 8, "host_delay": 9, "peer_host_delay": 10}
"""``source`` of the HOST records the NIC raises itself (devices/nic/host.py):
its host model's samples (host_buffer: occupancy bytes, aux host drops since
the last sample; host_delay: delivery delay ns, aux the host bandwidth left
by the hog, bit/s) and the receiving host's delay that ACKs echo
(peer_host_delay: ns, aux 0)."""
HOST_SRC_BUFFER = HOST_SOURCES["host_buffer"]
HOST_SRC_DELAY = HOST_SOURCES["host_delay"]
HOST_SRC_PEER_DELAY = HOST_SOURCES["peer_host_delay"]
SAMPLER_IDS = {"cpu": 1, "psi_cpu": 2, "psi_memory": 3, "psi_io": 4, "engine_drops": 5,
               "netdev_drops": 6, "cgroup_memory": 7, **HOST_SOURCES}
"""The ``source`` of an EV_HOST record, one numbering: which of the agent's
host samplers read it (agent/signals.py SAMPLERS), or which of the NIC's
own samples it is (HOST_SOURCES); 0 none."""
assert len(set(SAMPLER_IDS.values())) == len(SAMPLER_IDS)
EVENT_ROLE = {e[0]: e[2] for e in EVENTS}

FIELDS = {e[0]: tuple(f[0] for f in e[3]) for e in EVENTS}
"""Each event's value fields, by name, in word order."""

WORD = {}
"""Each value field's word (0 = V0): the same in every event that has it."""
MERGE = np.full((N_EVENTS, N_VALUES), LAST, np.int64)
for _i, (_name, _cls, _role, _fields) in enumerate(EVENTS):
    _words = [f[1] for f in _fields]
    assert len(set(_words)) == len(_words), f"{_name}: two fields in one word"
    for _f, _w, _m, _ in _fields:
        assert WORD.setdefault(_f, _w) == _w, f"{_f}: one name, two words"
        MERGE[_i, _w] = _m
W = namedtuple("ValueWords", WORD)(**WORD)
"""WORD as attributes, for compiled code: ``v[W.psn] = psn`` writes a
signal's value by its field name (Numba folds the word to a constant)."""


def _dtype() -> np.dtype:
    names = list(HEADER) + list(WORD)
    offsets = [8 * i for i in range(N_HEADER)] + [8 * (N_HEADER + w) for w in WORD.values()]
    return np.dtype({"names": names, "formats": ["<i8"] * len(names), "offsets": offsets,
                     "itemsize": 8 * (N_HEADER + N_VALUES)})


EVENT_DTYPE = _dtype()
"""One event record, every field named (fields of different events overlap)."""


def ls_slope(n, sx, sy, sxx, sxy) -> float:
    """The least-squares slope of one RTT_LS record (0.0 if undetermined)."""
    den = n * float(sxx) - float(sx) * sx / LS_SCALE
    return (n * float(sxy) - float(sx) * sy / LS_SCALE) / den if n >= 2 and den > 0 else 0.0


def describe() -> list:
    """[{name, class, role, fields: [{name, word, meaning}]}] for docs and the CLI."""
    cls = ("accumulable", "coalescent", "raw")
    return [{"name": n, "class": cls[c], "role": r,
             "fields": [{"name": f, "word": w, "meaning": m} for f, w, _, m in fs]}
            for n, c, r, fs in EVENTS]


# ---- the decision (algorithm -> datapath) ------------------------------------------
D_RATE, D_CWND, D_CREDIT, D_EV, D_PROBE, D_HOST_CPU, D_HOST_MBA = (1 << i for i in range(7))
DECISION_DTYPE = np.dtype([("rate", "<f8"), ("cwnd", "<f8"), ("credit", "<f8"), ("ev", "<i8"),
                           ("ev_n", "<i8"), ("host_cpu", "<f8"), ("host_mba", "<f8"),
                           ("set", "<i8")])
"""What a handler decides: rate bit/s, cwnd bytes, credit bytes (cumulative);
ev: an entropy value, with ev_n 0 (use it), n > 0 (spray over ev ..
ev+n-1) or -1 (rotate: the NIC picks a new one); host_cpu: the share of a
CPU the host's cgroup may use (0..1); host_mba: memory-bandwidth percent;
set: which fields the handler set (D_* bits; D_PROBE: an RTT probe now)."""
N_DECISION = DECISION_DTYPE.itemsize // 8
(DEC_RATE, DEC_CWND, DEC_CREDIT, DEC_EV, DEC_EV_N, DEC_HOST_CPU, DEC_HOST_MBA,
 DEC_SET) = range(N_DECISION)
"""The word of each decision field (the engine reads the record as 8 words)."""
assert all(DECISION_DTYPE.fields[n][1] == 8 * w for w, n in enumerate(DECISION_DTYPE.names))
