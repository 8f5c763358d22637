"""Wire formats: one declarative definition per header, with Scapy layers and
Numba codecs derived from it.

- ``spec``    the definitions (UET PDS/SES, CSIG, entropy header, Taurus probe)
              and the location constants derived from them; constants/enums.
- ``layout``  the machinery behind ``spec`` (Field, Alt, Header, placement).
- ``codec``   Numba get/set of any field, whole-header encode/decode, IPv4
              checksum, prologue writer.
- ``parse``   Numba frame parser filling an int64 descriptor; named statuses.
- ``layers``  Scapy layers generated from ``spec`` and bound for dissection
              (imports Scapy: keep it out of the engine's import path).
- ``frames``  Scapy frame builders for tests and tools.

The parser's cost per frame: ``python bench/parse.py``.

Nothing is imported here so the datapath can use ``spec``/``codec``/``parse``
without paying for Scapy.
"""
