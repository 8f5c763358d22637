"""Numba frame parser: Ethernet -> [CSIG] -> IPv4 -> UDP 4793 | IP proto 253
+ entropy -> PDS -> [Taurus probe] -> [SES] -> payload.

``parse_frame`` fills an int64 descriptor (indices ``D_*``) as far as parsing
gets and returns a status from ``PARSE_ERRORS``; it increments
``counts[status]`` so the counts of a run sum to the number of frames.  It
never reads outside ``buf[base:base+length]``: every header is checked
against the end of the frame, then of the IP datagram, then of the UDP
datagram, before it is read.  Checksums are not verified.

Descriptor conventions: offsets are indices into ``buf`` (``base``
included); presence is signalled by D_CSIG_FMT != 0, D_IP_OFF / D_L4_OFF /
D_PDS_OFF / D_PROBE_OFF / D_SES_OFF / D_PAYLOAD_OFF != -1; other entries are
meaningful only when their header is present (stale values are not cleared,
to keep the per-frame cost down).  A CSIG tag on a non-UET frame is still
decoded (status ``not_taurus``), which is what a switch needs.
"""
import numpy as np

from . import spec as S
from .codec import get_field
from ..hot import hot, hot_stage
from .desc import *  # noqa: F401,F403  (statuses, D_*, CFG_*: Numba reads them as globals)


# ---- tables derived from spec (Numba freezes global arrays as constants) ----
def _tables():
    plen = np.zeros(32, np.int64)                  # 0 = unknown type
    for t, h in S.PDS_LAYOUTS.items():
        plen[t] = S.SIZES[h.name]
    for t in S.PDS_UNSUPPORTED:
        plen[t] = -1
    nh_ok = np.zeros(32, np.int64)                 # bit n set: next_hdr n allowed
    for t, allowed in S.NEXT_HDR_ALLOWED.items():
        for n in allowed:
            nh_ok[t] |= 1 << n
    slen = np.zeros(16, np.int64)
    for n, h in S.SES_LAYOUTS.items():
        slen[n] = S.SIZES[h.name]
    return plen, nh_ok, slen


PDS_LEN_TAB, NH_OK_TAB, SES_LEN_TAB = _tables()

# Fields the parser reads through one layout's location that other layouts
# share; checked here so a spec edit that breaks the sharing fails at import.
assert S.RUD_REQ_PSN == S.RUD_CC_REQ_PSN == S.ACK_CACK_PSN == S.ACK_CC_CACK_PSN \
    == S.ACK_CCX_CACK_PSN == S.NACK_NACK_PSN == S.NACK_CCX_NACK_PSN == S.CONTROL_PSN \
    == S.RUDI_PKT_ID
assert S.RUD_REQ_SPDCID == S.RUD_CC_REQ_SPDCID == S.ACK_SPDCID == S.ACK_CC_SPDCID \
    == S.ACK_CCX_SPDCID == S.NACK_SPDCID == S.NACK_CCX_SPDCID == S.CONTROL_SPDCID
assert S.RUD_REQ_DPDCID == S.RUD_CC_REQ_DPDCID == S.ACK_DPDCID == S.ACK_CC_DPDCID \
    == S.ACK_CCX_DPDCID == S.NACK_DPDCID == S.NACK_CCX_DPDCID == S.CONTROL_DPDCID
assert S.RUD_REQ_CLEAR_PSN_OFFSET == S.RUD_CC_REQ_CLEAR_PSN_OFFSET
assert S.ACK_ACK_PSN_OFFSET == S.ACK_CC_ACK_PSN_OFFSET == S.ACK_CCX_ACK_PSN_OFFSET
assert S.ACK_PROBE_OPAQUE[:2] == S.CONTROL_PROBE_OPAQUE[:2]
assert S.ACK_CC_CC_TYPE == S.ACK_CCX_CCX_TYPE
assert S.NACK_NACK_CODE == S.NACK_CCX_NACK_CODE
for _h in S.SES_LAYOUTS.values():
    assert S.LOCS[_h.name]["opcode"] == S.SES_STD_OPCODE
    assert S.LOCS[_h.name]["job_id"] == S.SES_STD_JOB_ID
    assert S.LOCS[_h.name].get("message_id", S.SES_STD_MESSAGE_ID) == S.SES_STD_MESSAGE_ID
assert S.SES_STD_FLAGS[:4] == S.SES_RESP_RETURN_CODE[:4]

_IPV4_MIN = S.IPV4_SIZE
_MF = 0x1                                          # IPv4 flags: more fragments


# The parser is a chain of stages, one per header, each named after it:
# a stage checks its header, records it in the descriptor and returns the
# status of the next stage, which it calls (or its own error).  The stages
# are inlined by Numba (hot_stage), so _parse and _parse_uet each still
# compile to one function.
@hot
def _parse(buf, base, length, cfg, d):
    _clear(d, base, length)
    if base < 0 or length < 0 or base + length > buf.shape[0]:
        return P_BAD_FRAME_BOUNDS
    return _ethernet(buf, base, base + length, cfg, d)


@hot_stage
def _clear(d, base, length):
    """Start the descriptor: the frame, and no header present yet."""
    d[D_FRAME_OFF] = base
    d[D_FRAME_LEN] = length
    d[D_CSIG_FMT] = 0
    d[D_IP_OFF] = -1
    d[D_L4_OFF] = -1
    d[D_PDS_OFF] = -1
    d[D_PROBE_OFF] = -1
    d[D_SES_OFF] = -1
    d[D_SES_TYPE] = 0
    d[D_PAYLOAD_OFF] = -1
    d[D_PAYLOAD_LEN] = 0


@hot_stage
def _ethernet(buf, base, end, cfg, d):
    """Ethernet and an optional CSIG tag, then IPv4."""
    if end - base < S.ETH_SIZE:
        return P_TRUNCATED_ETH
    etype = get_field(buf, base, S.ETH_TYPE)
    off = base + S.ETH_SIZE
    if etype == cfg[CFG_TPID_COMPACT]:
        if off + S.CSIGC_SIZE > end:
            return P_TRUNCATED_CSIG
        etype = _csig_compact(buf, off, d)
        off += S.CSIGC_SIZE
    elif etype == cfg[CFG_TPID_WIDE]:
        if off + S.CSIGW_SIZE > end:
            return P_TRUNCATED_CSIG
        etype = _csig_wide(buf, off, d)
        off += S.CSIGW_SIZE
    d[D_ETHERTYPE] = etype
    if etype != S.ETH_P_IP:
        return P_NOT_TAURUS
    return _ipv4(buf, off, end, cfg, d)


@hot_stage
def _csig_compact(buf, off, d):
    """A compact CSIG tag at ``off``; returns the EtherType it carries."""
    d[D_CSIG_FMT] = S.CSIG_COMPACT
    d[D_CSIG_OFF] = off
    d[D_CSIG_T] = get_field(buf, off, S.CSIGC_T)
    d[D_CSIG_S] = get_field(buf, off, S.CSIGC_S)
    d[D_CSIG_LM] = get_field(buf, off, S.CSIGC_LM)
    d[D_CSIG_D] = get_field(buf, off, S.CSIGC_D)
    return get_field(buf, off, S.CSIGC_TYPE)


@hot_stage
def _csig_wide(buf, off, d):
    """A wide CSIG tag at ``off``; returns the EtherType it carries."""
    d[D_CSIG_FMT] = S.CSIG_WIDE
    d[D_CSIG_OFF] = off
    d[D_CSIG_T] = get_field(buf, off, S.CSIGW_T)
    d[D_CSIG_S] = get_field(buf, off, S.CSIGW_S)
    d[D_CSIG_LM] = get_field(buf, off, S.CSIGW_LM)
    d[D_CSIG_D] = get_field(buf, off, S.CSIGW_D)
    return get_field(buf, off, S.CSIGW_TYPE)


@hot_stage
def _ipv4(buf, off, end, cfg, d):
    """The IPv4 header, then UDP, or the entropy header of native UET over IP."""
    if off + _IPV4_MIN > end:
        return P_TRUNCATED_IP
    if get_field(buf, off, S.IPV4_VERSION) != 4:
        return P_BAD_IP_VERSION
    hlen = get_field(buf, off, S.IPV4_IHL) * 4
    if hlen < _IPV4_MIN:
        return P_BAD_IHL
    if off + hlen > end:
        return P_TRUNCATED_IP
    tot = get_field(buf, off, S.IPV4_LEN)
    if tot < hlen:
        return P_BAD_IP_LEN
    if off + tot > end:
        return P_IP_LEN_EXCEEDS_FRAME
    proto = _ipv4_fields(buf, off, hlen, tot, d)
    native = proto == cfg[CFG_IP_PROTO]
    if proto != S.IPPROTO_UDP and not native:
        return P_NOT_TAURUS
    if (get_field(buf, off, S.IPV4_FLAGS) & _MF) != 0 or get_field(buf, off, S.IPV4_FRAG) != 0:
        return P_IP_FRAGMENT
    l4 = off + hlen
    d[D_L4_OFF] = l4
    if native:
        return _entropy(buf, l4, off + tot, d)
    return _udp(buf, l4, off + tot, cfg, d)


@hot_stage
def _ipv4_fields(buf, off, hlen, tot, d):
    """Record a checked IPv4 header; returns its protocol."""
    d[D_IP_OFF] = off
    d[D_IP_HLEN] = hlen
    d[D_IP_LEN] = tot
    d[D_IP_DSCP] = get_field(buf, off, S.IPV4_DSCP)
    d[D_IP_ECN] = get_field(buf, off, S.IPV4_ECN)
    d[D_IP_TTL] = get_field(buf, off, S.IPV4_TTL)
    proto = get_field(buf, off, S.IPV4_PROTO)
    d[D_IP_PROTO] = proto
    d[D_IP_SRC] = get_field(buf, off, S.IPV4_SRC)
    d[D_IP_DST] = get_field(buf, off, S.IPV4_DST)
    return proto


@hot_stage
def _entropy(buf, l4, ip_end, d):
    """Native UET over IP: the entropy header, then UET."""
    if l4 + S.ENT_SIZE > ip_end:
        return P_TRUNCATED_ENTROPY
    d[D_SPORT] = 0
    d[D_DPORT] = 0
    d[D_ENTROPY] = get_field(buf, l4, S.ENT_ENTROPY)
    d[D_DGRAM_END] = ip_end
    return _parse_uet(buf, l4 + S.ENT_SIZE, ip_end, d)


@hot_stage
def _udp(buf, l4, ip_end, cfg, d):
    """UET over UDP: the UDP header, then UET."""
    if l4 + S.UDP_SIZE > ip_end:
        return P_TRUNCATED_UDP
    sport = get_field(buf, l4, S.UDP_SPORT)
    dport = get_field(buf, l4, S.UDP_DPORT)
    d[D_SPORT] = sport
    d[D_DPORT] = dport
    if dport != cfg[CFG_UDP_PORT]:
        return P_NOT_TAURUS
    ulen = get_field(buf, l4, S.UDP_LEN)
    if ulen < S.UDP_SIZE or l4 + ulen > ip_end:
        return P_BAD_UDP_LEN
    d[D_ENTROPY] = sport
    d[D_DGRAM_END] = l4 + ulen
    return _parse_uet(buf, l4 + S.UDP_SIZE, l4 + ulen, d)


@hot
def _parse_uet(buf, pds, dend, d):
    """The PDS header, then the probe and SES headers and the payload."""
    if pds + S.PROLOGUE_SIZE > dend:
        return P_TRUNCATED_PDS
    t = get_field(buf, pds, S.PROLOGUE_TYPE)
    nh = get_field(buf, pds, S.PROLOGUE_NEXT_HDR)
    flags = get_field(buf, pds, S.PROLOGUE_FLAGS)
    d[D_PDS_TYPE] = t
    d[D_PDS_NEXT] = nh
    d[D_PDS_FLAGS] = flags
    plen = PDS_LEN_TAB[t]
    if plen < 0:
        return P_UNSUPPORTED_PDS_TYPE
    if plen == 0:
        return P_BAD_PDS_TYPE
    if pds + plen > dend:
        return P_TRUNCATED_PDS
    if (NH_OK_TAB[t] >> nh) & 1 == 0:
        return P_BAD_NEXT_HDR
    d[D_PDS_OFF] = pds
    d[D_PDS_LEN] = plen
    _pds_fields(buf, pds, t, flags, plen, d)
    return _after_pds(buf, pds + plen, dend, t, nh, flags, d)


@hot_stage
def _pds_fields(buf, pds, t, flags, plen, d):
    """Per-type fields (layouts share these positions; asserted at import)."""
    d[D_PSN_OFFSET] = 0
    d[D_PROBE_OPAQUE] = 0
    d[D_NACK_CODE] = 0
    d[D_CC_TYPE] = -1
    if t == S.T_UUD_REQ:
        d[D_PSN] = -1
    else:
        d[D_PSN] = get_field(buf, pds, S.RUD_REQ_PSN)
    if plen >= 12:
        d[D_SPDCID] = get_field(buf, pds, S.RUD_REQ_SPDCID)
        d[D_DPDCID] = get_field(buf, pds, S.RUD_REQ_DPDCID)
    if t == S.T_RUD_REQ or t == S.T_ROD_REQ or t == S.T_RUD_CC_REQ or t == S.T_ROD_CC_REQ:
        d[D_PSN_OFFSET] = get_field(buf, pds, S.RUD_REQ_CLEAR_PSN_OFFSET)
    elif t == S.T_ACK or t == S.T_ACK_CC or t == S.T_ACK_CCX:
        if flags & S.F_ACK_P:
            d[D_PROBE_OPAQUE] = get_field(buf, pds, S.ACK_PROBE_OPAQUE)
        else:
            d[D_PSN_OFFSET] = get_field(buf, pds, S.ACK_ACK_PSN_OFFSET)
        if t != S.T_ACK:
            d[D_CC_TYPE] = get_field(buf, pds, S.ACK_CC_CC_TYPE)
    elif t == S.T_NACK or t == S.T_NACK_CCX:
        d[D_NACK_CODE] = get_field(buf, pds, S.NACK_NACK_CODE)
        if t == S.T_NACK_CCX:
            d[D_CC_TYPE] = get_field(buf, pds, S.NACK_CCX_NCCX_TYPE)
    elif t == S.T_CONTROL:
        d[D_PROBE_OPAQUE] = get_field(buf, pds, S.CONTROL_PROBE_OPAQUE)


@hot_stage
def _after_pds(buf, q, dend, t, nh, flags, d):
    """The Taurus probe header (flag TP), the SES header, the payload."""
    if flags & S.F_TP:
        if q + S.PROBE_SIZE > dend:
            return P_TRUNCATED_PROBE
        _probe(buf, q, d)
        q += S.PROBE_SIZE
    if t != S.T_CONTROL and nh != S.NH_NONE:
        slen = SES_LEN_TAB[nh]
        if q + slen > dend:
            return P_TRUNCATED_SES
        _ses(buf, q, nh, slen, d)
        q += slen
    d[D_PAYLOAD_OFF] = q
    d[D_PAYLOAD_LEN] = dend - q
    return P_OK


@hot_stage
def _probe(buf, q, d):
    """The Taurus probe header at ``q`` (bounds checked by the caller)."""
    d[D_PROBE_OFF] = q
    d[D_PROBE_MODE] = get_field(buf, q, S.PROBE_MODE)
    d[D_PROBE_TS] = get_field(buf, q, S.PROBE_TS)
    d[D_PROBE_SEQ] = get_field(buf, q, S.PROBE_SEQ)


@hot_stage
def _ses(buf, q, nh, slen, d):
    """The SES header of type ``nh`` at ``q`` (bounds checked by the caller)."""
    d[D_SES_OFF] = q
    d[D_SES_TYPE] = nh
    d[D_SES_LEN] = slen
    d[D_SES_OPCODE] = get_field(buf, q, S.SES_STD_OPCODE)
    d[D_SES_FLAGS] = get_field(buf, q, S.SES_STD_FLAGS)
    d[D_SES_JOB_ID] = get_field(buf, q, S.SES_STD_JOB_ID)
    if nh == S.NH_SES_RESP_DATA_SMALL:
        d[D_SES_MSG_ID] = -1
    else:
        d[D_SES_MSG_ID] = get_field(buf, q, S.SES_STD_MESSAGE_ID)


@hot
def parse_frame(buf, base, length, cfg, d, counts):
    """Parse the frame ``buf[base:base+length]`` into ``d``; returns and counts its status."""
    st = _parse(buf, np.int64(base), np.int64(length), cfg, d)
    d[D_STATUS] = st
    counts[st] += 1
    return st


@hot
def parse_rows(data, bases, lengths, cfg, descs, counts):
    """Parse frame i = data[i, bases[i]:bases[i]+lengths[i]] into descs[i] for
    every row (a frame pool's data/length with zero bases, or a test batch)."""
    for i in range(data.shape[0]):
        parse_frame(data[i], bases[i], lengths[i], cfg, descs[i], counts)
