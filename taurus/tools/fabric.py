"""Put a topology's switches on an engine: every switch interface becomes an
engine port opened inside the switch's namespace, and each switch becomes a
device.  Until the software switch lands, a two-port switch is an L2
forwarder."""
from taurus.datapath.engine import Engine
from taurus.tools.topology import Topology, TopologyError


def attach_switches(eng: Engine, topo: Topology, port_kind: str = "auto") -> dict:
    """Open the ports and add the devices; returns {switch: [port indices]}."""
    placed = {}
    for sw in topo.switches:
        ifaces = topo.ifaces_of(sw)
        if len(ifaces) != 2:
            raise TopologyError(topo.source or topo.name, f"switches.{sw}",
                                f"has {len(ifaces)} links; the L2 forwarder needs exactly 2 "
                                "(multi-port switching comes with the software switch)")
        ports = [eng.add_port(i.name, i.name, netns=topo.ns_of(sw), kind=port_kind)
                 for i in ifaces]
        eng.add_l2fwd(ports[0], ports[1], name=sw)
        placed[sw] = ports
    return placed
