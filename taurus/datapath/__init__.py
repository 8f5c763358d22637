"""The "NIC": Numba poll-mode engine, ports, devices and wire formats.

Numba's on-disk cache is placed by taurus/numba_cache.py (on ``import taurus``).
"""
