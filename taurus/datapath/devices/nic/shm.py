"""The host NIC tables in one shared-memory segment, ``<engine>-nic``.

Apps in other processes (taurus.transport.client) attach to it to reach the
byte arenas (txbuf/rxbuf), the per-NIC submission and completion queues
and, read-only by convention, the flow and PDC tables.  Writes from an app
go only to its own ring bytes and to the SQ; everything else is the
engine's.  Layout: a header (magic, the sizes ``nic_shapes`` takes, per-NIC
names), then every array of ``state.nic_shapes`` in order, each 64-byte
aligned.  ``ftruncate`` makes the segment sparse: untouched capacity costs
no memory.
"""
import numpy as np

from ...shm import Shm
from .state import NicState, make_nic_state, nic_shapes

MAGIC = 0x5441555255534E49   # "TAURUSNI"
SIZE_KEYS = ("max_ports", "max_flows", "win", "tx_bytes", "rx_bytes", "msgs", "cq", "sq")
NAME_LEN = 32
HDR_WORDS = 16


def _layout(sizes: dict):
    """(header bytes, {field: offset}, total bytes)."""
    nn = max(1, sizes["max_ports"])
    off = (HDR_WORDS * 8 + nn * NAME_LEN + 63) & ~63
    hdr = off
    offs = {}
    args = {k: v for k, v in sizes.items() if k not in ("max_ports", "max_flows")}
    for name, shape, dt in nic_shapes(sizes["max_ports"], sizes["max_flows"], **args):
        if shape is None:
            continue
        offs[name] = off
        off += (int(np.prod(shape)) * np.dtype(dt).itemsize + 63) & ~63
    return hdr, offs, off


class NicShm:
    """The segment and the NicState whose arrays live in it."""

    def __init__(self, shm: Shm, sizes: dict):
        self.shm, self.sizes = shm, sizes
        _, offs, _ = _layout(sizes)
        nn = max(1, sizes["max_ports"])
        self.names = shm.array(HDR_WORDS * 8, np.uint8, (nn, NAME_LEN))
        args = {k: v for k, v in sizes.items() if k not in ("max_ports", "max_flows")}
        self.state: NicState = make_nic_state(
            sizes["max_ports"], sizes["max_flows"],
            alloc=lambda name, shape, dt: shm.array(offs[name], dt, shape), **args)

    @classmethod
    def create(cls, name: str, **sizes) -> "NicShm":
        _, _, total = _layout(sizes)
        shm = Shm.create(name, total)
        try:
            hdr = shm.array(0, np.int64, (HDR_WORDS,))
            hdr[0] = MAGIC
            hdr[1:1 + len(SIZE_KEYS)] = [sizes[k] for k in SIZE_KEYS]
            return cls(shm, sizes)
        except BaseException:
            shm.close()
            raise

    @classmethod
    def attach(cls, name: str) -> "NicShm":
        """An app's view (read-write: it writes its ring bytes and the SQ)."""
        shm = Shm.attach(name, writable=True)
        hdr = shm.array(0, np.int64, (HDR_WORDS,))
        if int(hdr[0]) != MAGIC:
            raise ValueError(f"{name} is not a Taurus NIC segment")
        sizes = {k: int(hdr[1 + i]) for i, k in enumerate(SIZE_KEYS)}
        return cls(shm, sizes)

    def set_name(self, n: int, name: str) -> None:
        raw = name.encode()[:NAME_LEN - 1]
        self.names[n, :] = 0
        self.names[n, :len(raw)] = np.frombuffer(raw, np.uint8)

    def name_of(self, n: int) -> str:
        return bytes(self.names[n]).rstrip(b"\0").decode()

    def close(self) -> None:
        self.shm.close()
