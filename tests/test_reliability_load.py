"""Load (bench/reliab_load.py, bench/reliability.py part 5): long flows and
churn at once with tables bounded and counters monotonic; and the wire's
32-bit sequence numbers crossing their wrap point inside a transfer."""
import hashlib
import os
import sys

import pytest

from taurus.datapath.devices import impair
from taurus.datapath.devices.impair import add_impair
from taurus.datapath.devices.nic.app import WouldBlock
from taurus.datapath.devices.nic.setup import (add_flow, add_nic, flow_closed, nic_close,
                                               nic_counters, nic_post, nic_reserve,
                                               nic_table_use, nic_take_delivered)
from taurus.datapath.devices.nic.state import FL_NXT
from taurus.datapath.engine import Engine

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import reliab_load  # noqa: E402

G = 1_000_000_000
MACS, IPS = ("02:00:00:00:00:01", "02:00:00:00:00:02"), ("10.0.0.1", "10.0.0.2")


def test_long_flows_and_churn_keep_tables_bounded_and_counters_monotonic():
    r = reliab_load.run(long_flows=200, churn_flows=600, wall_s=0, concurrent=32,
                        sample_slices=100, log=lambda s: None)
    assert r["flows"] == r["checked"] == 600 and r["bad"] == 0 and r["stuck"] == []
    assert r["end"]["frames"] == 0                   # all drained once the streams stopped
    assert r["long_idle"] == 0                       # every stream moved data
    assert r["counter_errors"] == [] and r["counters"] > 100
    # closed flow rows were reused: never more rows than flows open at once; closed
    # receive PDCs wait for their ids' next connection, or give their rows up when the
    # tables are full (nic/close.py: pdc_reclaim)
    assert r["peak"]["flow_rows"] <= 200 + 2 * 32
    assert r["end"]["flows_open"] == 200 and r["end"]["pdcs_open"] == 200
    for k, v in r["peak"].items():
        assert v <= r["capacity"][k], (k, v)


def test_psn_crosses_its_32_bit_wrap_with_loss_and_close():
    """A flow starting 300 PSNs below 2**32 sends ~2,000 packets through 10%
    loss: its PSNs cross the wrap (the wire carries 32 bits, psn_recon
    rebuilds 64), every byte arrives intact, the CLOSE after the wrap frees
    both ends."""
    data = os.urandom(2 << 20)
    eng = Engine(clock="virtual", n_frames=32768)
    with eng:
        nic_reserve(eng, max_flows=8)
        a, x = eng.add_mem_link("h1", "im0", delay_ns=2000, rate_bps=10 * G)
        y, b = eng.add_mem_link("im1", "h2", delay_ns=2000, rate_bps=10 * G)
        di = add_impair(eng, x, y, seed=3)
        d1 = add_nic(eng, a, MACS[0], IPS[0], line_rate_bps=10 * G)
        d2 = add_nic(eng, b, MACS[1], IPS[1], line_rate_bps=10 * G)
        eng.E.devs.regs[di, impair.LOSS] = round(0.10 * impair.P_ONE)
        start = (1 << 32) - 300
        f = add_flow(eng, d1, MACS[1], IPS[1], cwnd_bytes=64 << 10, start_psn=start)
        posted, got = 0, hashlib.sha256()
        n_got = 0
        for _ in range(4000):
            while posted < len(data):
                try:
                    nic_post(eng, d1, f, data[posted:posted + (256 << 10)])
                except WouldBlock:
                    break
                posted += min(256 << 10, len(data) - posted)
            part = nic_take_delivered(eng, d2, IPS[0], f)
            got.update(part)
            n_got += len(part)
            if n_got == len(data):
                break
            eng.run_for(200_000)
        assert n_got == len(data) and got.digest() == hashlib.sha256(data).digest()
        assert eng.E.nic.fl[f, FL_NXT] > (1 << 32) + 1000       # well past the wrap
        assert nic_counters(eng, d1)["tx_retx"] > 0
        eng.E.devs.regs[di, impair.LOSS] = 0
        nic_close(eng, d1, f)
        eng.run_for(10_000_000)
        assert flow_closed(eng, f)
        use = nic_table_use(eng)
        assert use["flows"] == 0 and use["pdcs"] == 0, use


def test_agent_sets_up_a_reused_flow_row_afresh():
    """A closed flow's row carries a new connection: the agent sets it up
    again (fresh algorithm state, filters and mask), not running the new
    connection on the old one's DCTCP state."""
    from taurus.datapath.devices.nic.setup import flow_done, set_flow_mode
    eng = Engine(clock="virtual", n_frames=16384, max_flows=8)
    with eng:
        nic_reserve(eng, max_flows=6)
        a, b = eng.add_mem_link("h1", "h2", delay_ns=2000, rate_bps=10 * G)
        d1 = add_nic(eng, a, MACS[0], IPS[0], line_rate_bps=10 * G)
        d2 = add_nic(eng, b, MACS[1], IPS[1], line_rate_bps=10 * G)
        agent = reliab_load._agents(eng, {"h1": d1}, ["h1"], 10 * G)["h1"]
        try:
            def transfer(n):
                f = add_flow(eng, d1, MACS[1], IPS[1], buf_bytes=1 << 20)
                set_flow_mode(eng, f, "agent")
                nic_post(eng, d1, f, bytes(n))
                for _ in range(2000):
                    eng.run_for(20_000)
                    nic_take_delivered(eng, d2, IPS[0], f)
                    agent.step(eng.now())
                    if flow_done(eng, f):
                        break
                return f
            f = transfer(1 << 20)
            grown = int(eng.cc.cwnd[f])
            nic_close(eng, d1, f)
            eng.run_for(1_000_000)
            agent.step(eng.now())
            assert flow_closed(eng, f)
            h = agent.handler
            assert h.c["flows"] == 1
            g = add_flow(eng, d1, MACS[1], IPS[1], buf_bytes=1 << 20)
            assert g == f                                     # the same row
            set_flow_mode(eng, g, "agent")
            nic_post(eng, d1, g, bytes(2048))
            for _ in range(50):
                eng.run_for(20_000)
                agent.step(eng.now())
                if h.c["flows"] == 2:
                    break
            assert h.c["flows"] == 2 and h.c["reused"] == 1
            assert 0 < int(eng.cc.cwnd[g]) < grown, (int(eng.cc.cwnd[g]), grown)
        finally:
            agent.teardown()


def test_more_flow_rows_than_16_bit_pdc_ids_is_refused():
    """Flow and receive PDC rows are the PDC ids on the wire (16 bits): a
    65,536th row would alias row 0's id, so reserving it is an error."""
    eng = Engine(clock="virtual", max_flows=8)
    with eng:
        with pytest.raises(ValueError, match="16 bits"):
            nic_reserve(eng, max_flows=1 << 16)
        nic_reserve(eng, max_flows=(1 << 16) - 1, tx_bytes=1 << 16, rx_bytes=1 << 16)


def test_a_late_syn_of_a_closed_connection_does_not_block_the_next_on_its_row():
    """A late duplicate of a closed connection's first packet (SYN: a
    retransmission the CLOSE overtook) is dropped by the closed PDC, which
    waits for the sender's next connection on that PDC id; that connection
    starts past the old PSNs, so the receiver frees the closed PDC for it,
    and only its own data is delivered."""
    eng = Engine(clock="virtual", n_frames=8192)
    with eng:
        nic_reserve(eng, max_flows=8, tx_bytes=1 << 20, rx_bytes=1 << 20)
        a, x = eng.add_mem_link("h1", "x", delay_ns=1000)
        y, b = eng.add_mem_link("y", "h2", delay_ns=1000)
        d1 = add_nic(eng, a, MACS[0], IPS[0], line_rate_bps=10 * G, rx_buf_bytes=64 << 10)
        d2 = add_nic(eng, b, MACS[1], IPS[1], line_rate_bps=10 * G, rx_buf_bytes=64 << 10)
        first = []

        def relay(ns=20_000):               # x <-> y by hand, keeping h1's first frame
            for _ in range(ns // 2_000):
                eng.run_for(2_000)
                for fr in eng.collect(x):
                    first[:] = first or [fr]
                    eng.inject(y, fr)
                for fr in eng.collect(y):
                    eng.inject(x, fr)

        def transfer(data):
            f = add_flow(eng, d1, MACS[1], IPS[1], buf_bytes=64 << 10)
            nic_post(eng, d1, f, data)
            got = b""
            for _ in range(100):
                relay()
                got += nic_take_delivered(eng, d2, IPS[0], f)
                if len(got) >= len(data):
                    break
            nic_close(eng, d1, f)
            for _ in range(100):
                relay()
                if flow_closed(eng, f):
                    break
            return f, got
        one, two = os.urandom(5000), os.urandom(7000)
        f, got = transfer(one)
        assert got == one and flow_closed(eng, f)
        assert nic_table_use(eng)["pdcs"] == 0
        drops = nic_counters(eng, d2)["drop_wrong_pdc"]
        eng.inject(y, first[0])             # the late duplicate
        relay()
        assert nic_counters(eng, d2)["drop_wrong_pdc"] == drops + 1
        use = nic_table_use(eng)
        assert use["pdcs"] == 0 and use["pdcs_closed"] == 1 and use["hash"] == 0, use
        g, got = transfer(two)
        assert g == f and got == two and flow_closed(eng, g)
        use = nic_table_use(eng)
        assert use["pdcs"] == 0 and use["pdcs_closed"] == 1 and use["pdc_rows"] == 1, use


def test_a_plan_with_more_flows_than_pdc_ids_is_a_clear_error():
    from taurus.experiment import schema
    from taurus.experiment.schema import ExperimentError
    from taurus.experiment.traffic import MAX_PLAN_FLOWS, build_plan
    d = {"experiment": {"name": "t", "duration": "1ms"},
         "topology": {"name": "t", "hosts": [{"name": "h1"}, {"name": "h2"}],
                      "switches": [{"name": "s1"}],
                      "links": [{"endpoints": ["h1", "s1"]}, {"endpoints": ["h2", "s1"]}]},
         "traffic": [{"kind": "bulk", "from": ["h1"], "to": "h2", "parallel": MAX_PLAN_FLOWS}]}
    assert len(build_plan(schema.from_dict(d, "x.toml")).flows) == MAX_PLAN_FLOWS
    d["traffic"][0]["parallel"] += 1
    with pytest.raises(ExperimentError, match="16 bits"):
        build_plan(schema.from_dict(d, "x.toml"))
