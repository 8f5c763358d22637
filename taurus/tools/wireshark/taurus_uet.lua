-- Taurus Wireshark dissector: UET PDS/SES, entropy header, Taurus probe,
-- Bolt SRC record, CSIG tags, INT trailer (docs/PROTOCOLS.md).
--   tshark -X lua_script:taurus_uet.lua -r capture.pcapng
--   or: taurus dissect --install-wireshark

-- Generated from taurus/datapath/wire/spec.py by taurus.tools.wireshark.generate;
-- do not edit: change spec.py and regenerate.

local FIELDS = {
  {"csig.t", "t", "uint8", base.DEC, {[0]="ABW", [1]="ABW_C", [2]="DELAY", [3]="QDEPTH"}},
  {"csig.r", "r", "uint8", base.DEC, nil},
  {"csig.s", "s", "uint24", base.DEC, nil},
  {"csig.lm", "lm", "uint16", base.DEC, nil},
  {"csig.d", "d", "uint8", base.DEC, nil},
  {"csig.type", "type", "uint16", base.HEX, nil},
  {"uet.entropy.entropy", "entropy", "uint16", base.DEC, nil},
  {"uet.entropy.rsvd", "rsvd", "uint16", base.DEC, nil},
  {"uet.pds.type", "type", "uint8", base.DEC, {[1]="TSS", [2]="RUD_REQ", [3]="ROD_REQ", [4]="RUDI_REQ", [5]="RUDI_RESP", [6]="UUD_REQ", [7]="ACK", [8]="ACK_CC", [9]="ACK_CCX", [10]="NACK", [11]="CONTROL", [12]="NACK_CCX", [13]="RUD_CC_REQ", [14]="ROD_CC_REQ"}},
  {"uet.pds.next_hdr", "next_hdr", "uint8", base.DEC, {[0]="NONE", [1]="SES_SMALL", [2]="SES_MEDIUM", [3]="SES_STD", [4]="SES_RESP", [5]="SES_RESP_DATA", [6]="SES_RESP_DATA_SMALL"}},
  {"uet.pds.flags", "flags", "uint8", base.HEX, nil},
  {"uet.pds.clear_psn_offset", "clear_psn_offset", "int16", base.DEC, nil},
  {"uet.pds.psn", "psn", "uint32", base.DEC, nil},
  {"uet.pds.spdcid", "spdcid", "uint16", base.DEC, nil},
  {"uet.pds.use_rsv_pdc", "use_rsv_pdc", "uint8", base.DEC, nil},
  {"uet.pds.pdc_rsvd", "pdc_rsvd", "uint8", base.DEC, nil},
  {"uet.pds.psn_offset", "psn_offset", "uint16", base.DEC, nil},
  {"uet.pds.dpdcid", "dpdcid", "uint16", base.DEC, nil},
  {"uet.pds.ccc_id", "ccc_id", "uint8", base.DEC, nil},
  {"uet.pds.credit_target", "credit_target", "uint24", base.DEC, nil},
  {"uet.pds.rsvd", "rsvd", "uint16", base.DEC, nil},
  {"uet.pds.pkt_id", "pkt_id", "uint32", base.DEC, nil},
  {"uet.pds.probe_opaque", "probe_opaque", "uint16", base.DEC, nil},
  {"uet.pds.ack_psn_offset", "ack_psn_offset", "int16", base.DEC, nil},
  {"uet.pds.cack_psn", "cack_psn", "uint32", base.DEC, nil},
  {"uet.pds.cc_type", "cc_type", "uint8", base.DEC, {[0]="NSCC", [1]="CREDIT"}},
  {"uet.pds.cc_flags", "cc_flags", "uint8", base.HEX, nil},
  {"uet.pds.mpr", "mpr", "uint8", base.DEC, nil},
  {"uet.pds.sack_psn_offset", "sack_psn_offset", "int16", base.DEC, nil},
  {"uet.pds.sack_bitmap", "sack_bitmap", "uint64", base.HEX, nil},
  {"uet.pds.credit", "credit", "uint24", base.DEC, nil},
  {"uet.pds.credit_rsvd", "credit_rsvd", "uint24", base.DEC, nil},
  {"uet.pds.service_time", "service_time", "uint16", base.DEC, nil},
  {"uet.pds.restore_cwnd", "restore_cwnd", "uint8", base.DEC, nil},
  {"uet.pds.rcv_cwnd_pend", "rcv_cwnd_pend", "uint8", base.DEC, nil},
  {"uet.pds.rcvd_bytes", "rcvd_bytes", "uint24", base.DEC, nil},
  {"uet.pds.ooo_count", "ooo_count", "uint16", base.DEC, nil},
  {"uet.pds.ccx_type", "ccx_type", "uint8", base.DEC, {[14]="CSIG"}},
  {"uet.pds.rcsig_fmt", "rcsig_fmt", "uint8", base.DEC, {[0]="NONE", [1]="COMPACT", [2]="WIDE"}},
  {"uet.pds.rcsig_t", "rcsig_t", "uint8", base.DEC, {[0]="ABW", [1]="ABW_C", [2]="DELAY", [3]="QDEPTH"}},
  {"uet.pds.rcsig_d", "rcsig_d", "uint8", base.DEC, nil},
  {"uet.pds.rcsig_rsvd0", "rcsig_rsvd0", "uint8", base.DEC, nil},
  {"uet.pds.rcsig_lm", "rcsig_lm", "uint16", base.DEC, nil},
  {"uet.pds.rcsig_rsvd1", "rcsig_rsvd1", "uint8", base.DEC, nil},
  {"uet.pds.rcsig_s", "rcsig_s", "uint24", base.DEC, nil},
  {"uet.pds.ccx_state", "ccx_state", "uint64", base.HEX, nil},
  {"uet.pds.nack_code", "nack_code", "uint8", base.DEC, {[1]="TRIMMED", [2]="TRIMMED_LASTHOP", [3]="TRIMMED_ACK", [4]="NO_PDC", [5]="NO_CCC", [6]="NO_BITMAP", [7]="NO_PKT_BUFFER", [10]="NO_RESOURCE", [11]="PSN_OOR_WINDOW", [13]="ROD_OOO", [14]="INV_DPDCID", [16]="CLOSING", [21]="INVALID_SYN", [23]="NEW_START_PSN", [26]="RCVR_INFER_LOSS"}},
  {"uet.pds.vendor_code", "vendor_code", "uint8", base.DEC, nil},
  {"uet.pds.nack_psn", "nack_psn", "uint32", base.DEC, nil},
  {"uet.pds.nack_payload", "nack_payload", "uint32", base.DEC, nil},
  {"uet.pds.nccx_type", "nccx_type", "uint8", base.DEC, nil},
  {"uet.pds.nccx_state", "nccx_state", "uint64", base.HEX, nil},
  {"uet.pds.ctl_type", "ctl_type", "uint8", base.DEC, {[0]="NOOP", [1]="REQ_ACK", [2]="CLEAR", [3]="REQ_CLEAR", [4]="CLOSE", [5]="REQ_CLOSE", [6]="PROBE", [7]="CREDIT", [8]="CREDIT_REQ", [9]="NEGOTIATION", [10]="CNP", [11]="SRC", [12]="RESET"}},
  {"uet.pds.ctl_payload", "ctl_payload", "uint32", base.DEC, nil},
  {"uet.probe.mode", "mode", "uint8", base.DEC, {[0]="NONE", [1]="DATA", [2]="REQ", [3]="ECHO"}},
  {"uet.probe.ts", "ts", "uint64", base.DEC, nil},
  {"uet.probe.hops", "hops", "uint8", base.DEC, nil},
  {"uet.probe.seq", "seq", "uint8", base.DEC, nil},
  {"uet.ses.rsvd0", "rsvd0", "uint8", base.DEC, nil},
  {"uet.ses.opcode", "opcode", "uint8", base.DEC, {[0]="NOOP", [1]="WRITE", [2]="READ", [3]="ATOMIC", [4]="FETCHING_ATOMIC", [5]="SEND", [6]="RENDEZVOUS_SEND", [7]="DATAGRAM_SEND", [8]="DEFERRABLE_SEND", [9]="TAGGED_SEND"}},
  {"uet.ses.version", "version", "uint8", base.DEC, nil},
  {"uet.ses.flags", "flags", "uint8", base.HEX, nil},
  {"uet.ses.message_id", "message_id", "uint16", base.DEC, nil},
  {"uet.ses.ri_generation", "ri_generation", "uint8", base.DEC, nil},
  {"uet.ses.job_id", "job_id", "uint24", base.DEC, nil},
  {"uet.ses.rsvd1", "rsvd1", "uint8", base.DEC, nil},
  {"uet.ses.pid_on_fep", "pid_on_fep", "uint16", base.DEC, nil},
  {"uet.ses.rsvd2", "rsvd2", "uint8", base.DEC, nil},
  {"uet.ses.resource_index", "resource_index", "uint16", base.DEC, nil},
  {"uet.ses.buffer_offset", "buffer_offset", "uint64", base.DEC, nil},
  {"uet.ses.offset_or_hdr_data", "offset_or_hdr_data", "uint64", base.DEC, nil},
  {"uet.ses.initiator", "initiator", "uint32", base.HEX, nil},
  {"uet.ses.memory_key", "memory_key", "uint64", base.HEX, nil},
  {"uet.ses.header_data", "header_data", "uint64", base.HEX, nil},
  {"uet.ses.rsvd3", "rsvd3", "uint16", base.DEC, nil},
  {"uet.ses.rsvd4", "rsvd4", "uint8", base.DEC, nil},
  {"uet.ses.payload_length", "payload_length", "uint16", base.DEC, nil},
  {"uet.ses.message_offset", "message_offset", "uint32", base.DEC, nil},
  {"uet.ses.request_length", "request_length", "uint32", base.DEC, nil},
  {"uet.ses.list", "list", "uint8", base.DEC, nil},
  {"uet.ses.return_code", "return_code", "uint8", base.DEC, {[0]="NULL", [1]="OK", [2]="BAD_GENERATION", [5]="NO_MATCH", [34]="TOO_LONG"}},
  {"uet.ses.modified_length", "modified_length", "uint32", base.DEC, nil},
  {"uet.ses.read_request_message_id", "read_request_message_id", "uint16", base.DEC, nil},
  {"uet.ses.rsvd", "rsvd", "uint8", base.DEC, nil},
  {"uet.ses.original_request_psn", "original_request_psn", "uint32", base.DEC, nil},
  {"uet.int.hop.rate_code", "rate_code", "uint8", base.DEC, nil},
  {"uet.int.hop.ts", "ts", "uint24", base.DEC, nil},
  {"uet.int.hop.tx_bytes", "tx_bytes", "uint24", base.DEC, nil},
  {"uet.int.hop.qlen", "qlen", "uint24", base.DEC, nil},
  {"uet.int.magic", "magic", "uint16", base.HEX, nil},
  {"uet.int.nhop", "nhop", "uint8", base.DEC, nil},
  {"uet.int.max_hop", "max_hop", "uint8", base.DEC, nil},
  {"uet.src.qlen", "qlen", "uint32", base.DEC, nil},
  {"uet.src.rate_mbps", "rate_mbps", "uint32", base.DEC, nil},
  {"uet.src.hops", "hops", "uint8", base.DEC, nil},
  {"uet.src.rsvd", "rsvd", "uint24", base.DEC, nil},
}
local HEADERS = {
  ["CSIGCompact"] = {size=4, label="CSIG compact tag after its TPID, then the inner ethertype", fields={
    {name="t", abbr="csig.t", off=0, nb=1, pos=0, w=3, signed=false, cond=nil, flags=nil},
    {name="r", abbr="csig.r", off=0, nb=1, pos=3, w=1, signed=false, cond=nil, flags=nil},
    {name="s", abbr="csig.s", off=0, nb=2, pos=4, w=5, signed=false, cond=nil, flags=nil},
    {name="lm", abbr="csig.lm", off=1, nb=1, pos=1, w=6, signed=false, cond=nil, flags=nil},
    {name="d", abbr="csig.d", off=1, nb=1, pos=7, w=1, signed=false, cond=nil, flags=nil},
    {name="type", abbr="csig.type", off=2, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
  }},
  ["CSIGWide"] = {size=8, label="CSIG wide tag after its TPID, then the inner ethertype", fields={
    {name="lm", abbr="csig.lm", off=0, nb=2, pos=0, w=15, signed=false, cond=nil, flags=nil},
    {name="d", abbr="csig.d", off=1, nb=1, pos=7, w=1, signed=false, cond=nil, flags=nil},
    {name="t", abbr="csig.t", off=2, nb=1, pos=0, w=4, signed=false, cond=nil, flags=nil},
    {name="s", abbr="csig.s", off=2, nb=3, pos=4, w=20, signed=false, cond=nil, flags=nil},
    {name="r", abbr="csig.r", off=5, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="type", abbr="csig.type", off=6, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
  }},
  ["UETEntropy"] = {size=4, label="UET native-IP entropy header", fields={
    {name="entropy", abbr="uet.entropy.entropy", off=0, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="rsvd", abbr="uet.entropy.rsvd", off=2, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
  }},
  ["PDSPrologue"] = {size=2, label="PDS prologue alone", fields={
    {name="type", abbr="uet.pds.type", off=0, nb=1, pos=0, w=5, signed=false, cond=nil, flags=nil},
    {name="next_hdr", abbr="uet.pds.next_hdr", off=0, nb=2, pos=5, w=4, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.pds.flags", off=1, nb=1, pos=1, w=7, signed=false, cond=nil, flags=nil},
  }},
  ["PDSRudReq"] = {size=12, label="RUD/ROD request", fields={
    {name="type", abbr="uet.pds.type", off=0, nb=1, pos=0, w=5, signed=false, cond=nil, flags=nil},
    {name="next_hdr", abbr="uet.pds.next_hdr", off=0, nb=2, pos=5, w=4, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.pds.flags", off=1, nb=1, pos=1, w=7, signed=false, cond=nil, flags={"SRC", "b1", "SYN", "AR", "RETX", "NP", "TP"}},
    {name="clear_psn_offset", abbr="uet.pds.clear_psn_offset", off=2, nb=2, pos=0, w=16, signed=true, cond=nil, flags=nil},
    {name="psn", abbr="uet.pds.psn", off=4, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="spdcid", abbr="uet.pds.spdcid", off=8, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="use_rsv_pdc", abbr="uet.pds.use_rsv_pdc", off=10, nb=1, pos=0, w=1, signed=false, cond={"flags", 4, 4, true}, flags=nil},
    {name="pdc_rsvd", abbr="uet.pds.pdc_rsvd", off=10, nb=1, pos=1, w=3, signed=false, cond={"flags", 4, 4, true}, flags=nil},
    {name="psn_offset", abbr="uet.pds.psn_offset", off=10, nb=2, pos=4, w=12, signed=false, cond={"flags", 4, 4, true}, flags=nil},
    {name="dpdcid", abbr="uet.pds.dpdcid", off=10, nb=2, pos=0, w=16, signed=false, cond={"flags", 4, 4, false}, flags=nil},
  }},
  ["PDSRudCCReq"] = {size=16, label="RUD/ROD request with CC state", fields={
    {name="type", abbr="uet.pds.type", off=0, nb=1, pos=0, w=5, signed=false, cond=nil, flags=nil},
    {name="next_hdr", abbr="uet.pds.next_hdr", off=0, nb=2, pos=5, w=4, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.pds.flags", off=1, nb=1, pos=1, w=7, signed=false, cond=nil, flags={"SRC", "b1", "SYN", "AR", "RETX", "NP", "TP"}},
    {name="clear_psn_offset", abbr="uet.pds.clear_psn_offset", off=2, nb=2, pos=0, w=16, signed=true, cond=nil, flags=nil},
    {name="psn", abbr="uet.pds.psn", off=4, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="spdcid", abbr="uet.pds.spdcid", off=8, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="use_rsv_pdc", abbr="uet.pds.use_rsv_pdc", off=10, nb=1, pos=0, w=1, signed=false, cond={"flags", 4, 4, true}, flags=nil},
    {name="pdc_rsvd", abbr="uet.pds.pdc_rsvd", off=10, nb=1, pos=1, w=3, signed=false, cond={"flags", 4, 4, true}, flags=nil},
    {name="psn_offset", abbr="uet.pds.psn_offset", off=10, nb=2, pos=4, w=12, signed=false, cond={"flags", 4, 4, true}, flags=nil},
    {name="dpdcid", abbr="uet.pds.dpdcid", off=10, nb=2, pos=0, w=16, signed=false, cond={"flags", 4, 4, false}, flags=nil},
    {name="ccc_id", abbr="uet.pds.ccc_id", off=12, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="credit_target", abbr="uet.pds.credit_target", off=13, nb=3, pos=0, w=24, signed=false, cond=nil, flags=nil},
  }},
  ["PDSRudi"] = {size=8, label="RUDI request/response", fields={
    {name="type", abbr="uet.pds.type", off=0, nb=1, pos=0, w=5, signed=false, cond=nil, flags=nil},
    {name="next_hdr", abbr="uet.pds.next_hdr", off=0, nb=2, pos=5, w=4, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.pds.flags", off=1, nb=1, pos=1, w=7, signed=false, cond=nil, flags={"b0", "b1", "b2", "b3", "RETX", "M", "TP"}},
    {name="rsvd", abbr="uet.pds.rsvd", off=2, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="pkt_id", abbr="uet.pds.pkt_id", off=4, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
  }},
  ["PDSUud"] = {size=4, label="UUD request", fields={
    {name="type", abbr="uet.pds.type", off=0, nb=1, pos=0, w=5, signed=false, cond=nil, flags=nil},
    {name="next_hdr", abbr="uet.pds.next_hdr", off=0, nb=2, pos=5, w=4, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.pds.flags", off=1, nb=1, pos=1, w=7, signed=false, cond=nil, flags=nil},
    {name="rsvd", abbr="uet.pds.rsvd", off=2, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
  }},
  ["PDSAck"] = {size=12, label="ACK", fields={
    {name="type", abbr="uet.pds.type", off=0, nb=1, pos=0, w=5, signed=false, cond=nil, flags=nil},
    {name="next_hdr", abbr="uet.pds.next_hdr", off=0, nb=2, pos=5, w=4, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.pds.flags", off=1, nb=1, pos=1, w=7, signed=false, cond=nil, flags={"UE", "REQ0", "REQ1", "P", "RETX", "M", "TP"}},
    {name="probe_opaque", abbr="uet.pds.probe_opaque", off=2, nb=2, pos=0, w=16, signed=false, cond={"flags", 8, 8, true}, flags=nil},
    {name="ack_psn_offset", abbr="uet.pds.ack_psn_offset", off=2, nb=2, pos=0, w=16, signed=true, cond={"flags", 8, 8, false}, flags=nil},
    {name="cack_psn", abbr="uet.pds.cack_psn", off=4, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="spdcid", abbr="uet.pds.spdcid", off=8, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="dpdcid", abbr="uet.pds.dpdcid", off=10, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
  }},
  ["PDSAckCC"] = {size=32, label="ACK with CC state", fields={
    {name="type", abbr="uet.pds.type", off=0, nb=1, pos=0, w=5, signed=false, cond=nil, flags=nil},
    {name="next_hdr", abbr="uet.pds.next_hdr", off=0, nb=2, pos=5, w=4, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.pds.flags", off=1, nb=1, pos=1, w=7, signed=false, cond=nil, flags={"UE", "REQ0", "REQ1", "P", "RETX", "M", "TP"}},
    {name="probe_opaque", abbr="uet.pds.probe_opaque", off=2, nb=2, pos=0, w=16, signed=false, cond={"flags", 8, 8, true}, flags=nil},
    {name="ack_psn_offset", abbr="uet.pds.ack_psn_offset", off=2, nb=2, pos=0, w=16, signed=true, cond={"flags", 8, 8, false}, flags=nil},
    {name="cack_psn", abbr="uet.pds.cack_psn", off=4, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="spdcid", abbr="uet.pds.spdcid", off=8, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="dpdcid", abbr="uet.pds.dpdcid", off=10, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="cc_type", abbr="uet.pds.cc_type", off=12, nb=1, pos=0, w=4, signed=false, cond=nil, flags=nil},
    {name="cc_flags", abbr="uet.pds.cc_flags", off=12, nb=1, pos=4, w=4, signed=false, cond=nil, flags=nil},
    {name="mpr", abbr="uet.pds.mpr", off=13, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="sack_psn_offset", abbr="uet.pds.sack_psn_offset", off=14, nb=2, pos=0, w=16, signed=true, cond=nil, flags=nil},
    {name="sack_bitmap", abbr="uet.pds.sack_bitmap", off=16, nb=8, pos=0, w=64, signed=false, cond=nil, flags=nil},
    {name="credit", abbr="uet.pds.credit", off=24, nb=3, pos=0, w=24, signed=false, cond={"cc_type", 15, 1, true}, flags=nil},
    {name="credit_rsvd", abbr="uet.pds.credit_rsvd", off=27, nb=3, pos=0, w=24, signed=false, cond={"cc_type", 15, 1, true}, flags=nil},
    {name="service_time", abbr="uet.pds.service_time", off=24, nb=2, pos=0, w=16, signed=false, cond={"cc_type", 15, 1, false}, flags=nil},
    {name="restore_cwnd", abbr="uet.pds.restore_cwnd", off=26, nb=1, pos=0, w=1, signed=false, cond={"cc_type", 15, 1, false}, flags=nil},
    {name="rcv_cwnd_pend", abbr="uet.pds.rcv_cwnd_pend", off=26, nb=1, pos=1, w=7, signed=false, cond={"cc_type", 15, 1, false}, flags=nil},
    {name="rcvd_bytes", abbr="uet.pds.rcvd_bytes", off=27, nb=3, pos=0, w=24, signed=false, cond={"cc_type", 15, 1, false}, flags=nil},
    {name="ooo_count", abbr="uet.pds.ooo_count", off=30, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
  }},
  ["PDSAckCCX"] = {size=32, label="ACK with extended CC state; ccx_type CSIG reflects a CSIG tag", fields={
    {name="type", abbr="uet.pds.type", off=0, nb=1, pos=0, w=5, signed=false, cond=nil, flags=nil},
    {name="next_hdr", abbr="uet.pds.next_hdr", off=0, nb=2, pos=5, w=4, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.pds.flags", off=1, nb=1, pos=1, w=7, signed=false, cond=nil, flags={"UE", "REQ0", "REQ1", "P", "RETX", "M", "TP"}},
    {name="probe_opaque", abbr="uet.pds.probe_opaque", off=2, nb=2, pos=0, w=16, signed=false, cond={"flags", 8, 8, true}, flags=nil},
    {name="ack_psn_offset", abbr="uet.pds.ack_psn_offset", off=2, nb=2, pos=0, w=16, signed=true, cond={"flags", 8, 8, false}, flags=nil},
    {name="cack_psn", abbr="uet.pds.cack_psn", off=4, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="spdcid", abbr="uet.pds.spdcid", off=8, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="dpdcid", abbr="uet.pds.dpdcid", off=10, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="ccx_type", abbr="uet.pds.ccx_type", off=12, nb=1, pos=0, w=4, signed=false, cond=nil, flags=nil},
    {name="cc_flags", abbr="uet.pds.cc_flags", off=12, nb=1, pos=4, w=4, signed=false, cond=nil, flags=nil},
    {name="mpr", abbr="uet.pds.mpr", off=13, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="sack_psn_offset", abbr="uet.pds.sack_psn_offset", off=14, nb=2, pos=0, w=16, signed=true, cond=nil, flags=nil},
    {name="sack_bitmap", abbr="uet.pds.sack_bitmap", off=16, nb=8, pos=0, w=64, signed=false, cond=nil, flags=nil},
    {name="rcsig_fmt", abbr="uet.pds.rcsig_fmt", off=24, nb=1, pos=0, w=2, signed=false, cond={"ccx_type", 15, 14, true}, flags=nil},
    {name="rcsig_t", abbr="uet.pds.rcsig_t", off=24, nb=1, pos=2, w=4, signed=false, cond={"ccx_type", 15, 14, true}, flags=nil},
    {name="rcsig_d", abbr="uet.pds.rcsig_d", off=24, nb=1, pos=6, w=1, signed=false, cond={"ccx_type", 15, 14, true}, flags=nil},
    {name="rcsig_rsvd0", abbr="uet.pds.rcsig_rsvd0", off=24, nb=2, pos=7, w=2, signed=false, cond={"ccx_type", 15, 14, true}, flags=nil},
    {name="rcsig_lm", abbr="uet.pds.rcsig_lm", off=25, nb=2, pos=1, w=15, signed=false, cond={"ccx_type", 15, 14, true}, flags=nil},
    {name="rcsig_rsvd1", abbr="uet.pds.rcsig_rsvd1", off=27, nb=1, pos=0, w=4, signed=false, cond={"ccx_type", 15, 14, true}, flags=nil},
    {name="rcsig_s", abbr="uet.pds.rcsig_s", off=27, nb=3, pos=4, w=20, signed=false, cond={"ccx_type", 15, 14, true}, flags=nil},
    {name="service_time", abbr="uet.pds.service_time", off=30, nb=2, pos=0, w=16, signed=false, cond={"ccx_type", 15, 14, true}, flags=nil},
    {name="ccx_state", abbr="uet.pds.ccx_state", off=24, nb=8, pos=0, w=64, signed=false, cond={"ccx_type", 15, 14, false}, flags=nil},
  }},
  ["PDSNack"] = {size=16, label="NACK", fields={
    {name="type", abbr="uet.pds.type", off=0, nb=1, pos=0, w=5, signed=false, cond=nil, flags=nil},
    {name="next_hdr", abbr="uet.pds.next_hdr", off=0, nb=2, pos=5, w=4, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.pds.flags", off=1, nb=1, pos=1, w=7, signed=false, cond=nil, flags={"b0", "b1", "b2", "NT", "RETX", "M", "TP"}},
    {name="nack_code", abbr="uet.pds.nack_code", off=2, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="vendor_code", abbr="uet.pds.vendor_code", off=3, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="nack_psn", abbr="uet.pds.nack_psn", off=4, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="spdcid", abbr="uet.pds.spdcid", off=8, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="dpdcid", abbr="uet.pds.dpdcid", off=10, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="nack_payload", abbr="uet.pds.nack_payload", off=12, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
  }},
  ["PDSNackCCX"] = {size=24, label="NACK with CCX state", fields={
    {name="type", abbr="uet.pds.type", off=0, nb=1, pos=0, w=5, signed=false, cond=nil, flags=nil},
    {name="next_hdr", abbr="uet.pds.next_hdr", off=0, nb=2, pos=5, w=4, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.pds.flags", off=1, nb=1, pos=1, w=7, signed=false, cond=nil, flags={"b0", "b1", "b2", "NT", "RETX", "M", "TP"}},
    {name="nack_code", abbr="uet.pds.nack_code", off=2, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="vendor_code", abbr="uet.pds.vendor_code", off=3, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="nack_psn", abbr="uet.pds.nack_psn", off=4, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="spdcid", abbr="uet.pds.spdcid", off=8, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="dpdcid", abbr="uet.pds.dpdcid", off=10, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="nack_payload", abbr="uet.pds.nack_payload", off=12, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="nccx_type", abbr="uet.pds.nccx_type", off=16, nb=1, pos=0, w=4, signed=false, cond=nil, flags=nil},
    {name="nccx_state", abbr="uet.pds.nccx_state", off=16, nb=8, pos=4, w=60, signed=false, cond=nil, flags=nil},
  }},
  ["PDSControl"] = {size=16, label="PDS control packet", fields={
    {name="type", abbr="uet.pds.type", off=0, nb=1, pos=0, w=5, signed=false, cond=nil, flags=nil},
    {name="ctl_type", abbr="uet.pds.ctl_type", off=0, nb=2, pos=5, w=4, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.pds.flags", off=1, nb=1, pos=1, w=7, signed=false, cond=nil, flags={"b0", "b1", "SYN", "AR", "RETX", "ISROD", "TP"}},
    {name="probe_opaque", abbr="uet.pds.probe_opaque", off=2, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="psn", abbr="uet.pds.psn", off=4, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="spdcid", abbr="uet.pds.spdcid", off=8, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="use_rsv_pdc", abbr="uet.pds.use_rsv_pdc", off=10, nb=1, pos=0, w=1, signed=false, cond={"flags", 4, 4, true}, flags=nil},
    {name="pdc_rsvd", abbr="uet.pds.pdc_rsvd", off=10, nb=1, pos=1, w=3, signed=false, cond={"flags", 4, 4, true}, flags=nil},
    {name="psn_offset", abbr="uet.pds.psn_offset", off=10, nb=2, pos=4, w=12, signed=false, cond={"flags", 4, 4, true}, flags=nil},
    {name="dpdcid", abbr="uet.pds.dpdcid", off=10, nb=2, pos=0, w=16, signed=false, cond={"flags", 4, 4, false}, flags=nil},
    {name="ctl_payload", abbr="uet.pds.ctl_payload", off=12, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
  }},
  ["TaurusProbe"] = {size=8, label="TAURUS probe field", fields={
    {name="mode", abbr="uet.probe.mode", off=0, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="ts", abbr="uet.probe.ts", off=1, nb=5, pos=0, w=40, signed=false, cond=nil, flags=nil},
    {name="hops", abbr="uet.probe.hops", off=6, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="seq", abbr="uet.probe.seq", off=7, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
  }},
  ["SESSmall"] = {size=20, label="SES small request", fields={
    {name="rsvd0", abbr="uet.ses.rsvd0", off=0, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="opcode", abbr="uet.ses.opcode", off=0, nb=1, pos=2, w=6, signed=false, cond=nil, flags=nil},
    {name="version", abbr="uet.ses.version", off=1, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.ses.flags", off=1, nb=1, pos=2, w=6, signed=false, cond=nil, flags={"SOM", "EOM", "HD", "REL", "IE", "DC"}},
    {name="message_id", abbr="uet.ses.message_id", off=2, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="ri_generation", abbr="uet.ses.ri_generation", off=4, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="job_id", abbr="uet.ses.job_id", off=5, nb=3, pos=0, w=24, signed=false, cond=nil, flags=nil},
    {name="rsvd1", abbr="uet.ses.rsvd1", off=8, nb=1, pos=0, w=4, signed=false, cond=nil, flags=nil},
    {name="pid_on_fep", abbr="uet.ses.pid_on_fep", off=8, nb=2, pos=4, w=12, signed=false, cond=nil, flags=nil},
    {name="rsvd2", abbr="uet.ses.rsvd2", off=10, nb=1, pos=0, w=4, signed=false, cond=nil, flags=nil},
    {name="resource_index", abbr="uet.ses.resource_index", off=10, nb=2, pos=4, w=12, signed=false, cond=nil, flags=nil},
    {name="buffer_offset", abbr="uet.ses.buffer_offset", off=12, nb=8, pos=0, w=64, signed=false, cond=nil, flags=nil},
  }},
  ["SESMedium"] = {size=32, label="SES medium request", fields={
    {name="rsvd0", abbr="uet.ses.rsvd0", off=0, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="opcode", abbr="uet.ses.opcode", off=0, nb=1, pos=2, w=6, signed=false, cond=nil, flags=nil},
    {name="version", abbr="uet.ses.version", off=1, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.ses.flags", off=1, nb=1, pos=2, w=6, signed=false, cond=nil, flags={"SOM", "EOM", "HD", "REL", "IE", "DC"}},
    {name="message_id", abbr="uet.ses.message_id", off=2, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="ri_generation", abbr="uet.ses.ri_generation", off=4, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="job_id", abbr="uet.ses.job_id", off=5, nb=3, pos=0, w=24, signed=false, cond=nil, flags=nil},
    {name="rsvd1", abbr="uet.ses.rsvd1", off=8, nb=1, pos=0, w=4, signed=false, cond=nil, flags=nil},
    {name="pid_on_fep", abbr="uet.ses.pid_on_fep", off=8, nb=2, pos=4, w=12, signed=false, cond=nil, flags=nil},
    {name="rsvd2", abbr="uet.ses.rsvd2", off=10, nb=1, pos=0, w=4, signed=false, cond=nil, flags=nil},
    {name="resource_index", abbr="uet.ses.resource_index", off=10, nb=2, pos=4, w=12, signed=false, cond=nil, flags=nil},
    {name="offset_or_hdr_data", abbr="uet.ses.offset_or_hdr_data", off=12, nb=8, pos=0, w=64, signed=false, cond=nil, flags=nil},
    {name="initiator", abbr="uet.ses.initiator", off=20, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="memory_key", abbr="uet.ses.memory_key", off=24, nb=8, pos=0, w=64, signed=false, cond=nil, flags=nil},
  }},
  ["SESStd"] = {size=44, label="SES standard request", fields={
    {name="rsvd0", abbr="uet.ses.rsvd0", off=0, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="opcode", abbr="uet.ses.opcode", off=0, nb=1, pos=2, w=6, signed=false, cond=nil, flags=nil},
    {name="version", abbr="uet.ses.version", off=1, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="flags", abbr="uet.ses.flags", off=1, nb=1, pos=2, w=6, signed=false, cond=nil, flags={"SOM", "EOM", "HD", "REL", "IE", "DC"}},
    {name="message_id", abbr="uet.ses.message_id", off=2, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="ri_generation", abbr="uet.ses.ri_generation", off=4, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="job_id", abbr="uet.ses.job_id", off=5, nb=3, pos=0, w=24, signed=false, cond=nil, flags=nil},
    {name="rsvd1", abbr="uet.ses.rsvd1", off=8, nb=1, pos=0, w=4, signed=false, cond=nil, flags=nil},
    {name="pid_on_fep", abbr="uet.ses.pid_on_fep", off=8, nb=2, pos=4, w=12, signed=false, cond=nil, flags=nil},
    {name="rsvd2", abbr="uet.ses.rsvd2", off=10, nb=1, pos=0, w=4, signed=false, cond=nil, flags=nil},
    {name="resource_index", abbr="uet.ses.resource_index", off=10, nb=2, pos=4, w=12, signed=false, cond=nil, flags=nil},
    {name="buffer_offset", abbr="uet.ses.buffer_offset", off=12, nb=8, pos=0, w=64, signed=false, cond=nil, flags=nil},
    {name="initiator", abbr="uet.ses.initiator", off=20, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="memory_key", abbr="uet.ses.memory_key", off=24, nb=8, pos=0, w=64, signed=false, cond=nil, flags=nil},
    {name="header_data", abbr="uet.ses.header_data", off=32, nb=8, pos=0, w=64, signed=false, cond={"flags", 1, 1, true}, flags=nil},
    {name="rsvd3", abbr="uet.ses.rsvd3", off=32, nb=2, pos=0, w=16, signed=false, cond={"flags", 1, 1, false}, flags=nil},
    {name="rsvd4", abbr="uet.ses.rsvd4", off=34, nb=1, pos=0, w=2, signed=false, cond={"flags", 1, 1, false}, flags=nil},
    {name="payload_length", abbr="uet.ses.payload_length", off=34, nb=2, pos=2, w=14, signed=false, cond={"flags", 1, 1, false}, flags=nil},
    {name="message_offset", abbr="uet.ses.message_offset", off=36, nb=4, pos=0, w=32, signed=false, cond={"flags", 1, 1, false}, flags=nil},
    {name="request_length", abbr="uet.ses.request_length", off=40, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
  }},
  ["SESResp"] = {size=12, label="SES response", fields={
    {name="list", abbr="uet.ses.list", off=0, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="opcode", abbr="uet.ses.opcode", off=0, nb=1, pos=2, w=6, signed=false, cond=nil, flags=nil},
    {name="version", abbr="uet.ses.version", off=1, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="return_code", abbr="uet.ses.return_code", off=1, nb=1, pos=2, w=6, signed=false, cond=nil, flags=nil},
    {name="message_id", abbr="uet.ses.message_id", off=2, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="ri_generation", abbr="uet.ses.ri_generation", off=4, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="job_id", abbr="uet.ses.job_id", off=5, nb=3, pos=0, w=24, signed=false, cond=nil, flags=nil},
    {name="modified_length", abbr="uet.ses.modified_length", off=8, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
  }},
  ["SESRespData"] = {size=20, label="SES response with data", fields={
    {name="list", abbr="uet.ses.list", off=0, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="opcode", abbr="uet.ses.opcode", off=0, nb=1, pos=2, w=6, signed=false, cond=nil, flags=nil},
    {name="version", abbr="uet.ses.version", off=1, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="return_code", abbr="uet.ses.return_code", off=1, nb=1, pos=2, w=6, signed=false, cond=nil, flags=nil},
    {name="message_id", abbr="uet.ses.message_id", off=2, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="ri_generation", abbr="uet.ses.ri_generation", off=4, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="job_id", abbr="uet.ses.job_id", off=5, nb=3, pos=0, w=24, signed=false, cond=nil, flags=nil},
    {name="read_request_message_id", abbr="uet.ses.read_request_message_id", off=8, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="rsvd", abbr="uet.ses.rsvd", off=10, nb=1, pos=0, w=4, signed=false, cond=nil, flags=nil},
    {name="payload_length", abbr="uet.ses.payload_length", off=10, nb=2, pos=4, w=12, signed=false, cond=nil, flags=nil},
    {name="modified_length", abbr="uet.ses.modified_length", off=12, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="message_offset", abbr="uet.ses.message_offset", off=16, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
  }},
  ["SESRespDataSmall"] = {size=12, label="SES response with small data", fields={
    {name="list", abbr="uet.ses.list", off=0, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="opcode", abbr="uet.ses.opcode", off=0, nb=1, pos=2, w=6, signed=false, cond=nil, flags=nil},
    {name="version", abbr="uet.ses.version", off=1, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="return_code", abbr="uet.ses.return_code", off=1, nb=1, pos=2, w=6, signed=false, cond=nil, flags=nil},
    {name="rsvd", abbr="uet.ses.rsvd", off=2, nb=1, pos=0, w=2, signed=false, cond=nil, flags=nil},
    {name="payload_length", abbr="uet.ses.payload_length", off=2, nb=2, pos=2, w=14, signed=false, cond=nil, flags=nil},
    {name="rsvd1", abbr="uet.ses.rsvd1", off=4, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="job_id", abbr="uet.ses.job_id", off=5, nb=3, pos=0, w=24, signed=false, cond=nil, flags=nil},
    {name="original_request_psn", abbr="uet.ses.original_request_psn", off=8, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
  }},
  ["INTHop"] = {size=8, label="HPCC INT per-hop record", fields={
    {name="rate_code", abbr="uet.int.hop.rate_code", off=0, nb=1, pos=0, w=3, signed=false, cond=nil, flags=nil},
    {name="ts", abbr="uet.int.hop.ts", off=0, nb=4, pos=3, w=24, signed=false, cond=nil, flags=nil},
    {name="tx_bytes", abbr="uet.int.hop.tx_bytes", off=3, nb=3, pos=3, w=20, signed=false, cond=nil, flags=nil},
    {name="qlen", abbr="uet.int.hop.qlen", off=5, nb=3, pos=7, w=17, signed=false, cond=nil, flags=nil},
  }},
  ["INTTail"] = {size=4, label="INT trailer: the last 4 bytes of a frame carrying INT hop records", fields={
    {name="magic", abbr="uet.int.magic", off=0, nb=2, pos=0, w=16, signed=false, cond=nil, flags=nil},
    {name="nhop", abbr="uet.int.nhop", off=2, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="max_hop", abbr="uet.int.max_hop", off=3, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
  }},
  ["BoltSRC"] = {size=12, label="Bolt SRC record after a CONTROL of ctl_type SRC", fields={
    {name="qlen", abbr="uet.src.qlen", off=0, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="rate_mbps", abbr="uet.src.rate_mbps", off=4, nb=4, pos=0, w=32, signed=false, cond=nil, flags=nil},
    {name="hops", abbr="uet.src.hops", off=8, nb=1, pos=0, w=8, signed=false, cond=nil, flags=nil},
    {name="rsvd", abbr="uet.src.rsvd", off=9, nb=3, pos=0, w=24, signed=false, cond=nil, flags=nil},
  }},
}
local PDS_BY_TYPE = {[2]="PDSRudReq", [3]="PDSRudReq", [4]="PDSRudi", [5]="PDSRudi", [6]="PDSUud", [7]="PDSAck", [8]="PDSAckCC", [9]="PDSAckCCX", [10]="PDSNack", [11]="PDSControl", [12]="PDSNackCCX", [13]="PDSRudCCReq", [14]="PDSRudCCReq"}
local SES_BY_NH = {[1]="SESSmall", [2]="SESMedium", [3]="SESStd", [4]="SESResp", [5]="SESRespData", [6]="SESRespDataSmall"}
local PDS_TYPES = {[1]="TSS", [2]="RUD_REQ", [3]="ROD_REQ", [4]="RUDI_REQ", [5]="RUDI_RESP", [6]="UUD_REQ", [7]="ACK", [8]="ACK_CC", [9]="ACK_CCX", [10]="NACK", [11]="CONTROL", [12]="NACK_CCX", [13]="RUD_CC_REQ", [14]="ROD_CC_REQ"}
local CTL_TYPES = {[0]="NOOP", [1]="REQ_ACK", [2]="CLEAR", [3]="REQ_CLEAR", [4]="CLOSE", [5]="REQ_CLOSE", [6]="PROBE", [7]="CREDIT", [8]="CREDIT_REQ", [9]="NEGOTIATION", [10]="CNP", [11]="SRC", [12]="RESET"}
local C = {UET_UDP_PORT=4793, UET_IP_PROTO=253, CSIG_TPID_COMPACT=34997, CSIG_TPID_WIDE=34998, ETH_P_IP=2048, T_CONTROL=11, CTL_SRC=11, F_TP=64, INT_MAGIC=6782, ETH_SIZE=14, IPV4_SIZE=20}
local IPV4_LEN = {off=2, nb=2}

-- The interpreter of the generated tables above: it knows the dispatch
-- (layers.py's order) but no offset.  Every field is read as its location
-- says: nb bytes at off, bits pos..pos+w from the most significant bit.

-- Lua 5.2 (Wireshark 4.0) has bit32; 5.4 (Wireshark >= 4.4) has operators.
local int = math.tointeger or function(x) return x end
local band = (bit32 and bit32.band) or (bit and bit.band)
  or load("return function(a, b) return math.tointeger(a) & math.tointeger(b) end")()

local p_uet = Proto("uet", "Ultra Ethernet Transport (Taurus)")
local p_uet_ip = Proto("uet_ip", "UET over IP (entropy header)")
local p_csig = Proto("csig", "CSIG compact tag")
local p_csig_wide = Proto("csig_wide", "CSIG wide tag")
local p_int = Proto("uet_int", "Taurus INT trailer")

p_uet.prefs.udp_port = Pref.uint("UDP port", C.UET_UDP_PORT, "UDP destination port of UET")
p_uet.prefs.ip_proto = Pref.uint("IP protocol", C.UET_IP_PROTO, "IP protocol of UET over IP")
p_uet.prefs.tpid_compact = Pref.uint("CSIG compact TPID", C.CSIG_TPID_COMPACT, "ethertype")
p_uet.prefs.tpid_wide = Pref.uint("CSIG wide TPID", C.CSIG_TPID_WIDE, "ethertype")

local pf = {}
local uet_list, csig_list = {}, {}
for _, d in ipairs(FIELDS) do
  local abbr, label, ftype, fbase, enum = d[1], d[2], d[3], d[4], d[5]
  pf[abbr] = ProtoField[ftype](abbr, label, fbase, enum)
  if abbr:sub(1, 5) == "csig." then
    csig_list[#csig_list + 1] = pf[abbr]
  else
    uet_list[#uet_list + 1] = pf[abbr]
  end
end
p_uet.fields = uet_list
p_csig.fields = csig_list

local function holds(cond, vals)
  if cond == nil then return true end
  local v = vals[cond[1]] or 0
  return (band(v, cond[2]) == cond[3]) == cond[4]
end

local function flag_text(v, names)
  local set = {}
  for i, n in ipairs(names) do
    if band(v, int(2 ^ (i - 1))) ~= 0 and not n:match("^b%d$") then set[#set + 1] = n end
  end
  return #set > 0 and (" (" .. table.concat(set, ", ") .. ")") or ""
end

-- One header at off under tree: its fields, as the spec places them.
-- Returns the field values and the offset after it, or nil if truncated.
local function header(tvb, off, tree, hname, label)
  local h = HEADERS[hname]
  if tvb:len() < off + h.size then
    tree:add(tvb:range(off), hname .. ": truncated")
    return nil, off
  end
  local sub = tree:add(tvb:range(off, h.size), label or h.label)
  local vals = {}
  for _, f in ipairs(h.fields) do
    if holds(f.cond, vals) then
      local r = tvb:range(off + f.off, f.nb)
      local v = r:bitfield(f.pos, f.w)
      if f.signed and v >= 2 ^ (f.w - 1) then v = int(v - 2 ^ f.w) end
      vals[f.name] = v
      local item = sub:add(pf[f.abbr], r, v)
      if f.flags then item:append_text(flag_text(v, f.flags)) end
    end
  end
  return vals, off + h.size
end

local data = Dissector.get("data")

local function rest(tvb, off, pinfo, tree)
  if tvb:len() > off then data:call(tvb:range(off):tvb(), pinfo, tree) end
end

-- PDS header, then [probe], then SES by next_hdr (or, for CONTROL, the SRC record).
local function dissect_pds(tvb, off, pinfo, root)
  pinfo.cols.protocol = "UET"
  if tvb:len() < off + 2 then return end
  local t = tvb:range(off, 1):bitfield(0, 5)
  local hname = PDS_BY_TYPE[t] or "PDSPrologue"
  local v, o = header(tvb, off, root, hname, "PDS " .. (PDS_TYPES[t] or tostring(t)))
  if v == nil then return end
  local info = "UET " .. (PDS_TYPES[t] or ("type " .. t))
  if v.psn then info = info .. " psn=" .. v.psn end
  if v.cack_psn then info = info .. " cack_psn=" .. v.cack_psn end
  if v.nack_psn then info = info .. " nack_psn=" .. v.nack_psn end
  if hname == "PDSPrologue" then
    pinfo.cols.info = info
    return rest(tvb, o, pinfo, root)
  end
  if band(v.flags, C.F_TP) ~= 0 then
    local pv
    pv, o = header(tvb, o, root, "TaurusProbe")
    if pv == nil then return end
    info = info .. " +probe"
  end
  if t == C.T_CONTROL then
    info = info .. " " .. (CTL_TYPES[v.ctl_type] or tostring(v.ctl_type))
    if v.ctl_type == C.CTL_SRC then
      local sv
      sv, o = header(tvb, o, root, "BoltSRC")
      if sv == nil then return end
    end
  elseif SES_BY_NH[v.next_hdr] then
    local sv
    sv, o = header(tvb, o, root, SES_BY_NH[v.next_hdr])
    if sv == nil then return end
  end
  pinfo.cols.info = info
  rest(tvb, o, pinfo, root)
end

function p_uet.dissector(tvb, pinfo, tree)
  dissect_pds(tvb, 0, pinfo, tree:add(p_uet, tvb:range(0)))
  return tvb:len()
end

function p_uet_ip.dissector(tvb, pinfo, tree)
  local root = tree:add(p_uet, tvb:range(0))
  local v, o = header(tvb, 0, root, "UETEntropy")
  if v ~= nil then dissect_pds(tvb, o, pinfo, root) end
  return tvb:len()
end

-- A CSIG tag: the tag after its TPID, then the inner ethertype's dissector.
local function csig(hname, proto)
  return function(tvb, pinfo, tree)
    local root = tree:add(proto, tvb:range(0, math.min(tvb:len(), HEADERS[hname].size)))
    local v, o = header(tvb, 0, root, hname, hname)
    if v == nil then return tvb:len() end
    local n = DissectorTable.get("ethertype"):try(v.type, tvb:range(o):tvb(), pinfo, tree)
    return o + n
  end
end
p_csig.dissector = csig("CSIGCompact", p_csig)
p_csig_wide.dissector = csig("CSIGWide", p_csig_wide)

-- The INT trailer rides after the IP datagram, in bytes Ethernet carries
-- beyond it, so it is found from the whole frame: hop records, then a tail
-- whose magic ends the frame.
function p_int.dissector(tvb, pinfo, tree)
  local n = tvb:len()
  if n ~= tvb:reported_len() or n < C.ETH_SIZE + C.IPV4_SIZE + HEADERS.INTTail.size then return end
  local o, et = C.ETH_SIZE, tvb:range(C.ETH_SIZE - 2, 2):uint()
  if et == p_uet.prefs.tpid_compact or et == p_uet.prefs.tpid_wide then
    local size = HEADERS[et == p_uet.prefs.tpid_compact and "CSIGCompact" or "CSIGWide"].size
    et = tvb:range(o + size - 2, 2):uint()
    o = o + size
  end
  if et ~= C.ETH_P_IP or n < o + C.IPV4_SIZE then return end
  local ip_end = o + tvb:range(o + IPV4_LEN.off, IPV4_LEN.nb):uint()
  local ts = HEADERS.INTTail.size
  if n - ip_end < ts or tvb:range(n - ts, 2):uint() ~= C.INT_MAGIC then return end
  local nhop = tvb:range(n - ts + 2, 1):uint()
  local first = n - ts - nhop * HEADERS.INTHop.size
  if first < ip_end then return end
  local root = tree:add(p_int, tvb:range(first, n - first))
  for k = 0, nhop - 1 do
    header(tvb, first + k * HEADERS.INTHop.size, root, "INTHop", "INT hop " .. (k + 1))
  end
  header(tvb, n - ts, root, "INTTail", "INT tail")
end

-- UDP's lower port is tried first and the source port is an entropy value,
-- so a heuristic on the destination port catches what the port table misses
-- (with udp.try_heuristic_first).
local function heur_udp(tvb, pinfo, tree)
  if pinfo.dst_port ~= p_uet.prefs.udp_port then return false end
  p_uet.dissector(tvb, pinfo, tree)
  return true
end

local bound = {}
local function bind()
  if bound.udp then DissectorTable.get("udp.port"):remove(bound.udp, p_uet) end
  if bound.ip then DissectorTable.get("ip.proto"):remove(bound.ip, p_uet_ip) end
  if bound.tc then DissectorTable.get("ethertype"):remove(bound.tc, p_csig) end
  if bound.tw then DissectorTable.get("ethertype"):remove(bound.tw, p_csig_wide) end
  bound = {udp = p_uet.prefs.udp_port, ip = p_uet.prefs.ip_proto,
           tc = p_uet.prefs.tpid_compact, tw = p_uet.prefs.tpid_wide}
  DissectorTable.get("udp.port"):add(bound.udp, p_uet)
  DissectorTable.get("ip.proto"):add(bound.ip, p_uet_ip)
  DissectorTable.get("ethertype"):add(bound.tc, p_csig)
  DissectorTable.get("ethertype"):add(bound.tw, p_csig_wide)
end
bind()
p_uet.prefs_changed = bind
p_uet:register_heuristic("udp", heur_udp)
register_postdissector(p_int)
