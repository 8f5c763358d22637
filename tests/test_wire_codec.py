"""Cross-tests: every header round-trips Scapy -> bytes -> Numba and
Numba -> bytes -> Scapy with equal values and identical bytes; full frames
built by Scapy parse to the same fields in the Numba parser."""
import numba as nb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from taurus.datapath.wire import codec as C
from taurus.datapath.wire import frames as F
from taurus.datapath.wire import layers as L
from taurus.datapath.wire import parse as P
from taurus.datapath.wire import spec as S
from taurus.datapath.wire.layout import cond_holds

SETTINGS = dict(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
GENERATED = [h for h in S.HEADERS if h.scapy]
U64 = (1 << 64) - 1


def _field_value(f):
    if f.signed:
        return st.integers(-(1 << (f.bits - 1)), (1 << (f.bits - 1)) - 1)
    return st.integers(0, (1 << f.bits) - 1)


def header_values(h, fixed=None):
    """A strategy of {field: value} for every field of h (both Alt views)."""
    fixed = fixed or {}
    return st.fixed_dictionaries({p.field.name: st.just(fixed[p.field.name])
                                  if p.field.name in fixed else _field_value(p.field)
                                  for p in S.PLACED[h.name]})


def active(h, vals):
    return [p for p in S.PLACED[h.name] if cond_holds(p.cond, vals)]


def numba_encode(h, vals):
    locs, arr = C.field_values(h, vals)
    buf = np.zeros(S.SIZES[h.name], np.uint8)
    C.encode_fields(buf, 0, locs, arr)
    return buf


def numba_decode(h, raw):
    buf = np.frombuffer(raw, np.uint8).copy()
    locs = S.LOCS[h.name]
    out = np.zeros(len(locs), np.int64)
    C.decode_fields(buf, 0, tuple(locs.values()), out)
    return dict(zip(locs, (int(x) for x in out)))


def _scapy_cls(h):
    return getattr(L, h.name)


@pytest.mark.parametrize("h", GENERATED, ids=lambda h: h.name)
@settings(max_examples=50, **SETTINGS)
@given(data=st.data())
def test_header_roundtrip(h, data):
    vals = data.draw(header_values(h))
    act = active(h, vals)
    cls = _scapy_cls(h)
    # Scapy -> bytes -> Numba
    pkt = cls(**{p.field.name: vals[p.field.name] for p in act})
    raw = bytes(pkt)
    assert len(raw) == S.SIZES[h.name]
    dec = numba_decode(h, raw)
    for p in act:
        assert dec[p.field.name] & U64 == vals[p.field.name] & U64, p.field.name
    # Numba -> bytes -> Scapy, and the two encoders agree byte for byte
    nraw = bytes(numba_encode(h, vals))
    assert nraw == raw
    back = cls(nraw)
    for p in act:
        assert int(getattr(back, p.field.name)) == vals[p.field.name], p.field.name


def test_every_header_is_tested_or_native():
    natives = {h.name for h in S.HEADERS if not h.scapy}
    assert natives == {"Ether", "IP", "UDP"}
    assert all(hasattr(L, h.name) for h in GENERATED)


@settings(max_examples=150, **SETTINGS)
@given(eth=header_values(S.ETH), ip=header_values(S.IPV4, {"version": 4, "ihl": 5}),
       udp=header_values(S.UDP))
def test_native_headers_match_scapy(eth, ip, udp):
    """Ether/IPv4/UDP: Scapy's own layers against our locations."""
    tos = (ip["dscp"] << 2) | ip["ecn"]
    sip = IP(version=4, ihl=5, tos=tos, len=ip["len"], id=ip["id"], flags=ip["flags"],
             frag=ip["frag"], ttl=ip["ttl"], proto=ip["proto"], chksum=ip["chksum"],
             src=ip["src"], dst=ip["dst"])
    mac = lambda v: ":".join(f"{(v >> (40 - 8 * i)) & 0xFF:02x}" for i in range(6))  # noqa: E731
    seth = Ether(dst=mac(eth["dst"]), src=mac(eth["src"]), type=eth["type"])
    sudp = UDP(**udp)
    for h, pkt, vals in ((S.ETH, seth, eth), (S.IPV4, sip, ip), (S.UDP, sudp, udp)):
        raw = bytes(pkt)[:S.SIZES[h.name]]
        assert numba_decode(h, raw) == vals
        assert bytes(numba_encode(h, vals)) == raw


@settings(max_examples=100, **SETTINGS)
@given(t=st.sampled_from(sorted(S.PDS_LAYOUTS)), nh=st.integers(0, 15), fl=st.integers(0, 127))
def test_write_prologue(t, nh, fl):
    buf = np.zeros(2, np.uint8)
    C.write_prologue(buf, 0, t, nh, fl)
    p = L.PDSPrologue(bytes(buf))
    assert (p.type, p.next_hdr, int(p.flags)) == (t, nh, fl)


@settings(max_examples=100, **SETTINGS)
@given(ip=header_values(S.IPV4, {"version": 4, "ihl": 5}))
def test_ipv4_checksum_matches_scapy(ip):
    raw = bytes(IP(tos=ip["dscp"] << 2, len=ip["len"], id=ip["id"], ttl=ip["ttl"],
                   proto=ip["proto"], src=ip["src"], dst=ip["dst"], flags=ip["flags"],
                   frag=ip["frag"]))[:20]
    buf = np.frombuffer(raw, np.uint8).copy()
    want = C.get_field(buf, 0, S.IPV4_CHKSUM)
    C.set_field(buf, 0, S.IPV4_CHKSUM, 0)
    C.fill_ipv4_checksum(buf, 0)
    assert C.get_field(buf, 0, S.IPV4_CHKSUM) == want


def test_generic_getter_costs_nothing():
    """get_field with a spec location is inlined and constant-folded: the
    caller's optimised IR calls nothing and only loads bytes."""
    @nb.njit
    def psn_of(buf, b):
        return C.get_field(buf, b, S.RUD_REQ_PSN)

    buf = np.zeros(32, np.uint8)
    buf[4:8] = [1, 2, 3, 4]
    assert psn_of(buf, 0) == 0x01020304
    ir = psn_of.inspect_llvm(psn_of.signatures[0])
    body = ir[ir.index("define"):]
    body = body[:body.index("\n}\n")]
    assert "call" not in body.replace("@llvm.", "")   # no out-of-line calls
    assert body.count("load i8") == 4


# ---------------- full frames: Scapy-built, Numba-parsed ----------------

_SES_FOR = {}
for _t, _allowed in S.NEXT_HDR_ALLOWED.items():
    if _t != S.T_CONTROL:
        _SES_FOR[_t] = [n for n in _allowed if n != S.NH_NONE]


@st.composite
def uet_frames(draw):
    t = draw(st.sampled_from(sorted(S.PDS_LAYOUTS)))
    h = S.PDS_LAYOUTS[t]
    ctl = {"ctl_type": draw(st.sampled_from(sorted(S.CTL_TYPES)))} if t == S.T_CONTROL else {}
    vals = draw(header_values(h, {"type": t, **ctl}))
    pds = L.PDS_BY_TYPE[t](**{p.field.name: vals[p.field.name] for p in active(h, vals)})
    ses = None
    allowed = S.NEXT_HDR_ALLOWED[t]
    if t != S.T_CONTROL and (S.NH_NONE not in allowed or draw(st.booleans())):
        sh = S.SES_LAYOUTS[draw(st.sampled_from(_SES_FOR[t]))]
        sv = draw(header_values(sh))
        ses = getattr(L, sh.name)(**{p.field.name: sv[p.field.name] for p in active(sh, sv)})
    probe = None
    if draw(st.booleans()):
        probe = L.TaurusProbe(**draw(header_values(S.PROBE)))
    csig = draw(st.sampled_from([None, "c", "w"]))
    if csig:
        ch = S.CSIG_C if csig == "c" else S.CSIG_W
        cv = draw(header_values(ch))
        cv.pop("type")
        csig = getattr(L, ch.name)(**cv)
    kw = dict(entropy=draw(st.integers(0, 0xFFFF)), dscp=draw(st.integers(0, 63)),
              ecn=draw(st.integers(0, 3)), ttl=draw(st.integers(1, 255)),
              src_ip=draw(st.ip_addresses(v=4)).exploded,
              dst_ip=draw(st.ip_addresses(v=4)).exploded,
              native_ip=draw(st.booleans()))
    payload = draw(st.binary(max_size=64))
    frame = F.uet_frame(pds, ses, payload, probe=probe, csig=csig, **kw)
    pad = draw(st.integers(0, 16))         # Ethernet padding after the datagram
    return bytes(frame) + b"\0" * pad, draw(st.integers(0, 32))


def _ip_int(a):
    return int.from_bytes(bytes(int(x) for x in a.split(".")), "big")


@settings(max_examples=300, **SETTINGS)
@given(fr=uet_frames())
def test_scapy_frames_parse_identically(fr):
    raw, slack = fr
    buf = np.zeros(len(raw) + slack, np.uint8)
    base = slack                       # frame sits at the end of the buffer
    buf[base:] = np.frombuffer(raw, np.uint8)
    d, cnt = P.new_desc(), P.new_counts()
    st_ = P.parse_frame(buf, base, len(raw), P.make_parse_config(), d, cnt)
    assert P.PARSE_ERRORS[st_] == "ok"
    assert cnt.sum() == 1 and cnt[P.P_OK] == 1
    s = Ether(raw)
    tag = s.getlayer(L.CSIGCompact) or s.getlayer(L.CSIGWide)
    if tag is None:
        assert d[P.D_CSIG_FMT] == S.CSIG_NONE
    else:
        assert d[P.D_CSIG_FMT] == (S.CSIG_COMPACT if isinstance(tag, L.CSIGCompact) else S.CSIG_WIDE)
        assert d[P.D_CSIG_OFF] == base + 14
        assert (d[P.D_CSIG_T], d[P.D_CSIG_S], d[P.D_CSIG_LM], d[P.D_CSIG_D]) == \
            (tag.t, tag.s, tag.lm, tag.d)
    ip = s[IP]
    assert (d[P.D_IP_DSCP], d[P.D_IP_ECN], d[P.D_IP_TTL], d[P.D_IP_LEN], d[P.D_IP_PROTO]) == \
        (ip.tos >> 2, ip.tos & 3, ip.ttl, ip.len, ip.proto)
    assert (d[P.D_IP_SRC], d[P.D_IP_DST]) == (_ip_int(ip.src), _ip_int(ip.dst))
    if UDP in s:
        assert (d[P.D_SPORT], d[P.D_DPORT], d[P.D_ENTROPY]) == (s[UDP].sport, 4793, s[UDP].sport)
    else:
        assert d[P.D_ENTROPY] == s[L.UETEntropy].entropy
    pds = (s.getlayer(L.UETEntropy) or s[UDP]).payload
    assert type(pds) is L.PDS_BY_TYPE[pds.type]
    nh = pds.ctl_type if pds.type == S.T_CONTROL else pds.next_hdr
    assert (d[P.D_PDS_TYPE], d[P.D_PDS_NEXT], d[P.D_PDS_FLAGS]) == (pds.type, nh, int(pds.flags))
    for name, di in (("psn", P.D_PSN), ("cack_psn", P.D_PSN), ("nack_psn", P.D_PSN),
                     ("pkt_id", P.D_PSN), ("spdcid", P.D_SPDCID), ("nack_code", P.D_NACK_CODE),
                     ("clear_psn_offset", P.D_PSN_OFFSET), ("ack_psn_offset", P.D_PSN_OFFSET),
                     ("probe_opaque", P.D_PROBE_OPAQUE), ("cc_type", P.D_CC_TYPE),
                     ("ccx_type", P.D_CC_TYPE), ("nccx_type", P.D_CC_TYPE)):
        v = getattr(pds, name, None)
        if v is not None:
            assert d[di] == v, name
    probe = s.getlayer(L.TaurusProbe)
    assert (d[P.D_PROBE_OFF] != -1) == (probe is not None)
    if probe is not None:
        assert (d[P.D_PROBE_MODE], d[P.D_PROBE_TS], d[P.D_PROBE_SEQ]) == \
            (probe.mode, probe.ts, probe.seq)
    ses = next((s.getlayer(c) for c in L.SES_CLASSES.values() if s.getlayer(c)), None)
    assert (d[P.D_SES_OFF] != -1) == (ses is not None)
    if ses is not None:
        assert d[P.D_SES_TYPE] == nh and d[P.D_SES_LEN] == len(ses) - len(ses.payload)
        assert (d[P.D_SES_OPCODE], d[P.D_SES_JOB_ID]) == (ses.opcode, ses.job_id)
        assert d[P.D_SES_MSG_ID] == getattr(ses, "message_id", -1)
    load = bytes(s[Raw].load) if Raw in s else b""
    off, n = d[P.D_PAYLOAD_OFF], d[P.D_PAYLOAD_LEN]
    assert bytes(buf[off:off + n]) == load


# ---------------- named errors on hand-made malformed frames ----------------

def _status(raw, cfg=None, size=None):
    buf = np.zeros(size if size is not None else len(raw), np.uint8)
    buf[:len(raw)] = np.frombuffer(raw, np.uint8)
    d, cnt = P.new_desc(), P.new_counts()
    stv = P.parse_frame(buf, 0, len(raw), P.make_parse_config() if cfg is None else cfg, d, cnt)
    return P.PARSE_ERRORS[stv], d


def _base(**kw):
    return F.uet_frame(L.PDSRudReq(psn=7), L.SESStd(), b"xyz", **kw)


def test_named_errors():
    good = bytes(_base())
    assert _status(good)[0] == "ok"
    eth, ip_off, udp_off, pds_off = 14, 14, 34, 42
    assert _status(good[:13])[0] == "truncated_eth"
    assert _status(good[:eth + 19])[0] == "truncated_ip"
    bad = bytearray(good); bad[ip_off] = 0x65
    assert _status(bytes(bad))[0] == "bad_ip_version"
    bad = bytearray(good); bad[ip_off] = 0x44
    assert _status(bytes(bad))[0] == "bad_ihl"
    bad = bytearray(good); bad[ip_off] = 0x4F                 # 60-byte header, 40 present
    assert _status(bytes(bad[:eth + 40]))[0] == "truncated_ip"
    bad = bytearray(good); bad[ip_off + 2:ip_off + 4] = (10).to_bytes(2, "big")
    assert _status(bytes(bad))[0] == "bad_ip_len"
    bad = bytearray(good); bad[ip_off + 2:ip_off + 4] = (len(good)).to_bytes(2, "big")
    assert _status(bytes(bad))[0] == "ip_len_exceeds_frame"
    bad = bytearray(good); bad[ip_off + 6] |= 0x20           # MF
    assert _status(bytes(bad))[0] == "ip_fragment"
    bad = bytearray(good); bad[udp_off + 4:udp_off + 6] = (4).to_bytes(2, "big")
    assert _status(bytes(bad))[0] == "bad_udp_len"
    for n, want in ((pds_off + 1, "truncated_pds"), (pds_off + 11, "truncated_pds"),
                    (pds_off + 12 + 43, "truncated_ses")):
        f = Ether(good)
        f[IP].len = n - eth
        f[UDP].len = n - udp_off
        assert _status(bytes(f)[:n])[0] == want, want
    for t, want in ((0, "bad_pds_type"), (15, "bad_pds_type"), (31, "bad_pds_type"),
                    (S.T_TSS, "unsupported_pds_type")):
        bad = bytearray(good); bad[pds_off] = (t << 3) | (bad[pds_off] & 7)
        assert _status(bytes(bad))[0] == want
    bad = bytearray(good); C.write_prologue(np.frombuffer(bad, np.uint8), pds_off, S.T_RUD_REQ,
                                            S.NH_SES_RESP, 0)
    assert _status(bytes(bad))[0] == "bad_next_hdr"
    ctl = bytes(F.uet_frame(L.PDSControl(ctl_type=S.CTL_PROBE)))
    assert _status(ctl)[0] == "ok"
    unused = max(S.CTL_TYPES) + 1                  # the first ctl_type nobody defined
    bad = bytearray(ctl); C.write_prologue(np.frombuffer(bad, np.uint8), pds_off, S.T_CONTROL,
                                           unused, 0)
    assert _status(bytes(bad))[0] == "bad_next_hdr"
    pr = F.uet_frame(L.PDSAck(), probe=L.TaurusProbe())
    f = Ether(bytes(pr)); f[IP].len -= 1; f[UDP].len -= 1
    assert _status(bytes(f)[:-1])[0] == "truncated_probe"
    assert _status(bytes(_base(csig=L.CSIGWide()))[:20])[0] == "truncated_csig"
    nat = bytes(F.uet_frame(L.PDSAck(), native_ip=True))
    assert _status(nat)[0] == "ok"
    f = Ether(nat); f[IP].len = 22
    assert _status(bytes(f)[:36])[0] == "truncated_entropy"
    f = Ether(good); f[IP].len = 27; del f[IP].chksum
    assert _status(bytes(f)[:41])[0] == "truncated_udp"


def test_bad_bounds_and_not_taurus():
    good = bytes(_base())
    buf = np.frombuffer(good, np.uint8).copy()
    d, cnt = P.new_desc(), P.new_counts()
    cfg = P.make_parse_config()
    assert P.parse_frame(buf, 1, len(good), cfg, d, cnt) == P.P_BAD_FRAME_BOUNDS
    assert P.parse_frame(buf, -1, 10, cfg, d, cnt) == P.P_BAD_FRAME_BOUNDS
    assert P.parse_frame(buf, 0, -5, cfg, d, cnt) == P.P_BAD_FRAME_BOUNDS
    from scapy.layers.inet import TCP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import ARP
    others = [Ether() / ARP(), Ether() / IP() / UDP(sport=4793, dport=53) / b"x",
              Ether() / IP() / TCP(), Ether() / IPv6() / UDP(dport=4793) / b"x"]
    for o in others:
        assert _status(bytes(o))[0] == "not_taurus"
    s, d = _status(bytes(Ether(type=S.CSIG_TPID_COMPACT) / L.CSIGCompact(t=2, s=9) / IP() / TCP()))
    assert s == "not_taurus" and d[P.D_CSIG_FMT] == S.CSIG_COMPACT and d[P.D_CSIG_S] == 9
    assert cnt.sum() == 3


def test_configurable_tpids_port_proto():
    L.set_csig_tpids(S.CSIG_TPID_INTEROP, 0x9901)
    try:
        f = F.uet_frame(L.PDSAck(cack_psn=5), csig=L.CSIGCompact(s=3),
                        tpids=(S.CSIG_TPID_INTEROP, 0x9901), udp_port=5000, native_ip=False)
        raw = bytes(f)
        assert Ether(raw)[L.CSIGCompact].s == 3
        assert _status(raw)[0] == "not_taurus"          # default TPIDs and port
        cfg = P.make_parse_config(S.CSIG_TPID_INTEROP, 0x9901, 5000)
        s, d = _status(raw, cfg)
        assert s == "ok" and d[P.D_CSIG_S] == 3 and d[P.D_PSN] == 5
    finally:
        L.set_csig_tpids()
    raw = bytes(F.uet_frame(L.PDSAck(cack_psn=5), udp_port=5000))
    assert Ether(raw).getlayer(L.PDSAck) is None
    L.set_uet_udp_port(5000)
    try:
        assert Ether(raw).getlayer(L.PDSAck).cack_psn == 5
    finally:
        L.set_uet_udp_port()
    nat = bytes(F.uet_frame(L.PDSAck(), native_ip=True, ip_proto=200))
    assert _status(nat)[0] == "not_taurus"
    assert _status(nat, P.make_parse_config(ip_proto=200))[0] == "ok"
    assert _status(bytes(F.uet_frame(L.PDSAck(), native_ip=True)),
                   P.make_parse_config(ip_proto=-1))[0] == "not_taurus"


def test_ip_options_and_padding():
    from scapy.layers.inet import IPOption_NOP
    f = F.uet_frame(L.PDSNack(nack_psn=11), payload=b"abc")
    f[IP].options = [IPOption_NOP()] * 8
    raw = bytes(Ether(bytes(f))) + b"\0" * 20
    s, d = _status(raw)
    assert s == "ok" and d[P.D_IP_HLEN] == 28 and d[P.D_PSN] == 11 and d[P.D_PAYLOAD_LEN] == 3


def test_flag_names_match_constants():
    assert int(L.PDSRudReq(flags="SYN+AR+RETX+TP").flags) == S.F_SYN | S.F_AR | S.F_RETX | S.F_TP
    assert int(L.PDSAck(flags="M+P+RETX").flags) == S.F_ACK_M | S.F_ACK_P | S.F_RETX
    assert int(L.PDSAck(flags="REQ0+REQ1").flags) == S.F_ACK_REQ
    assert int(L.PDSAck(flags="UE+M").flags) == S.F_ACK_UE | S.F_ACK_M
    assert int(L.PDSRudReq(flags="NP").flags) == S.F_REQ_NP
    assert L.PDSControl(ctl_type="CNP").ctl_type == S.CTL_CNP
    assert int(L.PDSNack(flags="M+NT").flags) == S.F_NACK_M | S.F_NACK_NT
    assert int(L.PDSControl(flags="ISROD+SYN").flags) == S.F_CTL_ISROD | S.F_SYN
    assert int(L.SESStd(flags="SOM+EOM+HD+REL+IE+DC").flags) == \
        S.SF_SOM | S.SF_EOM | S.SF_HD | S.SF_REL | S.SF_IE | S.SF_DC
