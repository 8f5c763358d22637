"""Put a topology's switches on an engine as software-switch devices.

- `attach_switches(eng, topo)`: real packets.  Every switch interface becomes
  an engine port opened inside the switch's namespace (AF_XDP, else
  AF_PACKET).  Hosts do not model their access link, so the switch applies a
  host link's delay in *both* directions: on the way in (an ingress delay
  line on the host-facing port) and on the way out (egress propagation).
  Thus `ping` between two hosts sees RTT = 2 x the sum of the one-way link
  delays on the path, plus serialization and the engine's own overhead.
  Switch-to-switch links are emulated at the egress of each end.
- `build_virtual(eng, topo)`: the same topology on memory links in virtual
  time.  The host side of a host link models the host NIC's serialization
  and the propagation delay toward the switch; switch egress ports model
  everything else.  Each host end goes to `host_factory(eng, topo, host,
  port)` (default: left as an open end for inject/collect); a host NIC
  device plugs in there.
- `build_netns(eng, topo)`: attach_switches plus each host's interface as an
  engine port in the host's namespace, given to `host_factory` the same way
  (`netns_nic_host`: the transport NIC), so one engine carries hosts and
  fabric over real packets.

On real ports, each port lends at most `real_port_opts(topo)`'s RX frames
(datapath/poolsize.py: fewer as the topology's link ends multiply), and an
engine for the whole topology sizes its pool with `poolsize.pool_frames`.

Per-port features come from the topology (switch table, overridden by the
link's; datapath/devices/switch/config.py documents them).
"""
from taurus.datapath.devices.switch import config as F
from taurus.datapath.engine import NDEVS, Engine
from taurus.datapath.poolsize import pool_frames
from taurus.datapath.poolsize import rx_frames as rx_frames_for
from taurus.datapath.ports import memlink
from taurus.tools.topology import Topology


def _switch_config(topo: Topology, sw: str, ports: list[int], real: bool, overrides=None) -> dict:
    node = topo.node(sw)
    pcs = []
    byname = {}
    for i, p in zip(node.ifaces, ports):
        lk = i.link
        pc = dict(topo.port_features(sw, i.name))
        pc.update({"rate": lk.rate or 0, "delay": lk.delay or 0, "mac": i.mac})
        if lk.buffer:
            pc["buffer"] = lk.buffer
        if topo.node(i.peer_node).is_host:
            pc["host_facing"] = True         # its trims are last-hop trims
            if real:
                pc["in_delay"] = lk.delay or 0
        pc.update((overrides or {}).get(i.name, {}))
        pcs.append(pc)
        byname[i.name] = p
    routes = {ip: [byname[ifn] for ifn in ifs] for ip, ifs in topo.routes(sw).items() if ifs}
    cfg = {"ports": pcs, "routes": routes, "switch_id": node.index}
    for k in F.SWITCH_ONLY:
        if k in node.features:
            cfg[k] = node.features[k]
    return cfg


def _state_opts(topo: Topology, opts: dict) -> dict:
    """Switch state sizes: unless given, each queue holds as many frames as
    the largest link buffer fits at 1 KB a frame (at least 4,096, at most
    65,536), so that a byte budget, not the frame ring, limits a deep
    buffer (10,000 flows of one packet each need a 10,000-frame queue)."""
    if "qcap" not in opts:
        frames = max((lk.buffer or 0 for lk in topo.links), default=0) // 1024
        opts = {**opts, "qcap": min(1 << 16, max(4096, 1 << max(0, frames - 1).bit_length()))}
    return opts


def real_ports(topo: Topology) -> int:
    """Engine ports the whole topology takes on namespaces: one per link end."""
    return 2 * len(topo.links)


def engine_limits(topo: Topology, real: bool = True, extra_ports: int = 0,
                  extra_devices: int = 0) -> dict:
    """Engine(...) sizes for one engine over the whole of `topo`: a port per
    link end, a device per switch and host, a NIC per host, never below
    Engine's defaults; `extra_ports` / `extra_devices` for what the caller
    adds (the runner's loopback and PFC shims).  The pool holds what real
    ports lend on namespaces (poolsize.py); `real=False` (memory links)
    lends nothing."""
    ports = real_ports(topo)
    return {"max_ports": max(64, ports + extra_ports),
            "max_devices": max(32, len(topo.switches) + len(topo.hosts) + 2 + extra_devices),
            "max_nics": max(16, len(topo.hosts)), "n_frames": pool_frames(ports if real else 0)}


def real_port_opts(topo: Topology) -> dict:
    """Engine.add_port options of a real port of `topo`: its AF_XDP fill
    depth, from the number of ports the topology opens (poolsize.py)."""
    return {"xdp": {"rx_frames": rx_frames_for(real_ports(topo))}}


def attach_switches(eng: Engine, topo: Topology, port_kind: str = "auto",
                    port_overrides: dict | None = None, **state_opts) -> dict:
    """Open the ports and add one switch device per topology switch; returns
    {switch: [engine port indices]} (in the switch's interface order)."""
    eng.reserve_switches(**_state_opts(topo, state_opts))
    placed = {}
    opts = real_port_opts(topo)
    for sw in topo.switches:
        ports = [eng.add_port(i.name, i.name, netns=topo.ns_of(sw), kind=port_kind, **opts)
                 for i in topo.ifaces_of(sw)]
        eng.add_switch(ports, _switch_config(topo, sw, ports, True, port_overrides), name=sw)
        placed[sw] = ports
    return placed


def open_end(eng, topo, host, port):
    """Default host factory: leave the host's port as an open end."""
    return port


def build_virtual(eng: Engine, topo: Topology, host_factory=open_end,
                  port_overrides: dict | None = None, **state_opts) -> dict:
    """Build `topo` on memory links; returns {"switches": {name: device},
    "ports": {iface: engine port}, "hosts": {host: host_factory result}}."""
    eng.reserve_switches(**_state_opts(topo, state_opts))
    ports, hosts = {}, {}
    for lk in topo.links:
        a, b = eng.add_mem_link(lk.a_iface, lk.b_iface, fifo_frames=0)    # rings: _size_rings
        ports[lk.a_iface], ports[lk.b_iface] = a, b
        for me, peer_node, p in ((lk.a, lk.b, a), (lk.b, lk.a, b)):
            if topo.node(me).is_host:
                # the host NIC serializes onto its link, which delays toward the switch
                eng.E.ports.regs[p, memlink.RATE] = lk.rate or 0
                eng.E.ports.regs[p, memlink.DELAY] = lk.delay or 0
            else:
                eng.E.ports.regs[p, memlink.RATE] = 0
                eng.E.ports.regs[p, memlink.DELAY] = 0
    switches = {}
    for sw in topo.switches:
        sp = [ports[i.name] for i in topo.ifaces_of(sw)]
        switches[sw] = eng.add_switch(sp, _switch_config(topo, sw, sp, False, port_overrides),
                                      name=sw)
    for h in topo.hosts:
        hosts[h] = host_factory(eng, topo, h, ports[topo.ifaces_of(h)[0].name])
    _size_rings(eng, topo, ports)
    return {"switches": switches, "ports": ports, "hosts": hosts}


def _size_rings(eng: Engine, topo: Topology, ports: dict) -> None:
    """Each link end's receive ring (memlink.py), by the link's bandwidth x
    delay when a device owns both ends (a switch schedules each frame, a
    host device paces or queues at the link rate: memlink_fifo_frames),
    else the largest (an open end: Python injects bursts, collects late)."""
    E = eng.E
    owned = {int(E.devs.ports[d, k]) for d in range(int(eng.ctl[NDEVS]))
             for k in range(int(E.devs.nports[d]))}
    rings = []
    for lk in topo.links:
        a, b = ports[lk.a_iface], ports[lk.b_iface]
        for sender, q in ((lk.a, b), (lk.b, a)):
            if a in owned and b in owned:
                room = (memlink.BURST_ROOM if topo.node(sender).is_host
                        else memlink.PACED_ROOM)
                frames = memlink.memlink_fifo_frames(lk.rate or 0, lk.delay or 0, room)
            else:
                frames = memlink.CAP
            rings.append((-frames, q))
    for frames, q in sorted(rings):     # largest first: each aligned to its size, no gaps
        memlink.memlink_fifo(E.ports, q, -frames)


def build_netns(eng: Engine, topo: Topology, host_factory=open_end, port_kind: str = "auto",
                **state_opts) -> dict:
    """Build `topo` on its namespaces (``topo.up()`` first): every switch
    port and each host's interface opened as an engine port in its
    namespace (real packets over the veths); returns {"switch_ports":
    {switch: [ports]}, "ports": {iface: engine port}, "hosts": {host:
    host_factory result}}.  Host factories for real ports: open_end,
    netns_nic_host."""
    placed = attach_switches(eng, topo, port_kind=port_kind, **state_opts)
    ports = {eng.port_name(p): p for ps in placed.values() for p in ps}
    hosts = {}
    for h in topo.hosts:
        i = topo.ifaces_of(h)[0]
        ports[i.name] = p = eng.add_port(i.name, i.name, netns=topo.ns_of(h), kind=port_kind,
                                         **real_port_opts(topo))
        hosts[h] = host_factory(eng, topo, h, p)
    return {"switch_ports": placed, "ports": ports, "hosts": hosts}


def netns_nic_host(eng, topo, host, port, mss: int = 1024, **nic_opts):
    """A host factory for build_netns: the transport NIC on the host's real
    port, pacing at its link's rate (a veth has none of its own)."""
    lk = topo.ifaces_of(host)[0].link
    return eng.add_nic(port, topo.mac_of(host), topo.ip_of(host),
                       line_rate_bps=lk.rate or 0, mss=mss, **nic_opts)


def _mac_shim(eng, topo, host, port, buffer):
    """A two-port switch device as the host's MAC: frames the host sends wait
    in its (large) queue and leave at the link rate, pausing when the fabric
    sends PFC.  Returns the open end the host side plugs into."""
    lk = topo.ifaces_of(host)[0].link
    app, nic_in = eng.add_mem_link(f"{host}-app", f"{host}-nic")
    eng.E.ports.regs[port, memlink.RATE] = 0       # the shim models the link now
    eng.E.ports.regs[port, memlink.DELAY] = 0
    ip = topo.ip_of(host)
    eng.add_switch([nic_in, port], {
        "ports": [{"buffer": buffer}, {"rate": lk.rate or 0, "delay": lk.delay or 0,
                                       "buffer": buffer, "classes": {"control_high": False}}],
        "routes": {ip: [nic_in]}, "default": [port], "buffer": 2 * buffer}, name=f"{host}-mac")
    return app


def pfc_host(eng, topo, host, port, buffer=64 * 2**20):
    """A host factory: an open end behind a MAC that honours PFC (frames
    injected there leave at the link rate, pausing when the fabric says so)."""
    return _mac_shim(eng, topo, host, port, buffer)


def nic_host(eng, topo, host, port, mss: int = 1024, pfc: bool = False,
             mac_buffer: int = 64 * 2**20, **nic_opts):
    """A host factory: the transport NIC on the host's link.  The NIC paces
    at its own line rate, so the wire itself keeps only the delay.  pfc: the
    NIC sends through a MAC that honours PFC pause frames from the fabric."""
    lk = topo.ifaces_of(host)[0].link
    if pfc:
        port = _mac_shim(eng, topo, host, port, mac_buffer)
    eng.E.ports.regs[port, memlink.RATE] = 0
    return eng.add_nic(port, topo.mac_of(host), topo.ip_of(host),
                       line_rate_bps=lk.rate or 0, mss=mss, **nic_opts)
