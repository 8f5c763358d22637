"""UET packet trimming: a data packet that would queue above the trim
threshold keeps its headers (up to the end of PDS/probe/SES) and loses its
payload; it then travels in the high class with the trim DSCP so the
receiver can NACK it (NACK code TRIMMED), and a CSIG tag gets d = 1."""
import numba as nb
import numpy as np

from ...wire import spec as S
from ...wire.codec import fill_ipv4_checksum, set_field
from ...hot import hot
from ...wire.desc import (D_IP_OFF, D_L4_OFF, D_PAYLOAD_LEN, D_PAYLOAD_OFF, D_PDS_TYPE, D_DPORT,
                         D_IP_PROTO, P_OK)
from .csig import csig_mark_trimmed
from .state import C_TRIM_DSCP, T_TRIM


@nb.njit(cache=True, inline="always")
def is_data(desc, st):
    t = desc[D_PDS_TYPE]
    return st == P_OK and desc[D_PAYLOAD_LEN] > 0 and (
        t == S.T_RUD_REQ or t == S.T_ROD_REQ or t == S.T_RUD_CC_REQ or t == S.T_ROD_CC_REQ
        or t == S.T_RUDI_REQ or t == S.T_UUD_REQ)


@hot
def trim(sw, p, pool, i, desc):
    """Cut the payload of frame i; returns its new length."""
    buf = pool.data[i]
    keep = desc[D_PAYLOAD_OFF]
    ip = desc[D_IP_OFF]
    set_field(buf, ip, S.IPV4_LEN, keep - ip)
    set_field(buf, ip, S.IPV4_DSCP, sw.pcfg[p, C_TRIM_DSCP])
    if desc[D_IP_PROTO] == S.IPPROTO_UDP:
        l4 = desc[D_L4_OFF]
        set_field(buf, l4, S.UDP_LEN, keep - l4)
        set_field(buf, l4, S.UDP_CHKSUM, 0)      # no checksum (allowed for UDP/IPv4)
    fill_ipv4_checksum(buf, ip)
    csig_mark_trimmed(sw, p, buf, desc)
    pool.length[i] = keep
    sw.stats[p, T_TRIM] += 1
    return np.int64(keep)
