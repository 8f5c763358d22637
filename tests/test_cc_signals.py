"""Signal collection the agent configures (paper §3.3): custom feedback
segments cut out of matching feedback packets into Raw records, and RTT
probes at a cadence (every N samples or T ns, or the next one on command);
first on the report engine alone, then on real ACKs of a running flow."""
import numba as nb
import numpy as np

from taurus.datapath.byref import byref
from taurus.agent.signals import raw_bytes
from taurus.datapath import ccshm as C
from taurus.datapath.devices.nic.setup import add_flow, nic_post
from taurus.datapath.engine import Engine
from taurus.datapath.report import report_rtt, report_segments
from taurus.datapath.wire import spec as S
from taurus.tools.fabric import build_virtual, nic_host
from taurus.tools.topology import Topology


@nb.njit(cache=True)
def segs(state, flow, buf, base, length, ptype, now):
    report_segments(byref(state), flow, buf, base, length, ptype, now)


@nb.njit(cache=True)
def rtt(state, flow, sample, now):
    report_rtt(byref(state), flow, sample, 0, sample, now, now - sample, -1, -1)


def make():
    eng = Engine(clock="virtual", max_flows=8, max_nics=1, ring_capacity=256)
    cc = eng.cc
    cc.owner[1] = 0
    cc.event_mask[1] = (1 << C.EV_CUSTOM) | (1 << C.EV_RTT)
    cc.ctl[C.CTL_BATCH_BYTES] = 1          # publish every record at once
    return eng, cc


def rule(cc, j, sid, off, n, types=0, moff=0, mmask=0, mval=0):
    cc.segs[j, :7] = (sid, types, moff, mmask, mval, off, n)


def test_segment_rules_match_extract_and_count_short():
    eng, cc = make()
    with eng:
        buf = np.arange(100, dtype=np.uint8)
        rule(cc, 0, 5, 4, 6, types=1 << S.T_ACK_CC)                   # ACK_CC only
        rule(cc, 1, 6, 0, 2, moff=1, mmask=0xFF, mval=11)             # byte 1 (= 11 at base 10)
        rule(cc, 2, 7, 80, 16)                                        # past the end: short
        segs(eng.E, 1, buf, 10, 90, S.T_ACK, 1)
        r = cc.ring.drain()
        assert list(r[:, C.V0]) == [6]                                # type mismatch: no 5
        raw, ln = raw_bytes(r)
        assert ln[0] == 2 and bytes(raw[0, :2]) == bytes([10, 11])    # wire order
        assert cc.ctl[C.CTL_SEG_SHORT] == 1
        segs(eng.E, 1, buf, 20, 90, S.T_ACK_CC, 2)                    # byte 1 is 21: no 6
        r = cc.ring.drain()
        assert list(r[:, C.V0]) == [5] and bytes(raw_bytes(r)[0][0, :6]) == bytes(range(24, 30))
        cc.event_mask[1] = 1 << C.EV_RTT                               # CUSTOM unbound: silent
        segs(eng.E, 1, buf, 10, 90, S.T_ACK_CC, 3)
        assert cc.ring.pending() == 0


def test_probe_cadence_every_n_every_t_and_on_command():
    eng, cc = make()
    with eng:
        for i in range(6):                                   # default: every sample
            rtt(eng.E, 1, 1000 + i, 10 * i)
        assert len(cc.ring.drain()) == 6 and cc.srtt[1] == 1005
        cc.ctl[C.CTL_PROBE_PKTS] = 4
        for i in range(12):
            rtt(eng.E, 1, 2000 + i, 100 + i)
        assert list(cc.ring.drain()[:, C.V0]) == [2003, 2007, 2011]
        cc.ctl[C.CTL_PROBE_PKTS], cc.ctl[C.CTL_PROBE_NS] = 0, 1000
        for i in range(30):                                  # one sample every 100 ns
            rtt(eng.E, 1, 3000 + i, 10_000 + 100 * i)
        assert list(cc.ring.drain()[:, C.T_FIRST]) == [10_000, 11_000, 12_000]
        cc.probe[1] = 1                                      # the agent's command
        rtt(eng.E, 1, 4000, 12_050)
        assert list(cc.ring.drain()[:, C.V0]) == [4000]
        assert cc.probe[1] == 0 and cc.ctl[C.CTL_PROBE_CMD] == 1
        assert cc.srtt[1] == 4000                            # srtt published on every sample


def _two_nics(name, delay):
    """h1 -- h2 with host NICs in a virtual engine: (topology, engine, hosts)."""
    t = Topology(name)
    for h in ("h1", "h2"):
        t.add_host(h)
    t.add_link("h1", "h2", rate="10Gbit", delay=delay)
    eng = Engine(clock="virtual", max_flows=16, max_nics=2)
    try:
        return t, eng, build_virtual(eng, t, host_factory=nic_host)["hosts"]
    except BaseException:
        eng.close()
        raise


def test_segments_and_probes_on_real_acks():
    t, eng, hosts = _two_nics("sig", "2us")
    with eng:
        h1 = hosts["h1"]
        slot = int(eng.E.devs.regs[h1, 0])
        cc = eng.cc
        f = add_flow(eng, h1, t.mac_of("h2"), t.ip_of("h2"), cwnd_bytes=64 * 1024)
        cc.event_mask[f] = (1 << C.EV_CUSTOM) | (1 << C.EV_RTT)
        cc.ctls[slot, C.CTL_PROBE_PKTS] = 4
        psn_off, psn_len = S.ACK_CC_CACK_PSN[0], S.ACK_CC_CACK_PSN[1]
        cc.segs_all[slot, 0, :7] = (9, (1 << S.T_ACK) | (1 << S.T_ACK_CC), 0, 0, 0,
                                    psn_off, psn_len)
        nic_post(eng, h1, f, bytes(64 * 1024))
        eng.run_for(200_000)
        r = cc.ring_of(slot).drain()
        cust = r[r[:, C.EVENT] == C.EV_CUSTOM]
        probes = r[r[:, C.EVENT] == C.EV_RTT]
        assert len(cust) > 4 and (cust[:, C.V0] == 9).all() and (cust[:, C.V0 + 1] == psn_len).all()
        raw, _ = raw_bytes(cust)
        psn = raw[:, :psn_len].astype(np.int64) @ (256 ** np.arange(psn_len - 1, -1, -1))
        assert (np.diff(psn) >= 0).all()                     # cumulative ACK PSNs, in order
        # one RTT sample in four; samples are per acknowledged packet (64 here)
        assert len(probes) == 64 // 4
        assert cc.srtt[f] > 0


def test_probe_packet_on_command_gives_an_idle_flow_an_rtt_sample():
    """The agent's probe command (cc.probe + the doorbell) on an idle flow:
    the engine sends a CONTROL PROBE at once, the receiver answers with an
    ACK echoing its timestamp, and that RTT sample is reported."""
    from taurus.datapath.devices.nic.setup import nic_counters
    t, eng, hosts = _two_nics("probe", "5us")
    with eng:
        h1, h2 = hosts["h1"], hosts["h2"]
        slot = int(eng.E.devs.regs[h1, 0])
        cc = eng.cc
        ring = cc.ring_of(slot)
        f = add_flow(eng, h1, t.mac_of("h2"), t.ip_of("h2"))
        g = add_flow(eng, h1, t.mac_of("h2"), t.ip_of("h2"))      # never sends
        cc.event_mask[f] = cc.event_mask[g] = 1 << C.EV_RTT
        cc.ctls[slot, C.CTL_PROBE_PKTS] = 1 << 40      # no samples by cadence
        cc.ctls[slot, C.CTL_BATCH_BYTES] = 1
        nic_post(eng, h1, f, bytes(4096))
        eng.run_for(1_000_000)                          # delivered, ACKed, idle
        ring.drain()
        acks = nic_counters(eng, h2)["tx_ack"]
        eng.run_for(1_000_000)
        assert len(ring.drain()) == 0                   # an idle flow reports nothing
        cc.probe[f] = cc.probe[g] = 1                   # what the agent does ...
        cc.ctls[slot, C.CTL_PROBE_DOORBELL] += 1        # ... once per step
        eng.run_for(1_000_000)
        r = ring.drain()
        rtt = r[r[:, C.EVENT] == C.EV_RTT]
        assert len(rtt) == 1 and rtt[0, C.FLOW] == f
        assert 10_000 <= rtt[0, C.V0] < 12_000          # 2 x 5 us plus serialization
        c1, c2 = nic_counters(eng, h1), nic_counters(eng, h2)
        assert (c1["tx_probe"], c2["rx_probe"], c2["tx_ack"]) == (1, 1, acks + 1)
        assert c1["tx_retx"] == 0 and c1["rto_fire"] == 0
        assert cc.probe[f] == 0                         # answered
        assert cc.probe[g] == 1                         # no peer PDC yet: waits, not sent
