"""The fat-tree by tiers (topogen.fat_tree with core / agg / tor / hosts):
the HPCC and TAURUS papers' 320-host fat-tree of 16 core, 20 aggregation
and 20 ToR switches, its wiring, ECMP widths and oversubscription."""
import pytest

from taurus.tools import topogen
from taurus.tools import topology as T

SEED = {"core": 16, "agg": 20, "tor": 20, "hosts": 320}


def _spec(p):
    return "fat_tree:" + ",".join(f"{k}={v}" for k, v in p.items())


def test_seed_fat_tree_counts_and_wiring():
    t = T.from_spec(_spec(SEED))
    assert (len(t.hosts), len(t.switches)) == (320, 56)
    # 320 host links, 20 ToRs x 4 aggregation switches, 20 x 4 core uplinks
    assert len(t.links) == 320 + 80 + 80
    tiers = {c: [s for s in t.switches if s[0] == c] for c in "cae"}
    assert [len(tiers[c]) for c in "cae"] == [16, 20, 20]
    assert topogen.tree_shape(SEED) == topogen.TreeShape(pods=5, tors=4, aggs=4, hosts=16,
                                                         cores=16)
    peers = {s: sorted(i.peer_node for i in t.node(s).ifaces) for s in t.switches}
    # a ToR: its 16 hosts (h1..h16 under e1_1) and the 4 aggregation switches of its pod
    assert peers["e1_1"] == sorted([f"h{i}" for i in range(1, 17)]
                                   + [f"a1_{j}" for j in range(1, 5)])
    # aggregation j of a pod: the pod's 4 ToRs and the 4 cores of group j
    assert peers["a3_2"] == sorted([f"e3_{i}" for i in range(1, 5)]
                                   + [f"c{c}" for c in range(5, 9)])
    # a core: aggregation switch of its group in each of the 5 pods
    assert peers["c6"] == [f"a{p}_2" for p in range(1, 6)]


def test_seed_fat_tree_ecmp_widths_per_tier():
    t = T.from_spec(_spec(SEED))
    far, pod, rack = t.ip_of("h320"), t.ip_of("h17"), t.ip_of("h2")
    e, a, c = t.routes("e1_1"), t.routes("a1_1"), t.routes("c1")
    assert (len(e[far]), len(e[pod]), len(e[rack])) == (4, 4, 1)   # up to any agg of the pod
    assert (len(a[far]), len(a[pod])) == (4, 1)                    # up to any core of its group
    assert len(c[far]) == 1                                        # down: one port per pod


def test_seed_fat_tree_has_no_oversubscription_at_the_papers_rates():
    """16 hosts x 100 Gbit/s under a ToR, 4 x 400 Gbit/s up; an aggregation
    switch 4 ToRs below, 4 cores above; from the generated links too."""
    s = topogen.tree_shape(SEED)
    assert s.oversubscription(100e9, 400e9) == (1.0, 1.0)
    assert s.oversubscription(400e9, 400e9) == (4.0, 1.0)     # all links 400 G: 4:1 at the ToR
    t = T.from_dict({"topology": {"name": "ft", "fat_tree": {
        **SEED, "host_link": {"rate": "100Gbit"}, "fabric_link": {"rate": "400Gbit"}}}})
    for sw in t.switches:
        down = up = 0
        for i in t.node(sw).ifaces:
            lk = next(lk for lk in t.links if {lk.a, lk.b} == {sw, i.peer_node})
            peer = i.peer_node
            lower = t.node(peer).is_host or (sw[0], peer[0]) in (("a", "e"), ("c", "a"))
            if lower:
                down += lk.rate
            else:
                up += lk.rate
        assert sw[0] == "c" or down == up, (sw, down, up)


def test_k_ary_fat_tree_by_tiers_is_the_same_tree():
    k4 = topogen.fat_tree({"k": 4})
    tiers = topogen.fat_tree({"core": 4, "agg": 8, "tor": 8, "hosts": 16})
    assert tiers == k4


@pytest.mark.parametrize("params,field,words", [
    ({"core": 16, "agg": 20, "tor": 20}, "hosts", "missing"),
    ({**SEED, "k": 4}, "k", "not both"),
    ({"core": 16, "agg": 20, "tor": 21, "hosts": 320}, "core", "no pod count"),
    ({"core": 16, "agg": 20, "tor": 20, "hosts": 330}, "hosts", "evenly"),
])
def test_bad_tiers_name_the_field(params, field, words):
    with pytest.raises(T.TopologyError) as e:
        T.from_dict({"topology": {"name": "x", "fat_tree": params}}, source="f.toml")
    assert e.value.field == f"topology.fat_tree.{field}" and words in e.value.message


@pytest.mark.parametrize("mode", ["native", "agent"])
def test_seed_fat_tree_run_reaches_every_host(tmp_path, mode):
    """320 hosts: NICs past the 256th receive too (the runner gives the
    datapath a receiver-algorithm row per NIC), h1 to a host of each pod."""
    from taurus.experiment import schema
    from taurus.experiment.runner import run_experiment
    d = {"experiment": {"name": "ft320", "duration": "300us", "seed": 1, "step": "10us"},
         "topology": {"name": "ft", "fat_tree": SEED,
                      "defaults": {"rate": "10Gbit", "delay": "1us"}},
         "cc": {"algorithm": "dctcp", "mode": mode, "cwnd": "20KB"},
         "traffic": [{"kind": "bulk", "from": "h1", "to": f"h{h}", "size": "20KB"}
                     for h in (2, 70, 140, 258, 320)],
         "outputs": {"plots": False, "csv": False}}
    s = run_experiment(schema.from_dict(d), str(tmp_path), "virtual")
    assert s["complete"] and not s["error"]
    assert [f["done"] for f in s["flows"]] == [True] * 5
