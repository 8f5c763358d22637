"""Tools over the datapath and the agent: namespaces, topologies, the fabric
builder, `taurus topo`, `taurus engine`, `taurus perf`, processes, workloads."""
