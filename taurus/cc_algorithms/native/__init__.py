"""Algorithms compiled into the engine ("native" mode): the in-datapath
baseline the framework is measured against.  Each mirrors its agent-mode
twin in cc_algorithms/ and is cross-tested against it."""
