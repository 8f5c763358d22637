"""Switch features in topology files and the Python API: shipped topologies
load, and bad values are errors naming the file and the field."""
import pytest

from taurus.datapath.engine import Engine
from taurus.datapath.devices.switch.setup import add_switch
from taurus.tools import topology as topo

BASE = """
[topology]
name = "x"
[[hosts]]
name = "h1"
[[hosts]]
name = "h2"
[[switches]]
name = "s1"
{sw}
[[links]]
endpoints = ["h1", "s1"]
{lk}
[[links]]
endpoints = ["h2", "s1"]
"""


def _load(tmp_path, sw="", lk=""):
    p = tmp_path / "x.toml"
    p.write_text(BASE.format(sw=sw, lk=lk))
    return topo.load(str(p)), str(p)


def test_shipped_fabric_topologies_load():
    for name in ("incast", "parking_lot", "leaf_spine", "pfc_victim", "dumbbell"):
        t = topo.load(topo.builtin(name))
        assert t.switches
    t = topo.load(topo.builtin("pfc_victim"))
    assert t.port_features("T0", "T0-eth2")["pfc"]["tcd"] is True
    ls = topo.load(topo.builtin("leaf_spine"))
    assert len(ls.routes("leaf1")[ls.ip_of("h3")]) == 3


def test_features_merge_switch_then_link(tmp_path):
    t, _ = _load(tmp_path, sw='ecn = { k = "30KB" }\nint = true',
                 lk='ecn = { kmin = "10KB", kmax = "40KB", pmax = 0.1 }\nint = false')
    assert t.port_features("s1", "s1-eth0")["ecn"]["kmin"] == "10KB"
    assert t.port_features("s1", "s1-eth0")["int"] is False
    assert t.port_features("s1", "s1-eth1") == {"ecn": {"k": "30KB"}, "int": True}


@pytest.mark.parametrize("sw,lk,field,msg", [
    ('ecn = { kmin = "10KB", kmax = "5KB", pmax = 0.1 }', "", "switches[0].ecn.kmax", "above kmin"),
    ('ecn = { k = "fast" }', "", "switches[0].ecn.k", "size"),
    ('ecn = { kmin = "1KB", kmax = "5KB" }', "", "switches[0].ecn.pmax", "missing"),
    ('ecn = { kmin = "1KB", kmax = "5KB", pmax = 2 }', "", "switches[0].ecn.pmax", "probability"),
    ('pfc = { xoff = "10KB", xon = "20KB" }', "", "switches[0].pfc.xon", "below xoff"),
    ('pfc = { xoff = "10KB", xon = "5KB", epsilon = 0 }', "", "switches[0].pfc.epsilon", "(0, 1)"),
    ('csig = { type = "speed" }', "", "switches[0].csig.type", "abw"),
    ('telemetry = "-1us"', "", "switches[0].telemetry", "delay"),
    ('colour = "red"', "", "switches[0]", "unknown key"),
    ("", 'trim = { dscp = 3 }', "links[0].trim.threshold", "missing"),
    ("", 'trim = { threshold = "1KB", last_hop_dscp = 64 }', "links[0].trim.last_hop_dscp",
     "DSCP 0..63"),
    ("", 'buffer = "x"', "links[0].buffer", "size"),
])
def test_bad_features_name_file_and_field(tmp_path, sw, lk, field, msg):
    with pytest.raises(topo.TopologyError) as e:
        _load(tmp_path, sw, lk)
    assert str(e.value).startswith(str(tmp_path / "x.toml") + ": " + field), str(e.value)
    assert msg in str(e.value)


def test_python_api_errors():
    eng = Engine(clock="virtual")
    a, b = eng.add_mem_link("a", "b")
    with pytest.raises(ValueError, match="unknown key 'colour'"):
        add_switch(eng, [b], {"colour": 1})
    with pytest.raises(ValueError, match=r"ports\[0\].pfc.tcd: TCD needs ecn"):
        add_switch(eng, [b], {"ports": {"pfc": {"xoff": 2000, "xon": 1000, "tcd": True}}})
    with pytest.raises(ValueError, match=r"ports\[0\].rate"):
        add_switch(eng, [b], {"ports": {"rate": "fast"}})
    with pytest.raises(ValueError, match=r"ports\[0\].host_facing"):
        add_switch(eng, [b], {"ports": {"host_facing": "yes"}})
    assert int(eng.ctl[2]) == 0          # nothing was registered
    eng.close()
