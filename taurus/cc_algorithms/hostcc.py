"""Host-congestion CC (TAURUS §5 after hostCC: Agarwal et al., SIGCOMM'23).

hostCC treats congestion inside the receiving host as congestion next to
the fabric's: (i) a host signal, sampled well below an RTT; (ii) a network
response: while the signal is above its threshold the receiver marks ECN
on what it receives, and the sender's DCTCP reacts to those marks as to a
switch's; (iii) an optional host-local response that throttles the
memory hog (MBA) while the network traffic gets less than its target.

Here, per flow at the sender:
    on HOST peer_host_delay (the receiving host's delivery delay, echoed
    in ACKs):  host_cong <- delay > T_host,
               T_host = I_T cache lines (64 B) at the flow's line rate
    on ACK:    marked += ecn_bytes, or every byte ACKed while host_cong
               (the receiver's ECN echo of hostCC) or while the local
               memory PSI (HOST psi_memory, "some" avg10, from the agent's
               samplers in wall-clock runs) exceeds psi_T, then DCTCP once per
               window (taurus/cc_algorithms/dctcp.py: alpha EWMA with g,
               cwnd * (1 - alpha / 2) on marks, else slow start / +1 MSS)
    on RTO:    ssthresh <- max(cwnd / 2, 2 MSS); cwnd <- 1 MSS
The DCTCP part is dctcp.py's: its parameters (g, alpha_init,
init_cwnd_pkts, slow_start, pace), state, init and timeout, extended here.
With ``mba`` on, the host-local response, from the local host's own
samples (HOST host_delay: value the delay, aux the host bandwidth the hog
leaves): one MBA level up when delay > T_host and that bandwidth is below
B_T of the line rate; one level down when delay < T_host and it is above
B_T, at most once per reduction_timeout; level L in 0..max_level asks
host_mba(100 - L * (100 - mba_floor) / max_level) percent.  Host actions
take effect in agent modes only (agent/handler.py applies D_HOST_MBA
through resctrl, or in virtual-time experiments to the host model's hog:
experiment/hog.py ModelHostActions); native mode ignores them
(datapath/ccnative.py).

Defaults: I_T = 70 and B_T = 84 (Gbit/s of the paper's 100 Gbit/s NIC,
hence 0.84 of line rate) are hostCC's (github.com/Terabit-Ethernet/hostCC,
src/README.md: target_iio_wr_threshold,
target_pcie_threshold; IIO_THRESHOLD, PCIE_BW_THRESHOLD); its MBA steps
are MBA_VAL_HIGH = 90 (the most throttling: 10% left, our mba_floor) over
3 levels, lowered at most once per REDUCTION_TIMEOUT_US = 150 us.  The
DCTCP part's defaults are dctcp.py's (Linux's g = 1/16 and alpha_init = 1,
RFC 6928's 10 packets).  The 64 B cache line turning I_T into bytes is
ours (an IIO write-buffer entry is one cache line).  hostCC uses no PSI and
we know of no published threshold for it, so psi_T is off (0) unless set;
the agent samples PSI when its config asks (`[agent] samplers`), not this
class, so virtual-time runs stay deterministic.
"""
from dataclasses import dataclass

from taurus.datapath.ccevents import HOST_SRC_DELAY, HOST_SRC_PEER_DELAY, SAMPLER_IDS

from .algorithm import host_mba, kernel, param
from .dctcp import Dctcp, DctcpParams, dctcp_window, publish
from .lib import due, time_of
from .params import require

PSI_MEMORY = SAMPLER_IDS["psi_memory"]
CACHE_LINE = 64


@dataclass
class HostccParams(DctcpParams):
    I_T: float = param(70.0, "cache lines", "host congestion threshold (hostCC IIO_THRESHOLD)")
    B_T: float = param(0.84, "of line rate", "network bandwidth target (hostCC 84 of 100 Gbit/s)")
    psi_T: float = param(0.0, "1/100 %", "memory PSI some avg10 counted as host congestion (0: off)")
    mba: bool = param(False, "", "host-local response: MBA on the hog (agent modes)")
    max_level: int = param(3, "", "MBA levels above none (hostCC: 3)")
    mba_floor: float = param(10.0, "%", "MBA percent at the top level (hostCC MBA_VAL_HIGH 90)")
    reduction_timeout: int = param(150_000, "ns", "least time between level cuts (hostCC: 150 us)")

    def check(self):
        require(self.I_T > 0, "I_T", "must be > 0")
        require(self.psi_T >= 0, "psi_T", "must be >= 0")
        require(0 < self.B_T <= 1, "B_T", "must be in (0, 1]")
        super().check()
        require(self.max_level >= 1, "max_level", "must be >= 1")
        require(0 < self.mba_floor <= 100, "mba_floor", "must be in (0, 100]")
        require(self.reduction_timeout >= 0, "reduction_timeout", "must be >= 0")


@kernel
def t_host(p):
    """I_T cache lines' time at the line rate, ns (never, line rate unknown)."""
    return time_of(p.I_T * CACHE_LINE, p.line_rate) if p.line_rate > 0 else 1e300


@kernel
def mba_percent(s, p):
    """The MBA percent of level s.level: 100 at none, mba_floor at the top."""
    return 100 - s.level * (100 - p.mba_floor) / p.max_level


@kernel
def hostcc_on_host(s, p, ev, d):
    if ev.source == HOST_SRC_PEER_DELAY:
        s.host_cong = ev.value > t_host(p)
    elif ev.source == PSI_MEMORY and p.psi_T > 0:
        s.psi_cong = ev.value > p.psi_T
    elif ev.source == HOST_SRC_DELAY and p.mba:
        starved = ev.aux < p.B_T * p.line_rate
        if ev.value > t_host(p) and starved and s.level < p.max_level:
            s.level += 1
            host_mba(d, mba_percent(s, p))
        elif (ev.value < t_host(p) and not starved and s.level > 0
              and due(ev.t_last, s.t_cut, p.reduction_timeout)):
            s.level -= 1
            s.t_cut = ev.t_last
            host_mba(d, mba_percent(s, p))


@kernel
def hostcc_on_ack(s, p, ev, d):
    s.acked += ev.bytes
    # hostCC's receiver marks what arrives while its host is congested
    s.marked += ev.bytes if s.host_cong or s.psi_cong else ev.ecn_bytes
    if dctcp_window(s, p):
        publish(s, p, d)


class Hostcc(Dctcp):
    """Host-congestion CC: DCTCP on fabric ECN and the receiving host's delay."""
    name = "hostcc"
    Params = HostccParams
    state = Dctcp.state + (("host_cong", bool), ("psi_cong", bool), ("level", int), "t_cut")
    binds = ("ACK", "RTO", "HOST", "RTT")
    on_ack = hostcc_on_ack
    on_host = hostcc_on_host

    @classmethod
    def bindings(cls, params):
        return cls.binds if params.pace else ("ACK", "RTO", "HOST")
