"""What htsim's UEC model (HLC-Lab/uet-htsim, datacenter/main_uec.cpp and
sim/uec.cpp) sets by default on a fabric, derived from the fabric alone:
the unloaded RTT, the BDP in packets, the queue size, the ECN thresholds
and NSCC's constants; and their printout, so a scenario says what is in
force as htsim does.

htsim's defaults (facts read from its source):
  packet size (MTU) 4150 bytes on the wire, of which 64 are headers
    (NSCC's MSS 4086); ACKs 64 bytes;
  network RTT = 2 x the diameter's latency + serialisation of one full
    packet and one ACK per link of the diameter, at the host's rate;
  BDP in packets = ceil(RTT x rate / packet size);
  queue = 1 BDP (trimming on; 5 BDP without), in whole packets; a packet
    that does not fit is trimmed to its header;
  ECN on every switch queue, RED-like from ceil(0.2 BDP) to ceil(0.8 BDP)
    packets, probability linear from 0 to 1, decided at dequeue on the
    bytes left behind the packet;
  NSCC (initNsccParams): target 0.75 RTT with trimming, a = BDP / (100
    Gbit/s x 12 us), b = target / 12 us, alpha 4 MSS a b / target, fi
    5 MSS a, eta 0.15 MSS a, fi_scale 0.25 a, gamma 0.8, delay EWMA 0.0125,
    quick adapt above 4 x target with gate 2^3, fulfil every 8 MTUs or
    one RTT, maxwnd 1.5 BDP, a flow starts at maxwnd.

Taurus's frames carry DATA_HDR bytes of headers (Ethernet to UET), so a
4150-byte frame holds MSS 4150 - DATA_HDR; NSCC's per-MSS gains and its
fulfil bytes are given in htsim's bytes (scaled by htsim's MSS over ours)
so that alpha, fi, eta and the fulfil period equal htsim's.  The window's
floor stays 1 MSS (htsim: 1 packet).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from taurus.datapath.devices.nic.setup import DATA_HDR

PACKET = 4150                  # htsim's default packet size (bytes on the wire)
ACK = 64                       # htsim's UEC ACK size
HTSIM_HDR = 64                 # htsim's UEC header: its MSS is PACKET - 64
TRIM_QUEUE_BDP = 1             # htsim's queue with trimming, in BDPs (5 without)


@dataclass(frozen=True)
class HtsimFabric:
    """A fabric's links as htsim derives its defaults: rate (bit/s), the
    diameter in links and the per-link latency (ns)."""
    rate: float = 100e9
    hops: int = 6
    hop_delay: float = 1_000.0
    packet: int = PACKET

    @property
    def mss(self) -> int:
        """Taurus's MSS for a frame of htsim's packet size."""
        return self.packet - DATA_HDR

    def wire(self, nbytes: int) -> float:
        return nbytes * 8e9 / self.rate

    @property
    def network_rtt(self) -> float:
        """ns: htsim calculate_rtt (network_max_unloaded_rtt)."""
        return (2 * self.hops * self.hop_delay
                + self.hops * (self.wire(self.packet) + self.wire(ACK)))

    @property
    def bdp_pkts(self) -> int:
        return math.ceil(self.network_rtt * self.rate / 8e9 / self.packet)

    @property
    def queue(self) -> int:
        return TRIM_QUEUE_BDP * self.bdp_pkts * self.packet

    @property
    def buffer(self) -> int:
        """A port's buffer: room above the trimming queue for the trimmed
        headers (htsim queues those apart, in a high-priority queue)."""
        return 4 * self.queue

    @property
    def ecn(self) -> tuple[int, int]:
        return (math.ceil(0.2 * self.bdp_pkts) * self.packet,
                math.ceil(0.8 * self.bdp_pkts) * self.packet)

    def switch(self, csig: bool = True) -> dict:
        """A switch's features: htsim's ECN (Taurus marks at dequeue on the
        bytes behind the packet, as htsim) and its trimming queue."""
        lo, hi = self.ecn
        sw = {"ecn": {"kmin": lo, "kmax": hi, "pmax": 1.0}, "trim": {"threshold": self.queue}}
        if csig:
            sw["csig"] = {"type": "delay"}
        return sw

    def nscc_params(self, **more) -> dict:
        """NSCC's parameters: htsim's RTT and reference, trimming on, and its
        per-MSS gains and fulfil bytes in htsim's bytes (its MSS is the
        packet less 64 bytes, ours less DATA_HDR)."""
        k = (self.packet - HTSIM_HDR) / self.mss
        return {"network_rtt": float(self.network_rtt), "ref_rate": 100e9, "ref_rtt": 12_000.0,
                "trimming": True, "alpha_mss": 4.0 * k, "fi_mss": 5.0 * k, "eta_mss": 0.15 * k,
                "fulfil_mtus": 8.0 * self.packet / self.mss, **more}


def in_force(fab: HtsimFabric, alg: str = "nscc") -> list[str]:
    """The parameters in force, one line each, as htsim prints its own."""
    from taurus.cc_algorithms import registry
    from taurus.cc_algorithms.algorithm import FlowContext

    cls = registry.lookup(alg)
    p = cls.Params(**fab.nscc_params())
    d = p.derive(FlowContext(mss=fab.mss, line_rate=fab.rate))
    fulfil = p.fulfil_mtus * fab.mss
    lo, hi = fab.ecn
    rtt, maxwnd = fab.network_rtt, p.maxwnd_bdp * fab.rate * fab.network_rtt / 8e9
    return [
        f"links {fab.rate / 1e9:g} Gbit/s, {fab.hop_delay / 1e3:g} us a hop, diameter "
        f"{fab.hops} links; packet {fab.packet} B (Taurus MSS {fab.mss} + {DATA_HDR} B headers; "
        f"htsim MSS {fab.packet - HTSIM_HDR}), ACK {ACK} B",
        f"network RTT {rtt / 1e3:.3f} us, BDP {fab.bdp_pkts} packets; queue {fab.queue} B "
        f"({TRIM_QUEUE_BDP} BDP, trimming above); ECN low {lo} B high {hi} B "
        f"({lo // fab.packet}-{hi // fab.packet} packets, linear 0..1, at dequeue)",
        f"NSCC: target {d['target'] / 1e3:.3f} us, a {d['a']:.4f}, b "
        f"{d['target'] / p.ref_rtt:.4f}, alpha {d['alpha'] * 1e3:.2f} B/us, fi {d['fi']:.0f} B, "
        f"eta {d['eta']:.0f} B, fi_scale {p.fi_scale * d['a']:.4f}, gamma {p.gamma}, "
        f"delay_alpha {p.delay_alpha}, qa above {p.qa_x * d['target'] / 1e3:.2f} us gate "
        f"2^{p.qa_gate}, fulfil {fulfil:.0f} B or {rtt / 1e3:.3f} us, maxwnd "
        f"{maxwnd:.0f} B ({p.maxwnd_bdp:g} BDP), min cwnd 1 MSS",
    ]
