"""Numba encoders/decoders for every header in ``spec.py``.

A field is addressed by its location tuple from ``spec`` (e.g.
``spec.RUD_REQ_PSN``) relative to the header's first byte ``base`` in a uint8
buffer.  Location tuples are module globals, which Numba freezes as
constants: after inlining, ``get_field(buf, p, RUD_REQ_PSN)`` is the same
four byte loads as hand-written code (checked by
tests/test_wire_codec.py::test_generic_getter_costs_nothing: no call left in
the caller's optimised IR, exactly four byte loads).

Values travel as int64.  Signed fields are sign-extended; 64-bit unsigned
fields come back as their int64 bit pattern (mask with 2**64-1 in Python).
Nothing here checks bounds: callers (the parser, a device that built the
frame) know the header fits.

These functions take arrays but never allocate: they are ``hot``
(``datapath/hot.py``).
"""
import numba as nb
import numpy as np

from ..hot import hot
from . import spec


# Loads/stores are spelled out up to 8 bytes instead of looping: with a
# constant n the branches fold away, whereas LLVM runtime-unrolls a loop in
# the callee before inlining and leaves a loop behind in the caller.
@hot
def _load_be(buf, off, n):
    acc = np.int64(buf[off])
    if n > 1:
        acc = (acc << 8) | np.int64(buf[off + 1])
    if n > 2:
        acc = (acc << 8) | np.int64(buf[off + 2])
    if n > 3:
        acc = (acc << 8) | np.int64(buf[off + 3])
    if n > 4:
        acc = (acc << 8) | np.int64(buf[off + 4])
    if n > 5:
        acc = (acc << 8) | np.int64(buf[off + 5])
    if n > 6:
        acc = (acc << 8) | np.int64(buf[off + 6])
    if n > 7:
        acc = (acc << 8) | np.int64(buf[off + 7])
    return acc


@hot
def _store_be(buf, off, n, v):
    last = off + n - 1
    buf[last] = np.uint8(v & 0xFF)
    if n > 1:
        buf[last - 1] = np.uint8((v >> 8) & 0xFF)
    if n > 2:
        buf[last - 2] = np.uint8((v >> 16) & 0xFF)
    if n > 3:
        buf[last - 3] = np.uint8((v >> 24) & 0xFF)
    if n > 4:
        buf[last - 4] = np.uint8((v >> 32) & 0xFF)
    if n > 5:
        buf[last - 5] = np.uint8((v >> 40) & 0xFF)
    if n > 6:
        buf[last - 6] = np.uint8((v >> 48) & 0xFF)
    if n > 7:
        buf[last - 7] = np.uint8((v >> 56) & 0xFF)


@hot
def get_field(buf, base, f):
    """Field at location ``f`` of the header starting at ``buf[base]``."""
    v = _load_be(buf, np.int64(base) + f[0], f[1]) >> f[2]
    w = f[3]
    if w < 64:
        v &= (np.int64(1) << w) - 1
        if f[4] != 0:
            v = (v << (64 - w)) >> (64 - w)   # arithmetic shift sign-extends
    return v


@hot
def set_field(buf, base, f, value):
    """Write ``value`` (truncated to the field's width) at location ``f``."""
    off = np.int64(base) + f[0]
    n = f[1]
    shift = f[2]
    w = f[3]
    v = np.int64(value)
    if shift == 0 and w == n * 8:              # whole bytes: no read-modify-write
        _store_be(buf, off, n, v)
        return
    mask = ((np.int64(1) << w) - 1) << shift
    acc = (_load_be(buf, off, n) & ~mask) | ((v << shift) & mask)
    _store_be(buf, off, n, acc)


@hot
def decode_fields(buf, base, fields, out):
    """out[i] = field i of ``fields`` (a tuple of locations, e.g. spec.ACK_FIELDS)."""
    for i in range(len(fields)):
        out[i] = get_field(buf, base, fields[i])


@hot
def encode_fields(buf, base, fields, vals):
    """Write vals[i] into field i of ``fields``, in order (a later field wins
    where alternative views overlap: pass only the view that applies)."""
    for i in range(len(fields)):
        set_field(buf, base, fields[i], vals[i])


@hot
def zero_bytes(buf, base, n):
    for i in range(n):
        buf[base + i] = 0


@hot
def ipv4_checksum(buf, ip_off):
    """The header checksum the IPv4 header at ``ip_off`` should carry."""
    hlen = (np.int64(buf[ip_off]) & 0xF) * 4
    s = np.int64(0)
    for i in range(0, hlen, 2):
        if i != 10:                                   # skip the checksum itself
            s += (np.int64(buf[ip_off + i]) << 8) | np.int64(buf[ip_off + i + 1])
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


@hot
def fill_ipv4_checksum(buf, ip_off):
    set_field(buf, ip_off, spec.IPV4_CHKSUM, ipv4_checksum(buf, ip_off))


@hot
def _udp_sum(buf, ip_off, l4, end):
    """One's-complement sum (folded, not inverted) of the IPv4 pseudo-header
    and the UDP datagram buf[l4:end] as it stands (checksum field included)."""
    s = np.int64(17) + (end - l4)
    for i in range(12, 20, 2):                        # source and destination address
        s += (np.int64(buf[ip_off + i]) << 8) | np.int64(buf[ip_off + i + 1])
    for i in range(l4, end - 1, 2):
        s += (np.int64(buf[i]) << 8) | np.int64(buf[i + 1])
    if (end - l4) & 1:
        s += np.int64(buf[end - 1]) << 8
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


@hot
def fill_udp_checksum(buf, ip_off, l4, end):
    """Write the RFC 768 checksum of the UDP datagram buf[l4:end]."""
    set_field(buf, l4, spec.UDP_CHKSUM, 0)
    c = (~_udp_sum(buf, ip_off, l4, end)) & 0xFFFF
    set_field(buf, l4, spec.UDP_CHKSUM, c if c != 0 else 0xFFFF)


@hot
def udp_checksum_ok(buf, ip_off, l4, end):
    """False only for a UDP datagram that carries a checksum (non-zero: zero
    means none, RFC 768) which does not match its bytes."""
    if get_field(buf, l4, spec.UDP_CHKSUM) == 0:
        return True
    return _udp_sum(buf, ip_off, l4, end) == 0xFFFF


def _shift16(loc):
    """Shift of a field inside the prologue's first 16 bits, from its location."""
    off, nbytes, shift, width, _ = loc
    bitpos = off * 8 + nbytes * 8 - shift - width
    assert bitpos + width <= 16
    return 16 - bitpos - width


_PT_SH, _PN_SH, _PF_SH = (_shift16(spec.PROLOGUE_TYPE), _shift16(spec.PROLOGUE_NEXT_HDR),
                          _shift16(spec.PROLOGUE_FLAGS))
_PT_M, _PN_M, _PF_M = ((1 << spec.PROLOGUE_TYPE[3]) - 1, (1 << spec.PROLOGUE_NEXT_HDR[3]) - 1,
                       (1 << spec.PROLOGUE_FLAGS[3]) - 1)


@hot
def write_prologue(buf, base, pds_type, next_hdr, flags):
    """Type, next_hdr (ctl_type for CONTROL) and flags in one 16-bit store."""
    v = ((np.int64(pds_type) & _PT_M) << _PT_SH) | ((np.int64(next_hdr) & _PN_M) << _PN_SH) \
        | ((np.int64(flags) & _PF_M) << _PF_SH)
    buf[base] = np.uint8(v >> 8)
    buf[base + 1] = np.uint8(v & 0xFF)


def field_values(header, values):
    """Python helper: (locations, int64 values) for ``encode_fields`` from a
    {field: value} dict, keeping only the alternative views that apply.
    Missing fields take the spec default."""
    from .layout import cond_holds
    locs, vals = [], []
    full = {p.field.name: values.get(p.field.name, p.field.default)
            for p in spec.PLACED[header.name]}
    for p in spec.PLACED[header.name]:
        if cond_holds(p.cond, full):
            locs.append(p.loc)
            v = int(full[p.field.name])
            vals.append(v - (1 << 64) if v >= 1 << 63 else v)
    return tuple(locs), np.array(vals, np.int64)
