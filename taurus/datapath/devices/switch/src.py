"""Bolt's SRC (source rate control, Arslan et al., NSDI'23): a data packet
that arrives at an egress port holding at least the port's SRC threshold
of queued bytes makes the switch send the packet's sender an SRC packet
straight back, at once (sub-RTT feedback), in the high class.  Only packets
that ask for it (spec.F_REQ_SRC, set by senders whose algorithm binds SRC)
are answered, and the switch clears the request, so one packet causes at
most one SRC along its path (Bolt's DECWIN flag).  As in Bolt's ns-3
queue disc, every such arrival answers and the queue counted is the
port's, all classes, before the packet joins it.

The SRC is a PDS CONTROL of ctl_type SRC followed by the SRC record
(wire/spec.py: SRC_REC), addressed from the data packet's receiver to its
sender, with the data packet's entropy, PSN and sender PDC id."""
import numba as nb
import numpy as np

from ...mbuf import mbuf_alloc
from ...wire import spec as S
from ...wire.codec import fill_ipv4_checksum, get_field, set_field, write_prologue, zero_bytes
from ...hot import hot
from ...wire.desc import (D_IP_DST, D_IP_PROTO, D_IP_SRC, D_IP_TTL,
                          D_L4_OFF, D_PDS_FLAGS, D_PDS_OFF, D_PSN, D_SPDCID)
from .queues import q_bytes
from .state import C_RATE, C_SRC, T_SRC
from .trim import is_data

SRC_IP = S.ETH_SIZE
SRC_UDP = SRC_IP + S.IPV4_SIZE
SRC_PDS = SRC_UDP + S.UDP_SIZE
SRC_LEN = SRC_PDS + S.CONTROL_SIZE + S.SRC_SIZE
TTL0 = 64                   # senders' initial TTL (nic/frame.py): hops = TTL0 - TTL


@nb.njit(cache=True, inline="always")
def src_due(sw, e, desc, st):
    """Whether the data packet just parsed, bound for egress e, gets an SRC."""
    th = sw.pcfg[e, C_SRC]
    return (th > 0 and is_data(desc, st) and desc[D_IP_PROTO] == S.IPPROTO_UDP
            and (desc[D_PDS_FLAGS] & S.F_REQ_SRC) != 0 and q_bytes(sw, e) >= th)


@hot
def src_make(E, e, i, desc):
    """Clear data frame i's SRC request and build its SRC in a new frame;
    returns that frame, or -1 when the pool is empty.  Call before the data
    frame is queued (queueing may free it)."""
    sw = E.sw
    buf = E.pool.data[i]
    pds = desc[D_PDS_OFF]
    set_field(buf, pds, S.RUD_REQ_FLAGS, desc[D_PDS_FLAGS] & ~S.F_REQ_SRC)
    set_field(buf, desc[D_L4_OFF], S.UDP_CHKSUM, 0)     # none (allowed for UDP/IPv4)
    k = mbuf_alloc(E.pool)
    if k < 0:
        return np.int64(-1)
    out = E.pool.data[k]
    zero_bytes(out, 0, SRC_LEN)
    set_field(out, 0, S.ETH_DST, get_field(buf, 0, S.ETH_SRC))
    set_field(out, 0, S.ETH_SRC, get_field(buf, 0, S.ETH_DST))
    set_field(out, 0, S.ETH_TYPE, S.ETH_P_IP)
    set_field(out, SRC_IP, S.IPV4_VERSION, 4)
    set_field(out, SRC_IP, S.IPV4_IHL, 5)
    set_field(out, SRC_IP, S.IPV4_LEN, SRC_LEN - SRC_IP)
    set_field(out, SRC_IP, S.IPV4_TTL, TTL0)
    set_field(out, SRC_IP, S.IPV4_PROTO, S.IPPROTO_UDP)
    set_field(out, SRC_IP, S.IPV4_SRC, desc[D_IP_DST])
    set_field(out, SRC_IP, S.IPV4_DST, desc[D_IP_SRC])
    fill_ipv4_checksum(out, SRC_IP)
    set_field(out, SRC_UDP, S.UDP_SPORT, get_field(buf, desc[D_L4_OFF], S.UDP_SPORT))
    set_field(out, SRC_UDP, S.UDP_DPORT, get_field(buf, desc[D_L4_OFF], S.UDP_DPORT))
    set_field(out, SRC_UDP, S.UDP_LEN, SRC_LEN - SRC_UDP)
    write_prologue(out, SRC_PDS, S.T_CONTROL, S.CTL_SRC, 0)
    set_field(out, SRC_PDS, S.CONTROL_PSN, desc[D_PSN] & 0xFFFFFFFF)
    set_field(out, SRC_PDS, S.CONTROL_DPDCID, desc[D_SPDCID])
    r = SRC_PDS + S.CONTROL_SIZE
    q = q_bytes(sw, e)
    set_field(out, r, S.SRC_QLEN, q if q < 0xFFFFFFFF else 0xFFFFFFFF)
    set_field(out, r, S.SRC_RATE_MBPS, sw.pcfg[e, C_RATE] // 1_000_000)
    set_field(out, r, S.SRC_HOPS, max(TTL0 - (desc[D_IP_TTL] - 1), 0))
    E.pool.length[k] = SRC_LEN
    sw.stats[e, T_SRC] += 1
    return np.int64(k)

