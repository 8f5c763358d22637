"""Spoofed peers (docs/SECURITY.md), virtual time: a rogue port on the
hosts' switch forges data, CLOSE, RESET, credit, ACK, NACK, CNP and
REQ_CLOSE frames, blind or with the connection's sniffed ids off the
window: all dropped and counted, the transfer intact.  And the stated
limit: a data frame with the sniffed ids and an in-window PSN is accepted
(no TSS), its bytes in the stream in place of the real ones."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import reliab_spoof  # noqa: E402


def test_forged_frames_off_the_window_are_dropped_and_counted():
    r = reliab_spoof.spoof(n_frames=256, nbytes=256 << 10, seed=2)
    assert r["intact"] and r["accepted"] == 0 and r["frames"] == 256
    assert r["kinds"] == 16                       # 8 kinds, blind and sniffed


def test_restarted_senders_reconnect_within_one_rto():
    """64 KiB fills the receiver's ring: when the bench takes the bytes, the
    stale PDC sends a window update that reaches the new connection first
    (a stale NACK must not tell it the receiver's PDC id: ack._learn_rpdc)."""
    r = reliab_spoof.restarts(n=3, nbytes=64 << 10)
    assert r["reconnected"] == 3 and r["max_us"] <= r["rto_us"]


def test_in_window_injection_with_sniffed_ids_is_accepted_the_stated_limit():
    """What TSS would prevent: the rogue copies the ids and the next
    expected PSN and stream offset, and its bytes are delivered."""
    from taurus.datapath.devices.nic.setup import (add_flow, flow_done, nic_counters,
                                                   nic_delivered, nic_post)
    from taurus.datapath.devices.nic.state import FL_NXT, FL_RPDC
    from taurus.datapath.wire import frames as F
    from taurus.datapath.wire import layers as L
    from taurus.datapath.wire import spec as S
    eng, t, h1, h2, rogue = reliab_spoof.fabric()
    with eng:
        N = eng.E.nic
        f = add_flow(eng, h1, t.mac_of("h2"), t.ip_of("h2"), buf_bytes=8192, start_psn=77)
        nic_post(eng, h1, f, b"a" * 512)
        eng.run_for(100_000)
        assert flow_done(eng, f)
        r, nxt = int(N.fl[f, FL_RPDC]), int(N.fl[f, FL_NXT])
        forged = F.uet_frame(L.PDSRudReq(flags=S.F_AR, psn=nxt, spdcid=f, dpdcid=r),
                             L.SESStd(flags=S.SF_SOM | S.SF_EOM, buffer_offset=512),
                             b"EVIL" * 64, dst_mac=t.mac_of("h2"), src_ip=t.ip_of("h1"),
                             dst_ip=t.ip_of("h2"))
        assert eng.inject(rogue, bytes(forged))
        eng.run_for(20_000)
        nic_post(eng, h1, f, b"b" * 256)          # the real packet with that PSN
        eng.run_for(100_000)
        got = nic_delivered(eng, h2, t.ip_of("h1"), f)
        assert got == b"a" * 512 + b"EVIL" * 64
        assert nic_counters(eng, h2)["rx_dup"] >= 1   # the real one came second
