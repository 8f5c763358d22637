"""Frame sizes of a run: how large the engine's pool buffers are, and the
largest MSS each clock can carry.

A NIC's data frame is DATA_HDR + MSS bytes (Ethernet to the UET headers).
In virtual time frames never leave the engine, so the pool's buffers are
sized to the largest host's frame (at least mbuf.DEFAULT_BUF) and any MSS
up to a jumbo frame (topology.MTU_JUMBO_MAX + Ethernet) runs: UET's and
htsim's 4 KB MTU included.  Link MTUs are not enforced in virtual time.

On the wall clock frames cross real ports: an AF_XDP chunk is a power of
two up to a page, its first mbuf.HEADROOM bytes the kernel's, and a veth
drops a frame above its MTU.  A host's frame must fit both its link's MTU
(plus Ethernet) and a page-sized chunk; the pool takes page-sized buffers
when a frame does not fit the default ones.

``problems`` names every host whose MSS the run would refuse, so that
``taurus run --check`` refuses what the run would.
"""
from __future__ import annotations

import mmap

from taurus.datapath.devices.nic.setup import DATA_HDR
from taurus.datapath.mbuf import DEFAULT_BUF, HEADROOM
from taurus.tools.topology import MTU_JUMBO_MAX

from .schema import Experiment, ExperimentError

ETH = 14
VIRTUAL_MAX_FRAME = MTU_JUMBO_MAX + ETH


def frame_bytes(mss: int) -> int:
    """A data frame's bytes on the wire (Ethernet header included)."""
    return DATA_HDR + mss


def max_frame(x: Experiment, host: str, clock: str) -> int:
    """The largest frame `host` may send on this clock."""
    if clock == "virtual":
        return VIRTUAL_MAX_FRAME
    link = x.topo.ifaces_of(host)[0].link
    return min(link.mtu + ETH, mmap.PAGESIZE - HEADROOM)


def pool_buffer(x: Experiment, clock: str) -> int:
    """Bytes per pool buffer: the default unless a host's frame needs more
    (virtual: rounded up to 64 bytes; wall: a page, AF_XDP's largest chunk)."""
    need = max((frame_bytes(x.host_cc(h).mss) for h in x.topo.hosts), default=0)
    limit = DEFAULT_BUF - (HEADROOM if clock == "wall" else 0)
    if need <= limit:
        return DEFAULT_BUF
    return -(-need // 64) * 64 if clock == "virtual" else mmap.PAGESIZE


def problems(x: Experiment, clock: str) -> list[ExperimentError]:
    """One error per cc site whose MSS makes a frame the run cannot carry."""
    out, seen = [], set()
    for h in x.topo.hosts:
        mss = x.host_cc(h).mss
        site = f"cc.hosts.{h}.mss" if h in x.cc_hosts else "cc.mss"
        hi = max_frame(x, h, clock) - DATA_HDR
        if not 64 <= mss <= hi and (site, hi) not in seen:
            seen.add((site, hi))
            why = ("a jumbo frame" if clock == "virtual" else
                   f"{h}'s link MTU {x.topo.ifaces_of(h)[0].link.mtu} + Ethernet and an AF_XDP "
                   f"chunk of {mmap.PAGESIZE - HEADROOM} bytes")
            out.append(ExperimentError(x.source, site,
                                       f"mss {mss} on the {clock} clock: expected 64..{hi} "
                                       f"(a frame is {DATA_HDR} bytes of headers + mss and must "
                                       f"fit {why})"))
    return out


def check(x: Experiment, clock: str) -> None:
    """Raise the first of ``problems(x, clock)``."""
    errs = problems(x, clock)
    if errs:
        raise errs[0]
