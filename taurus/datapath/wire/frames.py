"""Frame builders for tests and tools (Scapy-based, not for the fast path).

``uet_frame`` assembles Ether / [CSIG] / IPv4 / UDP (or entropy header) /
PDS / [probe] / [SES] / payload with the dependent fields (next_hdr, F_TP,
ethertypes, ports) set consistently; ``to_array`` turns a frame into a uint8
array, e.g. as a TX template for Numba code that then patches fields with
``codec.set_field``.
"""
import numpy as np
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from . import layers as L
from . import spec

DEFAULT_SRC_MAC = "02:00:00:00:00:01"
DEFAULT_DST_MAC = "02:00:00:00:00:02"


def _ses_next_hdr(ses):
    for n, h in spec.SES_LAYOUTS.items():
        if type(ses).__name__ == h.name:
            return n
    raise ValueError(f"not an SES layer: {ses!r}")


def uet_frame(pds, ses=None, payload=b"", *, probe=None, csig=None,
              src_mac=DEFAULT_SRC_MAC, dst_mac=DEFAULT_DST_MAC,
              src_ip="10.0.0.1", dst_ip="10.0.0.2", entropy=0x1234, dscp=0, ecn=0,
              ttl=64, native_ip=False, udp_port=spec.UET_UDP_PORT,
              ip_proto=spec.UET_IP_PROTO, tpids=None):
    """A Scapy frame.  ``pds``: a PDS layer (e.g. ``L.PDSRudReq(psn=1)``); its
    next_hdr is set from ``ses`` (unless CONTROL) and F_TP from ``probe``.
    ``csig``: a ``L.CSIGCompact`` / ``L.CSIGWide`` layer or None.  ``tpids``:
    (compact, wide) if not the defaults."""
    pds = pds.copy()
    if pds.type != spec.T_CONTROL:
        pds.next_hdr = _ses_next_hdr(ses) if ses is not None else spec.NH_NONE
    fl = int(pds.flags)
    pds.flags = (fl | spec.F_TP) if probe is not None else (fl & ~spec.F_TP)
    upper = pds
    if probe is not None:
        upper = upper / probe
    if ses is not None:
        upper = upper / ses
    if payload:
        upper = upper / Raw(payload)
    ip = IP(src=src_ip, dst=dst_ip, tos=(dscp << 2) | ecn, ttl=ttl)
    if native_ip:
        ip.proto = ip_proto
        l4 = ip / L.UETEntropy(entropy=entropy) / upper
    else:
        l4 = ip / UDP(sport=entropy, dport=udp_port) / upper
    eth = Ether(src=src_mac, dst=dst_mac)
    if csig is None:
        return eth / l4
    tp_c, tp_w = tpids or (spec.CSIG_TPID_COMPACT, spec.CSIG_TPID_WIDE)
    eth.type = tp_c if isinstance(csig, L.CSIGCompact) else tp_w
    tag = csig.copy()
    tag.type = spec.ETH_P_IP
    return eth / tag / l4


def to_array(frame, size=None, at_end=False):
    """(uint8 array, base, length).  ``size`` pads the buffer; ``at_end``
    places the frame at the end of it (an overrun then leaves the array)."""
    raw = bytes(frame)
    n = len(raw)
    size = n if size is None else size
    if size < n:
        raise ValueError("buffer smaller than frame")
    buf = np.zeros(size, np.uint8)
    base = size - n if at_end else 0
    buf[base:base + n] = np.frombuffer(raw, np.uint8)
    return buf, base, n
