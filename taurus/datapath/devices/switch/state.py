"""Switch state: every array the switch devices of one engine share.

Per-port rows are indexed by *engine* port number (a port belongs to at most
one switch).  Traffic classes: 0 = high (control, ACKs, CNPs, PFC, trimmed
packets), 1 = normal data; strict priority, lower class first.  A class is
lossless on a port when its bit is set in that port's PFC mask.
"""
from collections import namedtuple

import numpy as np

from ...wire.csig import default_csig_buckets, default_csig_wide  # noqa: F401 (re-exported)
from ...wire.desc import N_DESC, N_STATUS, make_parse_config

NCLS = 2
HIGH, DATA = 0, 1

# Per-port configuration, pcfg[p, ...] (set from Python before the run).
(C_DEV, C_PNO, C_RATE, C_DELAY, C_IN_DELAY, C_QLIM, C_ECN, C_K, C_KMIN, C_KMAX, C_PMAX,
 C_CSIG, C_LOC_C, C_LOC_W, C_INT, C_PFC, C_XOFF, C_XON, C_TCD, C_TON_MAX, C_UE_CP,
 C_TRIM, C_TRIM_DSCP, C_CTL_HIGH, C_TIMER, C_MAC, C_ABW_IVL, C_TCD_K, C_SLACK,
 C_SRC) = range(30)          # C_SRC: Bolt SRC threshold (bytes queued), 0 off
N_PCFG = 32
ECN_OFF, ECN_STEP, ECN_RED = 0, 1, 2
PMAX_ONE = 1 << 16           # C_PMAX is a probability in 1/65536

# Per-port state, pst[p, ...].
(S_LINK_FREE, S_FH, S_FT, S_DH, S_DT, S_ABW_T0, S_ABW_BYTES, S_ABW, S_TXB, S_PAUSE_START,
 S_LAST_RESUME, S_EVER_PAUSED, S_AFTER_UNDET, S_PREVQ, S_UP_PAUSED, S_TEL_TXB,
 S_TEL_T, S_XOFF_T) = range(18)       # S_XOFF_T + c: when the last PAUSE for class c went out
N_PST = 24

# Per-port counters, stats[p, ...] (shared memory when telemetry is on).
STAT_NAMES = ("rx", "rx_bytes", "enq", "enq_bytes", "tx", "tx_bytes", "drop", "drop_bytes",
              "ecn_mark", "ue_mark", "trim", "pfc_tx_xoff", "pfc_tx_xon", "pfc_rx",
              "paused_ns", "csig_replace", "int_append", "non_ip", "no_route", "parse_err",
              "tx_retry", "late", "delay_drop", "ttl_drop", "src_tx")
(T_RX, T_RX_BYTES, T_ENQ, T_ENQ_BYTES, T_TX, T_TX_BYTES, T_DROP, T_DROP_BYTES, T_ECN,
 T_UE, T_TRIM, T_XOFF, T_XON, T_PFC_RX, T_PAUSED_NS, T_CSIG, T_INT, T_NONIP, T_NOROUTE,
 T_PARSE_ERR, T_TX_RETRY, T_LATE, T_DELAY_DROP, T_TTL_DROP, T_SRC) = range(len(STAT_NAMES))
N_STAT = 25

# Telemetry record fields, tel[p, k, ...].
TEL_FIELDS = ("t_ns", "queue_bytes", "tx_bytes", "rate_bps", "marks", "drops", "paused_ns")
N_TEL = 8

# Per-device registers, E.devs.regs[d, ...] (N_DEV_REGS = 32).
(R_SHARED_LIMIT, R_SHARED_USED, R_DEFAULT_GRP, R_TEL_TIMER, R_TEL_IVL, R_SEED,
 R_SWID) = range(7)

RT_SIZE = 1 << 16            # route hash slots of all switches (power of two): a k = 8 fat-tree has 80 x 128
MAX_GRP = 1024
GRP_W = 16                   # ports per ECMP group


SwitchState = namedtuple("SwitchState", [
    "pcfg", "pst", "stats", "dscp",
    "q", "qln", "qing", "qh", "qt", "qb", "ing", "pausu",
    "fl", "fdue", "dl", "ddue",
    "rt_key", "rt_grp", "grp", "grpn",
    "csb", "csw", "pcfgp", "desc", "pcnt",
    "tel", "telh", "rng", "txb", "dirty", "meta"])
"""pcfg/pst/stats int64[P, *]; dscp int32[P, 64] (DSCP -> class at egress p);
q/qln/qing int32[P, NCLS, QCAP] (frame, bytes at enqueue, ingress port |
IPv4 header offset << queues.IP_SHIFT);
qh/qt/qb int64[P, NCLS] (ring head/tail, both 0 again once it empties;
bytes queued); ing int64[P, NCLS] (bytes held in the switch that entered
by port p: PFC ingress accounting);
pausu int64[P, NCLS] (paused by the peer until); fl/fdue int32/int64[P, FCAP]
(serialized frames waiting for their arrival time); dl/ddue (ingress delay
line); rt_key int64[RT] ((device << 32) | dst IP, -1 empty), rt_grp int32[RT];
grp int32[G, GRP_W], grpn int32[G]; csb int64[4, 32] (compact bucket lower
bounds per signal type); csw int64[4, 2] (wide base, log2 step); pcfgp: parser
config; desc/pcnt: parser scratch; tel int64[P, TELN, N_TEL], telh int64[P]
(records written); rng uint64[1]; txb int32[FCAP]; dirty int32[P + 1]
(queues.mark_dirty);
meta int64[8] (0: next free group)."""


def make_switch_state(max_ports: int, max_flows: int = 0, qcap: int = 4096, fcap: int = 2048,
                      tel_len: int = 4, stats=None, tel=None, telh=None, seed: int = 1) -> SwitchState:
    """Sized for `max_ports` engine ports; `qcap` frames per (port, class),
    `fcap` frames in flight per port, `tel_len` telemetry records per port.
    `stats`, `tel`, `telh` may be views on shared memory."""
    P = max_ports
    return SwitchState(
        pcfg=np.zeros((P, N_PCFG), np.int64), pst=np.zeros((P, N_PST), np.int64),
        stats=np.zeros((P, N_STAT), np.int64) if stats is None else stats,
        dscp=np.full((P, 64), DATA, np.int32),
        q=np.zeros((P, NCLS, qcap), np.int32), qln=np.zeros((P, NCLS, qcap), np.int32),
        qing=np.zeros((P, NCLS, qcap), np.int32),
        qh=np.zeros((P, NCLS), np.int64), qt=np.zeros((P, NCLS), np.int64),
        qb=np.zeros((P, NCLS), np.int64), ing=np.zeros((P, NCLS), np.int64),
        pausu=np.zeros((P, NCLS), np.int64),
        fl=np.zeros((P, fcap), np.int32), fdue=np.zeros((P, fcap), np.int64),
        dl=np.zeros((P, fcap), np.int32), ddue=np.zeros((P, fcap), np.int64),
        rt_key=np.full(RT_SIZE, -1, np.int64), rt_grp=np.full(RT_SIZE, -1, np.int32),
        grp=np.full((MAX_GRP, GRP_W), -1, np.int32), grpn=np.zeros(MAX_GRP, np.int32),
        csb=default_csig_buckets(), csw=default_csig_wide(),
        pcfgp=make_parse_config(), desc=np.zeros(N_DESC, np.int64),
        pcnt=np.zeros(N_STATUS, np.int64),
        tel=np.zeros((P, tel_len, N_TEL), np.int64) if tel is None else tel,
        telh=np.zeros(P, np.int64) if telh is None else telh,
        rng=np.array([0x9E3779B97F4A7C15 ^ seed], np.uint64),
        txb=np.zeros(fcap, np.int32), dirty=np.zeros(P + 1, np.int32),
        meta=np.zeros(8, np.int64))

