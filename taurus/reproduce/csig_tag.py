"""The CSIG tag a scenario's algorithm puts on its data packets, as one
printable line: the signal type, the format (compact, the 4-byte tag;
wide, the 8-byte tag) and why that format, read from the algorithm's own
declaration (``csig = (type, format)``) so the line says what ran."""

SIGNAL = {"delay": "max(Delay)", "abw": "min(ABW)", "abw_c": "min(ABW/C)", "qdepth": "max(QDepth)"}
BYTES = {"compact": 4, "wide": 8}


def tag_of(alg: str) -> tuple[str, str]:
    """(type, format) of the tag algorithm ``alg`` binds."""
    from taurus.cc_algorithms import registry
    t = registry.lookup(alg).csig
    if t is None:
        raise ValueError(f"algorithm {alg!r} carries no CSIG tag")
    return t


def tag_line(alg: str, why: str) -> str:
    t, fmt = tag_of(alg)
    return f"CSIG tag ({alg}): {SIGNAL[t]}, {fmt} ({BYTES[fmt]} B; the seed's is 4 B): {why}"
