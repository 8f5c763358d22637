"""The single definition of every Taurus wire format.

Scapy layers (``layers.py``), Numba codecs (``codec.py``) and the frame
parser (``parse.py``) are all derived from the ``Header`` descriptions below;
nothing else states an offset.  docs/PROTOCOLS.md summarises it and names
the sources (UET as seen by Wireshark/xdp2, CSIG from the OCP spec).  Where
public material is silent, the choice is ours and is marked **ours** below.

For each header ``H`` with constant prefix ``P`` this module exports:
``P_<FIELD>`` — the field's location tuple ``(byte_off, nbytes, shift, width,
signed)`` for ``codec.get_field/set_field``; ``P_SIZE`` — its length in bytes;
``P_FIELDS`` — all its locations in order (alternative views included).
``python -m taurus.datapath.wire.spec`` prints the full table.

Our layout choices (not from public material):
- ``F_TP`` (0x40, a reserved bit of every PDS prologue): a Taurus probe field
  (``TaurusProbe``, 8 B) follows the PDS header, before any SES header.
- ``TaurusProbe`` = mode (8) | timestamp (40, ns, wraps after 18.3 min; RTTs
  are taken modulo 2**40) | seq (16, detects reordered/stale probe echoes).
  TAURUS §3.3 fixes only the size (8 B) and the three fields.
- ACK_CCX with ``ccx_type`` = ``CCX_CSIG`` (14, a proprietary ccx_type) reflects
  a CSIG tag in its 8-byte ccx state: fmt (2: none/compact/wide) | t (4) |
  d (1) | rsvd (2) | lm (15) | rsvd (4) | s (20) | service_time (16, as in
  ACK_CC NSCC).  Compact values are widened without rescaling.
- The CSIG Scapy layer is the tag minus its TPID (the TPID is the Ethernet
  type field, as for 802.1Q) followed by the encapsulated ethertype, so its
  size equals the tag size (4/8 B).
- SES standard request: ``header_data`` when SOM is set, else
  payload_length + message_offset (xdp2's union, SOM as selector).
- ``sack_bitmap`` bit i (LSB first) = sack base + i (docs/PROTOCOLS.md).
- ACK_CC (NSCC) and ACK_CCX (CSIG) ``service_time``: the receiving host's
  delivery delay into memory (its NIC's last host sample), in units of
  SERVICE_TIME_UNIT_NS (64 ns), saturating at 0xFFFF; 0 without a host model.
- Receive window: a NACK NO_PKT_BUFFER (0x07) carries the receiver's window
  right edge in ``nack_payload``; vendor_code 1 marks a pure window update.
"""
from .layout import Alt, Field, Header, describe, place

# ---- defaults (all configurable at run time) ----
UET_UDP_PORT = 4793
UET_IP_PROTO = 253            # native-IP mode, experimental protocol number
CSIG_TPID_COMPACT = 0x88B5    # not publicly assigned
CSIG_TPID_WIDE = 0x88B6
CSIG_TPID_INTEROP = 0x9900
ETH_P_IP = 0x0800
IPPROTO_UDP = 17
CREDIT_UNIT_BYTES = 256       # htsim's unit for credit/credit_target (not public)
SERVICE_TIME_UNIT_NS = 64     # ours: ACK service_time unit (the receiving host's delay)

# ---- PDS types, next headers, control types ----
T_TSS, T_RUD_REQ, T_ROD_REQ, T_RUDI_REQ, T_RUDI_RESP, T_UUD_REQ = 1, 2, 3, 4, 5, 6
T_ACK, T_ACK_CC, T_ACK_CCX, T_NACK, T_CONTROL, T_NACK_CCX = 7, 8, 9, 10, 11, 12
T_RUD_CC_REQ, T_ROD_CC_REQ = 13, 14
PDS_TYPES = {1: "TSS", 2: "RUD_REQ", 3: "ROD_REQ", 4: "RUDI_REQ", 5: "RUDI_RESP",
             6: "UUD_REQ", 7: "ACK", 8: "ACK_CC", 9: "ACK_CCX", 10: "NACK",
             11: "CONTROL", 12: "NACK_CCX", 13: "RUD_CC_REQ", 14: "ROD_CC_REQ"}

NH_NONE, NH_SES_SMALL, NH_SES_MEDIUM, NH_SES_STD = 0, 1, 2, 3
NH_SES_RESP, NH_SES_RESP_DATA, NH_SES_RESP_DATA_SMALL = 4, 5, 6   # 6: from xdp2
NEXT_HDRS = {0: "NONE", 1: "SES_SMALL", 2: "SES_MEDIUM", 3: "SES_STD",
             4: "SES_RESP", 5: "SES_RESP_DATA", 6: "SES_RESP_DATA_SMALL"}

CTL_NOOP, CTL_REQ_ACK, CTL_CLEAR, CTL_REQ_CLEAR, CTL_CLOSE = 0, 1, 2, 3, 4
CTL_REQ_CLOSE, CTL_PROBE, CTL_CREDIT, CTL_CREDIT_REQ, CTL_NEGOTIATION = 5, 6, 7, 8, 9
CTL_CNP = 10                                 # ours: a congestion notification (DCQCN's NP)
CTL_SRC = 11                                 # ours: Bolt's SRC, from a congested switch
CTL_RESET = 12                               # ours: a sender says a receive PDC is stale (reset.py)
CTL_TYPES = {0: "NOOP", 1: "REQ_ACK", 2: "CLEAR", 3: "REQ_CLEAR", 4: "CLOSE",
             5: "REQ_CLOSE", 6: "PROBE", 7: "CREDIT", 8: "CREDIT_REQ", 9: "NEGOTIATION",
             10: "CNP", 11: "SRC", 12: "RESET"}
# ours: a CNP's ctl_payload says which marks it notifies (both may be set)
CNP_CE, CNP_UE = 0x1, 0x2

# ---- prologue flag bits (7-bit field) ----
F_TP = 0x40                                  # ours: Taurus probe field follows
F_RETX, F_AR, F_SYN = 0x10, 0x08, 0x04       # requests and CONTROL
F_REQ_NP = 0x20                              # ours, requests: receiver, be the CNP notification point
F_REQ_SRC = 0x01                             # ours, requests: a congested switch may send SRC
F_CTL_ISROD = 0x20
F_ACK_M, F_ACK_P, F_ACK_REQ = 0x20, 0x08, 0x06   # ACK: REQ = 0 none, 1 clear, 2 close
F_ACK_UE = 0x01                              # ours: UE (TCD undetermined) seen, apart from M (CE)
ACK_REQ_SHIFT = 1
F_NACK_M, F_NACK_NT = 0x20, 0x08
F_RUDI_M = 0x20

CC_NSCC, CC_CREDIT = 0, 1
CC_TYPES = {0: "NSCC", 1: "CREDIT"}
CCX_CSIG = 14                                # ours: proprietary ccx_type
CCX_TYPES = {14: "CSIG"}

NACK_CODES = {0x01: "TRIMMED", 0x02: "TRIMMED_LASTHOP", 0x03: "TRIMMED_ACK",
              0x04: "NO_PDC", 0x05: "NO_CCC", 0x06: "NO_BITMAP", 0x07: "NO_PKT_BUFFER",
              0x0A: "NO_RESOURCE", 0x0B: "PSN_OOR_WINDOW", 0x0D: "ROD_OOO",
              0x0E: "INV_DPDCID", 0x10: "CLOSING", 0x15: "INVALID_SYN",
              0x17: "NEW_START_PSN", 0x1A: "RCVR_INFER_LOSS"}
NACK_TRIMMED, NACK_TRIMMED_LASTHOP, NACK_RCVR_INFER_LOSS = 0x01, 0x02, 0x1A
NACK_NO_PKT_BUFFER = 0x07
# ours: a NO_PKT_BUFFER NACK carries the receiver's window right edge (the low
# 32 bits of a stream offset: consumed + ring capacity) in nack_payload;
# vendor_code WINDOW_UPDATE = "nothing was lost, the window opened".
NACK_VC_WINDOW_UPDATE = 0x01
# ours: an INVALID_SYN NACK with vendor_code RESET_ASK asks the SYN's sender
# whether the receive PDC its SYN met is stale; nack_payload is the cookie a
# CONTROL RESET must echo (nic/reset.py)
NACK_INVALID_SYN = 0x15
NACK_VC_RESET_ASK = 0x02

SES_OPCODES = {0: "NOOP", 1: "WRITE", 2: "READ", 3: "ATOMIC", 4: "FETCHING_ATOMIC",
               5: "SEND", 6: "RENDEZVOUS_SEND", 7: "DATAGRAM_SEND",
               8: "DEFERRABLE_SEND", 9: "TAGGED_SEND"}
SES_WRITE, SES_READ, SES_SEND = 1, 2, 5
SES_RC = {0: "NULL", 1: "OK", 2: "BAD_GENERATION", 5: "NO_MATCH", 0x22: "TOO_LONG"}
# SES request flags (low 6 bits of byte 1)
SF_DC, SF_IE, SF_REL, SF_HD, SF_EOM, SF_SOM = 0x20, 0x10, 0x08, 0x04, 0x02, 0x01

PROBE_NONE, PROBE_DATA, PROBE_REQ, PROBE_ECHO = 0, 1, 2, 3
PROBE_MODES = {0: "NONE", 1: "DATA", 2: "REQ", 3: "ECHO"}   # ours
PROBE_TS_BITS = 40

CSIG_T_ABW, CSIG_T_ABW_C, CSIG_T_DELAY, CSIG_T_QDEPTH = 0, 1, 2, 3
CSIG_TYPES = {0: "ABW", 1: "ABW_C", 2: "DELAY", 3: "QDEPTH"}
CSIG_NONE, CSIG_COMPACT, CSIG_WIDE = 0, 1, 2
LM_LAST_HOP_COMPACT = 1 << 5
LM_LAST_HOP_WIDE = 1 << 14
"""A locator's top bit, set by host-facing ports of switches with CSIG
``last_hop`` (**ours**): the bottleneck is a path's last hop, which every
path to that receiver shares (an incast), not the core."""
CSIG_FMTS = {0: "NONE", 1: "COMPACT", 2: "WIDE"}

_REQ_FL = ("SRC", "b1", "SYN", "AR", "RETX", "NP", "TP")
_ACK_FL = ("UE", "REQ0", "REQ1", "P", "RETX", "M", "TP")
_NACK_FL = ("b0", "b1", "b2", "NT", "RETX", "M", "TP")
_CTL_FL = ("b0", "b1", "SYN", "AR", "RETX", "ISROD", "TP")
_RUDI_FL = ("b0", "b1", "b2", "b3", "RETX", "M", "TP")


def _prologue(t, flags, nh="next_hdr", nh_enum=NEXT_HDRS, nh_default=0):
    return (Field("type", 5, default=t, enum=PDS_TYPES),
            Field(nh, 4, default=nh_default, enum=nh_enum),
            Field("flags", 7, flags=flags))


_PDC_INFO = Alt(("flags", F_SYN, F_SYN),
                (Field("use_rsv_pdc", 1), Field("pdc_rsvd", 3), Field("psn_offset", 12)),
                (Field("dpdcid", 16),))
_REQ = (Field("clear_psn_offset", 16, signed=True), Field("psn", 32),
        Field("spdcid", 16), _PDC_INFO)
_ACK = (Alt(("flags", F_ACK_P, F_ACK_P), (Field("probe_opaque", 16),),
            (Field("ack_psn_offset", 16, signed=True),)),
        Field("cack_psn", 32), Field("spdcid", 16), Field("dpdcid", 16))
_SACK = (Field("mpr", 8), Field("sack_psn_offset", 16, signed=True), Field("sack_bitmap", 64))
_NACK = (Field("nack_code", 8, default=NACK_TRIMMED, enum=NACK_CODES), Field("vendor_code", 8),
         Field("nack_psn", 32), Field("spdcid", 16), Field("dpdcid", 16),
         Field("nack_payload", 32))
_SES_CMN = (Field("rsvd0", 2), Field("opcode", 6, default=SES_WRITE, enum=SES_OPCODES),
            Field("version", 2), Field("flags", 6, flags=("SOM", "EOM", "HD", "REL", "IE", "DC")),
            Field("message_id", 16), Field("ri_generation", 8), Field("job_id", 24),
            Field("rsvd1", 4), Field("pid_on_fep", 12), Field("rsvd2", 4),
            Field("resource_index", 12))
_SES_RSP = (Field("list", 2), Field("opcode", 6, enum=SES_OPCODES), Field("version", 2),
            Field("return_code", 6, default=1, enum=SES_RC))

ETH = Header("Ether", "ETH", (Field("dst", 48), Field("src", 48), Field("type", 16)),
             "Ethernet II (Scapy's own layer)", scapy=False)
CSIG_C = Header("CSIGCompact", "CSIGC", (
    Field("t", 3, enum=CSIG_TYPES), Field("r", 1), Field("s", 5), Field("lm", 6),
    Field("d", 1), Field("type", 16, default=ETH_P_IP)),
    "CSIG compact tag after its TPID, then the inner ethertype")
CSIG_W = Header("CSIGWide", "CSIGW", (
    Field("lm", 15), Field("d", 1), Field("t", 4, enum=CSIG_TYPES), Field("s", 20),
    Field("r", 8), Field("type", 16, default=ETH_P_IP)),
    "CSIG wide tag after its TPID, then the inner ethertype")
IPV4 = Header("IP", "IPV4", (
    Field("version", 4, default=4), Field("ihl", 4, default=5), Field("dscp", 6),
    Field("ecn", 2), Field("len", 16), Field("id", 16), Field("flags", 3),
    Field("frag", 13), Field("ttl", 8, default=64), Field("proto", 8),
    Field("chksum", 16), Field("src", 32), Field("dst", 32)),
    "IPv4 without options (Scapy's own layer; tos = dscp<<2 | ecn)", scapy=False)
UDP = Header("UDP", "UDP", (Field("sport", 16), Field("dport", 16, default=UET_UDP_PORT),
                            Field("len", 16), Field("chksum", 16)),
             "UDP (Scapy's own layer); sport = entropy value", scapy=False)
ENTROPY = Header("UETEntropy", "ENT", (Field("entropy", 16), Field("rsvd", 16)),
                 "UET native-IP entropy header")
PROLOGUE = Header("PDSPrologue", "PROLOGUE", _prologue(0, None),
                  "PDS prologue alone (types we do not decode, e.g. TSS)")
RUD_REQ = Header("PDSRudReq", "RUD_REQ", _prologue(T_RUD_REQ, _REQ_FL, nh_default=3) + _REQ,
                 "RUD/ROD request")
RUD_CC_REQ = Header("PDSRudCCReq", "RUD_CC_REQ",
                    _prologue(T_RUD_CC_REQ, _REQ_FL, nh_default=3) + _REQ
                    + (Field("ccc_id", 8), Field("credit_target", 24)),
                    "RUD/ROD request with CC state")
RUDI = Header("PDSRudi", "RUDI", _prologue(T_RUDI_REQ, _RUDI_FL, nh_default=3)
              + (Field("rsvd", 16), Field("pkt_id", 32)), "RUDI request/response")
UUD = Header("PDSUud", "UUD", _prologue(T_UUD_REQ, None, nh_default=3) + (Field("rsvd", 16),),
             "UUD request")
ACK = Header("PDSAck", "ACK", _prologue(T_ACK, _ACK_FL) + _ACK, "ACK")
ACK_CC = Header("PDSAckCC", "ACK_CC", _prologue(T_ACK_CC, _ACK_FL) + _ACK + (
    Field("cc_type", 4, enum=CC_TYPES), Field("cc_flags", 4)) + _SACK + (
    Alt(("cc_type", 0xF, CC_CREDIT),
        (Field("credit", 24), Field("credit_rsvd", 24)),
        (Field("service_time", 16), Field("restore_cwnd", 1), Field("rcv_cwnd_pend", 7),
         Field("rcvd_bytes", 24))),
    Field("ooo_count", 16)), "ACK with CC state (NSCC or CREDIT)")
ACK_CCX = Header("PDSAckCCX", "ACK_CCX", _prologue(T_ACK_CCX, _ACK_FL) + _ACK + (
    Field("ccx_type", 4, default=CCX_CSIG, enum=CCX_TYPES), Field("cc_flags", 4)) + _SACK + (
    Alt(("ccx_type", 0xF, CCX_CSIG),
        (Field("rcsig_fmt", 2, enum=CSIG_FMTS), Field("rcsig_t", 4, enum=CSIG_TYPES),
         Field("rcsig_d", 1), Field("rcsig_rsvd0", 2), Field("rcsig_lm", 15),
         Field("rcsig_rsvd1", 4), Field("rcsig_s", 20), Field("service_time", 16)),
        (Field("ccx_state", 64),)),),
    "ACK with extended CC state; ccx_type CSIG reflects a CSIG tag (ours)")
NACK = Header("PDSNack", "NACK", _prologue(T_NACK, _NACK_FL) + _NACK, "NACK")
NACK_CCX = Header("PDSNackCCX", "NACK_CCX", _prologue(T_NACK_CCX, _NACK_FL) + _NACK
                  + (Field("nccx_type", 4), Field("nccx_state", 60)), "NACK with CCX state")
CONTROL = Header("PDSControl", "CONTROL", _prologue(T_CONTROL, _CTL_FL, "ctl_type", CTL_TYPES)
                 + (Field("probe_opaque", 16), Field("psn", 32), Field("spdcid", 16),
                    _PDC_INFO, Field("ctl_payload", 32)),
                 "PDS control packet (PROBE, CREDIT: ctl_payload = credit, ...)")
PROBE = Header("TaurusProbe", "PROBE", (
    Field("mode", 8, default=PROBE_DATA, enum=PROBE_MODES), Field("ts", PROBE_TS_BITS),
    Field("hops", 8), Field("seq", 8)),
    "TAURUS probe field (ours: widths and modes; hops: ECHO's forward-path switch hops)")
SES_SMALL = Header("SESSmall", "SES_SMALL", _SES_CMN + (Field("buffer_offset", 64),),
                   "SES small request")
SES_MEDIUM = Header("SESMedium", "SES_MEDIUM", _SES_CMN + (
    Field("offset_or_hdr_data", 64), Field("initiator", 32), Field("memory_key", 64)),
    "SES medium request")
SES_STD = Header("SESStd", "SES_STD", _SES_CMN + (
    Field("buffer_offset", 64), Field("initiator", 32), Field("memory_key", 64),
    Alt(("flags", SF_SOM, SF_SOM), (Field("header_data", 64),),
        (Field("rsvd3", 16), Field("rsvd4", 2), Field("payload_length", 14),
         Field("message_offset", 32))),
    Field("request_length", 32)), "SES standard request")
SES_RESP = Header("SESResp", "SES_RESP", _SES_RSP + (
    Field("message_id", 16), Field("ri_generation", 8), Field("job_id", 24),
    Field("modified_length", 32)), "SES response")
SES_RESP_DATA = Header("SESRespData", "SES_RESP_DATA", _SES_RSP + (
    Field("message_id", 16), Field("ri_generation", 8), Field("job_id", 24),
    Field("read_request_message_id", 16), Field("rsvd", 4), Field("payload_length", 12),
    Field("modified_length", 32), Field("message_offset", 32)), "SES response with data")
SES_RESP_DATA_SMALL = Header("SESRespDataSmall", "SES_RESP_DATA_SMALL", _SES_RSP + (
    Field("rsvd", 2), Field("payload_length", 14), Field("rsvd1", 8), Field("job_id", 24),
    Field("original_request_psn", 32)), "SES response with small data (xdp2)")

# ---- fabric frames (the software switch) ----
# PFC (802.1Qbb): a MAC control frame, opcode 0x0101, class-enable vector and
# eight pause times in quanta of 512 bit times; quanta 0 resumes the class.
ETH_P_MAC_CONTROL = 0x8808
PFC_PAUSE_OPCODE = 0x0101
PFC_DMAC = 0x0180C2000001
PFC_QUANTUM_BIT_TIMES = 512
PFC = Header("PFCPause", "PFC", (
    Field("opcode", 16, default=PFC_PAUSE_OPCODE), Field("class_enable", 16))
    + tuple(Field(f"quanta{c}", 16) for c in range(8)),
    "PFC pause frame body after the Ethernet header (ethertype 0x8808)")
# HPCC INT, ours: carried as a *trailer* after the IP datagram (Ethernet
# frames may carry bytes beyond the IP total length), so no parser, length or
# checksum changes: ... IP datagram | hop 1 | ... | hop n | INTTail.  The
# sender appends an INTTail with nhop = 0 to ask for INT; each switch inserts
# its hop record before the tail, up to max_hop.  Hop fields as HPCC's ns-3
# code (docs/PROTOCOLS.md): line-rate code (3), ts (24, ns), tx_bytes (20, 128 B
# units), qlen (17, 80 B units).
INT_MAGIC = 0x1A7E
INT_MAX_HOPS = 5
INT_TX_UNIT, INT_QLEN_UNIT = 128, 80
INT_RATES_BPS = (10**9, 2 * 10**9, 5 * 10**9, 10 * 10**9, 25 * 10**9, 40 * 10**9,
                 100 * 10**9, 400 * 10**9)     # line-rate codes 0..7 (ours)
INT_HOP = Header("INTHop", "INTHOP", (
    Field("rate_code", 3), Field("ts", 24), Field("tx_bytes", 20), Field("qlen", 17)),
    "HPCC INT per-hop record (8 B)")
INT_TAIL = Header("INTTail", "INTTAIL", (
    Field("magic", 16, default=INT_MAGIC), Field("nhop", 8),
    Field("max_hop", 8, default=INT_MAX_HOPS)),
    "INT trailer: the last 4 bytes of a frame carrying INT hop records (ours)")

# Bolt SRC (source rate control, NSDI'23), ours: a PDS CONTROL packet of
# ctl_type CTL_SRC that a congested switch sends the sender of a data packet
# flagged F_REQ_SRC (clearing the flag, so later hops send none: Bolt's
# DECWIN), followed by this record.  psn/dpdcid: the data packet's PSN and
# spdcid (the sender's flow); the record: the egress queue the packet met
# (bytes, before it), the port's line rate and the switch hops the data
# packet had crossed (64 - TTL after this switch), as Bolt's ns-3 code
# carries (drain time and a link-rate flag there; bytes and Mbit/s here).
SRC_REC = Header("BoltSRC", "SRC", (
    Field("qlen", 32), Field("rate_mbps", 32), Field("hops", 8), Field("rsvd", 24)),
    "Bolt SRC record after a CONTROL of ctl_type SRC (ours)")

HEADERS = (ETH, CSIG_C, CSIG_W, IPV4, UDP, ENTROPY, PROLOGUE, RUD_REQ, RUD_CC_REQ, RUDI,
           UUD, ACK, ACK_CC, ACK_CCX, NACK, NACK_CCX, CONTROL, PROBE, SES_SMALL,
           SES_MEDIUM, SES_STD, SES_RESP, SES_RESP_DATA, SES_RESP_DATA_SMALL,
           PFC, INT_HOP, INT_TAIL, SRC_REC)

# Fixed bindings: PDS type -> layout; next_hdr -> SES layout; next_hdr values each
# PDS type may carry (CONTROL's 4 bits are ctl_type, checked against CTL_TYPES).
PDS_LAYOUTS = {T_RUD_REQ: RUD_REQ, T_ROD_REQ: RUD_REQ, T_RUDI_REQ: RUDI, T_RUDI_RESP: RUDI,
               T_UUD_REQ: UUD, T_ACK: ACK, T_ACK_CC: ACK_CC, T_ACK_CCX: ACK_CCX,
               T_NACK: NACK, T_CONTROL: CONTROL, T_NACK_CCX: NACK_CCX,
               T_RUD_CC_REQ: RUD_CC_REQ, T_ROD_CC_REQ: RUD_CC_REQ}
PDS_UNSUPPORTED = (T_TSS,)          # known type, not decoded (encryption header)
SES_LAYOUTS = {NH_SES_SMALL: SES_SMALL, NH_SES_MEDIUM: SES_MEDIUM, NH_SES_STD: SES_STD,
               NH_SES_RESP: SES_RESP, NH_SES_RESP_DATA: SES_RESP_DATA,
               NH_SES_RESP_DATA_SMALL: SES_RESP_DATA_SMALL}
_REQ_NH = (NH_SES_SMALL, NH_SES_MEDIUM, NH_SES_STD)
_RSP_NH = (NH_NONE, NH_SES_RESP, NH_SES_RESP_DATA, NH_SES_RESP_DATA_SMALL)
NEXT_HDR_ALLOWED = {T_RUD_REQ: _REQ_NH, T_ROD_REQ: _REQ_NH, T_RUD_CC_REQ: _REQ_NH,
                    T_ROD_CC_REQ: _REQ_NH, T_RUDI_REQ: _REQ_NH, T_UUD_REQ: _REQ_NH,
                    T_RUDI_RESP: _RSP_NH, T_ACK: _RSP_NH, T_ACK_CC: _RSP_NH,
                    T_ACK_CCX: _RSP_NH, T_NACK: _RSP_NH, T_NACK_CCX: _RSP_NH,
                    T_CONTROL: tuple(CTL_TYPES)}

# ---- derived: layouts and flat location constants ----
PLACED = {}     # header name -> [Placed]
SIZES = {}      # header name -> bytes
LOCS = {}       # header name -> {field: loc}


def _derive():
    g = globals()
    for h in HEADERS:
        placed, size = place(h)
        PLACED[h.name], SIZES[h.name] = placed, size
        LOCS[h.name] = {p.field.name: p.loc for p in placed}
        new = {f"{h.prefix}_{p.field.name.upper()}": p.loc for p in placed}
        new[f"{h.prefix}_SIZE"] = size
        new[f"{h.prefix}_FIELDS"] = tuple(p.loc for p in placed)
        for k in new:
            if k in g:
                raise ValueError(f"constant {k} defined twice")
        g.update(new)


_derive()

if __name__ == "__main__":
    print(describe(HEADERS))
