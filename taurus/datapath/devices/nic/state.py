"""Host NIC state: every array the transport touches, for all NICs of an engine.

One connection (PDC) per flow and one congestion context (CCC) per flow: the
sender's PDC id is its flow index, the receiver's PDC id is its rx-PDC index
(both start at 1; 0 means "none", so zero-filled arrays are empty tables).
A peer may have many PDCs.  Rows are int64 tables with named columns:

- ``nr[n, NR_*]``   per NIC (n = E.devs.regs[d, DR_SLOT]).
- ``fl[f, FL_*]``   per sending flow: PSNs, in-flight, RTT, message queue, ...
- ``ctx[f, CX_*]``  rate / cwnd / credit / version: the future shared CC
                    context table the agent writes; the scheduler reads only it.
- ``sig[f, SG_*]``  per-flow signals (signals.py fills them).
- ``sl_*[f, psn % W]`` per-PSN sender slots (state, stream offset, length,
  send time).
- ``rp[r, RP_*]``, ``rs_*[r, psn % W]`` per receive PDC.
- ``mq[f, k, (end, id)]`` per-flow message ring (filled from the SQ).
- ``txbuf`` / ``rxbuf``: byte arenas.  A flow's send stream and a receive
  PDC's stream are *rings*: stream offsets stay 64-bit, byte ``o`` lives at
  ``TXOFF + o % TXCAP`` (``BUFOFF + o % BUFCAP``).  The sender never
  overwrites bytes not yet ACKed (posting beyond ACKED_OFF + TXCAP would
  block); the receiver never overwrites bytes the app has not consumed
  (RP_READ): data beyond READ + BUFCAP is dropped and counted.
- Per NIC, the app queues (sq.py): ``sq[n, k, SQ_*]`` submissions
  (app -> engine) and ``cq[n, k, CQ_*]`` completions (engine -> app), SPSC
  rings whose head/tail counters live in ``qc`` (one cache line each).
Every array may live in one shared-memory segment (shm.py), so an app in
another process reaches the byte arenas and queues.
PSNs are 64-bit inside, 32-bit on the wire (``psn_recon``).
"""
from collections import namedtuple

from ...hot import hot, hot_stage  # compiled without reference counting (the hot path)
import numpy as np

from ...lowlevel import load_acquire_u64, store_release_u64
from ...wire.desc import N_CFG, N_DESC, N_STATUS, make_parse_config

DR_SLOT = 0
"""A NIC device's register (``E.devs.regs[d, DR_SLOT]``): its slot n, the
row of ``nr`` and of every per-NIC table that is its own."""

NicState = namedtuple("NicState", [
    "nr", "ncnt", "pcnt", "fl", "ctx", "sig", "sl_state", "sl_off", "sl_len",
    "rp", "rs_bits", "rs_end", "rs_msg", "mq", "txbuf", "rxbuf", "cq",
    "hkey", "hval", "meta", "pcfg", "desc", "txb", "iscr", "sq", "qc", "req", "sl_t"])

# ---- per NIC (nr) ----
(NR_DEV, NR_PORT, NR_MAC, NR_IP, NR_LINE, NR_TXFREE, NR_TXTIMER, NR_MSS, NR_ACK_EVERY,
 NR_ACK_DELAY, NR_RTO_MIN, NR_RTO_MAX, NR_RETRIES, NR_INIT_CREDIT, NR_CREDIT_WIN,
 NR_RXCAP, NR_RQ_HEAD, NR_RQ_TAIL, NR_TXN, NR_BUDGET, NR_DUPTHRESH, NR_RTO_INIT,
 NR_RX_IDLE, NR_RX_TIMER, NR_CNP_GAP, NR_LASTHOP_DSCP) = range(26)
"""NR_RX_IDLE: a receiver algorithm's sender idle timeout (ns; rxcc.py);
NR_RX_TIMER: the wheel timer of its idle scan; NR_CNP_GAP: the least time
between two CNPs to one sender (ns); NR_LASTHOP_DSCP: the DSCP a trimmed
packet arrives with when its last hop trimmed it (NACK TRIMMED_LASTHOP)."""
(NR_HOST_BW, NR_HOST_BUF, NR_HOST_Q, NR_HOST_T, NR_HOST_PERIOD, NR_HOST_TIMER, NR_HOG_SHARE,
 NR_HOG_START, NR_HOG_STOP, NR_HOST_DELAY, NR_HOST_DROPS) = range(26, 37)
"""The host behind the NIC (host.py): NR_HOST_BW delivery bandwidth into
host memory (bit/s, 0: unlimited, no host model); NR_HOST_BUF the host
buffer (bytes); NR_HOST_Q its occupancy (1/1024 bytes) at NR_HOST_T (ns);
NR_HOST_PERIOD / NR_HOST_TIMER the HOST sampling period (ns) and its wheel
timer + 1 (0: none); NR_HOG_SHARE (ppm of NR_HOST_BW) taken by a hog during
[NR_HOG_START, NR_HOG_STOP) (ns); NR_HOST_DELAY the last sampled delivery
delay (ns; ACKs echo it); NR_HOST_DROPS host drops at the last sample."""
(NR_RX_ACTIVE, NR_RX_BACKLOG, NR_RX_TICK, NR_RX_TTIMER, NR_RX_TICKS) = range(37, 42)
"""NR_RX_ACTIVE / NR_RX_BACKLOG: the receiver algorithm's active-sender
table's size and the sum of those senders' announced backlogs (bytes;
rxcc.py).  NR_RX_TICK: the receiver algorithm's TIMER period (ns, 0 none),
NR_RX_TTIMER its wheel timer, NR_RX_TICKS the expiries so far."""
NR_SINK = 42
"""NR_SINK: 1 = an app that discards what it receives (gen.py): delivered
bytes are consumed at once and never copied; NR_RXCAP is then only the
receive window."""
NR_ACK_REQ = 43
"""NR_ACK_REQ: ACK requests per window (tx.py: _data_pds): a window-limited
sender sets AR on every (window / NR_ACK_REQ / MSS)-th new packet, so a
receiver that coalesces more than that still ACKs NR_ACK_REQ times per
window; 0 = off."""
N_NR = 44

# ---- per NIC counters (ncnt): drops are named by cause ----
NIC_COUNTERS = (
    "rx_frames", "rx_data", "rx_dup", "rx_ooo", "rx_ce", "rx_ack", "rx_nack",
    "tx_data", "tx_retx", "tx_ack", "tx_nack", "tx_nobuf",
    "drop_parse", "drop_not_mine", "drop_wrong_pdc", "drop_psn_oor", "drop_bad_type",
    "drop_bad_ses", "drop_bad_offset", "drop_no_pdc", "drop_ack_oor",
    "retx_sack", "retx_nack", "rto_fire", "rto_fail", "cq_overflow", "pdc_open",
    "drop_rx_window", "rx_window_nack", "tx_window_update", "sq_bad", "rx_trimmed",
    "rto_held", "tx_probe", "rx_probe", "drop_host_buf", "rx_ue", "tx_cnp", "rx_cnp",
    "tx_close", "rx_close", "pdc_close", "flow_close", "close_fail", "rx_grant",
    "tx_window_adv", "drop_csum", "pdc_idle_close", "rto_unsent", "rx_src",
    "tx_reset_ask", "tx_reset", "pdc_reset", "drop_reset", "pdc_halfopen_close")
(C_RX_FRAMES, C_RX_DATA, C_RX_DUP, C_RX_OOO, C_RX_CE, C_RX_ACK, C_RX_NACK,
 C_TX_DATA, C_TX_RETX, C_TX_ACK, C_TX_NACK, C_TX_NOBUF,
 C_DROP_PARSE, C_DROP_NOT_MINE, C_DROP_WRONG_PDC, C_DROP_PSN_OOR, C_DROP_BAD_TYPE,
 C_DROP_BAD_SES, C_DROP_BAD_OFFSET, C_DROP_NO_PDC, C_DROP_ACK_OOR,
 C_RETX_SACK, C_RETX_NACK, C_RTO_FIRE, C_RTO_FAIL, C_CQ_OVERFLOW, C_PDC_OPEN,
 C_DROP_RX_WINDOW, C_RX_WINDOW_NACK, C_TX_WINDOW_UPDATE, C_SQ_BAD, C_RX_TRIMMED,
 C_RTO_HELD, C_TX_PROBE, C_RX_PROBE, C_DROP_HOST_BUF, C_RX_UE, C_TX_CNP,
 C_RX_CNP, C_TX_CLOSE, C_RX_CLOSE, C_PDC_CLOSE, C_FLOW_CLOSE, C_CLOSE_FAIL,
 C_RX_GRANT, C_TX_WINDOW_ADV, C_DROP_CSUM, C_PDC_IDLE_CLOSE, C_RTO_UNSENT, C_RX_SRC,
 C_TX_RESET_ASK, C_TX_RESET, C_PDC_RESET, C_DROP_RESET, C_PDC_HALFOPEN_CLOSE) = range(55)
"""tx_close / rx_close: CLOSE (and REQ_CLOSE) control packets sent /
received; pdc_close: receive PDCs freed; flow_close: sending flows freed
after their CLOSE was acknowledged; close_fail: flows freed after their
CLOSE went unanswered for NR_RETRIES timeouts; rx_grant: grants of the
NIC's receiver algorithm that raised a sender's credit (rxcc.py).
tx_window_adv: window edges a receiver advertised before its ring filled
(rx.py: _rx_place), so that the sender stops at the edge instead of
overrunning it (drop_rx_window, a retransmission).  drop_csum: frames whose
UDP checksum is present (non-zero; the NIC sends none) and wrong, i.e. the
frame was corrupted on the way.  pdc_idle_close: receive PDCs freed to
make room for a new one when the tables were full (close.py: pdc_reclaim):
open ones silent for pdc_idle_ns and closed ones silent since their CLOSE
for pdc_linger_ns.  rto_unsent: timeouts (rto_fire) whose packet was
acknowledged before it could be resent: the timeout was spurious (the ACK
was late, not lost), so rto_fire exceeds the retransmissions by them.
rx_src: Bolt SRC packets from congested switches (ack.py: rx_src).
The reset exchange (reset.py): tx_reset_ask, a receiver asked the sender of
a SYN that met another connection's PDC whether that PDC is stale; tx_reset,
a sender answered that it is; pdc_reset, a receiver freed a PDC on a valid
RESET; drop_reset, a RESET or an ask that matched nothing (a wrong cookie,
PDC or PSN: a stale or spoofed one), or an ask about the sender's own live
connection.  pdc_halfopen_close: of pdc_idle_close, the half-open PDCs
(their sender never showed it heard us) freed after 8 initial RTOs."""
N_NCNT = 56

# ---- per flow (fl) ----
(FL_NIC, FL_STATE, FL_PEER_MAC, FL_PEER_IP, FL_RPDC, FL_EV, FL_START, FL_NXT, FL_UNA,
 FL_INFL, FL_NLOST, FL_RETX_SCAN, FL_LOST_SCAN, FL_TXOFF, FL_TXCAP, FL_POSTED,
 FL_SENT_OFF, FL_ACKED_OFF, FL_MQ_DONE, FL_MQ_TX, FL_MQ_TAIL, FL_NEXT_T, FL_SCHED,
 FL_RQ_NEXT, FL_T_PACE, FL_T_RTO, FL_SRTT, FL_RTTVAR, FL_RTO, FL_BACKOFF, FL_RETRIES,
 FL_CREDIT_USED, FL_USES_CREDIT, FL_MAX_INFL, FL_OOO_LAST, FL_MSG_OFF,
 FL_RWND, FL_WEND, FL_WBLOCK, FL_RTO_HELD, FL_FRTO, FL_FRTO_END, FL_HOST_ECHO,
 FL_EV_I, FL_CLOSING, FL_RTT_MIN, FL_HOPS, FL_GEN_END, FL_GEN_ONE, FL_EV_PSN,
 FL_PLAN_END, FL_PLAN_STOP) = range(52)
"""FL_EV: the entropy value of the next data packet; FL_EV_I: the spray
position (tx.py: flow_ev); FL_EV_PSN: the first new PSN sent after the
flow's EV last moved (0: never), which packets below it may be overtaken
by (ack.py); FL_HOST_ECHO: the receiving host's delivery delay
its ACKs last echoed (ns).  FL_RTT_MIN: the least per-packet RTT sample (ns,
0 none yet), the base of the RTT event's qdelay; FL_HOPS: switch hops the
receiver last echoed, + 1 (0 unknown).  FL_GEN_END: 0, or the stream
offset up to which the NIC posts the flow's messages itself (gen.py: a
generated stream, GEN_CHUNK a message, only the last one completed);
FL_GEN_ONE: 1 when that stream is one transfer of FL_GEN_END bytes (a
finite flow), whose GEN_CHUNK pieces the generator cuts are not message
ends the sender asks an ACK for (tx.py: _data_pds).  FL_PLAN_END,
FL_PLAN_STOP: a generated stream the NIC starts itself at its TK_GEN timer
(gen.py: gen_timer): the FL_GEN_END it starts with (0: started, or none
planned) and the engine ns it stops at (0: never)."""
N_FL = 52
FS_FREE, FS_ACTIVE, FS_FAILED, FS_CLOSED = 0, 1, 2, 3   # FL_STATE
"""FS_CLOSED: the flow's PDC was closed and its row may be reused (add_flow)."""
CL_NONE, CL_WANTED, CL_SENT = 0, 1, 2                # FL_CLOSING
"""CL_WANTED: close once everything posted is acknowledged; CL_SENT: our
CLOSE (PSN FL_NXT) is out, waiting for its ACK."""
SCH_IDLE, SCH_QUEUED, SCH_TIMED = 0, 1, 2            # FL_SCHED
GEN_CHUNK = 1 << 16                                  # bytes per generated message
GEN_FOREVER = 1 << 62                                # FL_GEN_END of an open-ended stream
MAX_BACKOFF = 1 << 10                                # the RTO's largest multiplier (tx.py)

# ---- CC context (ctx): what the agent will write ----
CX_RATE, CX_CWND, CX_CREDIT, CX_VERSION = range(4)   # bit/s (0: unpaced), bytes (0: none), bytes
N_CX = 4

# ---- per-flow signals (sig) ----
(SG_ACKED_BYTES, SG_ACKS, SG_ECN, SG_OOO, SG_NACK, SG_TRIM, SG_RTO, SG_RTT_LAST,
 SG_RTT_MIN, SG_RTT_N, SG_RTT_SUM, SG_CREDIT, SG_TX_BYTES, SG_TX_PKTS, SG_RETX,
 SG_CSIG_N, SG_CSIG_T, SG_CSIG_S, SG_CSIG_LM, SG_CSIG_D, SG_FIRST_T, SG_DONE_T,
 SG_UE, SG_CNP, SG_ECN_BYTES) = range(25)
N_SG = 25
SIGNAL_NAMES = ("acked_bytes", "acks", "ecn", "ooo", "nack", "trim", "rto", "rtt_last",
                "rtt_min", "rtt_n", "rtt_sum", "credit", "tx_bytes", "tx_pkts", "retx",
                "csig_n", "csig_t", "csig_s", "csig_lm", "csig_d", "first_t", "done_t",
                "ue", "cnp", "ecn_bytes")
"""SG_ECN counts ACKs that echoed CE; SG_ECN_BYTES the bytes those ACKs covered."""

# ---- sender slot states (sl_state) ----
SL_EMPTY, SL_INFL, SL_SACKED, SL_LOST, SL_RETX = 0, 1, 2, 3, 4

# ---- per receive PDC (rp) ----
(RP_NIC, RP_PEER_MAC, RP_PEER_IP, RP_PEER_PDC, RP_EV, RP_NXT, RP_BUFOFF, RP_BUFCAP,
 RP_DELIV, RP_RCVD, RP_PEND, RP_ECN, RP_CSIG_FMT, RP_CSIG_T, RP_CSIG_S, RP_CSIG_LM,
 RP_CSIG_D, RP_TS, RP_TSSEQ, RP_HAS_TS, RP_NACKED, RP_OOO, RP_CC, RP_TARGET, RP_CREDIT,
 RP_T_ACK, RP_READ, RP_TRIG, RP_WBLOCK, RP_WADV, RP_LAST_T, RP_JOINED, RP_UE, RP_NP,
 RP_CNP_T, RP_CNP_MARKS, RP_BACKLOG, RP_GEN, RP_FREE_NEXT, RP_HOPS, RP_INT_N,
 RP_INT_H0) = range(42)
"""RP_LAST_T / RP_JOINED: the sender's last data (ns; or the PDC's opening)
and whether it is in
the NIC's active-sender table (rxcc.py); RP_BACKLOG: its backlog as counted
in NR_RX_BACKLOG.  RP_UE: a UE mark to echo in the next ACK; RP_NP: the
sender asked for CNPs (spec.F_REQ_NP); RP_CNP_T: when the last CNP left (ns,
0 none yet); RP_CNP_MARKS: the marks (spec.CNP_CE | CNP_UE) not yet
notified.  RP_GEN: how many times the row was opened (a freed row is
reused: Python's caches of a PDC check it); RP_FREE_NEXT: the free list.
RP_BUFOFF / RP_BUFCAP: the PDC's receive ring in rxbuf and the window it
advertises (a sink's row has no ring: RP_BUFOFF -1).
RP_HOPS: switch hops of the last data packet (64 - its TTL), echoed in the
ACK's probe field.  RP_INT_N: 1 + the INT hop records of the last data
packet that asked for INT (0: none to reflect); RP_INT_H0 .. + INT_MAX_HOPS
- 1: those records, 8 wire bytes each as one big-endian word."""
RP_START, RP_CLOSED, RP_EST, RP_ASK_T = 46, 47, 48, 49   # after RP_INT_H0 + INT_MAX_HOPS
"""RP_START: the low 32 bits of the connection's first PSN (its SYN's PSN -
psn_offset).  RP_CLOSED: 1 once its CLOSE arrived (close.py): the PDC takes
no more data but keeps its hash entry and start, so a late duplicate of
the connection's packets (a retransmission overtaken by the CLOSE) is
dropped, not taken as a new connection.  A sender's PDC id is its flow
row, reused by its later connections, each starting past the last one's
PSNs (setup.add_flow): a SYN with a later start than RP_START is a new
connection on that id, and the old PDC's row is freed for it
(rx._pdc_of).  A SYN with an earlier start comes from a sender process
that restarted (each takes its first PSN from the clock, setup.first_psn)
or is a late copy of an older connection's: it is dropped and its sender
asked (the reset exchange, reset.py), whose RESET frees the PDC at once;
without one the PDC is freed for such a SYN once it has been silent for
close.pdc_wait_ns (closed: pdc_linger_ns; half-open: 8 initial RTOs;
open: pdc_idle_ns).  A SYN with the start RP_START is always a copy of the
old connection's packets.  RP_EST: 1 once a packet without SYN
arrived (its sender knew our PDC id, so it heard our ACK: not a spoofed
source) or a second packet with SYN (a connection whose packets all left
before our first ACK came back; a SYN flood sends one per source); until
then the PDC is half-open (close.pdc_reclaim).  RP_ASK_T:
when the last reset ask left (reset.py; 0 none)."""
N_RP = 50

# ---- meta ----
(M_TX_BUMP, M_RX_BUMP, M_NRP, M_NFL, M_NNIC, M_YIELD_RX, M_RP_FREE, M_FL_CLOSED,
 M_SECRET) = range(2, 11)
"""M_YIELD_RX: 1 = end the engine's chunk whenever a message is delivered
(an app in the engine's process answers it at once).  M_RP_FREE: the first
freed receive PDC row (linked through RP_FREE_NEXT; 0 none); M_FL_CLOSED:
how many flow rows are FS_CLOSED (add_flow reuses them).  M_SECRET: the
key of the reset exchange's cookies (reset.py; setup.nic_secret)."""
N_META = 16

# ---- completion records (cq[n, k]) ----
CQ_KIND, CQ_NIC, CQ_ID, CQ_MSG, CQ_END, CQ_TIME = range(6)
N_CQW = 6
CQ_TX, CQ_RX = 1, 2

# ---- submission records (sq[n, k]) ----
SQ_OP, SQ_ID, SQ_END, SQ_MSG = range(4)
N_SQW = 4
OP_SEND = 1   # flow SQ_ID: its stream now ends at SQ_END, one message, id SQ_MSG
OP_READ = 2   # receive PDC SQ_ID: the app consumed its stream up to SQ_END
OP_CLOSE = 3  # flow SQ_ID: close its PDC once everything posted is acknowledged
OP_REQ_CLOSE = 4  # receive PDC SQ_ID: ask its sender to close (REQ_CLOSE)

# ---- queue counters: qc[n * N_QC + QC_*], each on its own cache line ----
QC_SQ_HEAD, QC_SQ_TAIL, QC_CQ_HEAD, QC_CQ_TAIL = 0, 8, 16, 24
N_QC = 32

# ---- connection requests from apps, served by the engine's Python side ----
REQ_STATE, REQ_NIC, REQ_PEER_IP, REQ_RESULT, REQ_PID, REQ_CREDIT = range(6)
"""REQ_CREDIT: 1 asks for a credit flow (it sends within the credit its
receiver grants: setup.add_flow credit)."""
N_REQ, N_REQW = 16, 8
RQ_FREE, RQ_ASKED, RQ_DONE, RQ_FAILED = 0, 1, 2, 3

# ---- wheel timer argument: kind << 32 | index ----
TK_PACE, TK_RTO, TK_ACK, TK_TX, TK_RXIDLE, TK_SHIFT = 1, 2, 3, 4, 5, 32
TK_HOST = 6     # the host model's HOST sampling (host.py)
TK_RXTICK = 7   # a receiver algorithm's TIMER (rx.py: rx_tick)
TK_GEN = 8      # a planned generated stream starts or stops (gen.py: gen_timer)
TXB = 64   # per-NIC TX batch


def nic_shapes(max_ports: int, max_flows: int, win: int = 64, tx_bytes: int = 1 << 16,
               rx_bytes: int = 1 << 16, msgs: int = 16, cq: int = 256, sq: int = 256):
    """(field, shape, dtype) of every NicState array, in order.  ``win``,
    ``cq`` and ``sq`` must be powers of two (``win`` >= 64): the most PSNs a
    flow may have outstanding / a receiver tracks beyond its cumulative
    point, and the depth of each NIC's completion / submission queue.
    Dtypes and ndims never depend on arguments."""
    if win < 64 or win & (win - 1):
        raise ValueError(f"win must be a power of two >= 64, got {win}")
    for nm, v in (("cq", cq), ("sq", sq)):
        if v < 2 or v & (v - 1):
            raise ValueError(f"{nm} must be a power of two >= 2, got {v}")
    nn, F = max(1, max_ports), max(2, max_flows)
    hsize = 1 << max(4, (2 * F - 1).bit_length())
    i8, u8 = np.int64, np.uint8
    return (("nr", (nn, N_NR), i8), ("ncnt", (nn, N_NCNT), i8), ("pcnt", (nn, N_STATUS), i8),
            ("fl", (F, N_FL), i8), ("ctx", (F, N_CX), i8), ("sig", (F, N_SG), i8),
            ("sl_state", (F, win), u8), ("sl_off", (F, win), i8), ("sl_len", (F, win), np.int32),
            ("rp", (F, N_RP), i8), ("rs_bits", (F, win), u8), ("rs_end", (F, win), i8),
            ("rs_msg", (F, win), i8), ("mq", (F, msgs, 2), i8),
            ("txbuf", (max(1, tx_bytes),), u8), ("rxbuf", (max(1, rx_bytes),), u8),
            ("cq", (nn, cq, N_CQW), i8), ("hkey", (hsize,), i8), ("hval", (hsize,), i8),
            ("meta", (N_META,), i8), ("pcfg", None, None), ("desc", (N_DESC,), i8),
            ("txb", (nn, TXB), np.int32), ("iscr", (64,), np.int32),
            ("sq", (nn, sq, N_SQW), i8), ("qc", (nn * N_QC,), np.uint64),
            ("req", (N_REQ, N_REQW), i8), ("sl_t", (F, win), i8))


def make_nic_state(max_ports: int, max_flows: int, alloc=None, **sizes) -> NicState:
    """Zero-filled (so untouched pages cost nothing).  ``alloc(name, shape,
    dtype)`` places each array (default: private memory; shm.py: one
    shared segment).  Sizes: see ``nic_shapes``."""
    alloc = alloc or (lambda name, shape, dtype: np.zeros(shape, dtype))
    return NicState(**{name: make_parse_config() if shape is None else alloc(name, shape, dt)
                       for name, shape, dt in nic_shapes(max_ports, max_flows, **sizes)})


assert N_CFG == 4


@hot_stage
def psn_recon(p32, ref):
    """The 64-bit PSN nearest to `ref` whose low 32 bits are p32."""
    d = (np.int64(p32) - ref) & np.int64(0xFFFFFFFF)
    if d >= np.int64(1) << 31:
        d -= np.int64(1) << 32
    return ref + d


@hot_stage
def unit_recon(v, ref, bits):
    """Same for a `bits`-wide counter (credit units, ooo counts)."""
    m = (np.int64(1) << bits) - 1
    d = (np.int64(v) - ref) & m
    if d >= np.int64(1) << (bits - 1):
        d -= np.int64(1) << bits
    return ref + d


@hot_stage
def _rx_key(n, ip, spdcid):
    return ((np.int64(n) << 48) | ((np.int64(ip) & 0xFFFFFFFF) << 16) | (spdcid & 0xFFFF)) + 1


@hot_stage
def _rx_home(key, mask):
    return ((key * np.int64(-7046029254386353131)) >> 20) & mask


@hot
def _rx_row(N, n):
    """A receive PDC row for NIC n: a freed one of NIC n's window size,
    else a new one; 0 when the tables or the ring memory are full.  A sink
    keeps no bytes: its rows have no ring (RP_BUFOFF -1), and one that
    another NIC takes over gets its ring then."""
    cap = N.nr[n, NR_RXCAP]
    ring = 0 if N.nr[n, NR_SINK] != 0 else cap
    r = N.meta[M_RP_FREE]
    if r != 0 and N.rp[r, RP_BUFCAP] == cap:
        if N.rp[r, RP_BUFOFF] < 0 < ring:
            if N.meta[M_RX_BUMP] + ring > N.rxbuf.shape[0]:
                return 0
            N.rp[r, RP_BUFOFF] = N.meta[M_RX_BUMP]
            N.meta[M_RX_BUMP] += ring
        N.meta[M_RP_FREE] = N.rp[r, RP_FREE_NEXT]
        N.rp[r, RP_FREE_NEXT] = 0
        return r
    r = N.meta[M_NRP] + 1
    if r >= N.rp.shape[0] or cap <= 0 or N.meta[M_RX_BUMP] + ring > N.rxbuf.shape[0]:
        return 0
    N.meta[M_NRP] = r
    N.rp[r, RP_BUFOFF] = N.meta[M_RX_BUMP] if ring > 0 else -1
    N.rp[r, RP_BUFCAP] = cap
    N.meta[M_RX_BUMP] += ring
    return r


@hot
def rx_lookup(N, n, ip, spdcid, create):
    """Receive PDC of (NIC n, peer ip, peer PDC id): open addressing (linear
    probing) over a zero-filled table (keys stored +1).  create: allocate
    one when missing (a freed row first); returns 0 when missing (or the
    tables are full)."""
    key = _rx_key(n, ip, spdcid)
    mask = N.hkey.shape[0] - 1
    h = _rx_home(key, mask)
    for k in range(N.hkey.shape[0]):
        s = (h + k) & mask
        if N.hkey[s] == key:
            return N.hval[s]
        if N.hkey[s] == 0:
            if not create:
                return 0
            r = _rx_row(N, n)
            if r != 0:
                N.hkey[s] = key
                N.hval[s] = r
            return r
    return 0


@hot
def rx_forget(N, n, ip, spdcid):
    """Remove (NIC n, peer ip, peer PDC id) from the PDC hash: the entries
    after it in its probe run move back (no tombstones, so a table of
    closing and opening PDCs never fills up)."""
    key = _rx_key(n, ip, spdcid)
    mask = N.hkey.shape[0] - 1
    i = _rx_home(key, mask)
    for _ in range(N.hkey.shape[0]):
        if N.hkey[i] == 0:
            return
        if N.hkey[i] == key:
            break
        i = (i + 1) & mask
    if N.hkey[i] != key:
        return
    j = i
    for _ in range(N.hkey.shape[0]):
        j = (j + 1) & mask
        if N.hkey[j] == 0:
            break
        home = _rx_home(N.hkey[j], mask)
        # j's entry may fill hole i unless its home lies cyclically in (i, j]
        if (j > i and (home <= i or home > j)) or (j < i and home <= i and home > j):
            N.hkey[i] = N.hkey[j]
            N.hval[i] = N.hval[j]
            i = j
    N.hkey[i] = 0
    N.hval[i] = 0


@hot
def cq_push(N, n, kind, ident, msg, end, now):
    """A completion record on NIC n's CQ; a full ring is counted, never silent.
    The app may be another process: publish the head with release order."""
    b = n * N_QC
    h = N.qc[b + QC_CQ_HEAD]
    if h - load_acquire_u64(N.qc, b + QC_CQ_TAIL) >= np.uint64(N.cq.shape[1]):
        N.ncnt[n, C_CQ_OVERFLOW] += 1
        return
    row = np.int64(h) & (N.cq.shape[1] - 1)
    N.cq[n, row, CQ_KIND] = kind
    N.cq[n, row, CQ_NIC] = n
    N.cq[n, row, CQ_ID] = ident
    N.cq[n, row, CQ_MSG] = msg
    N.cq[n, row, CQ_END] = end
    N.cq[n, row, CQ_TIME] = now
    store_release_u64(N.qc, b + QC_CQ_HEAD, h + np.uint64(1))
