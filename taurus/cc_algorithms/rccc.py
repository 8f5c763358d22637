"""RCCC: Ultra Ethernet's receiver credit-based congestion control (the
receiver role; Ultra Ethernet's "Receiver Credit-based Congestion Control").

The receiving NIC keeps the active-sender table (a sender joins with its
first RUD_CC_REQ, announcing its backlog as credit_target, and leaves when
its PDC closes or falls silent).  Per time slice (``slice``, 1 us in the
seed) the receiver's capacity, rate x slice, is divided among its active
senders, weighted by backlog: each gets an equal share, a sender whose
remaining demand is below its share gets just that demand, and what it
leaves is divided again among the others (water-filling).  A sender's
demand is its announced backlog less the credit it holds unused
(granted - received), and at least ``standing`` packets held: a sender learns
of credit only from grants and the receiver of a sender's new data only from
its packets, so an active sender keeps one packet's credit to announce new
data with (the part UET's CREDIT_REQ plays).  Grants are cumulative credit (``set_credit``), carried
in ACK_CC; the TIMER (one per slice per active sender) sends grants to
senders with nothing in flight.  Catching up after a late event, k slices
are divided at once (k x the capacity: the same as k single slices while the
demands hold).

A new sender starts with the seed's pipe-cleaning credit: ``init_slices``
slices of line rate (12.5 KB at 100 Gbit/s for 1 us in the seed, "a safe,
conservative fraction of the BDP"); the NIC's pre-provisioned initial credit
(``[cc] receiver_init_credit``) should be the same so the sender starts with
it before any grant.  Last-hop ECN is off for RCCC traffic (the seed: only
one path leads to the receiver, so ECN-driven path changes gain nothing, and
the credit already matches the receiver's link); that is the switch port's
configuration (``ecn`` off on the link to the receiver), not this file's.

Capacity is the link's, in payload bytes: rate x mss / (mss + hdr_bytes),
hdr_bytes = 110 being the NIC's per-packet headers (Ethernet, IPv4, UDP,
RUD_CC_REQ, probe, SES: nic/setup.py DATA_HDR), so that granted payload plus
headers fills the link and no more.

Defaults: slice = 1 us and init_slices = 1 from the seed (12.5 KB at
100 Gbit/s in 1 us); rate 0 = the receiving NIC's line rate (the seed divides
"the total available bandwidth" of the receiver's link).  The sender table
holds receive PDCs 0..1023 (``ev.flow``); a sender beyond it gets no grants
beyond its initial credit.
"""
from dataclasses import dataclass

from .algorithm import Algorithm, kernel, param, set_credit
from .lib import bdp
from .params import Params, require

TABLE = 1024            # receive-PDC indices the per-sender table holds
CREDIT_UNIT = 256       # bytes: ACK_CC's credit unit (docs/PROTOCOLS.md CREDIT_UNIT_BYTES)


@dataclass
class RcccParams(Params):
    slice: int = param(1_000, "ns", "time slice the capacity is granted per (seed: 1 us)")
    rate: float = param(0.0, "bit/s", "capacity to divide (0: the NIC's line rate)")
    init_slices: float = param(1.0, "slices", "pipe-cleaning credit of a new sender, in slices "
                                              "of line rate (seed: 12.5 KB at 100G, 1 us)")
    hdr_bytes: int = param(110, "bytes", "per-packet header bytes on the link (nic DATA_HDR)")
    standing: float = param(1.0, "packets", "credit each active sender holds ahead of what "
                                            "arrived, so new data can announce itself")

    def check(self):
        require(self.slice > 0, "slice", "must be > 0")
        require(self.rate >= 0, "rate", "must be >= 0")
        require(self.init_slices > 0, "init_slices", "must be > 0")
        require(self.hdr_bytes >= 0, "hdr_bytes", "must be >= 0")
        require(self.standing >= 0, "standing", "must be >= 0")


@kernel
def slice_bytes(p):
    """Payload bytes one slice of the receiver's link carries."""
    rate = p.rate if p.rate > 0 else p.line_rate
    return bdp(rate, p.slice) * p.mss / (p.mss + p.hdr_bytes)


@kernel
def rccc_init(s, p, d):
    s.t_slice = -1.0


@kernel
def demand(s, p, r):
    held = s.granted[r] - s.rcvd[r]
    # + one credit unit: ACK_CC carries credit in 256-byte units, rounded down
    return max(s.backlog[r] - held, p.standing * p.mss + CREDIT_UNIT - held, 0.0)


@kernel
def divide(s, p, cap):
    """Water-filling of cap bytes over the members by demand."""
    left = s.n
    for i in range(s.n):
        s.done[i] = 0
    while left > 0 and cap > 1e-9:
        share = cap / left
        fitted = False
        for i in range(s.n):
            r = s.members[i]
            if not s.done[i] and demand(s, p, r) <= share:
                g = demand(s, p, r)
                s.granted[r] += g
                cap -= g
                s.done[i] = 1
                left -= 1
                fitted = True
        if not fitted:                     # everyone left wants more than the share
            for i in range(s.n):
                if not s.done[i]:
                    s.granted[s.members[i]] += share
            cap = 0.0
    s.unused += cap


@kernel
def advance(s, p, now):
    """Grant every whole slice elapsed since the last one."""
    if s.t_slice < 0 or s.n == 0:          # nobody to grant to: slices start now
        s.t_slice = now
        return
    k = (now - s.t_slice) // p.slice
    if k > 0:
        divide(s, p, k * slice_bytes(p))
        s.t_slice += k * p.slice
        s.slices += k


@kernel
def add_member(s, p, r):
    if s.slot[r] == 0:
        s.members[s.n] = r
        s.n += 1
        s.slot[r] = s.n
        s.granted[r] = max(s.granted[r], s.rcvd[r] + p.init_slices * slice_bytes(p))


@kernel
def grant(s, r, d):
    if s.granted[r] > 0:                   # credit 0 would mean "no limit"
        set_credit(d, s.granted[r])


@kernel
def rccc_on_join(s, p, ev, d):
    r = ev.flow
    if r >= TABLE:
        return
    advance(s, p, ev.t_last)
    s.backlog[r] = ev.backlog
    add_member(s, p, r)
    grant(s, r, d)


@kernel
def rccc_on_data(s, p, ev, d):
    r = ev.flow
    if r >= TABLE:
        return
    advance(s, p, ev.t_last)
    s.rcvd[r] += ev.bytes
    s.backlog[r] = ev.backlog
    add_member(s, p, r)                    # data before its JOIN (a dropped first packet)
    grant(s, r, d)


@kernel
def rccc_on_timer(s, p, ev, d):
    r = ev.flow
    if r >= TABLE:
        return
    advance(s, p, ev.t_last)
    grant(s, r, d)


@kernel
def rccc_on_leave(s, p, ev, d):
    r = ev.flow
    if r >= TABLE:
        return
    advance(s, p, ev.t_last)
    i = s.slot[r] - 1
    if i >= 0:                             # the last member takes its place
        last = s.members[s.n - 1]
        s.members[i] = last
        s.slot[last] = i + 1
        s.slot[r] = 0
        s.n -= 1
    if ev.reason == 0:                     # its PDC closed: the row may serve a new sender
        s.granted[r] = s.rcvd[r] = s.backlog[r] = 0.0


class Rccc(Algorithm):
    """RCCC: the receiver's link divided per time slice among its active
    senders by backlog, granted as cumulative credit."""
    name = "rccc"
    role = "receiver"
    Params = RcccParams
    state = ("t_slice", ("n", int), "slices", "unused", ("members", int, TABLE),
             ("slot", int, TABLE), ("done", int, TABLE), ("granted", TABLE), ("rcvd", TABLE),
             ("backlog", TABLE))
    binds = ("JOIN", "DATA", "LEAVE", "TIMER")
    timer = "slice"
    init = rccc_init
    on_join = rccc_on_join
    on_data = rccc_on_data
    on_timer = rccc_on_timer
    on_leave = rccc_on_leave
