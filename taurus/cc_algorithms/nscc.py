"""NSCC, the Ultra Ethernet sender congestion control (UET 1.0; the UEC
reference simulator htsim, HLC-Lab/uet-htsim sim/uec.cpp), with optional
EV load balancing and the CSIG max(Delay) variant.

Window-based.  Per ACK, with delay the latest queueing-delay sample (RTT
minus the flow's least RTT; with ``csig`` the reflected CSIG max(Delay) of
the bottleneck hop instead) and ECN whether the ACK echoed a CE mark, one
of four cases (htsim updateCwndOnAck_NSCC):
    no ECN, delay <  target: proportional increase, inc += alpha * acked *
                             (target - delay); below fast_delay for a whole
                             window, fast increase: cwnd += fi_scale * acked
    no ECN, delay >= target: fair increase, inc += fi * acked
    ECN,    delay >= target: multiplicative decrease, at most once per base
                             RTT: cwnd *= max(1 - gamma (avg - target) / avg,
                             min_md_factor), avg the EWMA of delay
    ECN,    delay <  target: no-op (the path is marked, the queue is not
                             ours: only the EV moves)
Increases are applied once per fulfil period (fulfil_mtus MTUs acknowledged
or network_rtt elapsed): cwnd += inc / cwnd, plus eta once per network_rtt.
Quick adapt, at most once per base RTT + target: on loss or trim, or a
delay above qa_x * target, when less than maxwnd / 2^qa_gate was
acknowledged in the last such period, cwnd falls to what was acknowledged
and marked ACKs of the window in flight then are ignored.  A NACK also
takes the NACKed bytes off cwnd (not last-hop trims with ``rccc``: the
receiver's credit paces those); a timeout 1 MSS.  cwnd stays within
[1 MSS, maxwnd], maxwnd = maxwnd_bdp * line rate * the flow's base RTT;
a flow starts at maxwnd (of network_rtt until its first sample).

Scaling (htsim initNsccParams): a = network BDP / reference BDP (100 Gbit/s
x 12 us), b = target / 12 us; alpha = alpha_mss MSS a b / target, fi =
fi_mss MSS a, eta = eta_mss MSS a, fast increase fi_scale a; target =
network_rtt (0.75 network_rtt with ``trimming``) unless target_qdelay is
set.  network_rtt is the fabric's unloaded RTT (htsim: the topology's
largest), one value for all flows so they share one target.  The CSIG tag
is the wide one (ours; the seed's is 4 bytes): the compact delay buckets
are about 45% apart, so a queue of 10 to 14.5 us reads 10 us, under a
10.6 us target, and the flow never decreases; the wide tag's 4 ns steps let
the bottleneck's delay settle at the target as the seed describes.

EV load balancing (``ev_lb``; REPS-like at the granularity the NIC offers,
one EV per flow): an ACK echoing ECN, a NACK other than a last-hop trim, or
a timeout moves the flow to a new EV (rotate_ev), at most once per base RTT
(ours: the marks of packets already in flight on the old path are not the
new one's); clean ACKs keep it.  Last-hop trims never rotate: every path
ends at that port.  ``ev_spray = n`` sprays every packet over n EVs in
turn (the NIC's spray_ev), as htsim's default load balancing (UecMpMixed)
spreads a window over 64 entropies; with ev_lb a move then takes the next
block of n EVs.  htsim's spraying also recycles the EVs of clean ACKs and
skips EVs that were marked or trimmed, per EV; the NIC reports no EV per
ACK, so ours sprays in a fixed order (as htsim's UecMpOblivious).
Last-hop ECN marks cannot be told apart by the ECN bit alone; UET turns
last-hop ECN off where it matters (RCCC), which a topology does per link
(``ecn = false``).  With ``csig_lb`` (CSIG's locator for load balancing)
the flow carries the max(Delay) tag and an ECN mark does not move it while
the latest reflected locator names a last hop (switches with CSIG
``last_hop``, which mark their host-facing ports' locators): an incast
queues at the receiver's port, which every path shares.

Defaults are htsim's (sim/uec.cpp, initNsccParams / quick_adapt /
fast_increase / multiplicative_decrease): gamma 0.8, decrease floor 0.5,
delay EWMA 0.0125, alpha 4, fi 5, eta 0.15 MSS, fi_scale 0.25 (all times
a, b), fast increase below 1 us, quick adapt above 4 x target with gate
2^3, fulfil every 8 MTUs or network_rtt, maxwnd 1.5 BDP, reference
100 Gbit/s x 12 us; network_rtt 12 us (the reference RTT) until a fabric
sets its own.  State counts each case (n_md, n_fair, n_prop, n_fast,
n_noop), quick adapts (n_qa) and rotations (n_rotate); last_hop is whether
the latest CSIG locator named a last hop.
"""
from dataclasses import dataclass

from taurus.datapath.ccevents import CSIG_DELAY
from taurus.datapath.wire.spec import CSIG_COMPACT, LM_LAST_HOP_COMPACT, LM_LAST_HOP_WIDE

from .algorithm import Algorithm, kernel, param, rotate_ev, set_cwnd, spray_ev
from .lib import bdp, clamp, due, ewma_step, resume
from .params import Params, derived, require


EV_BASE, EV_SPACE = 0xC000, 0x4000    # sprayed EVs, as the NIC's own: 0xC000..0xFFFF


@dataclass
class NsccParams(Params):
    network_rtt: float = param(12_000.0, "ns", "the fabric's unloaded RTT (htsim reference: 12 us)")
    target_qdelay: float = param(0.0, "ns", "target queueing delay; 0: network_rtt (x 0.75 with trimming)")
    trimming: bool = param(False, "", "the fabric trims (htsim: target 0.75 network_rtt)")
    ref_rate: float = param(100e9, "bit/s", "reference link rate of the scaling (htsim: 100 Gbit/s)")
    ref_rtt: float = param(12_000.0, "ns", "reference RTT of the scaling (htsim: 12 us)")
    alpha_mss: float = param(4.0, "MSS", "proportional-increase gain, times a b (htsim: 4)")
    fi_mss: float = param(5.0, "MSS", "fair increase per window, times a (htsim: 5)")
    eta_mss: float = param(0.15, "MSS", "increase per network_rtt, times a (htsim: 0.15)")
    fi_scale: float = param(0.25, "", "fast increase per acked byte, times a (htsim: 0.25)")
    fast_delay: float = param(1_000.0, "ns", "delay below which fast increase runs (htsim: 1 us)")
    gamma: float = param(0.8, "", "multiplicative decrease gain (htsim: 0.8)")
    min_md_factor: float = param(0.5, "", "deepest single decrease (htsim: 0.5)")
    delay_alpha: float = param(0.0125, "", "EWMA gain of the average delay (htsim: 0.0125)")
    qa_x: float = param(4.0, "", "quick adapt above qa_x x target delay (htsim: 4)")
    qa_gate: int = param(3, "", "quick adapt only below maxwnd / 2^qa_gate acked (htsim: 3)")
    fulfil_mtus: float = param(8.0, "MTUs", "fulfil period in acknowledged bytes (htsim: 8)")
    maxwnd_bdp: float = param(1.5, "BDP", "largest window (htsim: 1.5 BDP)")
    ev_lb: bool = param(False, "", "EV load balancing: rotate the EV on marks, trims, timeouts")
    ev_spray: int = param(0, "EVs", "spray packets over this many EVs in turn (htsim: 64); 0: one")
    csig: bool = param(False, "", "delay samples from the reflected CSIG max(Delay) (CSIG)")
    rccc: bool = param(False, "", "flows also under RCCC: last-hop trims do not cut cwnd (htsim)")
    csig_lb: bool = param(False, "", "with ev_lb: no move on ECN while CSIG locates the "
                                     "bottleneck at the last hop (CSIG)")
    target: float = derived("ns", "target queueing delay")
    a: float = derived("", "BDP scale: network BDP / reference BDP")
    alpha: float = derived("1/ns", "proportional increase per acked byte and ns under target")
    fi: float = derived("", "fair increase per acked byte")
    eta: float = derived("bytes", "increase per network_rtt")

    def check(self):
        require(self.network_rtt > 0, "network_rtt", "must be > 0")
        require(self.target_qdelay >= 0, "target_qdelay", "must be >= 0")
        require(self.ref_rate > 0 and self.ref_rtt > 0, "ref_rate", "reference BDP must be > 0")
        require(self.alpha_mss >= 0 and self.fi_mss >= 0 and self.eta_mss >= 0, "alpha_mss",
                "increase gains must be >= 0")
        require(self.fi_scale >= 0, "fi_scale", "must be >= 0")
        require(0 < self.gamma <= 1, "gamma", "must be in (0, 1]")
        require(0 < self.min_md_factor < 1, "min_md_factor", "must be in (0, 1)")
        require(0 < self.delay_alpha <= 1, "delay_alpha", "must be in (0, 1]")
        require(self.qa_x > 0, "qa_x", "must be > 0")
        require(0 <= self.qa_gate < 32, "qa_gate", "must be in 0..31")
        require(self.fulfil_mtus > 0, "fulfil_mtus", "must be > 0")
        require(self.maxwnd_bdp > 0, "maxwnd_bdp", "must be > 0")
        require(0 <= self.ev_spray <= EV_SPACE, "ev_spray", f"must be in 0..{EV_SPACE}")

    def derive(self, ctx):
        """htsim initNsccParams: the target and the gains scaled by a and b."""
        if self.target_qdelay > 0:
            tq = self.target_qdelay
        else:
            tq = self.network_rtt * 0.75 if self.trimming else self.network_rtt
        a = self.network_rtt * ctx.line_rate / (self.ref_rtt * self.ref_rate)
        return {"target": tq, "a": a,
                "alpha": self.alpha_mss * ctx.mss * a * (tq / self.ref_rtt) / tq,
                "fi": self.fi_mss * ctx.mss * a, "eta": self.eta_mss * ctx.mss * a}


@kernel
def base(s, p):
    return s.base_rtt if s.base_rtt > 0 else p.network_rtt


@kernel
def nscc_init(s, p, d):
    s.maxwnd = bdp(p.line_rate, p.maxwnd_bdp * p.network_rtt)
    s.cwnd = resume(d.cwnd, s.maxwnd)
    if p.ev_spray > 0:
        spray_ev(d, EV_BASE, p.ev_spray)
    set_cwnd(d, s.cwnd)


@kernel
def nscc_on_rtt(s, p, ev, d):
    if s.base_rtt == 0 or ev.rtt < s.base_rtt:
        s.base_rtt = ev.rtt
        s.maxwnd = max(bdp(p.line_rate, p.maxwnd_bdp * ev.rtt), p.mss)
    if not p.csig:
        s.delay = ev.rtt - s.base_rtt


@kernel
def lm_last_hop(fmt, lm):
    """The locator lm (of a tag in format fmt) names a last hop: its top bit."""
    return (lm & (LM_LAST_HOP_COMPACT if fmt == CSIG_COMPACT else LM_LAST_HOP_WIDE)) != 0


@kernel
def nscc_on_csig(s, p, ev, d):
    if ev.csig_type == CSIG_DELAY:
        if p.csig:
            s.delay = ev.value              # the bottleneck hop's queueing delay
        s.last_hop = lm_last_hop(ev.fmt, ev.locator)


@kernel
def nscc_on_ack(s, p, ev, d):
    now, ecn = ev.t_last, ev.ecn_bytes > 0
    s.achieved += ev.bytes
    s.received += ev.bytes
    s.ignored += ev.bytes
    update_delay(s, p, s.delay, ecn)
    if not quick_adapt(s, p, False, ecn, s.delay, now):
        four_cases(s, p, ecn, s.delay, ev.bytes, now)
        # the fulfil period: fulfil_mtus MTUs acknowledged, or network_rtt elapsed
        if s.received > p.fulfil_mtus * p.mss or now - s.t_adjust > p.network_rtt:
            fulfil(s, p, now)
    # a mark from the last hop is on every path to this receiver: moving cannot help
    publish(s, p, d, now, ecn and not (p.csig_lb and s.last_hop))


@kernel
def update_delay(s, p, delay, ecn):
    """htsim update_delay: an unmarked sample above target counts as a
    quarter base RTT (the queue is not ours)."""
    x = base(s, p) * 0.25 if not ecn and delay > p.target else delay
    s.avg_delay = ewma_step(s.avg_delay, x, p.delay_alpha)


@kernel
def four_cases(s, p, ecn, delay, acked, now):
    """htsim updateCwndOnAck_NSCC: the case of this ACK's ECN and delay."""
    if not ecn and delay >= p.target:
        s.inc += p.fi * acked                                        # fair increase
        s.n_fair += 1
    elif not ecn:
        if not fast_increase(s, p, delay, acked):
            proportional_increase(s, p, delay, acked)
    elif delay >= p.target:
        multiplicative_decrease(s, p, now)
    else:
        s.n_noop += 1                                                # marked, short queue: move only
    bound(s, p)


@kernel
def proportional_increase(s, p, delay, acked):
    s.inc += p.alpha * acked * (p.target - delay)
    s.n_prop += 1


@kernel
def fast_increase(s, p, delay, acked):
    """A window's worth of ACKs with next to no queue: grow by a share of
    every ACK at once, until the delay comes back."""
    s.fi_count = s.fi_count + acked if delay < p.fast_delay else 0.0
    s.fast = delay < p.fast_delay and (s.fi_count > s.cwnd or s.fast)
    if s.fast:
        s.cwnd += acked * p.fi_scale * p.a
        s.n_fast += 1
    return s.fast


@kernel
def multiplicative_decrease(s, p, now):
    s.fast, s.fi_count = False, 0.0
    s.n_md += 1
    if s.avg_delay > p.target and now - s.t_dec > base(s, p):
        s.cwnd *= max(1 - p.gamma * (s.avg_delay - p.target) / s.avg_delay, p.min_md_factor)
        s.t_dec = now


@kernel
def fulfil(s, p, now):
    """htsim fulfill_adjustment: the increases gathered since the last
    fulfil, inc / cwnd, and eta once per network_rtt."""
    s.cwnd += s.inc / s.cwnd
    if due(now, s.t_adjust, p.network_rtt):
        s.cwnd += p.eta
        s.t_adjust = now
    s.inc = s.received = 0.0
    bound(s, p)


@kernel
def quick_adapt(s, p, loss, ecn, delay, now):
    """True if this ACK or NACK is consumed: ignored (marked, of the window
    sent before the last quick adapt) or the window reset to what arrived."""
    done = ecn and s.ignored < s.to_ignore
    if not done and now > s.t_qa:
        if (s.t_qa != 0 and (s.trigger or loss or delay > p.qa_x * p.target)
                and s.achieved < s.maxwnd / 2 ** p.qa_gate):
            s.to_ignore = s.cwnd                 # about what is in flight now
            s.cwnd = max(s.achieved, p.mss)
            s.ignored, s.trigger = 0.0, False
            s.n_qa += 1
            done = True
        s.achieved = 0.0
        s.t_qa = now + base(s, p) + p.target
    if done:
        s.inc = s.received = 0.0
    return done


@kernel
def nscc_on_nack(s, p, ev, d):
    nbytes = ev.nacks * p.mss
    s.ignored += nbytes
    update_delay(s, p, p.network_rtt, True)      # about the delay at the trim threshold (htsim)
    s.trigger = True
    if not quick_adapt(s, p, True, True, 0.0, ev.t_last):
        s.cwnd -= (ev.nacks - ev.last_hop) * p.mss if p.rccc else nbytes
        bound(s, p)
    publish(s, p, d, ev.t_last, ev.nacks > ev.last_hop)


@kernel
def nscc_on_rto(s, p, ev, d):
    s.cwnd -= max(ev.timeouts, 1) * p.mss    # the timed-out packet leaves the window
    bound(s, p)
    publish(s, p, d, ev.t_last, True)


@kernel
def publish(s, p, d, now, move):
    """The window; with ev_lb and ``move``, a new EV (spraying: the next
    block of ev_spray EVs), at most once per base RTT."""
    if p.ev_lb and move and (s.n_rotate == 0 or due(now, s.t_rotate, s.base_rtt)):
        if p.ev_spray > 0:
            s.ev_block = (s.ev_block + p.ev_spray) % EV_SPACE
            spray_ev(d, EV_BASE + int(s.ev_block), p.ev_spray)
        else:
            rotate_ev(d)
        s.t_rotate = now
        s.n_rotate += 1
    set_cwnd(d, s.cwnd)


@kernel
def bound(s, p):
    s.cwnd = clamp(s.cwnd, p.mss, min(s.maxwnd, p.max_cwnd))


class Nscc(Algorithm):
    """NSCC: UET's window control on ECN and queueing delay (htsim's)."""
    name = "nscc"
    Params = NsccParams
    state = ("cwnd", "maxwnd", "base_rtt", "delay", "avg_delay", "inc", "received", "achieved",
             "ignored", "to_ignore", ("trigger", bool), "fi_count", ("fast", bool), "t_dec",
             "t_adjust", "t_qa", "t_rotate", "ev_block", ("n_md", int), ("n_fair", int),
             ("n_prop", int),
             ("n_fast", int), ("n_noop", int), ("n_qa", int), ("n_rotate", int),
             ("last_hop", bool))
    binds = ("ACK", "RTT", "NACK", "RTO", "CSIG")
    periods = {"ACK": 0, "NACK": 0, "RTO": 0, "CSIG": 0}     # the four cases run per ACK
    csig = ("delay", "wide")       # 4 ns steps: compact buckets (45% apart) hide the target
    init = nscc_init
    on_ack = nscc_on_ack
    on_rtt = nscc_on_rtt
    on_csig = nscc_on_csig
    on_nack = nscc_on_nack
    on_rto = nscc_on_rto

    @classmethod
    def bindings(cls, params):
        return cls.binds if params.csig or params.csig_lb else ("ACK", "RTT", "NACK", "RTO")


@dataclass
class NsccCsigParams(NsccParams):
    csig: bool = param(True, "", "delay samples from the reflected CSIG max(Delay) (CSIG)")


class NsccCsig(Nscc):
    """NSCC on the bottleneck hop's CSIG max(Delay) instead of the path's delay."""
    name = "nscc-csig"
    Params = NsccCsigParams
