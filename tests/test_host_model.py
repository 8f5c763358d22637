"""The host model of a receiving NIC in virtual time (devices/nic/host.py):
delivery into host memory at a host bandwidth, a hog's window, host buffer
drops the transport recovers from, and HOST records -- the receiving NIC's
own samples to its flows, the echoed delay to the sender -- for an algorithm
that binds HOST, native and in the agent."""
import numpy as np
import pytest

from taurus.datapath.ccevents import SAMPLER_IDS
from taurus.cc_algorithms.algorithm import Algorithm, kernel
from taurus.cc_algorithms.native import NativeTable
from taurus.datapath import ccevents as V
from taurus.datapath.ccshm import CcShm
from taurus.datapath.devices.nic.setup import (add_flow, add_nic, flow_done, nic_counters,
                                               nic_delivered, nic_hog, nic_host_model, nic_post,
                                               set_flow_mode)
from taurus.datapath.engine import Engine

MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"
IP1, IP2 = "10.0.0.1", "10.0.0.2"
MSS = 1024
LINK = 10_000_000_000
LOG = 4096
BUFFER, DELAY, PEER = (V.HOST_SRC_BUFFER, V.HOST_SRC_DELAY, V.HOST_SRC_PEER_DELAY)


@kernel
def seen_on_host(s, p, ev, d):
    j = int(ev.source) - 8
    if 0 <= j < 3:
        s.n[j] += 1
        if ev.value > s.vmax[j]:
            s.vmax[j] = ev.value
    i = int(s.k)
    if i < LOG:
        s.t[i] = ev.t_last
        s.src[i] = ev.source
        s.val[i] = ev.value
        s.aux[i] = ev.aux
    s.k += 1


class HostSeen(Algorithm):
    """Counts and logs every HOST record: (time, source, value, aux)."""
    name = "test-host-seen"
    state = (("n", 3), ("vmax", 3), "k", ("t", LOG), ("src", LOG), ("val", LOG), ("aux", LOG))
    binds = ("HOST",)
    on_host = staticmethod(seen_on_host)


def log_of(S, f, source):
    """(times, values, auxes) of flow f's records from `source`."""
    k = min(int(S["k"][f]), LOG)
    m = S["src"][f, :k] == source
    return S["t"][f, :k][m], S["val"][f, :k][m], S["aux"][f, :k][m]


def pair(tab, host_bw=0, **host):
    eng = Engine(clock="virtual", max_flows=16, n_frames=32768, native=tab.native)
    a, b = eng.add_mem_link("h1", "h2", delay_ns=2000, rate_bps=LINK)
    d1 = add_nic(eng, a, MAC1, IP1, line_rate_bps=LINK, mss=MSS)
    d2 = add_nic(eng, b, MAC2, IP2, line_rate_bps=LINK, mss=MSS, rx_buf_bytes=8 << 20,
                 host_bw=host_bw, **host)
    return eng, d1, d2


def test_sampler_ids_hold_the_nics_sources_once():
    for name, i in V.HOST_SOURCES.items():
        assert SAMPLER_IDS[name] == i
    assert len(set(SAMPLER_IDS.values())) == len(SAMPLER_IDS)


def test_host_bw_below_the_link_fills_the_buffer_drops_and_recovers():
    """4 Gbit/s into memory behind a 10 Gbit/s link, a 64 KB host buffer and
    an unpaced sender: the buffer overflows into counted host drops, the
    transport recovers every byte, no faster than the host takes it; the
    receiving NIC's flow sees its samples, the sender the echoed delay."""
    tab = NativeTable(16)
    seen = tab.add(HostSeen)
    eng, d1, d2 = pair(tab, host_bw=4_000_000_000, host_buffer=64 << 10, host_sample_ns=10_000)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=256 << 10, buf_bytes=4 << 20)
        back = add_flow(eng, d2, MAC1, IP1)            # the receiving host's own flow (idle)
        tab.start(eng, f, seen)
        tab.start(eng, back, seen)
        data = bytes(np.random.default_rng(1).integers(0, 256, 2 << 20, np.uint8))
        nic_post(eng, d1, f, data)
        t0 = eng.now()
        while not flow_done(eng, f) and eng.now() - t0 < 50_000_000:
            eng.run_for(50_000)
        took = eng.now() - t0
        assert flow_done(eng, f) and nic_delivered(eng, d2, IP1, f) == data
        rx = nic_counters(eng, d2)
        assert rx["drop_host_buf"] > 0                          # the host buffer overflowed
        assert took >= len(data) * 8 / 4e9 * 1e9                 # at most the host's rate
        S = tab.state(seen)
        # the receiving host's samples, to its own flow: occupancy within the buffer
        _, occ, drops = log_of(S, back, BUFFER)
        _, delay, left = log_of(S, back, DELAY)
        assert len(occ) > 50 and occ.max() <= 64 << 10 and occ.max() > 32 << 10
        assert 0 < drops.sum() <= rx["drop_host_buf"]          # drops after the last sample: not yet
        assert delay.max() > 64 * 1024 * 8 / 4e9 * 1e9 * 0.5 and (left == 4e9).all()
        # a full buffer's wait at 4 Gbit/s: 64 KB -> ~131 us
        assert delay.max() <= (64 << 10) * 8 / 4e9 * 1e9 + 1
        # the sender: the echoed delay (64 ns units), never a local sample
        _, peer, _ = log_of(S, f, PEER)
        assert S["n"][f][0] == 0 and S["n"][f][1] == 0 and len(peer) > 5
        assert (peer % 64 == 0).all() and 0.5 * delay.max() < peer.max() <= delay.max()
        assert S["n"][back][2] == 0                          # nothing echoed to the idle flow


def test_a_hog_raises_occupancy_and_delay_during_its_window_only():
    """A hog takes 60% of a 10 Gbit/s host from 1 ms to 2 ms; the sender is
    paced at 6 Gbit/s: the buffer grows only in the window and drains after."""
    tab = NativeTable(16)
    seen = tab.add(HostSeen)
    eng, d1, d2 = pair(tab, host_bw=LINK, host_buffer=1 << 20, host_sample_ns=20_000)
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, rate_bps=6_000_000_000, cwnd_bytes=1 << 20,
                     buf_bytes=8 << 20)
        back = add_flow(eng, d2, MAC1, IP1)
        tab.start(eng, f, seen)
        tab.start(eng, back, seen)
        t0 = eng.now()
        nic_hog(eng, d2, 0.6, t0 + 1_000_000, t0 + 2_000_000)
        nic_post(eng, d1, f, bytes(3 << 20))
        eng.run_for(3_500_000)
        assert nic_counters(eng, d2)["drop_host_buf"] == 0
        S = tab.state(seen)
        t, delay, left = log_of(S, back, DELAY)
        _, occ, _ = log_of(S, back, BUFFER)
        t = t - t0
        before, during, after = t < 1_000_000, (t >= 1_100_000) & (t < 2_000_000), t > 2_700_000
        assert before.sum() > 20 and during.sum() > 20 and after.sum() > 20
        # outside the window the host keeps up: at most a packet or two waits
        assert delay[before].max() < 3_000 and delay[after].max() < 3_000
        assert occ[before].max() < 3 * MSS and occ[after].max() < 3 * MSS
        # inside it the buffer grows at the payload's ~5.5 (6 on the wire) - 4
        # Gbit/s: ~180 KB by its end
        assert delay[during].min() > 20_000 and 150_000 < occ[during].max() < 250_000
        assert (np.diff(occ[during]) > 0).all()
        assert (left[during] == 4_000_000_000).all() and (left[before] == LINK).all()
        # a byte arriving just before the hog ends waits for the hog's end
        # then drains at the full rate: the delay counts the rate change
        last = np.flatnonzero(during)[-1]
        assert delay[last] < occ[last] * 8 / 4e9 * 1e9


def test_host_events_reach_an_agent_algorithm():
    """The same signals through the report ring to an in-process agent."""
    from taurus.agent.agent import Agent
    from taurus.agent.config import parse
    eng = Engine(clock="virtual", max_flows=16, n_frames=32768)
    a, b = eng.add_mem_link("h1", "h2", delay_ns=2000, rate_bps=LINK)
    d1 = add_nic(eng, a, MAC1, IP1, line_rate_bps=LINK, mss=MSS)
    d2 = add_nic(eng, b, MAC2, IP2, line_rate_bps=LINK, mss=MSS, rx_buf_bytes=8 << 20,
                 host_bw=4_000_000_000, host_buffer=64 << 10)
    agent = None
    with eng:
        slot = int(eng.E.devs.regs[d1, 0])
        cfg = parse({"agent": {"algorithm": "test_host_model:HostSeen", "mss": MSS,
                               "line_rate_bps": LINK}})
        agent = Agent(eng.name + "-cc", cfg, cc=CcShm.attach(eng.name + "-cc", nic=slot),
                      stats_dir=None, slot=slot)
        agent.start()
        try:
            f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=256 << 10, buf_bytes=2 << 20)
            set_flow_mode(eng, f, "agent")
            data = bytes(1 << 20)
            nic_post(eng, d1, f, data)
            t0 = eng.now()
            while not flow_done(eng, f) and eng.now() - t0 < 50_000_000:
                eng.run_until(eng.now() + 10_000, stop_idle=False)
                agent.step(eng.now())
            assert flow_done(eng, f) and nic_delivered(eng, d2, IP1, f) == data
            S = agent.handler.algs[0].S
            k = min(int(S.k[f]), LOG)
            src, val = S.src[f, :k], S.val[f, :k]
            assert k > 5 and (src == PEER).all() and val.max() > 30_000
        finally:
            agent.teardown()


def test_host_bw_0_changes_nothing():
    """No host model: no HOST record, no host drop, the same transfer."""
    def transfer(model):
        tab = NativeTable(16)
        seen = tab.add(HostSeen)
        eng, d1, d2 = pair(tab)
        with eng:
            if model:
                nic_host_model(eng, d2, 4_000_000_000)
                nic_host_model(eng, d2, 0)                   # and off again
            f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=64 << 10, buf_bytes=1 << 20)
            tab.start(eng, f, seen)
            nic_post(eng, d1, f, bytes(512 << 10))
            while not flow_done(eng, f):
                eng.run_for(20_000)
            return eng.now(), int(tab.state(seen)["k"][f]), nic_counters(eng, d2)
    t_a, k_a, c_a = transfer(False)
    t_b, k_b, c_b = transfer(True)
    assert k_a == k_b == 0 and c_a["drop_host_buf"] == 0
    assert t_a == t_b and c_a == c_b


def test_bad_host_settings_are_refused():
    tab = NativeTable(4)
    eng, d1, d2 = pair(tab)
    with eng:
        with pytest.raises(ValueError, match="host model"):
            nic_hog(eng, d2, 0.5, 0, 1000)
        nic_host_model(eng, d2, 1_000_000_000)
        for share, a, b in ((1.5, 0, 10), (-0.1, 0, 10), (0.5, 10, 5)):
            with pytest.raises(ValueError):
                nic_hog(eng, d2, share, a, b)
        with pytest.raises(ValueError, match="MSS"):
            nic_host_model(eng, d2, 1_000_000_000, buffer_bytes=100)
        with pytest.raises(ValueError):
            nic_host_model(eng, d2, -1)


def _experiment(extra):
    from taurus.experiment import schema
    d = {"experiment": {"name": "hm", "duration": "4ms"},
         "topology": {"name": "hm", "defaults": {"rate": "10Gbit", "delay": "1us"},
                      "hosts": [{"name": "h1"}, {"name": "h3"}], "switches": [{"name": "s1"}],
                      "links": [{"endpoints": ["h1", "s1"]}, {"endpoints": ["s1", "h3"]}]},
         "cc": {"mode": "native", "cwnd": "128KB"},
         "traffic": [{"kind": "bulk", "from": "h1", "to": "h3", "size": "1MB"}],
         "outputs": {"plots": False, "csv": False}}
    d.update(extra)
    return schema.from_dict(d, "x.toml")


def test_experiment_file_configures_the_host_model_and_its_hog(tmp_path):
    """[host_model] and a [[host_load]] share, in virtual time: the hog's
    window fills h3's host buffer (drops counted in the summary), the flow
    completes; the CPU/memory part of the load is noted as skipped."""
    from taurus.experiment.runner import run_experiment
    x = _experiment({"host_model": {"host_bw": "10Gbit", "buffer": "64KB", "sample": "10us",
                                    "hosts": ["h3"]},
                     "host_load": [{"host": "h3", "share": 0.7, "cpu": 1,
                                    "start": "0.1ms", "stop": "1.5ms"}]})
    assert x.host_model["h3"].host_bw == LINK and "h1" not in x.host_model
    s = run_experiment(x, str(tmp_path), "virtual")
    assert s["complete"] and not s["error"]
    assert s["nics"]["h3"]["drop_host_buf"] > 0 and s["nics"]["h1"]["drop_host_buf"] == 0
    assert [f["done"] for f in s["flows"]] == [True] and s["flows"][0]["bytes"] == 1_000_000
    assert any("skipped" in n for n in s["notes"])


@pytest.mark.parametrize("extra, key, words", [
    ({"host_load": [{"host": "h3", "share": 0.5}]}, "host_load[0].share", "[host_model]"),
    ({"host_model": {"host_bw": "1Gbit"},
      "host_load": [{"host": "h3", "share": 0.5}, {"host": "h3", "share": 0.2}]},
     "host_load[1].share", "one hog share"),
    ({"host_model": {"host_bw": "1Gbit"}, "host_load": [{"host": "h3", "share": 1.5}]},
     "host_load[0].share", "number"),
    ({"host_model": {"host_bw": "1Gbit", "hosts": ["h9"]}}, "host_model.hosts", "unknown host"),
    ({"host_model": {"host_bw": "fast"}}, "host_model.host_bw", "rate"),
])
def test_bad_host_model_keys_are_named(extra, key, words):
    from taurus.experiment import schema
    with pytest.raises(schema.ExperimentError) as e:
        _experiment(extra)
    assert e.value.key == key and words in e.value.message, str(e.value)
