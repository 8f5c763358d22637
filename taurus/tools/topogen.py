"""Topology generators: a 3-tier fat-tree and a 2-tier leaf-spine from a
few parameters, as the topology tables they stand for.

In a topology or experiment file:

    [topology]
    name = "ft4"
    fat_tree = { k = 4, oversubscription = 2, switch = { ecn = { k = "30KB" } } }
    # leaf_spine = { leaves = 4, spines = 2, hosts_per_leaf = 8 }

and on the command line `taurus topo show fat_tree:k=4,oversubscription=2` or
`fat_tree:core=16,agg=20,tor=20,hosts=320`.

fat_tree (Al-Fares et al., SIGCOMM'08): k pods of k/2 edge and k/2
aggregation switches, (k/2)^2 core switches; each edge switch has k/2
uplinks and oversubscription x k/2 hosts (2 gives the 2:1 fat-tree of the
CSIG and TCD seeds); k = 8 is 128 hosts, 80 switches.  Or by tiers, as
the HPCC and TAURUS papers give theirs: `fat_tree = { core = 16, agg = 20,
tor = 20, hosts = 320 }` is 5 pods of 4 ToRs and 4 aggregation switches,
16 hosts per ToR, every ToR linked to the 4 aggregation switches of its
pod, aggregation switch j of every pod to the 4 cores of group j (the
pods are the count that gives each aggregation switch as many core
uplinks as ToRs: pods^2 = tor x agg / core).  ToR oversubscription is
hosts per ToR x host rate : ToR uplinks x fabric rate (16 x 100 : 4 x 400
Gbit/s in those papers' ns-3 setup, 1:1; TreeShape.oversubscription).
Names: hosts h1..hN in pod order, edge (ToR) e<pod>_<i>, aggregation
a<pod>_<i>, core c<i>.
leaf_spine: every leaf linked to every spine; leaf<i>, spine<j>, hosts
h1..hN in leaf order.  ECMP comes from the routes (Topology.routes: every
equal-cost next hop), so a flow's path follows its entropy value.

Optional in both: `switch`, features for every switch; `host_link` and
`fabric_link`, link values (rate, delay, buffer, mtu, port features) for
host links and for switch-to-switch links, over [defaults].  Hosts get
10.0.0.N/24 up to 254 hosts and 10.A.B.C/8 beyond.  A file's [[switches]]
and [[links]] then override single switches (by name) and links (by
endpoints) of the generated topology.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from taurus.units import quote as _q

_LINK_KEYS = ("rate", "delay", "buffer", "mtu", "ecn", "csig", "int", "pfc", "trim", "classes",
              "src")


class GenError(ValueError):
    """A bad generator parameter: ``field`` below the generator's table."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


MAX_HOSTS = 65_536     # a topology's hosts (and its /8 of addresses) stay well inside memory


def _int(params, key, default, lo, hi):
    v = params.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise GenError(key, f"expected an integer from {lo} to {hi}, got {_q(v)}")
    return v


def _hosts_at_most(n, key):
    if n > MAX_HOSTS:
        raise GenError(key, f"{n} hosts: more than the {MAX_HOSTS} a topology may have")


def _table(params, key, allowed=None):
    v = params.get(key, {})
    if not isinstance(v, dict):
        raise GenError(key, f"expected a table, got {_q(v)}")
    for k in v:
        if allowed is not None and k not in allowed:
            raise GenError(f"{key}.{k}", f"unknown key (expected one of: {', '.join(allowed)})")
    return dict(v)


def _check(params, allowed):
    if not isinstance(params, dict):
        raise GenError("", f"expected a table like {{ k = 4 }}, got {_q(params)}")
    for k in params:
        if k not in allowed:
            raise GenError(k, f"unknown key (expected one of: {', '.join(allowed)})")


def _hosts(n: int) -> list[dict]:
    if n <= 254:
        return [{"name": f"h{i}"} for i in range(1, n + 1)]
    return [{"name": f"h{i}", "ip": f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}/8"}
            for i in range(1, n + 1)]


class _Builder:
    def __init__(self, params):
        self.switch = _table(params, "switch")
        self.host_link = _table(params, "host_link", _LINK_KEYS)
        self.fabric_link = _table(params, "fabric_link", _LINK_KEYS)
        self.switches, self.links = [], []

    def add_switch(self, name):
        self.switches.append({"name": name, **self.switch})

    def link(self, a, b, host):
        self.links.append({"endpoints": [a, b], **(self.host_link if host else self.fabric_link)})


FAT_TREE_KEYS = ("k", "oversubscription", "core", "agg", "tor", "hosts", "switch", "host_link",
                 "fabric_link")
TIER_KEYS = ("core", "agg", "tor", "hosts")


@dataclass(frozen=True)
class TreeShape:
    """A 3-tier fat-tree: ``pods`` pods of ``tors`` ToR (edge) and ``aggs``
    aggregation switches, every ToR of a pod linked to every aggregation
    switch of its pod, ``hosts`` hosts per ToR, ``cores`` core switches in
    ``aggs`` groups: aggregation switch j of every pod linked to each core
    of group j."""
    pods: int
    tors: int               # per pod
    aggs: int               # per pod
    hosts: int              # per ToR
    cores: int              # in all

    @property
    def group(self) -> int:
        """Cores per group: an aggregation switch's uplinks (its ECMP width up)."""
        return self.cores // self.aggs

    @property
    def n_hosts(self) -> int:
        return self.pods * self.tors * self.hosts

    def oversubscription(self, host_rate: float, fabric_rate: float) -> tuple[float, float]:
        """(ToR, aggregation) ratios of what comes in from below to what
        can go up: 1 is none."""
        return (self.hosts * host_rate / (self.aggs * fabric_rate), self.tors / self.group)


def tree_shape(params: dict) -> TreeShape:
    """The shape ``fat_tree`` builds from its parameters (checked)."""
    _check(params, FAT_TREE_KEYS)
    if any(k in params for k in TIER_KEYS):
        return _tiered_shape(params)
    k = _int(params, "k", 4, 2, 64)
    if k % 2:
        raise GenError("k", f"expected an even number of switch ports, got {k}")
    o = _int(params, "oversubscription", 1, 1, 64)
    half = k // 2
    shape = TreeShape(pods=k, tors=half, aggs=half, hosts=o * half, cores=half * half)
    _hosts_at_most(shape.n_hosts, "k")
    return shape


def _tiered_shape(params: dict) -> TreeShape:
    """core / agg / tor / hosts in all (the HPCC and TAURUS papers' form):
    the pod count is the one that balances the aggregation layer (each
    aggregation switch has as many core uplinks as ToRs below it), so
    pods^2 = tor x agg / core."""
    for k in ("k", "oversubscription"):
        if k in params:
            raise GenError(k, "give k (a k-ary fat-tree) or core, agg, tor and hosts, not both")
    for k in TIER_KEYS:
        if k not in params:
            raise GenError(k, f"missing: a fat-tree by tiers needs all of {', '.join(TIER_KEYS)}")
    c, a, t = (_int(params, k, 0, 1, 4096) for k in ("core", "agg", "tor"))
    h = _int(params, "hosts", 0, 1, MAX_HOSTS)
    p = math.isqrt(t * a // c) if t * a % c == 0 else 0
    if p == 0 or p * p * c != t * a or t % p or a % p or c % (a // p):
        raise GenError("core", f"core = {c}, agg = {a}, tor = {t}: no pod count balances the "
                               f"aggregation layer (pods^2 = tor x agg / core, dividing tor and "
                               f"agg, with agg / pods dividing core)")
    if h % t:
        raise GenError("hosts", f"{h} hosts do not spread evenly over {t} ToRs")
    return TreeShape(pods=p, tors=t // p, aggs=a // p, hosts=h // t, cores=c)


def fat_tree(params: dict) -> dict:
    s = tree_shape(params)
    b = _Builder(params)
    hosts = _hosts(s.n_hosts)
    for c in range(1, s.cores + 1):
        b.add_switch(f"c{c}")
    h = 0
    for p in range(1, s.pods + 1):
        for i in range(1, s.aggs + 1):
            b.add_switch(f"a{p}_{i}")
        for i in range(1, s.tors + 1):
            e = f"e{p}_{i}"
            b.add_switch(e)
            for _ in range(s.hosts):
                b.link(hosts[h]["name"], e, True)
                h += 1
            for j in range(1, s.aggs + 1):
                b.link(e, f"a{p}_{j}", False)
        for j in range(1, s.aggs + 1):          # aggregation j of each pod: cores of group j
            for c in range(1, s.group + 1):
                b.link(f"a{p}_{j}", f"c{(j - 1) * s.group + c}", False)
    return {"hosts": hosts, "switches": b.switches, "links": b.links}


LEAF_SPINE_KEYS = ("leaves", "spines", "hosts_per_leaf", "switch", "host_link", "fabric_link")


def leaf_spine(params: dict) -> dict:
    _check(params, LEAF_SPINE_KEYS)
    leaves = _int(params, "leaves", 2, 1, MAX_HOSTS)
    spines = _int(params, "spines", 2, 1, 1024)
    per_leaf = _int(params, "hosts_per_leaf", 2, 1, MAX_HOSTS)
    _hosts_at_most(leaves * per_leaf, "leaves")
    b = _Builder(params)
    hosts = _hosts(leaves * per_leaf)
    for s in range(1, spines + 1):
        b.add_switch(f"spine{s}")
    for lf in range(1, leaves + 1):
        b.add_switch(f"leaf{lf}")
        for j in range(per_leaf):
            b.link(hosts[(lf - 1) * per_leaf + j]["name"], f"leaf{lf}", True)
        for s in range(1, spines + 1):
            b.link(f"leaf{lf}", f"spine{s}", False)
    return {"hosts": hosts, "switches": b.switches, "links": b.links}


GENERATORS = {"fat_tree": fat_tree, "leaf_spine": leaf_spine}


def parse_spec(spec: str) -> tuple[str, dict] | None:
    """``fat_tree:k=4,oversubscription=2`` -> ("fat_tree", {...}); None if
    ``spec`` does not name a generator.  Values are integers."""
    kind, _, rest = spec.partition(":")
    if kind not in GENERATORS:
        return None
    params = {}
    for item in filter(None, rest.split(",")):
        key, eq, val = item.partition("=")
        if not eq:
            raise GenError(key, f"expected KEY=VALUE, got {item!r}")
        try:
            params[key.strip()] = int(val)
        except ValueError:
            raise GenError(key.strip(), f"expected an integer, got {val!r}") from None
    return kind, params


def _array(data: dict, key: str) -> list:
    v = data.get(key, [])
    if not isinstance(v, list):
        raise GenError(key, f"expected an array of tables ([[{key}]]), got {_q(v)}")
    return v


def overlay(base: dict, data: dict) -> None:
    """Apply ``data``'s [[switches]] (by name) and [[links]] (by endpoints)
    to the topology tables ``base`` in place: single switches' features and
    single links' values over a generated or shipped topology."""
    switches = {s.get("name"): s for s in base.get("switches", [])}
    for i, s in enumerate(_array(data, "switches")):
        if not isinstance(s, dict) or not isinstance(s.get("name"), str) \
                or s["name"] not in switches:
            raise GenError(f"switches[{i}].name",
                           f"expected a switch of the topology ({', '.join(filter(None, switches))})")
        switches[s["name"]].update(s)
    links = {frozenset(lk.get("endpoints", ())): lk for lk in base.get("links", [])}
    for i, lk in enumerate(_array(data, "links")):
        ep = lk.get("endpoints") if isinstance(lk, dict) else None
        if not isinstance(ep, list) or not all(isinstance(e, str) for e in ep) \
                or frozenset(ep) not in links:
            raise GenError(f"links[{i}].endpoints",
                           f"expected the two ends of a link of the topology, got {_q(ep)}")
        links[frozenset(ep)].update({a: b for a, b in lk.items() if a != "endpoints"})
