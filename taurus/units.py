"""Quantities with units, as topology, experiment and switch files write them:
rates ("10Gbit"), delays ("5us") and sizes ("256KB", "64KiB"), to ints in
base units (bit/s, ns, bytes).  A ValueError says what was expected."""
import json
import re
import tomllib


def quote(v) -> str:
    """Values quoted as in the TOML file: "fast", not 'fast'."""
    try:
        return json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(v)


_RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12,
               "bps": 1, "kbps": 10**3, "mbps": 10**6, "gbps": 10**9, "tbps": 10**12}
_DELAY_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9}
_SIZE_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9,
               "kib": 2**10, "mib": 2**20, "gib": 2**30}
_NUM_RE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-zµ]*)\s*\Z")


def _parse_unit(value, units: dict, bare_ok: bool, what: str, example: str,
                allow_zero: bool, hint: str) -> int:
    """Number with a unit -> int in the base unit; ValueError says what was
    expected."""
    expected = f"expected {what} like {quote(example)}, got {quote(value)}"
    if isinstance(value, bool):
        raise ValueError(expected)
    if isinstance(value, int):
        if not bare_ok:
            raise ValueError(expected + " (give a unit)")
        n = value
    elif isinstance(value, str):
        m = _NUM_RE.match(value)
        if not m or m.group(2).lower() not in units:
            raise ValueError(expected + f" (units: {hint})")
        n = round(float(m.group(1)) * units[m.group(2).lower()])
    else:
        raise ValueError(expected)
    if n < 0 or (n == 0 and not allow_zero):
        raise ValueError(expected + (" (must be >= 0)" if allow_zero else " (must be > 0)"))
    return n


def parse_rate(v) -> int:
    """"10Gbit" -> 10_000_000_000 (bit/s); an int is bit/s."""
    return _parse_unit(v, _RATE_UNITS, True, "a rate", "10Gbit", False,
                       "bit, Kbit, Mbit, Gbit, Tbit, or Xbps alike")


def parse_delay(v) -> int:
    """"5us" -> 5000 (ns); an int is ns."""
    return _parse_unit(v, _DELAY_UNITS, True, "a delay", "5us", True, "ns, us, ms, s")


def parse_delay_ps(v) -> int:
    """"1.4ns" -> 1400 (ps), for costs below a nanosecond's resolution; an
    int is ps."""
    return _parse_unit(v, {"ps": 1, **{k: 1000 * n for k, n in _DELAY_UNITS.items()}}, True,
                       "a delay", "1.4ns", True, "ps, ns, us, ms, s")


def parse_size(v) -> int:
    """"256KB" -> 256000, "64KiB" -> 65536 (bytes); an int is bytes."""
    return _parse_unit(v, _SIZE_UNITS, True, "a size", "256KB", False,
                       "B, KB, MB, GB, KiB, MiB, GiB")


def toml_value(text: str):
    """A value written on a command line as TOML reads it (1, 0.5, true,
    "x", [1, 2]); anything else, a bare word like native, as the string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
