"""Topologies of hosts and switches in network namespaces (Mininet-like).

Python API::

    t = Topology("demo")                      # prefix="taurus-"
    h1 = t.add_host("h1", ip="10.0.0.1/24")   # ip optional: 10.0.0.N/24
    h2 = t.add_host("h2")
    s1 = t.add_switch("s1")
    t.add_link(h1, s1, rate="10Gbit", delay="5us", buffer="256KB", mtu=1500)
    t.add_link(h2, s1)
    with t:                                   # up(); down() on exit/error
        ...

TOML file (all keys shown; unknown keys are errors)::

    [topology]
    name = "line"            # required: letters, digits, "_" and "-"
    allow_jumbo = false      # allow MTU above 3498 (native XDP on veth fails)

    [defaults]               # optional: values for links that omit them
    rate = "10Gbit"
    delay = "1us"
    buffer = "256KB"
    mtu = 1500

    [[hosts]]
    name = "h1"              # required: a letter, then letters/digits/_
    ip = "10.0.0.1/24"       # optional; a bare address means /24

    [[switches]]
    name = "s1"

    [[links]]
    endpoints = ["h1", "s1"] # required: two distinct node names
    rate = "10Gbit"          # bit/s: bit, Kbit, Mbit, Gbit, Tbit (= Xbps)
    delay = "2us"            # ns, us, ms, s (a bare integer is ns)
    buffer = "256KB"         # B, KB, MB, GB (x1000) or KiB, MiB, GiB (x1024)
    mtu = 1500               # 68..3498 (65535 with allow_jumbo)

Rate, delay and buffer are kept on the Link (as ints: bit/s, ns, bytes;
None when not given) for the software switch to emulate; the kernel does
not shape anything.

What `up()` builds:
- one namespace per node, named `{prefix}{topology}-{node}`;
- one veth pair per link, created directly in the two namespaces; a node's
  interfaces are `{node}-eth{k}`, k counting that node's links in order;
- MAC of port k of the node added n-th (1-based, hosts and switches in one
  sequence): 02:54:NN:NN:KK:KK (02 = locally administered unicast,
  0x54 = "T"; the node and port numbers are 16-bit big-endian);
- every host has exactly one link (its NIC); its address goes there; a
  switch port gets no address;
- permanent ARP entries on every host for every other host, plus a /32
  on-link route for hosts outside its subnet: the userspace switch
  forwards by IP and answers no ARP;
- IPv6 disabled on every Taurus interface (no stray RS/MLD frames);
- tx checksum, TSO/GSO (all segmentation kinds) and GRO off on every veth:
  a userspace forwarder needs real checksums and MTU-sized frames.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import fcntl
import glob
import ipaddress
import logging
import os
import re
import shutil
import subprocess
import tomllib
from collections import deque

from pyroute2 import IPRoute, NetlinkError
from pyroute2.ethtool import Ethtool

from taurus import errors
from taurus.tools import netns, topogen
from taurus import pidfiles
from taurus.flocks import abandoned, holder
from taurus.pidfiles import PID_DIR
from taurus.units import parse_delay, parse_rate, parse_size, quote as _q

IFNAMSIZ = 15                  # usable chars of a Linux interface name
MTU_MIN, MTU_XDP_MAX, MTU_JUMBO_MAX = 68, 3498, 65535

SHM_DIR = "/dev/shm"
OWNER_DIR = "/run/taurus/topologies"   # owner locks of topologies a run brought up
log = logging.getLogger("taurus.topo")
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_TOPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*\Z")
_NUD_PERMANENT = 0x80
_RT_SCOPE_LINK = 253


class TopologyError(errors.ConfigError):
    """Bad topology description or failed build; str() is
    "<source>: <field>: <what was expected / what went wrong>"."""

    def __init__(self, source: str, field: str | None, message: str):
        super().__init__(message, file=source, key=field)

    @property
    def source(self) -> str:
        return self.file

    @property
    def field(self) -> str | None:
        return self.key


# ------------------------------------------------------------------ model

@dataclasses.dataclass
class Node:
    name: str
    kind: str                     # "host" | "switch"
    index: int                    # 1-based, add order over all nodes
    ip: str | None = None         # hosts: bare address
    prefixlen: int | None = None
    ifaces: list = dataclasses.field(default_factory=list)
    field: str = ""               # where it was defined (for messages)
    features: dict = dataclasses.field(default_factory=dict)   # switches: switch/config.py

    @property
    def is_host(self) -> bool:
        return self.kind == "host"


@dataclasses.dataclass
class Link:
    a: str
    b: str
    rate: int | None              # bit/s
    delay: int | None             # ns
    buffer: int | None            # bytes
    mtu: int
    index: int
    a_iface: str = ""
    b_iface: str = ""
    field: str = ""
    features: dict = dataclasses.field(default_factory=dict)   # per-port switch features


@dataclasses.dataclass
class Iface:
    name: str
    node: str
    port: int                     # k in {node}-eth{k}
    mac: str
    ip: str | None                # hosts only, bare address
    prefixlen: int | None
    peer_node: str
    peer_iface: str
    link: Link


def make_mac(node_index: int, port: int) -> str:
    b = (0x02, 0x54, node_index >> 8, node_index & 0xFF, port >> 8, port & 0xFF)
    return ":".join(f"{x:02x}" for x in b)


class Topology:
    def __init__(self, name: str, prefix: str = netns.PREFIX, allow_jumbo: bool = False,
                 source: str | None = None):
        self.source = source or f"topology {name!r}"
        if not isinstance(name, str) or not _TOPO_RE.match(name):
            raise TopologyError(self.source, "topology.name",
                                f"expected letters, digits, '_' or '-', got {_q(name)}")
        if not prefix.startswith(netns.PREFIX):
            # `taurus topo clean` finds everything by netns.PREFIX
            raise TopologyError(self.source, "prefix", f"must start with {netns.PREFIX!r}, got {_q(prefix)}")
        self.name, self.prefix, self.allow_jumbo = name, prefix, allow_jumbo
        self._nodes: dict[str, Node] = {}
        self._links: list[Link] = []
        self._ips: dict[str, str] = {}        # address -> host

    # ---- building the graph
    def _err(self, field, msg):
        return TopologyError(self.source, field, msg)

    def _add_node(self, name, kind, field) -> Node:
        # TOML items report "hosts[3].name", API calls "add_host('x')"
        nf = f"{field}.name" if field else f"add_{kind}({name!r})"
        field = field or f"add_{kind}({name!r})"
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise self._err(nf, f"expected a node name (a letter, then letters, digits or '_'), got {_q(name)}")
        if name in self._nodes:
            raise self._err(nf, f"duplicate node name {name!r} (first defined at {self._nodes[name].field})")
        self._check_ifname(name, 0, nf)
        node = Node(name, kind, len(self._nodes) + 1, field=field)
        self._nodes[name] = node
        return node

    def _check_ifname(self, node, k, field):
        ifname = f"{node}-eth{k}"
        if len(ifname) > IFNAMSIZ:
            raise self._err(field, f"node name {node!r} is too long: its interface {ifname!r} has "
                                   f"{len(ifname)} chars, Linux allows {IFNAMSIZ}")

    def add_host(self, name: str, ip: str | None = None, *, _field: str | None = None) -> str:
        node = self._add_node(name, "host", _field)
        field = node.field
        try:
            if ip is None:
                addr = self._auto_ip(f"{field}.ip")
                plen = 24
            else:
                addr, plen = self._parse_ip(ip, f"{field}.ip")
                if addr in self._ips:
                    raise self._err(f"{field}.ip", f"duplicate IP {addr} (already used by host {self._ips[addr]!r})")
        except TopologyError:
            del self._nodes[name]
            raise
        node.ip, node.prefixlen = addr, plen
        self._ips[addr] = name
        return name

    def _auto_ip(self, field) -> str:
        n = sum(1 for x in self._nodes.values() if x.is_host)   # this host's ordinal
        while n <= 254:
            addr = f"10.0.0.{n}"
            if addr not in self._ips:
                return addr
            n += 1
        raise self._err(field, "no free automatic address left in 10.0.0.0/24; give hosts explicit IPs")

    def _parse_ip(self, ip, field):
        if not isinstance(ip, str):
            raise self._err(field, f"expected an IPv4 address like \"10.0.0.1/24\", got {_q(ip)}")
        try:
            itf = ipaddress.IPv4Interface(ip if "/" in ip else ip + "/24")
        except ValueError:
            raise self._err(field, f"expected an IPv4 address like \"10.0.0.1/24\", got {_q(ip)}") from None
        net = itf.network
        if net.prefixlen < 31 and itf.ip in (net.network_address, net.broadcast_address):
            raise self._err(field, f"{ip!r} is the network or broadcast address of {net}")
        if itf.ip.is_loopback or itf.ip.is_multicast or itf.ip.is_unspecified:
            raise self._err(field, f"expected a unicast host address, got {_q(ip)}")
        return str(itf.ip), net.prefixlen

    def add_switch(self, name: str, features: dict | None = None, *,
                   _field: str | None = None) -> str:
        """`features`: the switch's fabric features (see
        taurus/datapath/devices/switch/config.py), e.g. {"ecn": {"k": "30KB"}}."""
        node = self._add_node(name, "switch", _field)
        try:
            node.features = self._features(features, node.field, True)
        except TopologyError:
            del self._nodes[name]
            raise
        return name

    def _features(self, raw, field, switch_level):
        from taurus.datapath.devices.switch import config as F
        if not raw:
            return {}
        try:
            F.validate(raw, field, switch_level)
        except F.FeatureError as e:
            raise self._err(e.field, e.msg) from None
        keys = F.SWITCH_KEYS if switch_level else F.PORT_KEYS
        bad = [k for k in raw if k not in keys]
        if bad:
            raise self._err(f"{field}.{bad[0]}", f"unknown feature (expected one of: {', '.join(keys)})")
        return dict(raw)

    def port_features(self, switch, iface: str) -> dict:
        """Raw features of one switch port: the switch's, overridden by its link's."""
        from taurus.datapath.devices.switch import config as F
        i = next(x for x in self.node(switch).ifaces if x.name == iface)
        return F.merge(self.node(switch).features, i.link.features)

    def add_link(self, a, b, rate=None, delay=None, buffer=None, mtu: int = 1500,
                 features: dict | None = None, *, _field: str | None = None) -> Link:
        a, b = self._name(a), self._name(b)
        field = _field or f"add_link({a!r}, {b!r})"
        ep = f"{field}.endpoints" if _field else field
        for n in (a, b):
            if n not in self._nodes:
                raise self._err(ep, f"unknown node {n!r} (known: {', '.join(self._nodes) or 'none'})")
        if a == b:
            raise self._err(ep, f"a link needs two different nodes, got {_q(a)} twice")
        params = {}
        for key, val, parse in (("rate", rate, parse_rate), ("delay", delay, parse_delay),
                                ("buffer", buffer, parse_size)):
            try:
                params[key] = None if val is None else parse(val)
            except ValueError as e:
                raise self._err(f"{field}.{key}", str(e)) from None
        hi = MTU_JUMBO_MAX if self.allow_jumbo else MTU_XDP_MAX
        if isinstance(mtu, bool) or not isinstance(mtu, int) or not MTU_MIN <= mtu <= hi:
            hint = "" if self.allow_jumbo else (" (native XDP on veth refuses larger MTUs; "
                                                "allow_jumbo = true in [topology] allows up to 65535)")
            raise self._err(f"{field}.mtu", f"expected an MTU between {MTU_MIN} and {hi}{hint}, got {_q(mtu)}")
        na, nb = self._nodes[a], self._nodes[b]
        for n in (na, nb):
            if n.is_host and n.ifaces:
                other = n.ifaces[0].peer_node
                raise self._err(ep, f"host {n.name!r} already has its link (to {other!r}); "
                                    "a host has one NIC: connect it through a switch")
            self._check_ifname(n.name, len(n.ifaces), ep)
        feats = self._features(features, field, False)
        link = Link(a, b, mtu=mtu, index=len(self._links), field=field, features=feats, **params)
        link.a_iface, link.b_iface = f"{a}-eth{len(na.ifaces)}", f"{b}-eth{len(nb.ifaces)}"
        for n, me, peer, peer_if in ((na, link.a_iface, b, link.b_iface), (nb, link.b_iface, a, link.a_iface)):
            k = len(n.ifaces)
            n.ifaces.append(Iface(me, n.name, k, make_mac(n.index, k), n.ip, n.prefixlen,
                                  peer, peer_if, link))
        self._links.append(link)
        return link

    def _name(self, node) -> str:
        return node.name if isinstance(node, Node) else node

    # ---- accessors
    @property
    def nodes(self) -> list[str]:
        return list(self._nodes)

    @property
    def hosts(self) -> list[str]:
        return [n for n, x in self._nodes.items() if x.is_host]

    @property
    def switches(self) -> list[str]:
        return [n for n, x in self._nodes.items() if not x.is_host]

    @property
    def links(self) -> list[Link]:
        return list(self._links)

    def node(self, node) -> Node:
        try:
            return self._nodes[self._name(node)]
        except KeyError:
            raise KeyError(f"no node {self._name(node)!r} in topology {self.name!r}") from None

    def ns_of(self, node) -> str:
        return f"{self.prefix}{self.name}-{self.node(node).name}"

    def ifaces_of(self, node) -> list[Iface]:
        return list(self.node(node).ifaces)

    def ip_of(self, host) -> str:
        n = self.node(host)
        if not n.is_host:
            raise KeyError(f"{n.name!r} is a switch: switches have no IP")
        return n.ip

    def host_of_ip(self, ip: str) -> str:
        return self._ips[ip]

    def mac_of(self, node, iface: str | int = 0) -> str:
        for i in self.node(node).ifaces:
            if iface in (i.name, i.port):
                return i.mac
        raise KeyError(f"node {self._name(node)!r} has no interface {iface!r}")

    def namespaces(self) -> list[str]:
        return [self.ns_of(n) for n in self._nodes]

    def _adj(self):
        adj = {n: [] for n in self._nodes}
        for x in self._nodes.values():
            for i in x.ifaces:
                adj[x.name].append((i.name, i.peer_node))
        return adj

    def _hops_from(self, host: str, adj) -> dict[str, int]:
        """BFS hop counts from `host`; paths never transit another host."""
        dist, q = {host: 0}, deque([host])
        while q:
            u = q.popleft()
            if u != host and self._nodes[u].is_host:
                continue
            for _, v in adj[u]:
                if v not in dist:
                    dist[v] = dist[u] + 1
                    q.append(v)
        return dist

    def _distances(self) -> dict[str, dict[str, int]]:
        """Hop counts from every host (cached until the graph changes: a
        fat-tree's routes would otherwise take one search per switch and host)."""
        key = (len(self._nodes), len(self._links))
        if getattr(self, "_dist_key", None) != key:
            adj = self._adj()
            self._dist = {h: self._hops_from(h, adj) for h in self.hosts}
            self._dist_key = key
        return self._dist

    def routes(self, switch) -> dict[str, list[str]]:
        """Destination host IP -> egress interfaces of `switch` on a shortest
        path (several when equal-cost: ECMP), in port order."""
        s = self.node(switch)
        if s.is_host:
            raise KeyError(f"{s.name!r} is a host, routes are for switches")
        out = {}
        for h, dist in self._distances().items():
            if s.name not in dist:
                continue
            out[self._nodes[h].ip] = [i.name for i in s.ifaces
                                      if dist.get(i.peer_node, -1) == dist[s.name] - 1]
        return out

    # ---- validation
    def validate(self) -> "Topology":
        """Whole-graph checks (per-item checks happen when items are added)."""
        if not self._nodes:
            raise self._err("hosts", "a topology needs at least two hosts")
        for x in self._nodes.values():
            if not x.ifaces:
                what = "host" if x.is_host else "switch"
                raise self._err(x.field, f"{what} {x.name!r} has no link")
        hosts = self.hosts
        if len(hosts) < 2:
            raise self._err("hosts", f"a topology needs at least two hosts, got {len(hosts)}")
        adj = self._adj()
        comps, seen = [], set()
        for h in hosts:
            if h in seen:
                continue
            reach = [x for x in self._hops_from(h, adj) if self._nodes[x].is_host]
            seen.update(reach)
            comps.append(reach)
        if len(comps) > 1:
            groups = " and ".join("{" + ", ".join(c) + "}" for c in comps)
            raise self._err("links", f"hosts that cannot reach each other: {groups} "
                                     "have no path of links between the groups")
        return self

    # ---- lifecycle
    def is_up(self) -> bool:
        present = set(netns.list_ns(self.prefix))
        return any(ns in present for ns in self.namespaces())

    def _owner_path(self) -> str:
        return os.path.join(OWNER_DIR, f"{self.prefix}{self.name}")

    def _owner_gone(self) -> str | None:
        """Whether the run that brought this topology up has died: None (it
        lives, or the topology was brought up by hand, `taurus topo up`,
        which keeps it up on purpose), else what is said of it.  A run holds
        an flock on its owner file for as long as it lives (up(owner=True)),
        so the kernel tells, as for shared-memory segments."""
        try:
            with abandoned(self._owner_path()) as fd:
                if fd is None:
                    return None
                pid = os.read(fd, 32).decode(errors="replace").strip()
        except FileNotFoundError:
            return None
        return f"the run that brought it up (pid {pid}) is gone"

    def _owner_holder(self) -> str:
        return holder(self._owner_path())

    def up(self, owner: bool = False) -> "Topology":
        """Build everything; on failure remove what was created and re-raise.
        owner (a run): this process owns the topology while it lives, and
        whoever brings it up after this process died (SIGKILL, a crash)
        takes down what is left first: namespaces, processes, segments."""
        self.validate()
        if not netns.is_root():
            raise self._err(None, "bringing a topology up needs root (network namespaces)")
        existing = [ns for ns in self.namespaces() if ns in netns.list_ns(self.prefix)]
        if existing and (why := self._owner_gone()):
            left = collections.Counter(x.split()[0] for x in self.down())
            log.warning("topology %s: %s; removed what it left (%s)", self.name, why,
                        ", ".join(f"{n} {k}{'s' * (n > 1)}" for k, n in sorted(left.items())))
            existing = []
        if existing:
            if os.path.exists(self._owner_path()):
                raise self._err(None, f"namespace {existing[0]} already exists: the topology "
                                      f"is up, run by {self._owner_holder()}")
            raise self._err(None, f"namespace {existing[0]} already exists: the topology is up "
                                  "(`taurus topo down FILE`, or `taurus topo clean` after a crash)")
        created, pid = [], os.getpid()
        try:
            _build(self, created)
        except BaseException:
            if os.getpid() != pid:       # a forked helper: never the parent's cleanup
                os._exit(1)
            for ns in reversed(created):
                netns.remove_ns(ns)
            raise
        if owner:
            self._own()
        return self

    def _own(self) -> None:
        os.makedirs(OWNER_DIR, exist_ok=True)
        fd = os.open(self._owner_path(), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._owner_fd = fd

    def _disown(self) -> None:
        fd = getattr(self, "_owner_fd", None)
        if fd is not None:
            try:
                os.unlink(self._owner_path())
            except FileNotFoundError:
                pass
            os.close(fd)
            self._owner_fd = None

    def down(self) -> list[str]:
        """End processes keeping this topology's namespaces alive (not this
        process), then delete the namespaces.  Returns what was removed."""
        mine = set(self.namespaces())
        # also nodes since removed from the file: {prefix}{name}-{node}
        start = f"{self.prefix}{self.name}-"
        for ns in netns.list_ns(start):
            if _NAME_RE.match(ns[len(start):]):
                mine.add(ns)
        names = sorted(ns for ns in mine if ns in netns.list_ns(self.prefix))
        removed = _kill_holders(names)
        for ns in names:
            netns.remove_ns(ns)
            removed.append(f"namespace {ns}")
        self._disown()
        if self._owner_gone():       # a dead run's lock: free now, nothing left to own
            try:
                os.unlink(self._owner_path())
            except FileNotFoundError:
                pass
        # what a killed owner could not remove (it was SIGKILLed, or crashed):
        # segments whose owner is gone, whichever topology they served
        from taurus.datapath.shm import reclaim_stale      # numpy: only when needed
        removed += [f"segment {n} (its owner is gone)" for n in reclaim_stale()]
        return removed

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        self.down()
        return False

    # ---- description
    def describe(self) -> dict:
        up = set(netns.list_ns(self.prefix))
        d = {"name": self.name, "prefix": self.prefix, "nodes": [], "links": []}
        for x in self._nodes.values():
            d["nodes"].append({
                "name": x.name, "kind": x.kind, "ns": self.ns_of(x.name), "up": self.ns_of(x.name) in up,
                "ip": x.ip and f"{x.ip}/{x.prefixlen}",
                "ifaces": [{"name": i.name, "mac": i.mac, "peer": f"{i.peer_node}:{i.peer_iface}"}
                           for i in x.ifaces],
                **({} if x.is_host else {"routes": self.routes(x.name),
                                         "features": x.features})})
        for lk in self._links:
            d["links"].append({"endpoints": [f"{lk.a}:{lk.a_iface}", f"{lk.b}:{lk.b_iface}"],
                               "rate_bps": lk.rate, "delay_ns": lk.delay,
                               "buffer_bytes": lk.buffer, "mtu": lk.mtu,
                               "features": lk.features})
        return d

    def __repr__(self):
        return (f"Topology({self.name!r}, hosts={self.hosts}, switches={self.switches}, "
                f"links={len(self._links)})")


# ------------------------------------------------------------------ TOML

_TABLES = {"topology", "defaults", "hosts", "switches", "links"}
_FEATURE_KEYS = ("buffer", "telemetry", "ecn", "csig", "int", "pfc", "trim", "classes", "src")
_PORT_FEATURE_KEYS = ("ecn", "csig", "int", "pfc", "trim", "classes", "src")
_KEYS = {"topology": {"name", "allow_jumbo", *topogen.GENERATORS},
         "defaults": {"rate", "delay", "buffer", "mtu"},
         "hosts": {"name", "ip"}, "switches": {"name", *_FEATURE_KEYS},
         "links": {"endpoints", "rate", "delay", "buffer", "mtu", *_PORT_FEATURE_KEYS}}


def _check_keys(src, field, table, allowed):
    if not isinstance(table, dict):
        raise TopologyError(src, field, f"expected a table, got {_q(table)}")
    for k in table:
        if k not in allowed:
            raise TopologyError(src, field, f"unknown key {k!r} (expected one of: {', '.join(sorted(allowed))})")


def from_dict(data: dict, source: str = "<dict>", prefix: str = netns.PREFIX) -> Topology:
    """Build a Topology from parsed TOML data (an experiment file may pass
    just its topology tables here)."""
    src = source
    for k in data:
        if k not in _TABLES:
            raise TopologyError(src, k, f"unknown table (expected one of: {', '.join(sorted(_TABLES))})")
    top = data.get("topology")
    if top is None:
        raise TopologyError(src, "topology", "missing [topology] table with name = \"...\"")
    _check_keys(src, "topology", top, _KEYS["topology"])
    if "name" not in top:
        raise TopologyError(src, "topology.name", "missing (expected a topology name)")
    jumbo = top.get("allow_jumbo", False)
    if not isinstance(jumbo, bool):
        raise TopologyError(src, "topology.allow_jumbo", f"expected true or false, got {_q(jumbo)}")
    data = _generated(src, data, top)
    t = Topology(top["name"], prefix=prefix, allow_jumbo=jumbo, source=src)
    defaults = data.get("defaults", {})
    _check_keys(src, "defaults", defaults, _KEYS["defaults"])
    for key, parse in (("rate", parse_rate), ("delay", parse_delay), ("buffer", parse_size)):
        try:  # report a bad default where it is written, not at each link
            if key in defaults:
                parse(defaults[key])
        except ValueError as e:
            raise TopologyError(src, f"defaults.{key}", str(e)) from None

    def items(table):
        arr = data.get(table, [])
        if not isinstance(arr, list):
            raise TopologyError(src, table, f"expected an array of tables ([[{table}]])")
        for i, it in enumerate(arr):
            f = f"{table}[{i}]"
            _check_keys(src, f, it, _KEYS[table])
            yield f, it

    def need(f, it, key, what):
        if key not in it:
            raise TopologyError(src, f"{f}.{key}", f"missing (expected {what})")
        return it[key]

    for f, it in items("hosts"):
        t.add_host(need(f, it, "name", "a node name"), it.get("ip"), _field=f)
    for f, it in items("switches"):
        t.add_switch(need(f, it, "name", "a node name"),
                     {k: v for k, v in it.items() if k != "name"}, _field=f)
    for f, it in items("links"):
        ep = need(f, it, "endpoints", 'two node names like ["h1", "s1"]')
        if not (isinstance(ep, list) and len(ep) == 2 and all(isinstance(e, str) for e in ep)):
            raise TopologyError(src, f"{f}.endpoints", f'expected two node names like ["h1", "s1"], got {_q(ep)}')
        kw = {k: it.get(k, defaults.get(k)) for k in ("rate", "delay", "buffer")}
        t.add_link(ep[0], ep[1], mtu=it.get("mtu", defaults.get("mtu", 1500)), _field=f,
                   features={k: it[k] for k in _PORT_FEATURE_KEYS if k in it}, **kw)
    return t.validate()


def _generated(src, data: dict, top: dict) -> dict:
    """``data`` with a generator's hosts, switches and links (topogen) in
    place of its own, which then override single switches and links."""
    gens = [g for g in topogen.GENERATORS if g in top]
    if not gens:
        return data
    if len(gens) > 1:
        raise TopologyError(src, f"topology.{gens[1]}", f"give one generator, not {' and '.join(gens)}")
    g = gens[0]
    if "hosts" in data:
        raise TopologyError(src, "hosts", f"hosts come from topology.{g} (drop [[hosts]])")
    try:
        base = topogen.GENERATORS[g](top[g])
    except topogen.GenError as e:
        raise TopologyError(src, ".".join(filter(None, ("topology", g, e.field))), e.message) from None
    try:
        topogen.overlay(base, data)
    except topogen.GenError as e:
        raise TopologyError(src, e.field, e.message) from None
    return {**data, **base}


def from_spec(spec: str, prefix: str = netns.PREFIX) -> Topology | None:
    """A generated topology from ``fat_tree:k=4,...`` or ``leaf_spine:...``
    (None if ``spec`` names no generator)."""
    try:
        got = topogen.parse_spec(spec)
    except topogen.GenError as e:
        raise TopologyError(spec, e.field, e.message) from None
    if got is None:
        return None
    kind, params = got
    name = "-".join([{"fat_tree": "ft", "leaf_spine": "ls"}[kind]]
                    + [f"{k[0]}{v}" for k, v in params.items()])
    return from_dict({"topology": {"name": name, kind: params}}, source=spec, prefix=prefix)


def load(path: str, prefix: str = netns.PREFIX) -> Topology:
    """Read and validate a topology TOML file (TopologyError on bad input)."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise TopologyError(path, None, f"TOML syntax error: {e}") from None
    except OSError as e:
        raise TopologyError(path, None, f"cannot read: {e.strerror}") from None
    return from_dict(data, source=path, prefix=prefix)


def builtin(name: str) -> str:
    """Path of a topology shipped in taurus/tools/topologies (e.g. "line")."""
    return os.path.join(os.path.dirname(__file__), "topologies", f"{name}.toml")


# ------------------------------------------------------------------ builder

def _build(t: Topology, created: list):
    for ns in t.namespaces():
        netns.create_ns(ns)
        created.append(ns)
        # new interfaces inherit "default": IPv6 is off before a veth exists
        netns.write_sysctl(ns, "net/ipv6/conf/default/disable_ipv6", 1)
    iprs = {}
    try:
        for x in t._nodes.values():
            iprs[x.name] = IPRoute(netns=t.ns_of(x.name))
        for lk in t._links:
            ia, ib = _iface(t, lk.a, lk.a_iface), _iface(t, lk.b, lk.b_iface)
            iprs[lk.a].link("add", ifname=ia.name, kind="veth", address=ia.mac, mtu=lk.mtu,
                            peer={"ifname": ib.name, "address": ib.mac, "mtu": lk.mtu,
                                  "net_ns_fd": t.ns_of(lk.b)})
        for x in t._nodes.values():
            ns, ipr = t.ns_of(x.name), iprs[x.name]
            _set_offloads(ns, [i.name for i in x.ifaces])
            for i in x.ifaces:
                netns.write_sysctl(ns, f"net/ipv6/conf/{i.name}/disable_ipv6", 1)
                idx = ipr.link_lookup(ifname=i.name)[0]
                if x.is_host:
                    ipr.addr("add", index=idx, address=x.ip, prefixlen=x.prefixlen)
                ipr.link("set", index=idx, state="up")
            ipr.link("set", index=ipr.link_lookup(ifname="lo")[0], state="up")
            if x.is_host:
                _static_neighbours(t, x, ipr)
    finally:
        for ipr in iprs.values():
            ipr.close()


def _iface(t: Topology, node: str, name: str) -> Iface:
    return next(i for i in t.node(node).ifaces if i.name == name)


def _static_neighbours(t: Topology, x: Node, ipr: IPRoute):
    nic = x.ifaces[0]
    idx = ipr.link_lookup(ifname=nic.name)[0]
    net = ipaddress.IPv4Interface(f"{x.ip}/{x.prefixlen}").network
    for h in t.hosts:
        other = t._nodes[h]
        if h == x.name:
            continue
        mac = other.ifaces[0].mac
        if ipaddress.IPv4Address(other.ip) not in net:
            ipr.route("add", dst=f"{other.ip}/32", oif=idx, scope=_RT_SCOPE_LINK)
        ipr.neigh("add", dst=other.ip, lladdr=mac, ifindex=idx, state=_NUD_PERMANENT)


def _offload_feature(name: str) -> bool:
    """Features a userspace forwarder needs off: tx checksum, every kind of
    segmentation offload (TSO, GSO, USO, ...) and GRO."""
    return (name.startswith("tx-checksum-")
            or (name.startswith("tx-") and (name.endswith("segmentation") or "gso" in name))
            or (name.startswith("rx-") and "gro" in name))


def _set_offloads(ns: str, ifnames: list[str]):
    """pyroute2's Ethtool (ioctl, opened inside the namespace) first; a
    feature it leaves on goes to the ethtool program by name."""
    for ifn in ifnames:
        on = _offloads_on(ns, ifn, set_off=True)
        if on:
            _ethtool_off(ns, ifn, on)
            on = _offloads_on(ns, ifn)
            if on:
                raise TopologyError(ns, ifn, f"could not turn off {', '.join(on)}")


def _offloads_on(ns: str, ifn: str, set_off: bool = False) -> list[str]:
    with netns.in_ns(ns):
        eth = Ethtool()
    try:
        feats = eth.get_features(ifn)
        if set_off:
            for name, f in feats.features.items():
                if f.available and f.enable and _offload_feature(name):
                    f.enable = False
            eth.set_features(ifn, feats)
            feats = eth.get_features(ifn)
        return [n for n, f in feats.features.items() if f.available and f.enable and _offload_feature(n)]
    finally:
        eth.close()


def _ethtool_off(ns: str, ifn: str, features: list[str]):
    if shutil.which("ethtool") is None:
        raise TopologyError(ns, ifn, f"could not turn off {', '.join(features)} and the `ethtool` "
                                     "program is missing (apt-get install -y ethtool)")
    args = [w for f in features for w in (f, "off")]
    r = subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", ifn, *args],
                       capture_output=True, text=True)
    if r.returncode:
        raise TopologyError(ns, ifn, f"ethtool -K failed: {r.stderr.strip()}")


def offloads_of(ns: str, ifname: str) -> dict[str, bool]:
    """Enabled state of the offload features set by up() (for checks)."""
    with netns.in_ns(ns):
        eth = Ethtool()
    try:
        return {n: f.enable for n, f in eth.get_features(ifname).features.items()
                if _offload_feature(n) and f.available}
    finally:
        eth.close()


# ------------------------------------------------------------------ cleanup

def _kill_holders(names: list[str]) -> list[str]:
    holders = netns.ns_holders(names)
    cmds = {p: netns.proc_cmdline(p)[:60] or "?" for p in holders}
    left = netns.kill_pids(holders)
    return [f"process {p} ({cmds[p]}): {why}" for p, why in holders.items() if p not in left]


def clean(prefix: str = netns.PREFIX, pid_dir: str = PID_DIR, shm_dir: str = SHM_DIR):
    """Remove everything Taurus created (like `mn -c`), also after a crash:
    processes from pid files ({pid_dir}/*.pid, written by engines, agents
    and runs: pidfiles.py; killed only when they work under {prefix} and
    their command line mentions python or taurus), processes keeping a namespace named {prefix}* alive, those
    namespaces, root-namespace links named {prefix}* and {shm_dir}/taurus*
    files ({prefix} without its trailing "-").
    Returns (removed, left): lists of human-readable items."""
    removed, left = [], []
    for pf in sorted(glob.glob(os.path.join(pid_dir, "*.pid"))):
        pid, under = pidfiles.read(pf)
        if pid and os.path.exists(f"/proc/{pid}") and not under.startswith(prefix):
            continue                    # a live process under another prefix: not ours
        cmd = netns.proc_cmdline(pid) if pid else ""
        if pid and pid != os.getpid() and ("python" in cmd or "taurus" in cmd):
            if netns.kill_pids([pid]):
                left.append(f"process {pid} ({cmd[:60]}) from {pf} survived SIGKILL")
            else:
                removed.append(f"process {pid} ({cmd[:60]}) from {pf}")
        try:
            os.unlink(pf)
            removed.append(f"pid file {pf}")
        except FileNotFoundError:
            pass
    names = netns.list_ns(prefix)
    removed += _kill_holders(names)
    for ns in names:
        netns.remove_ns(ns)
        removed.append(f"namespace {ns}")
    for f in sorted(glob.glob(os.path.join(OWNER_DIR, prefix + "*"))):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f)                  # the topology it owned is gone
    if len(prefix) < IFNAMSIZ:
        with IPRoute() as ipr:
            for lk in ipr.link("dump"):
                ifn = lk.get_attr("IFLA_IFNAME")
                if ifn.startswith(prefix):
                    try:
                        ipr.link("del", index=lk["index"])
                        removed.append(f"link {ifn}")
                    except NetlinkError:  # gone with its veth peer
                        pass
    for f in sorted(glob.glob(os.path.join(shm_dir, prefix.rstrip("-") + "*"))):
        try:
            if os.path.isdir(f) and not os.path.islink(f):
                shutil.rmtree(f)
            else:
                os.unlink(f)
            removed.append(f"file {f}")
        except FileNotFoundError:
            pass
    left += [f"namespace {ns}" for ns in netns.list_ns(prefix)]
    left += [f"process {p}: {why}" for p, why in netns.ns_holders(netns.list_ns(prefix)).items()]
    return removed, left
