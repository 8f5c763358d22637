"""Taurus: a congestion-control framework for datacenter transports.

A userspace, DPDK-style datapath (Numba poll-mode loops over AF_XDP or
AF_PACKET sockets, or over in-memory links in virtual time) does the per-packet
work; an agent process makes congestion-control decisions.  See README.md.
"""
__version__ = "0.1.0"

from . import numba_cache, numba_uids

numba_cache.configure()      # before any module compiles or loads a Numba function
numba_uids.install()         # compiled symbols unique across processes (numba_uids.py)
