"""SYN flood (bench/reliability.py part "synflood"): new-connection frames
from random sources into a host NIC, then legitimate flows.

Every flood frame is a well-formed RUD request with SYN set, from a random
source address and PDC id (a random PSN, psn_offset and stream offset, so
most are held out of order), which opens a receive PDC while the tables
have room; beyond that it is refused and counted (``drop_no_pdc``).  Once
the flood's PDCs have been silent for the NIC's idle time (close.py:
pdc_idle_ns, 3.07 s by default), a new PDC takes the row of the one idle
longest (``pdc_idle_close``): flows opened after the flood work, and the
tables stay bounded whatever the flood's size.  Virtual time on memory
links: h1 -- s1 -- h2, the flood straight into h2's NIC.
"""
import numpy as np


def _frame(psn=1, spdcid=1, psn_offset=0, boff=0, src="10.9.0.1", dst_mac=None, dst_ip=None):
    from taurus.datapath.wire import frames as F
    from taurus.datapath.wire import layers as L
    from taurus.datapath.wire import spec as S
    pds = L.PDSRudReq(flags=S.F_SYN | S.F_AR, psn=psn, spdcid=spdcid, psn_offset=psn_offset)
    ses = L.SESStd(flags=S.SF_SOM | S.SF_EOM, buffer_offset=boff)
    return np.frombuffer(bytes(F.uet_frame(pds, ses, b"\x5a" * 64, dst_mac=dst_mac,
                                           dst_ip=dst_ip, src_ip=src)), np.uint8).copy()


def _where(a, b):
    """The bytes where two frames differ beyond the checksums (a field's place)."""
    d = np.flatnonzero(a != b)
    d = d[d >= 42]
    return slice(int(d[0]), int(d[-1]) + 1)


def flood_frames(n, dst_mac, dst_ip, seed=7):
    """(data uint8[n, 256], lengths): SYN data frames from random sources,
    PDC ids and PSNs, with a random psn_offset and stream offset (so most
    are out of order).  Scapy builds a few templates; the rest are those
    with the source address, PDC id and PSN written in (the IPv4 checksum
    recomputed; UDP checksum 0, as the NIC sends it)."""
    rng = np.random.default_rng(seed)
    kw = dict(dst_mac=dst_mac, dst_ip=dst_ip)
    base = _frame(**kw)
    at_psn = _where(base, _frame(psn=0x7FFFFFFE, **kw))
    at_pdc = _where(base, _frame(spdcid=0xFFFE, **kw))
    tmpl = [_frame(psn_offset=o, boff=64 * o, **kw) for o in range(4)]
    data = np.zeros((n, 256), np.uint8)
    lens = np.full(n, len(base), np.int64)
    for k in range(n):
        f = tmpl[int(rng.integers(4))].copy()
        f[26:30] = [10, rng.integers(10, 250), rng.integers(1, 254), rng.integers(1, 254)]  # IP src
        f[at_psn] = np.frombuffer(int(rng.integers(1 << 31)).to_bytes(4, "big"), np.uint8)
        f[at_pdc] = np.frombuffer(int(rng.integers(1, 1 << 16)).to_bytes(2, "big"), np.uint8)
        f[40:42] = 0                                   # UDP checksum: none
        f[24:26] = 0
        w = f[14:34].astype(np.uint32)
        c = int((w[0::2] << 8 | w[1::2]).sum())
        while c >> 16:
            c = (c & 0xFFFF) + (c >> 16)
        f[24:26] = [(~c >> 8) & 0xFF, ~c & 0xFF]
        data[k, :len(f)] = f
    return data, lens


def run(n_syn=2000, max_flows=256, legit=4, nbytes=256 << 10, seed=7, log=print):
    """Flood h2 with ``n_syn`` SYNs, let the flood's PDCs fall silent for
    the idle time, open ``legit`` flows h1 -> h2; flood again, wait, one
    more flow.  Returns the figures; raises AssertionError if the tables
    grow past their size or a flow opened after a flood fails or loses a
    byte."""
    from reliab_fuzz import _topology, inject

    from taurus.datapath.devices.nic.setup import (add_flow, flow_done, nic_counters, nic_post,
                                                   nic_table_use, nic_take_delivered)
    from taurus.datapath.devices.nic.state import MAX_BACKOFF, NR_RETRIES, NR_RTO_INIT, NR_RTO_MIN
    from taurus.datapath.engine import Engine
    from taurus.tools.fabric import build_virtual, nic_host, open_end

    t = _topology()
    data, lens = flood_frames(n_syn, t.mac_of("h2"), t.ip_of("h2"), seed)
    eng = Engine(clock="virtual", n_frames=16384, max_flows=max_flows, max_nics=2)
    with eng:
        fab = build_virtual(eng, t, host_factory=lambda e, tp, h, p: (
            open_end(e, tp, h, p) if h == "fz" else nic_host(e, tp, h, p)))
        h1, h2 = fab["hosts"]["h1"], fab["hosts"]["h2"]
        into_h2 = fab["ports"][t.ifaces_of("h2")[0].peer_iface]
        n2 = int(eng.E.devs.regs[h2, 0])
        nr = eng.E.nic.nr[n2]
        idle = int(max(nr[NR_RETRIES], 1) * MAX_BACKOFF      # close.py: pdc_idle_ns
                   * max(nr[NR_RTO_INIT], nr[NR_RTO_MIN], 1))
        rows = eng.E.nic.rp.shape[0] - 1
        inject(eng, into_h2, data, lens)
        after_flood = dict(nic_counters(eng, h2))
        use_flood = nic_table_use(eng)
        rng = np.random.default_rng(seed)

        def transfer(k):
            f = add_flow(eng, h1, t.mac_of("h2"), t.ip_of("h2"), cwnd_bytes=64 << 10)
            sent = rng.integers(0, 256, nbytes, np.uint8).tobytes()
            nic_post(eng, h1, f, sent)
            got = []
            for _ in range(int(4 * idle // 10**7) + 10):
                eng.run_for(10**7)
                got.append(nic_take_delivered(eng, h2, t.ip_of("h1"), f))
                if flow_done(eng, f):
                    break
            return flow_done(eng, f) and b"".join(got) == sent
        eng.run_until(eng.now() + idle, stop_idle=False)   # the flood's PDCs fall silent
        ok = [transfer(k) for k in range(legit)]
        inject(eng, into_h2, data, lens)      # a second flood: the rows are reused
        eng.run_until(eng.now() + idle, stop_idle=False)
        ok2 = transfer(legit)
        c = nic_counters(eng, h2)
        use = nic_table_use(eng)
    figs = dict(syn_frames=2 * n_syn, pdc_rows=rows, idle_ms=idle / 1e6,
                opened_by_flood=after_flood["pdc_open"], refused=c["drop_no_pdc"],
                idle_closed=c["pdc_idle_close"], rows_after_flood=use_flood, rows_at_end=use,
                legit_after_flood=f"{sum(ok) + ok2}/{legit + 1}")
    log(f"  SYN flood: {2 * n_syn} SYNs from random sources into h2 (two floods): "
        f"{after_flood['pdc_open']} PDCs opened by the first (all the NIC's tables hold: "
        f"{use_flood['pdc_rows']} of {rows} rows, receive rings for that many), "
        f"{c['drop_no_pdc']} SYNs refused (drop_no_pdc), {c['pdc_idle_close']} idle PDCs "
        f"reclaimed after {idle / 1e9:.2f} s silent; flows opened after the flood done and "
        f"intact {figs['legit_after_flood']}")
    assert after_flood["pdc_open"] <= rows and c["drop_no_pdc"] > 0
    assert all(ok) and ok2, "a flow opened after the flood failed"
    return figs
