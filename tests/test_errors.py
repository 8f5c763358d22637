"""Every config validator raises a taurus.errors.ConfigError naming the file,
the key and what is wrong."""
import pickle

import pytest

from taurus import errors
from taurus.agent import config as agent_config
from taurus.cc_algorithms import params
from taurus.datapath.devices.switch import config as features
from taurus.experiment import schema
from taurus.tools import topology


def _raised(fn, *args, **kw) -> errors.ConfigError:
    with pytest.raises(errors.ConfigError) as e:
        fn(*args, **kw)
    return e.value


def test_str_leaves_out_what_is_missing():
    assert str(errors.ConfigError("m", file="f", key="k")) == "f: k: m"
    assert str(errors.ConfigError("m", file="f")) == "f: m"
    assert str(errors.ConfigError("m", key="k")) == "k: m"
    assert str(errors.ConfigError("m")) == "m"
    assert isinstance(errors.ConfigError("m"), ValueError)


def test_bad_topology(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text('[topology]\nname = "t"\n[[hosts]]\nname = "h1"\nip = "10.0.0.0/24"\n')
    e = _raised(topology.load, str(path))
    assert isinstance(e, topology.TopologyError)
    assert (e.file, e.key) == (str(path), "hosts[0].ip") and "broadcast" in e.message
    assert (e.source, e.field) == (e.file, e.key)
    assert str(e) == f"{path}: hosts[0].ip: {e.message}"


def test_bad_experiment():
    d = {"experiment": {"name": "t", "duration": "soon"},
         "topology": {"name": "t", "hosts": [{"name": "h1"}, {"name": "h2"}],
                      "links": [{"endpoints": ["h1", "h2"]}]}}
    e = _raised(schema.from_dict, d, "x.toml")
    assert isinstance(e, schema.ExperimentError)
    assert (e.file, e.key) == ("x.toml", "experiment.duration") and e.message
    assert e.source == "x.toml"
    assert str(e) == f"x.toml: experiment.duration: {e.message}"


def test_bad_topology_inside_an_experiment():
    d = {"experiment": {"name": "t", "duration": "1ms"},
         "topology": {"name": "t", "hosts": [{"name": "h1"}, {"name": "h2"}],
                      "links": [{"endpoints": ["h1", "h2"], "rate": "fast"}]}}
    e = _raised(schema.from_dict, d, "x.toml")
    assert (e.file, e.key) == ("x.toml", "topology.links[0].rate") and "rate" in e.message


def test_bad_algorithm_param(tmp_path):
    path = tmp_path / "agent.toml"
    path.write_text("[agent.params]\ng = 5.0\n")
    e = _raised(agent_config.load, str(path))
    assert isinstance(e, params.ConfigError)
    assert (e.file, e.key) == (str(path), "[agent.params].g")
    assert e.message.startswith("must be in")
    assert str(e) == f"{path}: [agent.params].g: {e.message}"


def test_bad_param_type_without_a_file():
    e = _raised(agent_config.parse, {"agent": {"mss": "big"}})
    assert isinstance(e, params.ConfigError)
    assert (e.file, e.key) == (None, "config.agent.mss") and "integer" in e.message


def test_bad_switch_feature():
    e = _raised(features.validate, {"ecn": {"kmin": "20KB"}}, "switches[0]", True)
    assert isinstance(e, features.FeatureError)
    assert e.file is None and e.key.startswith("switches[0].ecn") and e.message
    assert (e.field, e.msg) == (e.key, e.message)
    assert str(e) == f"{e.key}: {e.message}"


def test_the_kinds_stay_apart():
    # Each layer's handlers catch their own kind only.
    for kind in (params.ConfigError, schema.ExperimentError, topology.TopologyError,
                 features.FeatureError):
        assert issubclass(kind, errors.ConfigError) and issubclass(kind, ValueError)
    assert not issubclass(topology.TopologyError, params.ConfigError)
    assert not issubclass(features.FeatureError, params.ConfigError)


@pytest.mark.parametrize("e", [
    errors.ConfigError("m", file="f", key="k"),
    params.ConfigError("m", key="k"),
    schema.ExperimentError("x.toml", "a.b", "m"),
    topology.TopologyError("t.toml", None, "m"),
    features.FeatureError("ecn.k", "m"),
])
def test_errors_cross_processes(e):
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is type(e) and str(back) == str(e)
    assert (back.file, back.key, back.message) == (e.file, e.key, e.message)
