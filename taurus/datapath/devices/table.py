"""The engine's device table: one row per device (host NIC, switch, forwarder)."""
from collections import namedtuple

import numpy as np

# Device kinds.
L2FWD = 1
PKTGEN = 2
SWITCH = 3   # the software switch that emulates the fabric
NIC = 4      # a host NIC running the UET-style transport
IMPAIR = 5   # drops / delays / reorders between two ports (tests)

KIND_NAMES = {L2FWD: "l2fwd", PKTGEN: "pktgen", SWITCH: "switch", NIC: "nic", IMPAIR: "impair"}
MAX_DEV_PORTS = 64
N_DEV_REGS = 32

Devices = namedtuple("Devices", ["kind", "ports", "nports", "regs"])
"""kind int32[D]; ports int32[D, MAX_DEV_PORTS] (engine port indices);
nports int32[D]; regs int64[D, N_DEV_REGS] (kind-specific state)."""


def make_devices(max_devices: int) -> Devices:
    return Devices(kind=np.zeros(max_devices, np.int32),
                   ports=np.full((max_devices, MAX_DEV_PORTS), -1, np.int32),
                   nports=np.zeros(max_devices, np.int32),
                   regs=np.zeros((max_devices, N_DEV_REGS), np.int64))
