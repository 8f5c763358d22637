"""Parser outcome names, descriptor layout and run-time configuration
(the constants the parser's users index with; re-exported by ``parse``)."""
import numpy as np

from . import spec as S

__all__ = ["PARSE_ERRORS", "N_STATUS", "DESC_FIELDS", "N_DESC", "N_CFG",
           "make_parse_config", "new_desc", "new_counts", "status_counts"]

PARSE_ERRORS = (
    "ok", "not_taurus", "bad_frame_bounds", "truncated_eth", "truncated_csig",
    "truncated_ip", "bad_ip_version", "bad_ihl", "bad_ip_len", "ip_len_exceeds_frame",
    "ip_fragment", "truncated_udp", "bad_udp_len", "truncated_entropy", "truncated_pds",
    "bad_pds_type", "unsupported_pds_type", "bad_next_hdr", "truncated_probe",
    "truncated_ses")
(P_OK, P_NOT_TAURUS, P_BAD_FRAME_BOUNDS, P_TRUNCATED_ETH, P_TRUNCATED_CSIG,
 P_TRUNCATED_IP, P_BAD_IP_VERSION, P_BAD_IHL, P_BAD_IP_LEN, P_IP_LEN_EXCEEDS_FRAME,
 P_IP_FRAGMENT, P_TRUNCATED_UDP, P_BAD_UDP_LEN, P_TRUNCATED_ENTROPY, P_TRUNCATED_PDS,
 P_BAD_PDS_TYPE, P_UNSUPPORTED_PDS_TYPE, P_BAD_NEXT_HDR, P_TRUNCATED_PROBE,
 P_TRUNCATED_SES) = range(len(PARSE_ERRORS))
N_STATUS = len(PARSE_ERRORS)

DESC_FIELDS = (
    "status", "frame_off", "frame_len",
    "csig_fmt", "csig_off", "csig_t", "csig_s", "csig_lm", "csig_d", "ethertype",
    "ip_off", "ip_hlen", "ip_len", "ip_dscp", "ip_ecn", "ip_ttl", "ip_proto", "ip_src", "ip_dst",
    "l4_off", "sport", "dport", "entropy", "dgram_end",
    "pds_off", "pds_len", "pds_type", "pds_next", "pds_flags", "psn", "psn_offset",
    "probe_opaque", "spdcid", "dpdcid", "nack_code", "cc_type",
    "probe_off", "probe_mode", "probe_ts", "probe_seq",
    "ses_off", "ses_type", "ses_len", "ses_opcode", "ses_flags", "ses_msg_id", "ses_job_id",
    "payload_off", "payload_len")
(D_STATUS, D_FRAME_OFF, D_FRAME_LEN,
 D_CSIG_FMT, D_CSIG_OFF, D_CSIG_T, D_CSIG_S, D_CSIG_LM, D_CSIG_D, D_ETHERTYPE,
 D_IP_OFF, D_IP_HLEN, D_IP_LEN, D_IP_DSCP, D_IP_ECN, D_IP_TTL, D_IP_PROTO, D_IP_SRC, D_IP_DST,
 D_L4_OFF, D_SPORT, D_DPORT, D_ENTROPY, D_DGRAM_END,
 D_PDS_OFF, D_PDS_LEN, D_PDS_TYPE, D_PDS_NEXT, D_PDS_FLAGS, D_PSN, D_PSN_OFFSET,
 D_PROBE_OPAQUE, D_SPDCID, D_DPDCID, D_NACK_CODE, D_CC_TYPE,
 D_PROBE_OFF, D_PROBE_MODE, D_PROBE_TS, D_PROBE_SEQ,
 D_SES_OFF, D_SES_TYPE, D_SES_LEN, D_SES_OPCODE, D_SES_FLAGS, D_SES_MSG_ID, D_SES_JOB_ID,
 D_PAYLOAD_OFF, D_PAYLOAD_LEN) = range(len(DESC_FIELDS))
N_DESC = len(DESC_FIELDS)
"""csig_off: base of the spec.CSIGC_*/CSIGW_* locations (the byte after the
TPID, which sits at csig_off - 2).  psn: psn / cack_psn / nack_psn / pkt_id (-1 for UUD).  psn_offset:
clear_psn_offset (requests) or ack_psn_offset (ACKs without P), signed, else 0.
probe_opaque: ACKs with P, CONTROL.  dpdcid: the raw 16 bits (pdc_info on
SYN).  cc_type: cc_type / ccx_type / nccx_type, else -1.  ses_flags: request
flags, or return_code for responses.  ses_msg_id: -1 where SES has none."""

CFG_TPID_COMPACT, CFG_TPID_WIDE, CFG_UDP_PORT, CFG_IP_PROTO = range(4)
N_CFG = 4


def make_parse_config(tpid_compact=S.CSIG_TPID_COMPACT, tpid_wide=S.CSIG_TPID_WIDE,
                      udp_port=S.UET_UDP_PORT, ip_proto=S.UET_IP_PROTO):
    """Run-time parser settings; pass -1 to disable a TPID or native-IP mode."""
    return np.array([tpid_compact, tpid_wide, udp_port, ip_proto], np.int64)


def new_desc(n=None):
    return np.zeros(N_DESC if n is None else (n, N_DESC), np.int64)


def new_counts():
    return np.zeros(N_STATUS, np.int64)


def status_counts(counts):
    """{status name: count} for the non-zero entries."""
    return {PARSE_ERRORS[i]: int(c) for i, c in enumerate(counts) if c}

__all__ += [n for n in list(globals()) if n[:2] in ("P_", "D_") or n.startswith("CFG_")]
