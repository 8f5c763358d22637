"""Topology generators (taurus/tools/topogen.py): a fat-tree and a
leaf-spine from their parameters, in topology and experiment files and on
the command line; and a k = 4 fat-tree run whose ECMP spreads flows over
every core switch."""
import json

import pytest

from taurus.cli import main
from taurus.experiment import schema
from taurus.experiment.runner import run_experiment
from taurus.tools import topology as T


@pytest.mark.parametrize("k,o,hosts,switches,links", [
    (4, 1, 16, 20, 48), (4, 2, 32, 20, 64), (8, 1, 128, 80, 384)])
def test_fat_tree_shape(k, o, hosts, switches, links):
    t = T.from_spec(f"fat_tree:k={k},oversubscription={o}")
    assert (len(t.hosts), len(t.switches), len(t.links)) == (hosts, switches, links)
    assert len([s for s in t.switches if s.startswith("c")]) == (k // 2) ** 2
    # an edge switch reaches another pod over all k/2 of its uplinks (ECMP),
    # its own hosts over one port; an aggregation switch has k/2 core uplinks
    e = t.routes("e1_1")
    assert len(e[t.ip_of(t.hosts[-1])]) == k // 2 and len(e[t.ip_of("h1")]) == 1
    assert len(t.routes("a1_1")[t.ip_of(t.hosts[-1])]) == k // 2
    # a core switch has one port per pod
    assert len(t.node("c1").ifaces) == k


def test_leaf_spine_shape():
    t = T.from_spec("leaf_spine:leaves=4,spines=3,hosts_per_leaf=8")
    assert (len(t.hosts), len(t.switches), len(t.links)) == (32, 7, 32 + 12)
    assert len(t.routes("leaf1")[t.ip_of("h32")]) == 3
    assert t.name == "ls-l4-s3-h8"


def test_many_hosts_get_a_wide_subnet():
    t = T.from_spec("leaf_spine:leaves=2,spines=1,hosts_per_leaf=150")
    assert t.ip_of("h1") == "10.0.0.1" and t.ip_of("h300") == "10.0.1.44"
    assert len(set(t.ip_of(h) for h in t.hosts)) == 300


def test_topology_file_with_overrides(tmp_path):
    p = tmp_path / "ft.toml"
    p.write_text('[topology]\nname = "ft"\n'
                 'fat_tree = { k = 4, switch = { ecn = { k = "30KB" } }, '
                 'host_link = { rate = "1Gbit" }, fabric_link = { rate = "4Gbit" } }\n'
                 '[defaults]\ndelay = "3us"\n'
                 '[[switches]]\nname = "c1"\nint = true\n'
                 '[[links]]\nendpoints = ["h1", "e1_1"]\nrate = "2Gbit"\n')
    t = T.load(str(p))
    rates = {(lk.a, lk.b): lk.rate for lk in t.links}
    assert rates[("h1", "e1_1")] == 2e9 and rates[("h2", "e1_1")] == 1e9
    assert rates[("e1_1", "a1_1")] == 4e9
    assert all(lk.delay == 3000 for lk in t.links)
    assert t.node("c1").features == {"ecn": {"k": "30KB"}, "int": True}
    assert t.node("c2").features == {"ecn": {"k": "30KB"}}


@pytest.mark.parametrize("spec,field,words", [
    ({"fat_tree": {"k": 3}}, "topology.fat_tree.k", "even"),
    ({"fat_tree": {"k": 4, "pods": 2}}, "topology.fat_tree.pods", "unknown key"),
    ({"leaf_spine": {"leaves": 0}}, "topology.leaf_spine.leaves", "from 1 to"),
    ({"fat_tree": {"k": 2 ** 62}}, "topology.fat_tree.k", "from 2 to 64"),
    ({"leaf_spine": {"leaves": 1000, "hosts_per_leaf": 1000}}, "topology.leaf_spine.leaves",
     "more than the 65536"),
    ({"fat_tree": {}, "leaf_spine": {}}, "topology.leaf_spine", "one generator"),
    ({"fat_tree": {"host_link": {"speed": 1}}}, "topology.fat_tree.host_link.speed", "unknown"),
])
def test_bad_generator_names_the_field(spec, field, words):
    with pytest.raises(T.TopologyError) as e:
        T.from_dict({"topology": {"name": "x", **spec}}, source="f.toml")
    assert e.value.field == field and words in e.value.message and "f.toml" in str(e.value)


def test_generator_and_hosts_or_unknown_override_refused():
    with pytest.raises(T.TopologyError, match="hosts come from topology.fat_tree"):
        T.from_dict({"topology": {"name": "x", "fat_tree": {}}, "hosts": [{"name": "h1"}]})
    with pytest.raises(T.TopologyError, match="expected a switch of the topology") as e:
        T.from_dict({"topology": {"name": "x", "fat_tree": {}}, "switches": [{"name": "zz"}]})
    assert e.value.field == "switches[0].name"


def test_cli_show_spec(capsys):
    assert main(["topo", "show", "fat_tree:k=4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["name"] == "ft-k4" and len(d["links"]) == 48
    assert main(["topo", "show", "fat_tree:k=x"]) == 2
    assert "expected an integer" in capsys.readouterr().err


def _fat_tree_experiment():
    return {"experiment": {"name": "ft4", "duration": "1ms", "seed": 1},
            "topology": {"name": "ft4", "fat_tree": {"k": 4, "switch": {"ecn": {"k": "30KB"}}},
                         "defaults": {"rate": "1Gbit", "delay": "1us"}},
            "cc": {"algorithm": "dctcp"},
            # every host to one in another pod: 16 flows over 4 cores
            "traffic": [{"kind": "bulk", "from": f"h{i}", "to": f"h{(i + 3) % 16 + 1}"}
                        for i in range(1, 17)],
            "outputs": {"plots": False, "csv": False}}


def test_experiment_file_generator_is_refused_with_builtin():
    d = _fat_tree_experiment()
    d["topology"]["builtin"] = "dumbbell"
    with pytest.raises(schema.ExperimentError, match="not several"):
        schema.from_dict(d)


def test_fat_tree_run_spreads_flows_over_every_core(tmp_path):
    x = schema.from_dict(_fat_tree_experiment())
    s = run_experiment(x, str(tmp_path), "virtual")
    assert s["complete"] and not s["error"]
    core = {c: sum(p["tx_bytes"] for port, p in s["ports"].items() if port.startswith(c + "-"))
            for c in ("c1", "c2", "c3", "c4")}
    assert all(b > 0 for b in core.values()), core
    assert all(f["goodput_bps"] > 0 for f in s["flows"])
