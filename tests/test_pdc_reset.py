"""The reset exchange (nic/reset.py): a restarted sender reconnects to a
long-lived receiver within one RTO; a RESET or an ask that does not match
(a wrong cookie, peer, PDC or PSN) is ignored and counted (virtual time,
memory link)."""
import numpy as np

from taurus.datapath.devices.nic.reset import pdc_cookie
from taurus.datapath.devices.nic.setup import (add_flow, flow_done, nic_counters, nic_delivered,
                                               nic_post, nic_table_use)
from taurus.datapath.devices.nic.state import (FL_STATE, FS_CLOSED, M_FL_CLOSED, NR_RTO_INIT,
                                               RP_NIC, RP_PEER_PDC, RP_START)
from taurus.datapath.wire import frames as F
from taurus.datapath.wire import layers as L
from taurus.datapath.wire import spec as S
from test_pdc_close import IP1, IP2, MAC1, MAC2, _pair


def _kill_sender(eng, f):
    """The sender process dies: its row is free, no CLOSE is sent."""
    N = eng.E.nic
    N.fl[f, FL_STATE] = FS_CLOSED
    N.meta[M_FL_CLOSED] += 1


def _open_pdc(eng, d1, start, data=b"old" * 1000):
    f = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192, start_psn=start)
    nic_post(eng, d1, f, data)
    eng.run_for(200_000)
    assert flow_done(eng, f) and nic_table_use(eng)["pdcs"] == 1
    (r,) = np.flatnonzero(eng.E.nic.rp[:, RP_NIC])
    return f, int(r)


def test_a_restarted_sender_reconnects_within_one_rto():
    """kill -9 of a sender mid-connection (its PDC stays open at the
    receiver), and its successor starts on the same PDC id at an earlier
    PSN: the receiver asks, the sender resets the stale PDC and resends,
    and the new connection is open and done within one initial RTO."""
    eng, d1, d2 = _pair(8)
    with eng:
        f, r = _open_pdc(eng, d1, 5000)
        _kill_sender(eng, f)
        rto = int(eng.E.nic.nr[0, NR_RTO_INIT])
        g = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192, start_psn=0)   # the new process
        assert g == f
        t0 = eng.now()
        nic_post(eng, d1, g, b"new" * 1000)
        eng.run_until(t0 + rto, stop_idle=False)
        c1, c2 = nic_counters(eng, d1), nic_counters(eng, d2)
        assert flow_done(eng, g) and nic_delivered(eng, d2, IP1, g) == b"new" * 1000, (c1, c2)
        assert c2["tx_reset_ask"] == 1 and c1["tx_reset"] == 1 and c2["pdc_reset"] == 1
        assert c1["rto_fire"] == 0 and c2["drop_reset"] == 0 and c2["pdc_open"] == 2
        assert nic_table_use(eng)["pdcs"] == 1


def test_a_restarted_sender_reconnects_on_a_closed_pdc_at_once():
    """The same on a PDC its predecessor closed, within the linger."""
    from test_pdc_close import _closed_conn
    eng, d1, d2 = _pair(8)
    with eng:
        f, r, quiet_until = _closed_conn(eng, d1, 5000)
        g = add_flow(eng, d1, MAC2, IP2, buf_bytes=8192, start_psn=0)
        nic_post(eng, d1, g, b"new" * 1000)
        eng.run_for(100_000)
        assert eng.now() < quiet_until
        assert flow_done(eng, g) and nic_delivered(eng, d2, IP1, g) == b"new" * 1000
        assert nic_counters(eng, d2)["pdc_reset"] == 1


def _fabric():
    """h1 -- s1 -- h2 and a rogue port on s1 (an open end: frames injected
    there reach h2 through the switch, any source address)."""
    from taurus.datapath.engine import Engine
    from taurus.tools.fabric import build_virtual, nic_host, open_end
    from taurus.tools.topology import Topology
    t = Topology("rst")
    for h in ("h1", "h2", "fz"):
        t.add_host(h)
    t.add_switch("s1")
    for h in ("h1", "h2", "fz"):
        t.add_link(h, "s1", rate="10Gbit", delay="1us", buffer="1MB")
    eng = Engine(clock="virtual", n_frames=8192, max_flows=16, max_nics=2)
    fab = build_virtual(eng, t, host_factory=lambda e, tp, h, p: (
        open_end(e, tp, h, p) if h == "fz" else nic_host(e, tp, h, p, rx_buf_bytes=8192)))
    rogue = fab["hosts"]["fz"]                  # open_end: its port
    return eng, t, fab["hosts"]["h1"], fab["hosts"]["h2"], rogue


def test_a_live_connection_ignores_an_ask_about_its_own_pdc():
    """A late copy of an older connection's SYN (here forged with the live
    sender's address) meets the newer connection's PDC: the receiver asks,
    the live sender (which knows the receiver's PDC id) ignores it, and the
    newer connection goes on untouched."""
    eng, t, h1, h2, rogue = _fabric()
    with eng:
        ip1, ip2 = t.ip_of("h1"), t.ip_of("h2")
        f = add_flow(eng, h1, t.mac_of("h2"), ip2, buf_bytes=8192, start_psn=5000)
        nic_post(eng, h1, f, b"old" * 1000)
        eng.run_for(200_000)
        assert flow_done(eng, f)
        old = F.uet_frame(L.PDSRudReq(flags=S.F_SYN, psn=100, spdcid=f, psn_offset=0),
                          L.SESStd(flags=S.SF_SOM | S.SF_EOM, buffer_offset=0), b"x" * 64,
                          dst_mac=t.mac_of("h2"), src_ip=ip1, dst_ip=ip2)
        assert eng.inject(rogue, bytes(old))
        eng.run_for(50_000)
        c1, c2 = nic_counters(eng, h1), nic_counters(eng, h2)
        assert c2["tx_reset_ask"] == 1 and c1["drop_reset"] == 1 and c1["tx_reset"] == 0
        assert c2["pdc_reset"] == 0 and nic_table_use(eng)["pdcs"] == 1
        nic_post(eng, h1, f, b"more" * 100)
        eng.run_for(100_000)
        assert flow_done(eng, f)
        assert nic_delivered(eng, h2, ip1, f) == b"old" * 1000 + b"more" * 100


def test_a_reset_without_the_cookie_is_dropped_and_counted():
    """RESETs from a rogue port naming the open PDC and its peer but with
    guessed cookies, from another address, and for other PDC ids: all
    dropped (drop_reset), the transfer intact; the right cookie (seen by
    whoever saw an ask) frees it."""
    eng, t, h1, h2, rogue = _fabric()
    with eng:
        ip1, ip2 = t.ip_of("h1"), t.ip_of("h2")
        f = add_flow(eng, h1, t.mac_of("h2"), ip2, buf_bytes=8192, start_psn=5000)
        nic_post(eng, h1, f, b"old" * 1000)
        eng.run_for(200_000)
        N = eng.E.nic
        (r,) = np.flatnonzero(N.rp[:, RP_NIC])
        r = int(r)
        cookie = int(pdc_cookie(N, r))
        rng = np.random.default_rng(3)
        bad = [(ip1, f, r, int(c)) for c in rng.integers(0, 1 << 32, 200) if c != cookie]
        bad += [("10.0.0.99", f, r, cookie), (ip1, f + 1, r, cookie), (ip1, f, r + 1, cookie)]
        for ip, sp, dp, c in bad:
            assert eng.inject(rogue, _reset(t, ip, sp, dp, c))
            eng.run_for(2_000)
        eng.run_for(20_000)                      # the last one is still on the links
        c2 = nic_counters(eng, h2)
        assert c2["drop_reset"] == len(bad) and c2["pdc_reset"] == 0
        assert int(N.rp[r, RP_PEER_PDC]) == f and int(N.rp[r, RP_START]) == 5000
        nic_post(eng, h1, f, b"more" * 100)
        eng.run_for(100_000)
        assert nic_delivered(eng, h2, ip1, f) == b"old" * 1000 + b"more" * 100
        assert eng.inject(rogue, _reset(t, ip1, f, r, cookie))
        eng.run_for(20_000)
        assert nic_counters(eng, h2)["pdc_reset"] == 1 and nic_table_use(eng)["pdcs"] == 0


def _reset(t, ip, spdcid, dpdcid, cookie):
    return bytes(F.uet_frame(L.PDSControl(ctl_type=S.CTL_RESET, flags=0, psn=1, spdcid=spdcid,
                                          dpdcid=dpdcid, ctl_payload=cookie), None, b"",
                             dst_mac=t.mac_of("h2"), src_ip=ip, dst_ip=t.ip_of("h2")))
