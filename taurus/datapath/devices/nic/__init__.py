"""The host NIC: a UET-style reliable transport (RUD) on one engine port.

Per packet, in the order a packet meets them (one ``poll``):

    poll.py      RX burst from the port, parse once (wire.parse), hand on by PDS type
    rx.py        receiver: PSN tracking per receive PDC, payload placement,
                 cumulative ACK + SACK, ACK coalescing, NACK (last-hop trims apart),
                 CE and UE echo, CSIG reflection, credit, CNPs (notification point)
    rxcc.py      receiver CC: the active-sender table, events to the receiver
                 algorithm, its credit grants
    host.py      the host behind the NIC in virtual time (off by default): delivery
                 into memory at a host bandwidth, a hog, host buffer drops, HOST samples
    ack.py       sender feedback: ACK/SACK/NACK, loss inference, credit, RTT samples,
                 CSIG reflections, CNPs
    close.py     PDC close (CLOSE / REQ_CLOSE); closed rows freed for reuse
    signals.py   signal collection: one call site per transport event, counted and,
                 if the flow's algorithm bound it, handed to the report engine
                 (datapath/report.py, called out of line)
    sq.py        app submissions (send, read) from the per-NIC submission queue
    gen.py       generated streams (the NIC posts a flow's messages itself) and sinks
    tx.py        scheduler: pacing, window and credit gates, retransmission, RTO;
                 data frames with the flow's CSIG tag and entropy value
    frame.py     framing (Ethernet/IPv4/UDP), the TX batch, the line-rate account

Timers on the engine's wheel: per-flow pacing and RTO, per-PDC ACK
coalescing, and per NIC one for "line free again", the receiver
algorithm's idle scan and the host model's HOST sampling.  Malformed or hostile
frames are dropped under a named counter (state.NIC_COUNTERS, parser
statuses per NIC in ``pcnt``).

State and cold code (Python, between runs):

    state.py     every table the transport touches, for all NICs of an engine
    shm.py       those tables in one shared-memory segment (apps attach to it)
    app.py       the Python ends of the app queues and stream rings
    setup.py     build, feed and observe NICs (``Engine.add_nic`` and friends)
"""
