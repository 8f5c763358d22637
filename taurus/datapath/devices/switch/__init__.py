"""The software switch that emulates the fabric: an engine device with any
number of ports.

Per packet, in the order a packet meets them:

    poll.py       RX burst from each port, then ingress per frame
    ingress.py    parse once; honour PFC frames (pfc.py); route by destination
                  IP with ECMP on the 5-tuple or UET entropy (route.py); class
                  by DSCP; Bolt's SRC back to the sender of a data packet that
                  meets a queue past the port's threshold (src.py, routed as
                  any frame); trimming (trim.py); drop-tail into the egress queue
                  of a shared buffer (queues.py; the entry keeps the IPv4
                  header's offset), PFC ingress accounting
    egress.py     per-port timer on the wheel: strict priority over classes not
                  paused; ECN/RED or TCD marks (marks.py) at that offset,
                  CSIG compare-and-replace (csig.py) and an INT hop record
                  (int_hop.py), which parse the frame again;
                  serialization at the link rate, then the propagation delay
    telemetry.py  per-port time series, sampled on a timer

State and cold code (Python, between runs):

    state.py      the switch tables of an engine
    config.py     the feature schema shared by topology files and the Python
                  API, validated into base units
    setup.py      size and install the state, ports, routes, telemetry
                  (``Engine.add_switch``)
"""
