"""Wire formats: one declarative definition per header, with Scapy layers and
Numba codecs derived from it."""
