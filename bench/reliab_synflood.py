"""SYN flood (bench/reliability.py part "synflood"): new-connection frames
from random sources into a host NIC while an established connection runs
and new legitimate ones open.

Every flood frame is a well-formed RUD request with SYN set, from a random
source address and PDC id (a random PSN, psn_offset and stream offset, so
most are held out of order), which opens a receive PDC.  Such a PDC stays
half-open: nothing follows its one packet (its source never hears our
ACK).  When the tables are full, a new SYN takes the row of a half-open PDC
silent for 8 initial RTOs (close.py: pdc_reclaim, ``pdc_halfopen_close``);
established PDCs keep theirs.  Virtual time on memory links: h1 -- s1 --
h2 and a rogue port fz on s1 that floods h2 at ``rate_pps``, below the
rows / (8 initial RTOs) a table of that size withstands (docs/SECURITY.md).
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


def run(n_syn=2000, max_flows=256, legit=4, nbytes=256 << 10, seed=7, log=print,
        rate_pps=500_000, step_ns=20_000):
    """An established flow h1 -> h2 for two windows of n_syn / rate_pps:
    the first quiet, the second under a flood of ``n_syn`` SYNs at
    ``rate_pps`` into h2, while ``legit`` new flows h1 -> h2 open during
    it.  goodput_pct: the established flow's bytes under the flood against
    the quiet window's less what the flood's frames and the new flows took
    of h2's link (100: the flood cost it nothing beyond its bytes on the
    wire; raw_pct is the plain ratio).  Returns the figures; raises AssertionError if the tables grow past
    their size, a byte is lost or a legitimate flow fails."""
    import hashlib

    from reliab_fuzz import _topology

    from taurus.datapath.devices.nic.app import WouldBlock
    from taurus.datapath.devices.nic.setup import (add_flow, flow_done, nic_counters, nic_post,
                                                   nic_table_use, nic_take_delivered)
    from taurus.datapath.engine import Engine
    from taurus.datapath.ports import memlink
    from taurus.tools.fabric import build_virtual, nic_host, open_end

    t = _topology()
    data, lens = flood_frames(n_syn, t.mac_of("h2"), t.ip_of("h2"), seed)
    eng = Engine(clock="virtual", n_frames=16384, max_flows=max_flows, max_nics=2)
    rng = np.random.default_rng(seed)
    with eng:
        fab = build_virtual(eng, t, host_factory=lambda e, tp, h, p: (
            open_end(e, tp, h, p) if h == "fz" else
            nic_host(e, tp, h, p, rx_buf_bytes=64 << 10)))
        h1, h2 = fab["hosts"]["h1"], fab["hosts"]["h2"]
        rogue = fab["hosts"]["fz"]                  # open_end: its port
        ip1, mac2 = t.ip_of("h1"), t.mac_of("h2")
        rows = eng.E.nic.rp.shape[0] - 1
        est = add_flow(eng, h1, mac2, t.ip_of("h2"), cwnd_bytes=64 << 10)
        sent, got = hashlib.sha256(), hashlib.sha256()
        tot = dict(sent=0, got=0)
        chunk = rng.integers(0, 256, 16 << 10, np.uint8).tobytes()
        flows = {}                       # legit flow -> [data, received]

        def step(k_flood, post=True):
            while post:                  # keep the established flow's ring full
                try:
                    nic_post(eng, h1, est, chunk)
                except WouldBlock:
                    break
                sent.update(chunk)
                tot["sent"] += len(chunk)
            for _ in range(k_flood):
                if not eng.inject(rogue, data[step.k, :lens[step.k]].tobytes()):
                    step.refused += 1
                step.k += 1
            eng.run_for(step_ns)
            b = nic_take_delivered(eng, h2, ip1, est)
            got.update(b)
            tot["got"] += len(b)
            for f, v in flows.items():
                v[1].append(nic_take_delivered(eng, h2, ip1, f))
            return len(b)
        step.k = step.refused = 0
        window = max(1, int(n_syn * 1e9 / rate_pps) // step_ns)
        for _ in range(window // 4):                          # warm up
            step(0)
        quiet = sum(step(0) for _ in range(window))
        per = n_syn / window
        due, flooded, peak = 0.0, 0, 0
        for w in range(window):
            if w % max(1, window // max(legit, 1)) == 0 and len(flows) < legit:
                f = add_flow(eng, h1, mac2, t.ip_of("h2"), cwnd_bytes=64 << 10)
                b = rng.integers(0, 256, nbytes, np.uint8).tobytes()
                nic_post(eng, h1, f, b)
                flows[f] = [b, []]
            due += per
            k = min(int(due) - step.k, n_syn - step.k)
            flooded += step(k)
            peak = max(peak, nic_table_use(eng)["pdc_rows"])
        others = sum(len(b) for v in flows.values() for b in v[1])   # the new flows' share
        # the flood's own share of h2's link: its frames' wire time (memlink: len x 8 / rate)
        busy = int(lens[:step.k].sum()) * 8e9 / int(eng.E.ports.regs[rogue, memlink.RATE])
        left = quiet * (1 - busy / (window * step_ns)) - others
        for _ in range(int(2e6 // step_ns)):                  # the legit flows finish
            if all(flow_done(eng, f) for f in flows):
                break
            step(0)
        c = nic_counters(eng, h2)
        ok = sum(flow_done(eng, f) and b"".join(v[1]) == v[0] for f, v in flows.items())
        for _ in range(int(5e6 // step_ns)):                  # the established one drains
            if tot["got"] >= tot["sent"]:
                break
            step(0, post=False)
    goodput = 100.0 * flooded / max(left, 1)
    figs = dict(syn_frames=n_syn, rate_pps=rate_pps, pdc_rows=rows, peak_rows=peak,
                refused=c["drop_no_pdc"], halfopen_closed=c["pdc_halfopen_close"],
                goodput_pct=goodput, raw_pct=100.0 * flooded / max(quiet, 1),
                link_share_pct=100.0 * busy / (window * step_ns), new_flow_bytes=others,
                quiet_bytes=quiet, flood_bytes=flooded,
                bytes=tot["got"], bytes_lost=tot["sent"] - tot["got"],
                intact=sent.digest() == got.digest(), legit=f"{ok}/{legit}",
                link_refused=step.refused)
    log(f"  SYN flood: {n_syn} SYNs from random sources at {rate_pps / 1e6:.2f} Mpps into h2 "
        f"({rows} PDC rows, at most {peak} in use): {c['pdc_halfopen_close']} half-open PDCs "
        f"reclaimed, {c['drop_no_pdc']} SYNs refused; the established flow kept "
        f"{goodput:.1f}% of the goodput the link left it ({flooded} B against {quiet} B in "
        f"{window * step_ns / 1e6:.1f} ms quiet: {figs['raw_pct']:.1f}%, the flood's frames "
        f"taking {figs['link_share_pct']:.1f}% of h2's link and the new flows {others} B), "
        f"{tot['got']} B delivered, SHA-256 "
        f"{'equal' if figs['intact'] else 'DIFFERENT'}; new flows during the flood done and "
        f"intact {ok}/{legit}")
    assert peak <= rows and figs["intact"] and figs["bytes_lost"] == 0, figs
    assert ok == legit, f"a flow opened during the flood failed: {figs}"
    return figs
