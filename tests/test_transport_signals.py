"""What the receiver reflects (ECN -> M flag, CSIG tag -> ACK_CCX, timestamps ->
RTT samples) and how hostile or malformed frames are dropped and counted
while the connection survives."""
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from taurus.datapath.devices.nic.setup import (add_flow, add_nic, flow_done, flow_stats,
                                               nic_counters, nic_delivered, nic_post,
                                               nic_reserve)
from taurus.datapath.devices.nic.state import FL_RPDC, RP_NXT
from taurus.datapath.engine import Engine
from taurus.datapath.wire import layers as L
from taurus.datapath.wire import spec as S
from taurus.datapath.wire.frames import uet_frame

from test_transport_transfer import IP1, IP2, MAC1, MAC2, payload, two_hosts


def open_end_nic():
    """NIC h2 whose peer is an open end: Python plays host h1."""
    eng = Engine(clock="virtual")
    nic_reserve(eng, max_flows=16)
    a, b = eng.add_mem_link("h1", "h2", delay_ns=100)
    d2 = add_nic(eng, b, MAC2, IP2)
    return eng, a, d2


def data_frame(psn=0, spdcid=5, dpdcid=0, syn=True, data=b"x" * 100, off=0, dst_ip=IP2,
               **kw):
    pds = L.PDSRudReq(psn=psn, spdcid=spdcid, flags=(S.F_SYN if syn else 0) | S.F_AR)
    if syn:
        pds.psn_offset = psn
    else:
        pds.dpdcid = dpdcid
    ses = L.SESStd(opcode=S.SES_WRITE, flags=S.SF_SOM | S.SF_EOM, buffer_offset=off)
    return bytes(uet_frame(pds, ses, data, src_mac=MAC1, dst_mac=MAC2, src_ip=IP1,
                           dst_ip=dst_ip, **kw))


def acks(eng, port):
    return [Ether(f) for f in eng.collect(port)]


def test_ecn_ce_is_echoed_with_the_m_flag():
    eng, a, d2 = open_end_nic()
    with eng:
        eng.inject(a, data_frame(psn=0, ecn=3))
        eng.run_for(10**6)
        (ack,) = acks(eng, a)
        pds = ack[L.PDSAckCC]
        assert pds.flags & S.F_ACK_M and pds.cack_psn == 0 and pds.dpdcid == 5
        eng.inject(a, data_frame(psn=1, syn=False, dpdcid=pds.spdcid, off=100, ecn=2))
        eng.run_for(10**6)
        (ack,) = acks(eng, a)
        assert not ack[L.PDSAckCC].flags & S.F_ACK_M and ack[L.PDSAckCC].cack_psn == 1
        assert nic_counters(eng, d2)["rx_ce"] == 1


def test_ecn_marks_on_the_path_reach_the_sender():
    eng, d1, d2, di = two_hosts(impair=dict(ecn_mark=0.2, seed=3))
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        nic_post(eng, d1, f, payload(100_000, 1))
        eng.run_for(10**8)
        assert flow_done(eng, f)
        st = flow_stats(eng, f)
        assert st["ecn"] > 0 and nic_counters(eng, d2)["rx_ce"] > 0
        # the marked ACKs' bytes: at least a byte per marked ACK, at most all
        assert st["ecn"] <= st["ecn_bytes"] <= 100_000


def test_csig_tag_is_reflected_in_ack_ccx():
    eng, a, d2 = open_end_nic()
    with eng:
        eng.inject(a, data_frame(csig=L.CSIGWide(t=S.CSIG_T_DELAY, s=12345, lm=77, d=1)))
        eng.run_for(10**6)
        (ack,) = acks(eng, a)
        x = ack[L.PDSAckCCX]
        assert x.ccx_type == S.CCX_CSIG
        assert (x.rcsig_fmt, x.rcsig_t, x.rcsig_s, x.rcsig_lm, x.rcsig_d) == (
            S.CSIG_WIDE, S.CSIG_T_DELAY, 12345, 77, 1)
        eng.inject(a, data_frame(psn=1, syn=False, dpdcid=x.spdcid, off=100,
                                 csig=L.CSIGCompact(t=S.CSIG_T_ABW, s=9, lm=3)))
        eng.run_for(10**6)
        (ack,) = acks(eng, a)
        x = ack[L.PDSAckCCX]
        assert (x.rcsig_fmt, x.rcsig_t, x.rcsig_s, x.rcsig_lm) == (S.CSIG_COMPACT, 0, 9, 3)


def test_timestamps_come_back_as_rtt_samples():
    eng, d1, d2, _ = two_hosts(rate=10 * 10**9, delay=3000)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        nic_post(eng, d1, f, payload(50_000, 2))
        eng.run_for(10**8)
        st = flow_stats(eng, f)
        assert st["rtt_n"] > 0
        # two 3 us propagation delays + serialization of a data frame and an ACK
        assert 6000 < st["rtt_min"] < 8000 and st["srtt"] >= st["rtt_min"]


def test_hostile_frames_are_dropped_counted_and_the_connection_survives():
    eng, d1, d2, _ = two_hosts()
    with eng:
        f = add_flow(eng, d1, MAC2, IP2)
        data = payload(300_000, 4)
        nic_post(eng, d1, f, data)
        eng.run_for(20_000)                      # the PDC is open, data is flowing
        rpdc = int(eng.E.nic.fl[f, FL_RPDC])     # the receiver's PDC id
        assert rpdc > 0
        ahead = int(eng.E.nic.rp[rpdc, RP_NXT]) + 200   # in window, not yet received
        to_h2 = eng.port_index("h1")             # inject from h1's port toward h2
        to_h1 = eng.port_index("h2")
        good = dict(spdcid=f, syn=False, dpdcid=rpdc)
        hostile_to_h2 = [
            data_frame(**dict(good, dpdcid=rpdc + 7)),                 # wrong PDC
            data_frame(**dict(good, spdcid=f + 1)),                    # PDC of someone else
            data_frame(psn=10**6, **good),                             # PSN out of window
            data_frame(psn=ahead, off=10**9, **good),                  # offset outside buffer
            bytes(Ether(src=MAC1, dst=MAC2) / IP(src=IP1, dst=IP2)
                  / UDP(sport=1, dport=S.UET_UDP_PORT)
                  / Raw(bytes(L.PDSRudReq(psn=1))[:6])),               # truncated PDS
            data_frame(**good)[:30],                                   # truncated IP
            bytes(uet_frame(L.PDSControl(), src_ip=IP1, dst_ip=IP2)),  # type we do not serve
            data_frame(dst_ip="10.9.9.9", **good),                     # not for us
        ]
        hostile_to_h1 = [
            bytes(uet_frame(L.PDSAckCC(cack_psn=10**6, spdcid=rpdc, dpdcid=f),
                            src_ip=IP2, dst_ip=IP1)),                   # ACKs unsent data
            bytes(uet_frame(L.PDSAckCC(cack_psn=0, spdcid=rpdc, dpdcid=999),
                            src_ip=IP2, dst_ip=IP1)),                   # no such flow
            bytes(uet_frame(L.PDSAck(cack_psn=0, spdcid=rpdc + 1, dpdcid=f),
                            src_ip=IP2, dst_ip=IP1)),                   # wrong peer PDC
            bytes(uet_frame(L.PDSNack(nack_psn=0, spdcid=rpdc, dpdcid=f),
                            src_ip="10.0.0.66", dst_ip=IP1)),           # wrong peer
        ]
        for fr in hostile_to_h2:
            assert eng.inject(to_h2, fr)
        for fr in hostile_to_h1:
            assert eng.inject(to_h1, fr)
        eng.run_for(10**8)
        assert flow_done(eng, f) and nic_delivered(eng, d2, IP1, f) == data
        c1, c2 = nic_counters(eng, d1), nic_counters(eng, d2)
        assert c2["drop_wrong_pdc"] == 2 and c2["drop_psn_oor"] == 1
        assert c2["drop_bad_offset"] == 1 and c2["drop_parse"] == 2
        assert c2["drop_bad_type"] == 1 and c2["drop_not_mine"] == 1
        assert c2["parse"]["truncated_pds"] == 1 and c2["parse"]["truncated_ip"] == 1
        assert c1["drop_ack_oor"] == 1 and c1["drop_wrong_pdc"] == 3
        assert c1["rto_fail"] == 0 and eng.frames_in_use() == 0
