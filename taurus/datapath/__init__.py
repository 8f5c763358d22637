"""The "NIC": Numba poll-mode engine, ports, devices and wire formats."""
