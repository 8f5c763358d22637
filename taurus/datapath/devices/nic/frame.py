"""Frame output of a host NIC: Ethernet/IPv4/UDP framing, the per-NIC TX
batch, and the NIC port's line-rate account.

Every header field is written through ``wire.codec`` with ``wire.spec``
locations.  The header area is zeroed first because the pool recycles
buffers and partial-byte fields are read-modify-write.
"""
import numba as nb
from ...hot import hot  # compiled without reference counting (the hot path)
import numpy as np

from ...mbuf import mbuf_alloc
from ...ports.dispatch import port_tx_or_drop
from ...wire import spec as S
from ...wire.codec import fill_ipv4_checksum, set_field, write_prologue, zero_bytes
from ...wire.desc import CFG_TPID_COMPACT, CFG_TPID_WIDE
from .state import C_TX_NOBUF, NR_IP, NR_LINE, NR_MAC, NR_PORT, NR_TXFREE, NR_TXN, TXB

IP_OFF = S.ETH_SIZE
UDP_OFF = IP_OFF + S.IPV4_SIZE
PDS_OFF = UDP_OFF + S.UDP_SIZE
ECN_ECT0 = 2
ECN_ECT1 = 1     # the switches' default UE codepoint (TCD; switch config pfc.ue)
ECN_CE = 3
CSIG_TAG_BYTES = (0, S.CSIGC_SIZE, S.CSIGW_SIZE)   # by format: TPID + tag (spec: incl. inner type)


@hot
def frame_new(E, n, hdr_len):
    """A pool frame with its first hdr_len bytes zeroed, or -1 (counted)."""
    i = mbuf_alloc(E.pool)
    if i < 0:
        E.nic.ncnt[n, C_TX_NOBUF] += 1
        return -1
    zero_bytes(E.pool.data[i], 0, hdr_len)
    return i


@hot
def frame_l2l4(E, n, i, dst_mac, dst_ip, ev, ecn, total):
    """Ethernet, IPv4 and UDP (sport = entropy) for a frame of `total` bytes."""
    frame_l2l4_at(E, n, i, dst_mac, dst_ip, ev, ecn, total, 0)


@hot
def send_control(E, n, mac, ip, ev, ecn, ctl, psn, spdcid, dpdcid, payload, now):
    """A PDS CONTROL packet of ctl_type ``ctl`` (CLOSE, REQ_CLOSE, CNP) to
    (mac, ip) with entropy ev; True if it left (the caller counts it)."""
    total = PDS_OFF + S.CONTROL_SIZE
    i = frame_new(E, n, total)
    if i < 0:
        return False
    frame_l2l4(E, n, i, mac, ip, ev, ecn, total)
    buf = E.pool.data[i]
    write_prologue(buf, PDS_OFF, S.T_CONTROL, ctl, 0)
    set_field(buf, PDS_OFF, S.CONTROL_PSN, psn & 0xFFFFFFFF)
    set_field(buf, PDS_OFF, S.CONTROL_SPDCID, spdcid)
    set_field(buf, PDS_OFF, S.CONTROL_DPDCID, dpdcid)
    set_field(buf, PDS_OFF, S.CONTROL_CTL_PAYLOAD, payload)
    tx_emit(E, n, i, now)
    return True


@hot
def frame_l2l4_at(E, n, i, dst_mac, dst_ip, ev, ecn, total, sh):
    """The same with `sh` bytes of tag (a CSIG tag: frame_csig) between the
    MAC addresses and the inner ethertype: IPv4 starts at IP_OFF + sh."""
    buf = E.pool.data[i]
    N = E.nic
    ip = IP_OFF + sh
    udp = UDP_OFF + sh
    set_field(buf, 0, S.ETH_DST, dst_mac)
    set_field(buf, 0, S.ETH_SRC, N.nr[n, NR_MAC])
    set_field(buf, sh, S.ETH_TYPE, S.ETH_P_IP)
    set_field(buf, ip, S.IPV4_VERSION, 4)
    set_field(buf, ip, S.IPV4_IHL, 5)
    set_field(buf, ip, S.IPV4_ECN, ecn)
    set_field(buf, ip, S.IPV4_LEN, total - ip)
    set_field(buf, ip, S.IPV4_TTL, 64)
    set_field(buf, ip, S.IPV4_PROTO, S.IPPROTO_UDP)
    set_field(buf, ip, S.IPV4_SRC, N.nr[n, NR_IP])
    set_field(buf, ip, S.IPV4_DST, dst_ip)
    fill_ipv4_checksum(buf, ip)
    set_field(buf, udp, S.UDP_SPORT, ev)
    set_field(buf, udp, S.UDP_DPORT, S.UET_UDP_PORT)
    set_field(buf, udp, S.UDP_LEN, total - udp)
    E.pool.length[i] = total


@hot
def frame_csig(N, buf, t, fmt, s):
    """A CSIG tag of wire type t, format fmt and value s after the MAC
    addresses of a frame built with frame_l2l4_at(sh = CSIG_TAG_BYTES[fmt]):
    its TPID (the parser's, N.pcfg), the tag, then the inner ethertype
    (written there by frame_l2l4_at)."""
    if fmt == S.CSIG_COMPACT:
        set_field(buf, 0, S.ETH_TYPE, N.pcfg[CFG_TPID_COMPACT])
        set_field(buf, S.ETH_SIZE, S.CSIGC_T, t)
        set_field(buf, S.ETH_SIZE, S.CSIGC_S, s)
    else:
        set_field(buf, 0, S.ETH_TYPE, N.pcfg[CFG_TPID_WIDE])
        set_field(buf, S.ETH_SIZE, S.CSIGW_T, t)
        set_field(buf, S.ETH_SIZE, S.CSIGW_S, s)


@hot
def line_time(N, n, nbytes):
    """Serialization time of nbytes at the NIC's line rate (0: unlimited)."""
    line = N.nr[n, NR_LINE]
    if line <= 0:
        return np.int64(0)
    return (np.int64(nbytes) * 8 * 1_000_000_000 + line - 1) // line


@hot
def tx_flush(E, n, now):
    N = E.nic
    k = N.nr[n, NR_TXN]
    if k > 0:
        port_tx_or_drop(E.ports, E.pool, N.nr[n, NR_PORT], now, N.txb[n], k)
        N.nr[n, NR_TXN] = 0


@hot
def tx_emit(E, n, i, now):
    """Queue frame i for the port and charge its wire time to the line."""
    N = E.nic
    t = N.nr[n, NR_TXFREE]
    if t < now:
        t = now
    N.nr[n, NR_TXFREE] = t + line_time(N, n, E.pool.length[i])
    k = N.nr[n, NR_TXN]
    N.txb[n, k] = i
    N.nr[n, NR_TXN] = k + 1
    if k + 1 == TXB:
        tx_flush(E, n, now)
