"""Machinery for declarative header descriptions (the definitions live in
``spec.py``).

A header is an ordered list of ``Field`` and ``Alt`` items, big-endian, most
significant bit first.  ``Alt`` gives two alternative views of the same bits,
selected by an earlier field (e.g. ``dpdcid`` vs ``pdc_info`` on SYN); both
views get locations, the Scapy layer turns them into ``ConditionalField``s.

Every field gets a *location*: a plain tuple ``(byte_off, nbytes, shift,
width, signed)`` meaning "read ``nbytes`` bytes big-endian at ``byte_off``,
shift right by ``shift``, keep ``width`` bits, sign-extend if ``signed``".
Numba freezes global tuples as constants, so the generic getters in
``codec.py`` compile to the same loads and masks as hand-written code.
"""
from typing import NamedTuple, Optional


class Field(NamedTuple):
    name: str
    bits: int
    signed: bool = False
    default: int = 0
    enum: Optional[dict] = None      # value -> name (Scapy display only)
    flags: Optional[tuple] = None    # bit names, least significant first (Scapy FlagsField)


class Alt(NamedTuple):
    """Bits read as ``then`` when ``(pkt.<field> & mask) == value``, else as ``other``."""
    when: tuple                      # (field_name, mask, value)
    then: tuple
    other: tuple


class Header(NamedTuple):
    name: str                        # Scapy class name
    prefix: str                      # prefix of the flat location constants
    items: tuple
    doc: str
    scapy: bool = True               # False: Scapy's own layer is used (Ether, IP, UDP)


class Placed(NamedTuple):
    """A field with its location and the condition under which it exists."""
    field: Field
    bitpos: int
    loc: tuple
    cond: Optional[tuple]            # None, or (field_name, mask, value, wanted: bool)


def _loc(bitpos, bits, signed):
    first = bitpos // 8
    last = (bitpos + bits - 1) // 8
    nbytes = last - first + 1
    if nbytes > 8:
        raise ValueError("a field must fit in 8 aligned bytes")
    shift = nbytes * 8 - (bitpos % 8) - bits
    return (first, nbytes, shift, bits, 1 if signed else 0)


def place(header):
    """Lay the header out: a list of ``Placed`` and the total length in bytes."""
    out, pos, names = [], 0, set()

    def put(fields, start, cond):
        p = start
        for f in fields:
            if f.name in names:
                raise ValueError(f"{header.name}: duplicate field {f.name}")
            names.add(f.name)
            if not 1 <= f.bits <= 64:
                raise ValueError(f"{header.name}.{f.name}: bad width {f.bits}")
            out.append(Placed(f, p, _loc(p, f.bits, f.signed), cond))
            p += f.bits
        return p

    for it in header.items:
        if isinstance(it, Alt):
            fname, mask, value = it.when
            if fname not in names:
                raise ValueError(f"{header.name}: Alt selector {fname} must come earlier")
            a = put(it.then, pos, (fname, mask, value, True))
            b = put(it.other, pos, (fname, mask, value, False))
            if a != b:
                raise ValueError(f"{header.name}: Alt branches differ in width")
            pos = a
        else:
            pos = put((it,), pos, None)
    if pos % 8:
        raise ValueError(f"{header.name}: {pos} bits is not a whole number of bytes")
    return out, pos // 8


def cond_holds(cond, values):
    """Whether a placed field exists, given the header's other field values."""
    if cond is None:
        return True
    fname, mask, value, wanted = cond
    return ((int(values.get(fname, 0)) & mask) == value) == wanted


def read_loc(raw, loc):
    """Pure-Python read of a location from bytes (for Python-side dispatch)."""
    off, nbytes, shift, width, signed = loc
    v = (int.from_bytes(raw[off:off + nbytes], "big") >> shift) & ((1 << width) - 1)
    return v - (1 << width) if signed and v >> (width - 1) else v


def describe(headers):
    """A printable table of every header: offsets, bits, conditions."""
    lines = []
    for h in headers:
        placed, n = place(h)
        lines.append(f"{h.name} ({n} B) — {h.doc}")
        for p in placed:
            off, nb, sh, w, s = p.loc
            cond = ""
            if p.cond:
                f, m, v, want = p.cond
                cond = f"  [if {f}&{m:#x}{'==' if want else '!='}{v:#x}]"
            lines.append(f"  bits {p.bitpos:4d}+{w:<2d} byte {off:2d} "
                         f"{'s' if s else 'u'} {h.prefix}_{p.field.name.upper()}{cond}")
    return "\n".join(lines)
