"""Write the Wireshark Lua plugin from the wire spec (``datapath/wire/spec.py``).

The plugin is the hand-written, offset-free interpreter ``dissect.lua``
preceded by tables generated here: every field's location, width, sign,
condition and enum, the PDS/SES dispatch maps and the constants.  So the
Lua states no offset of its own and follows ``spec.py`` when it changes:

    python -m taurus.tools.wireshark.generate      # rewrites taurus_uet.lua

A test checks that the shipped ``taurus_uet.lua`` equals this output.
"""
import os
import sys

from taurus.datapath.wire import spec

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME = os.path.join(HERE, "dissect.lua")
PLUGIN = os.path.join(HERE, "taurus_uet.lua")

# Wireshark field-name prefix of each header (docs/PROTOCOLS.md, "Wireshark").
PREFIX = {h.name: "uet.pds" for h in (spec.PROLOGUE, *spec.PDS_LAYOUTS.values())}
PREFIX.update({h.name: "uet.ses" for h in spec.SES_LAYOUTS.values()})
PREFIX.update({spec.ENTROPY.name: "uet.entropy", spec.PROBE.name: "uet.probe",
               spec.SRC_REC.name: "uet.src", spec.INT_HOP.name: "uet.int.hop",
               spec.INT_TAIL.name: "uet.int", spec.CSIG_C.name: "csig",
               spec.CSIG_W.name: "csig"})
HEADERS = [h for h in spec.HEADERS if h.name in PREFIX]
HEX_FIELDS = {"flags", "cc_flags", "magic", "sack_bitmap", "memory_key", "header_data",
              "initiator", "ccx_state", "nccx_state"}


def abbr(header, field):
    return f"{PREFIX[header.name]}.{field.name}"


def _ftype(bits, signed):
    if signed:
        return {16: "int16", 32: "int32"}[bits]
    for n, t in ((8, "uint8"), (16, "uint16"), (24, "uint24"), (32, "uint32")):
        if bits <= n:
            return t
    return "uint64"


def field_table():
    """abbr -> (ftype, base, enum, header name) over every header; a name
    shared by several headers gets the widest type."""
    out = {}
    for h in HEADERS:
        for p in spec.PLACED[h.name]:
            f, a = p.field, abbr(h, p.field)
            hexa = f.name in HEX_FIELDS or (h.prefix.startswith("CSIG") and f.name == "type")
            t = _ftype(f.bits, f.signed)
            if a in out:
                old = out[a]
                if old[0].startswith("int") != t.startswith("int"):
                    raise ValueError(f"{a}: signed in one header, unsigned in another")
                widths = ("uint8", "uint16", "uint24", "uint32", "uint64", "int16", "int32")
                t = max(old[0], t, key=widths.index)
                out[a] = (t, old[1], old[2] or f.enum, old[3])
            else:
                out[a] = (t, "HEX" if hexa else "DEC", f.enum, h.name)
    return out


def _lua_str(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _lua_map(d):
    return "{" + ", ".join(f"[{k}]={_lua_str(v)}" for k, v in sorted(d.items())) + "}"


def _cond(c):
    if c is None:
        return "nil"
    f, mask, value, want = c
    return f"{{{_lua_str(f)}, {mask}, {value}, {'true' if want else 'false'}}}"


def generated_tables():
    L = ["-- Generated from taurus/datapath/wire/spec.py by taurus.tools.wireshark.generate;",
         "-- do not edit: change spec.py and regenerate.", "",
         "local FIELDS = {"]
    for a, (t, base, enum, hname) in field_table().items():
        en = _lua_map(enum) if enum and t != "uint64" else "nil"
        L.append(f"  {{{_lua_str(a)}, {_lua_str(a.rsplit('.', 1)[1])}, {_lua_str(t)}, "
                 f"base.{base}, {en}}},")
    L.append("}")
    L.append("local HEADERS = {")
    for h in HEADERS:
        L.append(f"  [{_lua_str(h.name)}] = {{size={spec.SIZES[h.name]}, "
                 f"label={_lua_str(h.doc.split(' (')[0])}, fields={{")
        for p in spec.PLACED[h.name]:
            off, nb, shift, w, s = p.loc
            fl = ("{" + ", ".join(_lua_str(n) for n in p.field.flags) + "}"
                  if p.field.flags else "nil")
            L.append(f"    {{name={_lua_str(p.field.name)}, abbr={_lua_str(abbr(h, p.field))}, "
                     f"off={off}, nb={nb}, pos={nb * 8 - shift - w}, w={w}, "
                     f"signed={'true' if s else 'false'}, cond={_cond(p.cond)}, flags={fl}}},")
        L.append("  }},")
    L.append("}")
    L.append("local PDS_BY_TYPE = {" + ", ".join(
        f"[{t}]={_lua_str(h.name)}" for t, h in sorted(spec.PDS_LAYOUTS.items())) + "}")
    L.append("local SES_BY_NH = {" + ", ".join(
        f"[{n}]={_lua_str(h.name)}" for n, h in sorted(spec.SES_LAYOUTS.items())) + "}")
    L.append(f"local PDS_TYPES = {_lua_map(spec.PDS_TYPES)}")
    L.append(f"local CTL_TYPES = {_lua_map(spec.CTL_TYPES)}")
    consts = {"UET_UDP_PORT": spec.UET_UDP_PORT, "UET_IP_PROTO": spec.UET_IP_PROTO,
              "CSIG_TPID_COMPACT": spec.CSIG_TPID_COMPACT, "CSIG_TPID_WIDE": spec.CSIG_TPID_WIDE,
              "ETH_P_IP": spec.ETH_P_IP, "T_CONTROL": spec.T_CONTROL, "CTL_SRC": spec.CTL_SRC,
              "F_TP": spec.F_TP, "INT_MAGIC": spec.INT_MAGIC, "ETH_SIZE": spec.SIZES["Ether"],
              "IPV4_SIZE": spec.SIZES["IP"]}
    L.append("local C = {" + ", ".join(f"{k}={v}" for k, v in consts.items()) + "}")
    L.append("local IPV4_LEN = {off=%d, nb=%d}" % spec.LOCS["IP"]["len"][:2])
    return "\n".join(L) + "\n"


def plugin_text():
    with open(RUNTIME) as f:
        runtime = f.read()
    head = ("-- Taurus Wireshark dissector: UET PDS/SES, entropy header, Taurus probe,\n"
            "-- Bolt SRC record, CSIG tags, INT trailer (docs/PROTOCOLS.md).\n"
            "--   tshark -X lua_script:taurus_uet.lua -r capture.pcapng\n"
            "--   or: taurus dissect --install-wireshark\n\n")
    return head + generated_tables() + "\n" + runtime


def main(argv=None) -> int:
    out = (argv or sys.argv[1:] or [PLUGIN])[0]
    with open(out, "w") as f:
        f.write(plugin_text())
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
