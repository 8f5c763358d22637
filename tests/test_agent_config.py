"""The agent's TOML config: defaults, overrides, errors that name the key."""
import pytest

from taurus.agent.config import load, parse
from taurus.cc_algorithms.dctcp import Dctcp
from taurus.cc_algorithms.params import ConfigError


def test_defaults_and_overrides(tmp_path):
    p = tmp_path / "a.toml"
    p.write_text('''
[agent]
algorithm = "dctcp"
params = { g = 0.125 }
mss = 1500
line_rate_bps = 25e9
[bounds]
rate_min_bps = 1_000_000
[backpressure]
high = 0.4
[[override]]
flows = [3, 4]
algorithm = "taurus.cc_algorithms.dctcp:Dctcp"
params = { alpha_init = 0.0 }
''')
    cfg = load(str(p))
    (cls, params), per_flow = cfg.resolve()
    assert cls is Dctcp and params.g == 0.125
    assert per_flow[3][1].alpha_init == 0.0 and per_flow[4][0] is Dctcp
    assert cfg.rate_max() == 25_000_000_000 and cfg.cwnd_min() == 1500
    assert cfg.backpressure.high == 0.4
    assert cfg.agent.jit is True and cfg.resolve_receiver() is None
    assert load(None).agent.algorithm == "dctcp"


def test_jit_and_a_receiver_algorithm():
    from agent_algs import Grant
    cfg = parse({"agent": {"jit": False, "receiver": "agent_algs:Grant"}})
    assert cfg.agent.jit is False and cfg.resolve_receiver()[0] is Grant


@pytest.mark.parametrize("data, msg", [
    ({"agnt": {}}, "unknown key 'agnt'"),
    ({"agent": {"sleep": 1}}, "unknown key 'sleep'"),
    ({"agent": {"mss": "big"}}, r"config.agent.mss: expected an integer"),
    ({"agent": {"params": {"gee": 1}}}, r"\[agent.params\]: unknown key 'gee'"),
    ({"agent": {"params": {"g": 5.0}}}, r"\[agent.params\].g: must be in"),
    ({"agent": {"algorithm": "cubic"}}, "unknown algorithm 'cubic'"),
    ({"agent": {"jit": 1}}, r"config.agent.jit: expected true/false"),
    ({"agent": {"receiver": "dctcp"}},
     r"config.agent.receiver: algorithm 'dctcp' is a sender algorithm, not a receiver one"),
    ({"agent": {"algorithm": "agent_algs:Grant"}},
     r"config.agent.algorithm: algorithm 'agent_algs:Grant' is a receiver algorithm"),
    ({"override": [{"flows": [1], "algorithm": "agent_algs:Grant"}]},
     r"\[\[override\]\] #1 algorithm: .* is a receiver algorithm"),
    ({"agent": {"receiver": "nosuch"}}, "config.agent.receiver: unknown algorithm 'nosuch'"),
    ({"agent": {"receiver": "agent_algs:Grant", "receiver_params": {"x": 1}}},
     r"\[agent.receiver_params\]: unknown key 'x'"),
    ({"agent": {"receiver_params": {"x": 1}}}, "config.agent.receiver_params: set without"),
    ({"agent": {"custom_segments": {"csig": 1}}}, "unknown key 'custom_segments'"),
    ({"backpressure": {"low": 0.9}}, "backpressure.high: need 0 <= low < high"),
    ({"agent": {"nap_rtt": -0.5}}, r"agent.nap_rtt: must be in \[0, 4\]"),
    ({"bounds": {"rate_min_bps": 0}}, "bounds.rate_min_bps"),
    ({"host": {"cgroup": "mine", "create_cgroup": True}}, "taurus-"),
    ({"override": [{"flows": [1], "algorithm": "dctcp", "params": {"x": 1}}]},
     r"\[\[override\]\] #1 params: unknown key 'x'"),
    ({"override": [{"flows": [1], "algorithm": "dctcp"}, {"flows": [1], "algorithm": "dctcp"}]},
     "flow 1 already overridden"),
])
def test_errors_name_the_key(data, msg):
    with pytest.raises(ConfigError, match=msg):
        parse(data)


def test_bad_file(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[agent\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(str(p))
    with pytest.raises(ConfigError, match="No such file"):
        load(str(tmp_path / "missing.toml"))


def test_probe_and_segment_config_reach_the_control_block():
    from taurus.agent.agent import Agent
    from taurus.testing.fake_datapath import FakeDatapath
    from taurus.datapath import ccshm as C
    from taurus.datapath.wire import spec as S
    cfg = parse({"probe": {"every_pkts": 8, "every_us": 50},
                 "segment": [{"id": 3, "types": ["ACK_CC"], "offset": 24, "length": 4,
                              "match_offset": 12, "match_mask": 0xF0, "match_value": 0x10}]})
    with FakeDatapath(max_flows=8, ring_capacity=64) as dp:
        a = Agent(dp.name, cfg, cc=dp.cc, stats_dir=None)
        a.start()
        assert dp.cc.ctl[C.CTL_PROBE_PKTS] == 8 and dp.cc.ctl[C.CTL_PROBE_NS] == 50_000
        assert list(dp.cc.segs[0, :7]) == [3, 1 << S.T_ACK_CC, 12, 0xF0, 0x10, 24, 4]
        assert not dp.cc.segs[1:].any()
        a.teardown()
    for bad, key in (({"id": 0, "length": 4}, "id"), ({"id": 1, "length": 100}, "length"),
                     ({"id": 1, "length": 4, "types": ["RUD_REQ"]}, "types")):
        with pytest.raises(ConfigError, match=key):
            parse({"segment": [bad]})
    with pytest.raises(ConfigError, match="at most 4"):
        parse({"segment": [{"id": i + 1, "length": 1} for i in range(5)]})
