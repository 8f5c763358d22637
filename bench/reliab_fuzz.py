"""Malformed input (bench/reliability.py part 1): frames from Scapy's
``fuzz()`` of every Taurus layer, truncations at every offset, random bytes,
bit flips of valid frames, wrong lengths and bad checksums, injected into a
switch and straight into host NICs while a transfer runs beside them.

The corpus is built once (Scapy is slow: ~0.1 ms a frame) as one uint8
matrix and a length vector; `inject` feeds it fast through open ends of
memory links.  Every frame is accounted for: the switch counts it received
and then forwarded or dropped by reason; a NIC counts every frame it gets
by parse status (wire/desc.py status_counts), and of the parsed ones those
not addressed to it, with a bad checksum, or of an unknown type; the rest
reach the transport, which takes or refuses them (its drop_* counters).

Fuzzed frames come from an address no flow uses (FUZZ_IP): a frame that
spoofs an open connection's source address, PDC ids and PSN window is
taken like the real one (UET has no authentication without TSS).
"""
import numpy as np

FUZZ_IP = "10.0.9.9"
FUZZ_MAC = "02:00:00:00:09:09"
ROW = 1536                                 # widest frame in the corpus


def _fuzzed_layers(dst_mac, dst_ip):
    """One Scapy template per Taurus layer, the layer under test fuzz()ed;
    bytes(template) draws new random values every time."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw, fuzz

    from taurus.datapath.wire import layers as L
    from taurus.datapath.wire import spec as S

    eth = Ether(src=FUZZ_MAC, dst=dst_mac)
    ip = IP(src=FUZZ_IP, dst=dst_ip)
    udp = UDP(sport=0x4242, dport=S.UET_UDP_PORT)
    req = L.PDSRudReq(psn=7, spdcid=3, dpdcid=4)
    out = {}
    for name, cls in L.PDS_CLASSES.items():           # every PDS layout: requests,
        out[f"pds:{name}"] = eth / ip / udp / fuzz(cls()) / Raw(b"\0" * 64)   # ACK variants, NACK, control
    out["pds:credit"] = eth / ip / udp / fuzz(L.PDSControl(ctl_type=S.CTL_CREDIT))
    out["pds:ack_cc_credit"] = eth / ip / udp / fuzz(L.PDSAckCC(cc_type=S.CC_CREDIT))
    for name, cls in L.SES_CLASSES.items():
        out[f"ses:{name}"] = eth / ip / udp / req / fuzz(cls()) / Raw(b"\1" * 32)
    out["probe"] = eth / ip / udp / L.PDSRudReq(psn=7, spdcid=3, flags=S.F_TP) / fuzz(
        L.TaurusProbe()) / L.SESStd()
    for cls, tpid in ((L.CSIGCompact, S.CSIG_TPID_COMPACT), (L.CSIGWide, S.CSIG_TPID_WIDE)):
        out[f"csig:{cls.__name__}"] = (Ether(src=FUZZ_MAC, dst=dst_mac, type=tpid)
                                       / fuzz(cls(type=S.ETH_P_IP)) / ip / udp / req / L.SESStd())
    body = bytes(ip / udp / req / L.SESStd() / Raw(b"\2" * 40))
    out["int"] = eth / Raw(body) / fuzz(L.INTHop()) / fuzz(L.INTTail())
    out["pfc"] = Ether(src=FUZZ_MAC, dst="01:80:c2:00:00:01",
                       type=S.ETH_P_MAC_CONTROL) / fuzz(L.PFCPause())
    out["ip"] = eth / fuzz(IP(src=FUZZ_IP, dst=dst_ip, proto=17)) / udp / req
    out["udp"] = eth / ip / fuzz(UDP(dport=S.UET_UDP_PORT)) / req
    return out


def valid_frames(dst_mac, dst_ip, n=64, seed=1):
    """Well-formed frames of every PDS type (with SES, probe, CSIG tags at
    random), from FUZZ_IP: the seeds of truncations and bit flips."""
    from taurus.datapath.wire import frames as F
    from taurus.datapath.wire import layers as L
    from taurus.datapath.wire import spec as S
    rng = np.random.default_rng(seed)
    types = sorted(S.PDS_LAYOUTS)
    out = []
    for k in range(n):
        t = types[k % len(types)]
        pds = L.PDS_BY_TYPE[t]()
        for fname, v in (("psn", int(rng.integers(1 << 16))), ("spdcid", int(rng.integers(1, 64)))):
            if fname in pds.fields:
                pds.setfieldval(fname, v)
        nhs = [h for h in S.NEXT_HDR_ALLOWED[t] if h != S.NH_NONE]
        ses = None
        if t != S.T_CONTROL and nhs and (S.NH_NONE not in S.NEXT_HDR_ALLOWED[t] or rng.integers(2)):
            ses = getattr(L, S.SES_LAYOUTS[nhs[int(rng.integers(len(nhs)))]].name)()
        probe = L.TaurusProbe() if rng.integers(2) else None
        c = int(rng.integers(3))
        csig = (None, L.CSIGCompact(), L.CSIGWide())[c]
        pay = rng.integers(0, 256, int(rng.integers(0, 300)), dtype=np.uint8).tobytes()
        out.append(bytes(F.uet_frame(pds, ses, pay, probe=probe, csig=csig, src_mac=FUZZ_MAC,
                                     dst_mac=dst_mac, src_ip=FUZZ_IP, dst_ip=dst_ip)))
    return out


def build_corpus(n, dst_mac, dst_ip, seed=3, scapy_share=0.2):
    """(data uint8[n, ROW], lengths int64[n], kinds list, kind int8[n]):
    about `scapy_share` of n from fuzz() templates (round-robin over the
    layers), then truncations of the valid frames at every offset, bit
    flips, random bytes, wrong IP/UDP lengths and bad IP/UDP checksums."""
    rng = np.random.default_rng(seed)
    data = np.zeros((n, ROW), np.uint8)
    lens = np.zeros(n, np.int64)
    kind = np.zeros(n, np.int8)
    kinds = ["scapy_fuzz", "truncated", "bit_flips", "random", "bad_length", "bad_checksum"]
    row = 0

    def put(raw, k):
        nonlocal row
        raw = raw[:ROW]
        data[row, :len(raw)] = np.frombuffer(raw, np.uint8)
        lens[row] = len(raw)
        kind[row] = k
        row += 1

    tmpl = list(_fuzzed_layers(dst_mac, dst_ip).values())
    n_scapy = int(n * scapy_share)
    for j in range(n_scapy):
        put(bytes(tmpl[j % len(tmpl)]), 0)
    seeds = valid_frames(dst_mac, dst_ip, seed=seed)
    left = n - row
    trunc = [s[:k] for s in seeds for k in range(len(s))][:left // 5]
    for raw in trunc:
        put(raw, 1)
    m = (n - row) // 4                           # flips, random, lengths, checksums
    base = np.zeros((len(seeds), ROW), np.uint8)
    blen = np.array([len(s) for s in seeds], np.int64)
    for k, s in enumerate(seeds):
        base[k, :len(s)] = np.frombuffer(s, np.uint8)
    pick = rng.integers(0, len(seeds), m)
    sl = slice(row, row + m)
    data[sl], lens[sl], kind[sl] = base[pick], blen[pick], 2
    for _ in range(3):                            # 1-3 flipped bits anywhere in the frame
        pos = rng.integers(0, 1 << 30, m) % lens[sl]
        hit = rng.integers(0, 3, m) > 0
        r = np.nonzero(hit)[0] + row
        data[r, pos[hit]] ^= (1 << rng.integers(0, 8, hit.sum())).astype(np.uint8)
    row += m
    sl = slice(row, row + m)
    data[sl] = rng.integers(0, 256, (m, ROW), dtype=np.uint8)
    lens[sl], kind[sl] = rng.integers(0, ROW + 1, m), 3
    row += m
    for k in (4, 5):
        cnt = m if k == 4 else n - row
        sl = slice(row, row + cnt)
        pick = rng.integers(0, len(seeds), cnt)
        data[sl], lens[sl], kind[sl] = base[pick], blen[pick], k
        ip = np.where((data[sl, 12] == 0x08) & (data[sl, 13] == 0), 14,
                      np.where(data[sl, 13] == (0xB5), 18, 22))
        r = np.arange(row, row + cnt)
        if k == 4:                                 # IP total length or UDP length wrong
            v = rng.integers(0, 1 << 16, cnt)
            at = np.where(rng.integers(0, 2, cnt) == 0, ip + 2, ip + 24)
        else:                                      # IP header or UDP checksum wrong
            v = rng.integers(1, 1 << 16, cnt)
            at = np.where(rng.integers(0, 2, cnt) == 0, ip + 10, ip + 26)
        data[r, at], data[r, at + 1] = v >> 8, v & 0xFF
        row += cnt
    assert row == n
    return data, lens, kinds, kind


def inject(eng, port, data, lens, batch=256, gap_ns=20_000):
    """Inject every row through open end `port`, `batch` at a time with
    `gap_ns` of engine time between batches; returns frames refused by a
    full link or pool (retried until taken)."""
    refused = 0
    for a in range(0, len(lens), batch):
        for r in range(a, min(a + batch, len(lens))):
            while not eng.inject(port, data[r, :lens[r]].tobytes()):
                refused += 1
                eng.run_for(gap_ns)
        eng.run_for(gap_ns)
    return refused


def _topology(prefix=None, rate="10Gbit"):
    from taurus.tools.topology import Topology
    t = Topology("fuzz", **({"prefix": prefix} if prefix else {}))
    for h in ("h1", "h2", "fz"):
        t.add_host(h)
    t.add_switch("s1")
    for h in ("h1", "h2", "fz"):
        t.add_link(h, "s1", rate=rate, delay="1us", buffer="1MB")
    return t


def nic_account(c):
    """A NIC's frames by what became of them: the parse statuses (every
    frame has one), then of the parsed frames those dropped before the
    transport and those it handled."""
    parse = dict(c["parse"])
    ok = parse.pop("ok", 0)
    early = {k: c[k] for k in ("drop_not_mine", "drop_csum", "drop_bad_type")}
    return {"frames": c["rx_frames"], "parse_errors": parse, "parsed": ok, "before_transport": early,
            "to_transport": ok - sum(early.values())}


def run_virtual(n_frames=20_000, transfer_bytes=2 << 20, seed=3, log=print):
    """h1 -- s1 -- h2, plus an open end fz on s1.  A transfer h1 -> h2 runs
    while the corpus goes in: a third into s1 from fz (to h2's address, so
    what the switch forwards reaches h2's NIC too), a third straight into
    h2's NIC and a third into h1's NIC (the transfer's sender).  Returns the
    figures; raises AssertionError if a frame is unaccounted for or the
    transfer is not intact."""
    import time

    from taurus.datapath.devices.nic.setup import (add_flow, flow_done, nic_counters,
                                                   nic_post, nic_take_delivered, nic_table_use)
    from taurus.datapath.devices.switch.setup import switch_stats
    from taurus.datapath.engine import Engine
    from taurus.datapath.ports import memlink
    from taurus.tools.fabric import build_virtual, nic_host, open_end

    t = _topology()
    t0 = time.monotonic()
    parts = [build_corpus(n, t.mac_of(h), t.ip_of(h), seed=seed + k)
             for k, (n, h) in enumerate(((n_frames // 3, "h2"), (n_frames // 3, "h2"),
                                         (n_frames - 2 * (n_frames // 3), "h1")))]
    t_gen = time.monotonic() - t0
    log(f"  corpus: {n_frames} frames in {t_gen:.1f} s")
    eng = Engine(clock="virtual", n_frames=32768, max_flows=4096, max_nics=2)
    with eng:
        fab = build_virtual(eng, t, host_factory=lambda e, tp, h, p: (
            open_end(e, tp, h, p) if h == "fz" else nic_host(e, tp, h, p)))
        h1, h2, fz = (fab["hosts"][h] for h in ("h1", "h2", "fz"))
        eng.E.ports.regs[fz, memlink.RATE] = 0            # the fuzzer is not paced
        into_h2 = fab["ports"][t.ifaces_of("h2")[0].peer_iface]
        into_h1 = fab["ports"][t.ifaces_of("h1")[0].peer_iface]
        f = add_flow(eng, h1, t.mac_of("h2"), t.ip_of("h2"), cwnd_bytes=256 << 10,
                     buf_bytes=max(1 << 20, transfer_bytes))
        sent = np.random.default_rng(seed).integers(0, 256, transfer_bytes, np.uint8).tobytes()
        for a in range(0, len(sent), 1 << 18):
            nic_post(eng, h1, f, sent[a:a + (1 << 18)])
        got = []
        t1 = time.monotonic()
        refused = 0
        for port, (data, lens, kinds, kind) in zip((fz, into_h2, into_h1), parts):
            refused += inject(eng, port, data, lens)
            got.append(nic_take_delivered(eng, h2, t.ip_of("h1"), f))
            log(f"  injected {len(lens)} frames into {eng.port_name(port)} "
                f"({time.monotonic() - t1:.1f} s)")
        for _ in range(200):
            if flow_done(eng, f):
                break
            eng.run_for(10**7)
            got.append(nic_take_delivered(eng, h2, t.ip_of("h1"), f))
        eng.run_for(10**7)
        t_run = time.monotonic() - t1
        got.append(nic_take_delivered(eng, h2, t.ip_of("h1"), f))
        c1, c2 = nic_counters(eng, h1), nic_counters(eng, h2)
        sw = switch_stats(eng)
        s_fz = sw[t.ifaces_of("fz")[0].peer_iface]
        s_h2 = sw[t.ifaces_of("h2")[0].peer_iface]
        s_h1 = sw[t.ifaces_of("h1")[0].peer_iface]
        n_sw, n_h2, n_h1 = (len(p[1]) for p in parts)
        # every frame accounted for, hop by hop (memory links lose nothing)
        assert s_fz["rx"] == n_sw, (s_fz, n_sw)
        sw_drop = sum(s_fz[k] for k in ("parse_err", "non_ip", "no_route", "ttl_drop", "pfc_rx"))
        for c, s_out, direct in ((c2, s_h2, n_h2), (c1, s_h1, n_h1)):
            assert c["rx_frames"] == s_out["tx"] + direct, (c["rx_frames"], s_out, direct)
            acc = nic_account(c)
            assert sum(acc["parse_errors"].values()) + acc["parsed"] == acc["frames"]
        done = flow_done(eng, f)
        intact = b"".join(got) == sent
        table = nic_table_use(eng)
        in_use = eng.frames_in_use()
    figs = {"frames": n_frames, "into_switch": n_sw, "into_h2": n_h2, "into_h1": n_h1,
            "switch": {"rx": s_fz["rx"], "forwarded": s_fz["rx"] - sw_drop,
                       **{k: s_fz[k] for k in ("parse_err", "non_ip", "no_route", "ttl_drop",
                                               "pfc_rx") if s_fz[k]}},
            "h2": nic_account(c2), "h1": nic_account(c1),
            "h2_transport_drops": {k: v for k, v in c2.items() if k.startswith("drop_") and v},
            "h1_transport_drops": {k: v for k, v in c1.items() if k.startswith("drop_") and v},
            "transfer_done": done, "transfer_intact": intact, "transfer_bytes": len(sent),
            "retransmissions": c1["tx_retx"], "tables": table, "frames_in_use": in_use,
            "refused_at_inject": refused, "gen_s": round(t_gen, 1), "run_s": round(t_run, 1)}
    assert done and intact, "the transfer beside the fuzz did not complete intact"
    return figs


def fmt(r):
    h2, h1, sw = r["h2"], r["h1"], r["switch"]
    return (f"  {r['frames']} frames ({r['into_switch']} into s1, {r['into_h2']} into h2, "
            f"{r['into_h1']} into h1; corpus built in {r['gen_s']} s, injected and run in "
            f"{r['run_s']} s)\n"
            f"  s1: {sw}\n"
            f"  h2: {h2['frames']} frames: parse errors {h2['parse_errors']}, before the "
            f"transport {h2['before_transport']}, to the transport {h2['to_transport']}; "
            f"transport drops {r['h2_transport_drops']}\n"
            f"  h1: {h1['frames']} frames: parse errors {h1['parse_errors']}, before the "
            f"transport {h1['before_transport']}, to the transport {h1['to_transport']}; "
            f"transport drops {r['h1_transport_drops']}\n"
            f"  transfer beside: {r['transfer_bytes'] / 2**20:.1f} MiB, done {r['transfer_done']}, "
            f"intact {r['transfer_intact']}, {r['retransmissions']} retransmissions; tables "
            f"{r['tables']}; 0 crashes, 0 hangs")


def _send_raw(ifname, data, lens, pace_every=64, pace_s=0.0005):
    """In the sender's namespace (a forked child): every row on `ifname`
    through an AF_PACKET socket.  Returns (sent, refused by the kernel)."""
    import socket
    import time
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    sent = refused = 0
    for r in range(len(lens)):
        try:
            s.send(data[r, :lens[r]].tobytes())
            sent += 1
        except OSError:
            refused += 1                  # shorter than an Ethernet header, or too long
        if r % pace_every == pace_every - 1:
            time.sleep(pace_s)            # the receiving socket's ring is finite
    s.close()
    return sent, refused


def run_xdp(n_frames=3_000, transfer_bytes=1 << 20, seed=3, log=print):
    """The same over AF_XDP (root): h1, h2, fz and s1 in namespaces, one
    wall-clock engine with the switch and both NICs on AF_XDP sockets.  A
    child in fz's namespace sends half the corpus into s1; a child in s1's
    namespace sends the other half on s1's port to h2, straight into h2's
    NIC (an AF_PACKET socket beside the engine's).  What the kernel drops
    before our sockets (ring full) is counted from the sockets' statistics."""
    import os
    import time

    from taurus.datapath.devices.nic.setup import (add_flow, flow_done, nic_counters, nic_post,
                                                   nic_take_delivered)
    from taurus.datapath.devices.switch.setup import switch_stats
    from taurus.datapath.engine import Engine
    from taurus.tools import netns
    from taurus.tools.fabric import build_netns, netns_nic_host, open_end

    t = _topology(prefix=f"{netns.PREFIX}x{os.getpid()}-", rate="1Gbit")
    half = n_frames // 2
    d_sw, l_sw, _, _ = build_corpus(half, t.mac_of("h2"), t.ip_of("h2"), seed=seed)
    d_h2, l_h2, _, _ = build_corpus(n_frames - half, t.mac_of("h2"), t.ip_of("h2"), seed=seed + 1)
    t.up()
    try:
        eng = Engine(clock="wall", max_flows=4096, max_nics=2)
        with eng:
            fab = build_netns(eng, t, host_factory=lambda e, tp, h, p: (
                open_end(e, tp, h, p) if h == "fz" else netns_nic_host(e, tp, h, p)),
                port_kind="af_xdp")
            h1, h2 = fab["hosts"]["h1"], fab["hosts"]["h2"]
            f = add_flow(eng, h1, t.mac_of("h2"), t.ip_of("h2"), cwnd_bytes=128 << 10,
                         buf_bytes=max(1 << 20, transfer_bytes))
            sent = np.random.default_rng(seed).integers(0, 256, transfer_bytes, np.uint8).tobytes()
            nic_post(eng, h1, f, sent)
            fz_if = t.ifaces_of("fz")[0].name
            s1_to_h2 = t.ifaces_of("h2")[0].peer_iface
            kids = [netns.start_in_ns(t.ns_of("fz"), _send_raw, fz_if, d_sw, l_sw),
                    netns.start_in_ns(t.ns_of("s1"), _send_raw, s1_to_h2, d_h2, l_h2)]
            got = []
            t0 = time.monotonic()
            while any(k.is_alive() for k in kids) or not flow_done(eng, f):
                eng.run_for(5_000_000)
                got.append(nic_take_delivered(eng, h2, t.ip_of("h1"), f))
                if time.monotonic() - t0 > 120:
                    break
            for k in kids:
                k.join(10)
            eng.run_for(50_000_000)
            got.append(nic_take_delivered(eng, h2, t.ip_of("h1"), f))
            c2 = nic_counters(eng, h2)
            sw = switch_stats(eng)
            s_fz = sw[t.ifaces_of("fz")[0].peer_iface]
            kdrop = {eng.port_name(p): {k: v for k, v in eng.port_handle(p).stats().items() if v}
                     for p in (fab["ports"][t.ifaces_of("fz")[0].peer_iface],
                               fab["ports"][t.ifaces_of("h2")[0].name])}
            done, intact = flow_done(eng, f), b"".join(got) == sent
    finally:
        t.down()
    figs = {"frames": n_frames, "into_switch": half, "into_h2": n_frames - half,
            "switch_rx": s_fz["rx"], "switch": {k: s_fz[k] for k in
                                                ("parse_err", "non_ip", "no_route", "ttl_drop",
                                                 "pfc_rx", "enq") if s_fz[k]},
            "h2": nic_account(c2), "kernel": kdrop, "transfer_done": done,
            "transfer_intact": intact}
    log(f"  {n_frames} frames over veths ({half} into s1, {n_frames - half} into h2's NIC): "
        f"s1 received {s_fz['rx']}: {figs['switch']}; h2: {figs['h2']}; socket statistics "
        f"{kdrop}; transfer beside: done {done}, intact {intact}; 0 crashes, 0 hangs")
    assert done and intact, "the transfer beside the fuzz did not complete intact"
    return figs
