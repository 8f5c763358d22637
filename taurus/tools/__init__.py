"""Network namespaces, topologies, traffic and experiment tools."""
