"""Scapy layers generated from ``spec.py`` (never edit a field here).

Importing this module binds the layers so ``Ether(raw)`` dissects Taurus
frames: Ether -> [CSIG compact/wide by TPID] -> IPv4 -> UDP dport 4793 (or IP
protocol 253 -> UETEntropy) -> PDS layout chosen by the prologue's type ->
[TaurusProbe if flags & F_TP] -> SES layout chosen by next_hdr -> Raw.
``set_csig_tpids`` / ``set_uet_udp_port`` / ``set_uet_ip_proto`` rebind.
"""
from scapy.fields import (BitEnumField, BitField, ByteEnumField, ByteField,
                          ConditionalField, FlagsField, IntEnumField, IntField,
                          LongField, ShortEnumField, ShortField, SignedIntField,
                          SignedShortField, XShortEnumField)
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw, bind_layers, bind_top_down, split_layers

from . import spec
from .layout import read_loc


def _scapy_field(p):
    f = p.field
    aligned = p.bitpos % 8 == 0 and f.bits % 8 == 0
    if f.name in ("type",) and f.bits == 16 and aligned and not f.enum:
        return XShortEnumField(f.name, f.default, {spec.ETH_P_IP: "IPv4"})
    if f.flags:
        return FlagsField(f.name, f.default, f.bits, list(f.flags))
    if f.signed:
        if not aligned:
            raise ValueError(f"signed bit field {f.name} has no Scapy equivalent")
        return {16: SignedShortField, 32: SignedIntField}[f.bits](f.name, f.default)
    if aligned and f.bits in (8, 16, 32):
        if f.enum:
            cls = {8: ByteEnumField, 16: ShortEnumField, 32: IntEnumField}[f.bits]
            return cls(f.name, f.default, f.enum)
        return {8: ByteField, 16: ShortField, 32: IntField}[f.bits](f.name, f.default)
    if aligned and f.bits == 64:
        return LongField(f.name, f.default)
    if f.enum:
        return BitEnumField(f.name, f.default, f.bits, f.enum)
    return BitField(f.name, f.default, f.bits)


def _cond(c):
    fname, mask, value, wanted = c
    return lambda pkt: ((int(getattr(pkt, fname) or 0) & mask) == value) == wanted


def fields_desc_for(header):
    out = []
    for p in spec.PLACED[header.name]:
        if hasattr(Packet, p.field.name):
            raise ValueError(f"{header.name}.{p.field.name} shadows a Scapy Packet attribute")
        fld = _scapy_field(p)
        out.append(ConditionalField(fld, _cond(p.cond)) if p.cond else fld)
    return out


def _make(header, base=Packet, **attrs):
    d = {"name": header.name, "fields_desc": fields_desc_for(header),
         "__doc__": f"{header.doc} ({spec.SIZES[header.name]} B, generated from spec)"}
    d.update(attrs)
    return type(header.name, (base,), d)


def _ses_class(next_hdr):
    h = spec.SES_LAYOUTS.get(next_hdr)
    return SES_CLASSES[h.name] if h is not None else Raw


class _PDSBase(Packet):
    """A PDS layout: the probe field, then SES, follow per flags/next_hdr."""

    def guess_payload_class(self, payload):
        if int(self.flags) & spec.F_TP:
            return TaurusProbe
        if self.type == spec.T_CONTROL:
            return BoltSRC if self.ctl_type == spec.CTL_SRC else Raw
        return _ses_class(self.next_hdr)


class _ProbeBase(Packet):
    def guess_payload_class(self, payload):
        u = self.underlayer
        if u is not None and getattr(u, "type", None) == spec.T_CONTROL:
            return BoltSRC if u.ctl_type == spec.CTL_SRC else Raw
        if u is None or not hasattr(u, "next_hdr"):
            return Raw
        return _ses_class(u.next_hdr)


CSIGCompact = _make(spec.CSIG_C)
CSIGWide = _make(spec.CSIG_W)
UETEntropy = _make(spec.ENTROPY)
PFCPause = _make(spec.PFC)
INTHop = _make(spec.INT_HOP)
INTTail = _make(spec.INT_TAIL)
BoltSRC = _make(spec.SRC_REC)
TaurusProbe = _make(spec.PROBE, _ProbeBase)
SES_CLASSES = {h.name: _make(h) for h in spec.SES_LAYOUTS.values()}
PDS_CLASSES = {h.name: _make(h, _PDSBase) for h in spec.PDS_LAYOUTS.values()}
PDSPrologue = _make(spec.PROLOGUE, guess_payload_class=lambda self, p: Raw)
PDS_BY_TYPE = {t: PDS_CLASSES[h.name] for t, h in spec.PDS_LAYOUTS.items()}

globals().update(SES_CLASSES)
globals().update(PDS_CLASSES)


class UETPDS(Packet):
    """Dispatcher bound under UDP/UETEntropy: becomes the layout for the type."""
    name = "UET PDS"
    fields_desc = fields_desc_for(spec.PROLOGUE)

    @classmethod
    def dispatch_hook(cls, _pkt=None, *args, **kargs):
        if _pkt and len(_pkt) >= spec.PROLOGUE_SIZE:
            return PDS_BY_TYPE.get(read_loc(_pkt, spec.PROLOGUE_TYPE), PDSPrologue)
        return cls


UETEntropy.guess_payload_class = lambda self, payload: UETPDS

_bound = {"tpids": None, "udp": None, "proto": None}


def _front(lower, upper):
    # bind_layers appends; UDP sport carries the entropy value and could match
    # an earlier binding (sport=53 -> DNS), so ours must be tried first.
    lst = lower.payload_guess
    for i, (_, cls) in enumerate(lst):
        if cls is upper:
            lst.insert(0, lst.pop(i))
            return


def set_csig_tpids(compact=spec.CSIG_TPID_COMPACT, wide=spec.CSIG_TPID_WIDE):
    if _bound["tpids"]:
        oc, ow = _bound["tpids"]
        split_layers(Ether, CSIGCompact, type=oc)
        split_layers(Ether, CSIGWide, type=ow)
    bind_layers(Ether, CSIGCompact, type=compact)
    bind_layers(Ether, CSIGWide, type=wide)
    _front(Ether, CSIGCompact)
    _front(Ether, CSIGWide)
    _bound["tpids"] = (compact, wide)


def set_uet_udp_port(port=spec.UET_UDP_PORT):
    if _bound["udp"] is not None:
        split_layers(UDP, UETPDS, dport=_bound["udp"])
    bind_layers(UDP, UETPDS, dport=port)
    _front(UDP, UETPDS)
    for c in set(PDS_BY_TYPE.values()):      # building UDP()/PDSAck() sets dport
        if _bound["udp"] is not None:
            split_layers(UDP, c, dport=_bound["udp"])
        bind_top_down(UDP, c, dport=port)
    _bound["udp"] = port


def set_uet_ip_proto(proto=spec.UET_IP_PROTO):
    if _bound["proto"] is not None:
        split_layers(IP, UETEntropy, proto=_bound["proto"])
    bind_layers(IP, UETEntropy, proto=proto)
    _bound["proto"] = proto


bind_layers(Ether, PFCPause, type=spec.ETH_P_MAC_CONTROL)
for _c in (CSIGCompact, CSIGWide):
    bind_layers(_c, IP, type=spec.ETH_P_IP)
set_csig_tpids()
set_uet_udp_port()
set_uet_ip_proto()
