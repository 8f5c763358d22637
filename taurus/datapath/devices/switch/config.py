"""Switch features: the schema shared by topology TOML files and the Python
API, validated into plain values in base units (bytes, ns, bit/s).

In a topology file, `[[switches]]` take every key below and `[[links]]`
take the per-port ones (they override the switch's for the ports on that
link)::

    buffer = "1MB"                    # switch: shared buffer (default: sum of port buffers)
    telemetry = "100us"               # switch: sampling interval (off when absent)
    ecn = { k = "30KB" }              # step marking at K ...
    ecn = { kmin = "20KB", kmax = "80KB", pmax = 0.2 }   # ... or RED-like
    csig = { interval = "256us", type = "delay", format = "compact" }  # or true
    int = true                        # HPCC INT on departing frames that ask for it
    src = { threshold = "10KB" }      # Bolt SRC to senders that ask for it (or true)
    pfc = { xoff = "40KB", xon = "20KB", tcd = true, epsilon = 0.05,
            ue = 1, classes = [1], ton_max = "200us" }   # ton_max: override
    trim = "50KB"                     # or { threshold = "50KB", dscp = 46, last_hop_dscp = 47 }
    classes = { high = [46, 48], control_high = true }

CSIG `type`/`format` are what hosts should put in their tags (the switch
handles every type and both formats on whatever arrives).  CSIG
`last_hop = true` (ours): host-facing ports set their locators' top bit and
the other ports clear it, so a sender can tell a last-hop bottleneck
(wire/csig.py lm_last_hop).  A port that
faces a host (its `host_facing` port key, which the fabric builder sets)
trims with `last_hop_dscp` instead of `dscp`, so the receiver can tell a
last-hop trim (NACK TRIMMED_LASTHOP).  TCD needs `ecn`
(its threshold is K, or Kmin).  `false` turns a switch-level feature off on
one link.
"""
from ....errors import ConfigError
from ....units import parse_delay, parse_size

SWITCH_ONLY = ("buffer", "telemetry")
PORT_KEYS = ("ecn", "csig", "int", "pfc", "trim", "classes", "src")
SWITCH_KEYS = SWITCH_ONLY + PORT_KEYS
CSIG_TYPE_NAMES = {"abw": 0, "abw_c": 1, "delay": 2, "qdepth": 3}
CSIG_FORMATS = {"compact": 1, "wide": 2}
DEFAULT_HIGH_DSCP = (46, 48)
DEFAULT_TRIM_DSCP = 46
DEFAULT_LASTHOP_DSCP = 47       # the host NIC's default last_hop_dscp too (nic/setup.py)
DEFAULT_CSIG_INTERVAL = 256_000
DEFAULT_EPSILON = 0.05
DEFAULT_SRC_THRESHOLD = 10_000  # Bolt's ns-3 experiments (ccThreshold 10KB; the queue disc's own default is 62KB)


class FeatureError(ConfigError):
    """A bad switch feature; str() is "<field>: <msg>" (the caller knows the
    file, see topology.py)."""

    def __init__(self, field, msg):
        super().__init__(msg, key=field)

    @property
    def field(self) -> str:
        return self.key

    @property
    def msg(self) -> str:
        return self.message


def size_at(v, f):
    """A size in bytes; a bad one is a FeatureError naming field `f`."""
    try:
        return parse_size(v)
    except ValueError as e:
        raise FeatureError(f, str(e)) from None


def delay_at(v, f):
    """A delay in ns; a bad one is a FeatureError naming field `f`."""
    try:
        return parse_delay(v)
    except ValueError as e:
        raise FeatureError(f, str(e)) from None


def _table(v, f, keys):
    if not isinstance(v, dict):
        raise FeatureError(f, f"expected a table like {{ {keys[0]} = ... }}, got {v!r}")
    for k in v:
        if k not in keys:
            raise FeatureError(f"{f}.{k}", f"unknown key (expected one of: {', '.join(keys)})")
    return v


def _bool(v, f):
    if not isinstance(v, bool):
        raise FeatureError(f, f"expected true or false, got {v!r}")
    return v


def _ecn(v, f):
    if v is False:
        return None
    _table(v, f, ("k", "kmin", "kmax", "pmax"))
    if "k" in v:
        if set(v) != {"k"}:
            raise FeatureError(f, "give either k (step) or kmin, kmax, pmax (RED), not both")
        return {"k": size_at(v["k"], f"{f}.k")}
    for k in ("kmin", "kmax", "pmax"):
        if k not in v:
            raise FeatureError(f"{f}.{k}", "missing (RED needs kmin, kmax and pmax; step needs k)")
    lo, hi = size_at(v["kmin"], f"{f}.kmin"), size_at(v["kmax"], f"{f}.kmax")
    if hi <= lo:
        raise FeatureError(f"{f}.kmax", f"must be above kmin ({lo} B), got {hi} B")
    pm = v["pmax"]
    if isinstance(pm, bool) or not isinstance(pm, (int, float)) or not 0 < pm <= 1:
        raise FeatureError(f"{f}.pmax", f"expected a probability in (0, 1], got {pm!r}")
    return {"kmin": lo, "kmax": hi, "pmax": float(pm)}


def _csig(v, f):
    if v is False:
        return None
    if v is True:
        v = {}
    _table(v, f, ("interval", "type", "format", "last_hop"))
    out = {"interval_ns": delay_at(v.get("interval", DEFAULT_CSIG_INTERVAL), f"{f}.interval"),
           "type": v.get("type", "delay"), "format": v.get("format", "compact"),
           "last_hop": _bool(v.get("last_hop", False), f"{f}.last_hop")}
    if out["interval_ns"] <= 0:
        raise FeatureError(f"{f}.interval", "must be > 0")
    if not isinstance(out["type"], str) or out["type"] not in CSIG_TYPE_NAMES:
        raise FeatureError(f"{f}.type", f"expected one of {', '.join(CSIG_TYPE_NAMES)}, got {out['type']!r}")
    if not isinstance(out["format"], str) or out["format"] not in CSIG_FORMATS:
        raise FeatureError(f"{f}.format", f"expected compact or wide, got {out['format']!r}")
    return out


def _pfc(v, f):
    if v is False:
        return None
    _table(v, f, ("xoff", "xon", "tcd", "epsilon", "ue", "classes", "ton_max"))
    for k in ("xoff", "xon"):
        if k not in v:
            raise FeatureError(f"{f}.{k}", "missing (PFC needs xoff and xon)")
    xoff, xon = size_at(v["xoff"], f"{f}.xoff"), size_at(v["xon"], f"{f}.xon")
    if xon >= xoff:
        raise FeatureError(f"{f}.xon", f"must be below xoff ({xoff} B), got {xon} B")
    eps = v.get("epsilon", DEFAULT_EPSILON)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise FeatureError(f"{f}.epsilon", f"expected a number in (0, 1), got {eps!r}")
    ue = v.get("ue", 1)
    if ue not in (1, 2):
        raise FeatureError(f"{f}.ue", f"expected an ECT codepoint, 1 (ECT(1)) or 2 (ECT(0)), got {ue!r}")
    cls = v.get("classes", [1])
    if not isinstance(cls, list) or not cls or any(c not in (0, 1) for c in cls):
        raise FeatureError(f"{f}.classes", f"expected a list of classes from [0, 1] (0 high, 1 data), got {cls!r}")
    out = {"xoff": xoff, "xon": xon, "tcd": _bool(v.get("tcd", False), f"{f}.tcd"),
           "epsilon": float(eps), "ue": ue, "classes": sorted(set(cls))}
    if "ton_max" in v:
        out["ton_max_ns"] = delay_at(v["ton_max"], f"{f}.ton_max")
    return out


def _trim(v, f):
    if v is False:
        return None
    if isinstance(v, dict):
        _table(v, f, ("threshold", "dscp", "last_hop_dscp"))
        if "threshold" not in v:
            raise FeatureError(f"{f}.threshold", "missing (expected a size like \"50KB\")")
        out = {"threshold": size_at(v["threshold"], f"{f}.threshold")}
        for k, dflt in (("dscp", DEFAULT_TRIM_DSCP), ("last_hop_dscp", DEFAULT_LASTHOP_DSCP)):
            d = v.get(k, dflt)
            if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < 64:
                raise FeatureError(f"{f}.{k}", f"expected a DSCP 0..63, got {d!r}")
            out[k] = d
        return out
    return {"threshold": size_at(v, f), "dscp": DEFAULT_TRIM_DSCP,
            "last_hop_dscp": DEFAULT_LASTHOP_DSCP}


def _src(v, f):
    """Bolt SRC: the queue (bytes) at which a data packet's arrival sends
    its sender an SRC."""
    if v is False:
        return None
    if v is True:
        v = {}
    _table(v, f, ("threshold",))
    th = size_at(v.get("threshold", DEFAULT_SRC_THRESHOLD), f"{f}.threshold")
    if th <= 0:
        raise FeatureError(f"{f}.threshold", "must be > 0")
    return {"threshold": th}


def _classes(v, f):
    _table(v, f, ("high", "control_high"))
    hi = v.get("high", list(DEFAULT_HIGH_DSCP))
    if not isinstance(hi, list) or any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < 64
                                       for x in hi):
        raise FeatureError(f"{f}.high", f"expected a list of DSCP values 0..63, got {hi!r}")
    return {"high": sorted(set(hi)),
            "control_high": _bool(v.get("control_high", True), f"{f}.control_high")}


def default_classes() -> dict:
    """The traffic classes of a port whose config names none."""
    return _classes({}, "classes")


_PORT = {"ecn": _ecn, "csig": _csig, "int": lambda v, f: _bool(v, f), "pfc": _pfc,
         "trim": _trim, "classes": _classes, "src": _src}


def validate(raw: dict, field: str, switch_level: bool) -> dict:
    """Validated features from a switch (switch_level) or link table; keys
    outside the feature set are left for the caller to judge."""
    out = {}
    for k in (SWITCH_KEYS if switch_level else PORT_KEYS):
        if k not in raw:
            continue
        f = f"{field}.{k}"
        if k == "buffer":
            out[k] = size_at(raw[k], f)
        elif k == "telemetry":
            out[k] = delay_at(raw[k], f)
            if out[k] <= 0:
                raise FeatureError(f, "must be > 0")
        else:
            out[k] = _PORT[k](raw[k], f)
    return out


def check_consistent(feat: dict, field: str) -> None:
    """Cross-feature rules on the merged per-port features."""
    pfc = feat.get("pfc")
    if pfc and pfc["tcd"] and not feat.get("ecn"):
        raise FeatureError(f"{field}.pfc.tcd", "TCD needs ecn (its threshold is k, or kmin)")


def merge(*levels) -> dict:
    """Later levels override earlier ones, key by key."""
    out = {}
    for lv in levels:
        out.update({k: v for k, v in (lv or {}).items() if k in PORT_KEYS})
    return out
