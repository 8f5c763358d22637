"""Corrupted frames: the impairment device flips a bit behind a checksum of
the intact datagram; the receiving NIC checks a UDP checksum that is present
(non-zero) and drops the frame as drop_csum; the transport resends it, so
the bytes arrive intact."""
import numpy as np
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from taurus.datapath.devices.impair import impair_counters
from taurus.datapath.devices.nic.setup import add_flow, flow_done, nic_counters, nic_delivered, nic_post
from taurus.datapath.wire.codec import fill_udp_checksum, udp_checksum_ok
from test_transport_transfer import IP1, IP2, MAC2, payload, two_hosts


def test_udp_checksum_matches_scapy_and_catches_one_flipped_bit():
    raw = bytearray(bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=5, dport=4793)
                          / (b"abcdefg" * 7)))
    buf = np.frombuffer(raw, np.uint8).copy()
    end = len(raw)
    assert udp_checksum_ok(buf, 14, 34, end)           # 0: no checksum
    fill_udp_checksum(buf, 14, 34, end)
    want = Ether(bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=5, dport=4793)
                       / (b"abcdefg" * 7)))[UDP].chksum
    assert int(buf[40]) << 8 | int(buf[41]) == want
    assert udp_checksum_ok(buf, 14, 34, end)
    for bit in range(0, (end - 34) * 8, 7):
        b = buf.copy()
        b[34 + bit // 8] ^= 1 << (bit % 8)
        assert not udp_checksum_ok(b, 14, 34, end)


def test_corrupted_frames_are_dropped_and_resent():
    eng, d1, d2, di = two_hosts(impair=dict(corrupt=0.05, seed=11))
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        data = payload(400_000, 4)
        nic_post(eng, d1, f, data)
        eng.run_for(2 * 10**9)
        assert flow_done(eng, f) and nic_delivered(eng, d2, IP1, f) == data
        bad = impair_counters(eng, di)["corrupted"]
        c1, c2 = nic_counters(eng, d1), nic_counters(eng, d2)
        assert bad > 10
        # every corrupted frame is refused by a checksum or the parser, never taken
        assert c1["drop_csum"] + c2["drop_csum"] + c1["drop_parse"] + c2["drop_parse"] == bad
        assert c1["tx_retx"] > 0
