"""The shipped Wireshark plugin (taurus/tools/wireshark/taurus_uet.lua):
generated from the wire spec, and tshark with it decodes every field of
every packet kind equal to the Scapy layers on the same frames."""
import random
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from taurus.datapath.wire import layers as L
from taurus.datapath.wire import spec
from taurus.datapath.wire.frames import uet_frame
from taurus.datapath.wire.layout import cond_holds
from taurus.tools import wireshark
from taurus.tools.wireshark import generate

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None,
                                  reason="tshark is not installed (make deps)")
# Fields that choose the layout or the next header: set per frame, not at random.
HEADER = {h.name: h for h in spec.HEADERS}
STRUCTURAL = {"type", "next_hdr", "ctl_type", "flags", "cc_type", "ccx_type"}


def fill(layer, rng, **fixed):
    """The layer with every non-structural field at a random value of its width."""
    for p in spec.PLACED[type(layer).__name__]:
        f = p.field
        if f.name in STRUCTURAL:
            continue
        lo, hi = (-(1 << f.bits - 1), (1 << f.bits - 1) - 1) if f.signed else (0, (1 << f.bits) - 1)
        setattr(layer, f.name, rng.randint(lo, hi))
    for k, v in fixed.items():
        setattr(layer, k, v)
    return layer


def int_trailer(rng, nhop):
    hops = b"".join(bytes(fill(L.INTHop(), rng)) for _ in range(nhop))
    return hops + bytes(L.INTTail(nhop=nhop, max_hop=5))


def frames():
    """Every packet kind: each PDS type and ctl_type, each SES header, both
    Alt branches, probe, SRC record, CSIG compact/wide, native IP, INT."""
    rng = random.Random(41)
    F = lambda cls, **kw: fill(cls(), rng, **kw)       # noqa: E731
    S = spec
    out = [
        uet_frame(F(L.PDSRudReq, flags=S.F_AR), F(L.SESStd, flags=S.SF_SOM), b"x" * 64),
        uet_frame(F(L.PDSRudReq, type=S.T_ROD_REQ, flags=S.F_SYN | S.F_RETX),
                  F(L.SESStd, flags=S.SF_EOM), b"y" * 32, probe=F(L.TaurusProbe, mode=1),
                  csig=F(L.CSIGCompact)),
        uet_frame(F(L.PDSRudReq, flags=S.F_REQ_NP | S.F_REQ_SRC), F(L.SESSmall), b"z" * 8,
                  csig=F(L.CSIGWide)),
        uet_frame(F(L.PDSRudCCReq, flags=0), F(L.SESMedium, flags=S.SF_SOM | S.SF_HD)),
        uet_frame(F(L.PDSRudCCReq, type=S.T_ROD_CC_REQ, flags=S.F_SYN), F(L.SESSmall)),
        uet_frame(F(L.PDSRudi, flags=0x20), F(L.SESStd, flags=0)),
        uet_frame(F(L.PDSRudi, type=S.T_RUDI_RESP, flags=0x10), F(L.SESRespData), b"r" * 16),
        uet_frame(F(L.PDSUud, flags=0), F(L.SESSmall), b"u" * 4, native_ip=True, entropy=777),
        uet_frame(F(L.PDSAck, flags=S.F_ACK_M), F(L.SESResp)),
        uet_frame(F(L.PDSAck, flags=S.F_ACK_P | S.F_ACK_UE), None,
                  probe=F(L.TaurusProbe, mode=3)),
        uet_frame(F(L.PDSAckCC, flags=0x02, cc_type=S.CC_NSCC), F(L.SESRespDataSmall)),
        uet_frame(F(L.PDSAckCC, flags=0, cc_type=S.CC_CREDIT), None),
        uet_frame(F(L.PDSAckCCX, flags=0, ccx_type=S.CCX_CSIG), None, csig=F(L.CSIGCompact)),
        uet_frame(F(L.PDSAckCCX, flags=S.F_ACK_P, ccx_type=3), None),
        uet_frame(F(L.PDSNack, flags=S.F_NACK_M | S.F_NACK_NT), None),
        uet_frame(F(L.PDSNackCCX, flags=0), F(L.SESResp)),
        uet_frame(F(L.PDSControl, ctl_type=S.CTL_SRC, flags=0), None) / F(L.BoltSRC),
        uet_frame(F(L.PDSControl, ctl_type=S.CTL_PROBE, flags=S.F_SYN), None,
                  probe=F(L.TaurusProbe, mode=2)),
        uet_frame(L.PDSPrologue(type=S.T_TSS), None, b"t" * 24),    # known, not decoded
    ]
    out += [uet_frame(F(L.PDSControl, ctl_type=c, flags=S.F_AR | S.F_CTL_ISROD), None)
            for c in S.CTL_TYPES if c != S.CTL_SRC]
    raw = [bytes(f) for f in out]
    # INT: a data frame with three hop records and one asking for INT (no hops)
    raw[0] += int_trailer(rng, 3)
    raw[1] += int_trailer(rng, 0)
    raw[2] += int_trailer(rng, 2)
    return raw


def scapy_fields(raw: bytes):
    """(name, value) in wire order, as the Scapy layers decode the frame."""
    out = []
    layer = Ether(raw)
    while layer and type(layer).__name__ not in ("Raw", "Padding", "NoPayload"):
        name = type(layer).__name__
        if name in generate.PREFIX:
            vals = {p.field.name: layer.getfieldval(p.field.name) for p in spec.PLACED[name]}
            out += [(generate.abbr(HEADER[name], p.field), int(vals[p.field.name]))
                    for p in spec.PLACED[name] if cond_holds(p.cond, vals)]
        layer = layer.payload
    tail = L.INTTail(raw[-4:])
    if tail.magic == spec.INT_MAGIC:
        first = len(raw) - 4 - 8 * tail.nhop
        for k in range(tail.nhop):
            hop = L.INTHop(raw[first + 8 * k:first + 8 * k + 8])
            out += [(generate.abbr(spec.INT_HOP, p.field), hop.getfieldval(p.field.name))
                    for p in spec.PLACED["INTHop"]]
        out += [(generate.abbr(spec.INT_TAIL, p.field), tail.getfieldval(p.field.name))
                for p in spec.PLACED["INTTail"]]
    return out


def tshark_fields(path):
    """Per frame, (name, value) of every uet.* / csig.* field, in tree order."""
    r = subprocess.run(["tshark", "-X", f"lua_script:{generate.PLUGIN}", "-r", path,
                        "-T", "pdml"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "Lua: Error" not in r.stderr, r.stderr
    out = []
    for pkt in ET.fromstring(r.stdout).iter("packet"):
        out.append([(f.get("name"), int(f.get("show"), 0)) for f in pkt.iter("field")
                    if f.get("name", "").startswith(("uet.", "csig."))])
    return out


def test_shipped_plugin_is_generated_from_the_spec():
    with open(generate.PLUGIN) as f:
        assert f.read() == generate.plugin_text(), \
            "run: python -m taurus.tools.wireshark.generate"


@needs_tshark
def test_tshark_decodes_every_field_as_scapy(tmp_path):
    raw = frames()
    path = str(tmp_path / "kinds.pcap")
    wrpcap(path, [Ether(r) for r in raw])
    got = tshark_fields(path)
    assert len(got) == len(raw)
    kinds = set()
    for k, (r, ws) in enumerate(zip(raw, got)):
        want = scapy_fields(r)
        assert ws == want, f"frame {k + 1}"
        kinds |= {(n, v) for n, v in want if n in ("uet.pds.type", "uet.pds.ctl_type")}
    assert {v for n, v in kinds if n == "uet.pds.type"} >= set(spec.PDS_LAYOUTS)
    assert {v for n, v in kinds if n == "uet.pds.ctl_type"} == set(spec.CTL_TYPES)


def test_install_copies_the_plugin_and_cli_prints_its_path(tmp_path, monkeypatch, capsys):
    import argparse
    from taurus.tools import capture_cli
    monkeypatch.setenv("HOME", str(tmp_path))
    ap = argparse.ArgumentParser()
    capture_cli.add_capture_parsers(ap.add_subparsers())
    a = ap.parse_args(["dissect", "--install-wireshark", "--wireshark-plugin"])
    assert a.func(a) == 0
    dst = tmp_path / ".local" / "lib" / "wireshark" / "plugins" / "taurus_uet.lua"
    assert capsys.readouterr().out.splitlines() == \
        [wireshark.PLUGIN, f"taurus dissect: installed {dst}"]
    assert dst.read_text() == open(wireshark.PLUGIN).read()
    a = ap.parse_args(["dissect", "--install-wireshark", str(tmp_path / "d")])
    assert a.func(a) == 0 and (tmp_path / "d" / "taurus_uet.lua").exists()
