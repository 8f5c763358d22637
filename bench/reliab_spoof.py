"""Restarts and spoofed peers (bench/reliability.py parts "restarts" and
"spoof"; docs/SECURITY.md).  Virtual time on memory links: h1 -- s1 -- h2
and a rogue port fz on s1, which may send any frame with any source.

restarts: a sender "killed" mid-connection (its flow row freed, no CLOSE)
restarts on the same PDC id with an earlier first PSN, N times against one
long-lived receiver; each must be open and done within one initial RTO
(the reset exchange, nic/reset.py), every byte intact.

spoof: while h1 sends h2 a transfer, fz sends forged frames: data, CLOSE,
RESET, probes and credit to h2 as if from h1, and ACK_CC, NACK, CNP and
REQ_CLOSE to h1 as if from h2, half with guessed PDC ids and PSNs (a blind
attacker), half with the connection's real ids (sniffed) but a PSN or
cookie off the window.  Every one must be dropped and counted by the NIC it
targets, and the transfer's SHA-256 unchanged.  In-window injection with
sniffed ids is accepted (no TSS): SECURITY.md states that limit, and
tests/test_security_spoof.py shows it.
"""
import hashlib

import numpy as np

DROPS = ("drop_wrong_pdc", "drop_psn_oor", "drop_ack_oor", "drop_reset", "drop_bad_type",
         "drop_bad_offset", "drop_not_mine", "drop_bad_ses")


def fabric(max_flows=16):
    """(engine, topology, h1, h2, rogue port)."""
    from reliab_fuzz import _topology

    from taurus.datapath.engine import Engine
    from taurus.tools.fabric import build_virtual, nic_host, open_end
    t = _topology()
    eng = Engine(clock="virtual", n_frames=8192, max_flows=max_flows, max_nics=2)
    fab = build_virtual(eng, t, host_factory=lambda e, tp, h, p: (
        open_end(e, tp, h, p) if h == "fz" else nic_host(e, tp, h, p, rx_buf_bytes=64 << 10)))
    rogue = fab["hosts"]["fz"]                  # open_end: its port
    return eng, t, fab["hosts"]["h1"], fab["hosts"]["h2"], rogue


def restarts(n=10, nbytes=64 << 10, seed=1, log=print):
    from taurus.datapath.devices.nic.setup import (add_flow, flow_done, nic_counters, nic_post,
                                                   nic_take_delivered)
    from taurus.datapath.devices.nic.state import FL_STATE, FS_CLOSED, M_FL_CLOSED, NR_RTO_INIT
    rng = np.random.default_rng(seed)
    eng, t, h1, h2, _ = fabric()
    ok, times = 0, []
    with eng:
        N = eng.E.nic
        rto = int(N.nr[0, NR_RTO_INIT])
        ip1, ip2, mac2 = t.ip_of("h1"), t.ip_of("h2"), t.mac_of("h2")
        start = 1 << 30
        f = add_flow(eng, h1, mac2, ip2, buf_bytes=nbytes, start_psn=start)
        nic_post(eng, h1, f, rng.integers(0, 256, nbytes, np.uint8).tobytes())
        eng.run_for(2 * rto)
        nic_take_delivered(eng, h2, ip1, f)
        for k in range(n):
            N.fl[f, FL_STATE] = FS_CLOSED            # kill -9: no CLOSE, the row is free
            N.meta[M_FL_CLOSED] += 1
            start -= 1 << 20                         # the successor starts earlier
            g = add_flow(eng, h1, mac2, ip2, buf_bytes=nbytes, start_psn=start)
            assert g == f
            data = rng.integers(0, 256, nbytes, np.uint8).tobytes()
            t0 = eng.now()
            nic_post(eng, h1, g, data)
            got = []
            while eng.now() - t0 < 10 * rto and not flow_done(eng, g):
                eng.run_for(1_000)
                got.append(nic_take_delivered(eng, h2, ip1, g))
            got.append(nic_take_delivered(eng, h2, ip1, g))
            dt = eng.now() - t0
            times.append(dt)
            ok += flow_done(eng, g) and dt <= rto and b"".join(got) == data
        c1, c2 = nic_counters(eng, h1), nic_counters(eng, h2)
    figs = dict(restarts=n, reconnected=ok, max_us=max(times) / 1e3, rto_us=rto / 1e3,
                asks=c2["tx_reset_ask"], resets=c1["tx_reset"], pdc_reset=c2["pdc_reset"])
    log(f"  restarts: {n} senders killed and restarted on the same PDC id with an earlier "
        f"first PSN; {ok} reconnected and done intact within one RTO ({rto / 1e3:.0f} us; "
        f"{nbytes >> 10} KiB each in at most {max(times) / 1e3:.1f} us); {c2['tx_reset_ask']} "
        f"asks, {c1['tx_reset']} RESETs, {c2['pdc_reset']} stale PDCs freed")
    assert ok == n, figs
    return figs


def _forged(t, kind, rng, ids, nxt_rx, una_tx, sniffed):
    """One forged frame of `kind` (bytes): blind (random ids and PSN) or
    with the sniffed ids (f, r) and a PSN off the window."""
    from taurus.datapath.wire import frames as F
    from taurus.datapath.wire import layers as L
    from taurus.datapath.wire import spec as S
    f, r = ids if sniffed else (int(rng.integers(1, 1 << 16)), int(rng.integers(1, 1 << 16)))
    far = int(rng.integers(1 << 20, 1 << 31))
    to_h2 = dict(dst_mac=t.mac_of("h2"), src_ip=t.ip_of("h1"), dst_ip=t.ip_of("h2"))
    to_h1 = dict(dst_mac=t.mac_of("h1"), src_ip=t.ip_of("h2"), dst_ip=t.ip_of("h1"))
    psn_rx = (nxt_rx + far) & 0xFFFFFFFF if sniffed else int(rng.integers(1 << 32))
    psn_tx = (una_tx + far) & 0xFFFFFFFF if sniffed else int(rng.integers(1 << 32))
    ses = L.SESStd(flags=S.SF_SOM | S.SF_EOM, buffer_offset=int(rng.integers(1 << 20)))
    if kind == "data":
        return F.uet_frame(L.PDSRudReq(flags=S.F_AR, psn=psn_rx, spdcid=f, dpdcid=r), ses,
                           b"\xee" * 256, **to_h2)
    if kind == "close":
        return F.uet_frame(L.PDSControl(ctl_type=S.CTL_CLOSE, flags=0, psn=psn_rx, spdcid=f,
                                        dpdcid=r), None, b"", **to_h2)
    if kind == "reset":
        return F.uet_frame(L.PDSControl(ctl_type=S.CTL_RESET, flags=0, psn=psn_rx, spdcid=f,
                                        dpdcid=r, ctl_payload=int(rng.integers(1 << 32))),
                           None, b"", **to_h2)
    if kind == "credit":
        return F.uet_frame(L.PDSControl(ctl_type=S.CTL_CREDIT, flags=0, psn=psn_rx, spdcid=f,
                                        dpdcid=r, ctl_payload=1 << 20), None, b"", **to_h2)
    if kind == "ack":
        return F.uet_frame(L.PDSAckCC(cack_psn=psn_tx, spdcid=r, dpdcid=f), None, b"", **to_h1)
    if kind == "nack":
        return F.uet_frame(L.PDSNack(nack_code=S.NACK_RCVR_INFER_LOSS, nack_psn=psn_tx,
                                     spdcid=r, dpdcid=f), None, b"", **to_h1)
    if kind == "cnp":
        return F.uet_frame(L.PDSControl(ctl_type=S.CTL_CNP, flags=0, psn=psn_tx, spdcid=r,
                                        dpdcid=f, ctl_payload=S.CNP_CE), None, b"", **to_h1)
    if kind == "req_close":                 # sniffed ids: the wrong receiver PDC id
        return F.uet_frame(L.PDSControl(ctl_type=S.CTL_REQ_CLOSE, flags=0, psn=psn_tx,
                                        spdcid=(r + 1) & 0xFFFF if sniffed else r, dpdcid=f),
                           None, b"", **to_h1)
    raise ValueError(kind)


KINDS_H2 = ("data", "close", "reset", "credit")
KINDS_H1 = ("ack", "nack", "cnp", "req_close")


def _transfer(n_frames, nbytes, seed, log):
    """One transfer h1 -> h2 with n_frames forged frames from fz spread over
    it; returns (figures, the victims' drop deltas)."""
    from taurus.datapath.devices.nic.app import WouldBlock
    from taurus.datapath.devices.nic.setup import (add_flow, flow_done, nic_counters, nic_post,
                                                   nic_take_delivered)
    from taurus.datapath.devices.nic.state import FL_RPDC, FL_UNA, RP_NXT
    rng = np.random.default_rng(seed)
    eng, t, h1, h2, rogue = fabric()
    data = rng.integers(0, 256, nbytes, np.uint8).tobytes()
    with eng:
        N = eng.E.nic
        ip1 = t.ip_of("h1")
        f = add_flow(eng, h1, t.mac_of("h2"), t.ip_of("h2"), buf_bytes=64 << 10,
                     start_psn=int(rng.integers(1 << 31)))
        got, sent, k = [], 0, 0
        c0 = (dict(nic_counters(eng, h1)), dict(nic_counters(eng, h2)))
        kinds = {}
        while not (flow_done(eng, f) and sent == nbytes):
            while sent < nbytes:
                try:
                    nic_post(eng, h1, f, data[sent:sent + (16 << 10)])
                except WouldBlock:                 # the ring is full: later
                    break
                sent = min(nbytes, sent + (16 << 10))
            if k < n_frames and N.fl[f, FL_RPDC] != 0:
                r = int(N.fl[f, FL_RPDC])
                for _ in range(min(16, n_frames - k)):
                    to_h2 = k % 2 == 0
                    kind = (KINDS_H2 if to_h2 else KINDS_H1)[(k // 2) % 4]
                    sniffed = (k // 8) % 2 == 1
                    fr = _forged(t, kind, rng, (f, r), int(N.rp[r, RP_NXT]),
                                 int(N.fl[f, FL_UNA]), sniffed)
                    while not eng.inject(rogue, bytes(fr)):
                        eng.run_for(1_000)
                    key = ("h2" if to_h2 else "h1", kind, sniffed)
                    kinds[key] = kinds.get(key, 0) + 1
                    k += 1
            eng.run_for(2_000)
            got.append(nic_take_delivered(eng, h2, ip1, f))
        eng.run_for(50_000)
        got.append(nic_take_delivered(eng, h2, ip1, f))
        c1 = (dict(nic_counters(eng, h1)), dict(nic_counters(eng, h2)))
    drops = {h: {x: c1[j][x] - c0[j][x] for x in DROPS if c1[j][x] != c0[j][x]}
             for j, h in enumerate(("h1", "h2"))}
    return dict(frames=k, kinds=kinds, drops=drops, intact=hashlib.sha256(b"".join(got)).digest()
                == hashlib.sha256(data).digest(), pdc_close=c1[1]["pdc_close"] - c0[1]["pdc_close"],
                rx_close=c1[1]["rx_close"] - c0[1]["rx_close"],
                retx=c1[0]["tx_retx"] - c0[0]["tx_retx"])


def spoof(n_frames=2000, nbytes=1 << 20, seed=1, log=print):
    r = _transfer(n_frames, nbytes, seed, log)
    base = _transfer(0, nbytes, seed, log)
    dropped = sum(r["drops"]["h1"].values()) + sum(r["drops"]["h2"].values())
    dropped -= sum(base["drops"]["h1"].values()) + sum(base["drops"]["h2"].values())
    # A forged CLOSE naming no open PDC is answered (closing is idempotent)
    # and changes nothing; its answer, an ACK for no flow, is dropped by h1
    # (drop_wrong_pdc): counted there, once.
    answered = r["rx_close"] - r["pdc_close"] - (base["rx_close"] - base["pdc_close"])
    accepted = r["frames"] - dropped
    figs = dict(frames=r["frames"], dropped=dropped, close_answered=answered, accepted=accepted,
                intact=r["intact"], drops=r["drops"], kinds=len(r["kinds"]),
                retx=r["retx"], retx_without=base["retx"])
    log(f"  spoofing: {r['frames']} forged frames from a rogue port during a "
        f"{nbytes >> 20} MiB transfer ({len(r['kinds'])} kinds: data, CLOSE, RESET, credit to "
        f"the receiver, ACK_CC, NACK, CNP, REQ_CLOSE to the sender; blind and with sniffed ids "
        f"off the window): {dropped} dropped and counted {r['drops']} ({answered} of them CLOSEs "
        f"naming no PDC, answered, their answers dropped by h1), {accepted} accepted; SHA-256 "
        f"{'equal' if r['intact'] else 'DIFFERENT'}; retransmissions {r['retx']} "
        f"(without the rogue {base['retx']})")
    assert r["intact"] and accepted == 0, figs
    return figs
