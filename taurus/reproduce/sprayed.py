"""OSCAR and HPCC with per-packet load balancing, for `oscar-fct`'s second
table (the seed's fig10b: ns-3 RandomEcmpRouting PerPacket).

The fabric's switches hash the 5-tuple, whose UDP source port is the
packet's entropy value (EV); a flow sprays when its algorithm decides so
(spray_ev: its packets take EVs first .. first + n - 1 in turn).  These
subclasses decide it once, at the flow's start, and are otherwise the
algorithms unchanged: HPCC then reads per-hop INT records of whichever path
each ACKed packet took, as the seed says precise-INT CCs do under spraying.
"""
from dataclasses import dataclass

from taurus.cc_algorithms.algorithm import kernel, param, spray_ev
from taurus.cc_algorithms.hpcc import Hpcc, HpccParams, hpcc_init
from taurus.cc_algorithms.oscar import Oscar, OscarParams, oscar_init
from taurus.cc_algorithms.params import require

EV_BASE = 0xC000               # the NIC's own EV range (0xC000..0xFFFF)
SPRAY = 64                     # EVs per flow: well above the fat-tree's 16 paths


def _check_spray(p):
    require(1 <= p.spray <= 0x4000, "spray", "must be in 1..16384")


@dataclass
class SprayedOscarParams(OscarParams):
    spray: int = param(SPRAY, "EVs", "spray every packet over this many EVs in turn")

    def check(self):
        super().check()
        _check_spray(self)


@dataclass
class SprayedHpccParams(HpccParams):
    spray: int = param(SPRAY, "EVs", "spray every packet over this many EVs in turn")

    def check(self):
        super().check()
        _check_spray(self)


@kernel
def sprayed_oscar_init(s, p, d):
    oscar_init(s, p, d)
    spray_ev(d, EV_BASE, p.spray)


@kernel
def sprayed_hpcc_init(s, p, d):
    hpcc_init(s, p, d)
    spray_ev(d, EV_BASE, p.spray)


class SprayedOscar(Oscar):
    """OSCAR, every packet on the next of ``spray`` EVs."""
    name = "oscar-sprayed"
    Params = SprayedOscarParams
    init = sprayed_oscar_init


class SprayedHpcc(Hpcc):
    """HPCC, every packet on the next of ``spray`` EVs."""
    name = "hpcc-sprayed"
    Params = SprayedHpccParams
    init = sprayed_hpcc_init
