"""Software signal collection (paper §3.3): host samplers, and custom-segment
parsers for tests and tools.

Custom signals: the engine forwards configured feedback segments as EV_CUSTOM
records (``segment`` id, ``length``, then the raw bytes in wire order as
little-endian words ``w0``..``w7``); algorithms read those words in their
``on_custom`` handler.  The parsers here (CUSTOM_PARSERS: csig, int, credit)
turn a batch of such records into named numpy columns, vectorised, never
trusting a length (bad rows get ``valid = False``), for tests and offline
tools; field locations come from taurus.datapath.wire.spec, the single
definition of every wire format.

Host signals: samplers are added on demand (an algorithm's ``samplers``, or
the config's [host.samplers]); each runs at its own period and yields a dict
of numbers.  The agent turns each reading into one EV_HOST record per flow
whose algorithm binds HOST (``host_fields``): ``source`` the sampler's id
(SAMPLER_IDS), ``value`` and ``aux`` two of its numbers as integers:

    sampler        source  value                               aux
    cpu            1       busy share of all CPUs, ppm         iowait share, ppm
    psi_cpu        2       "some" avg10, 1/100 of a percent    "some" stall since the
    psi_memory     3         (PSI's own resolution)              last sample, us
    psi_io         4
    engine_drops   5       rx_nobuf + tx_drop since the last   rx_err + tx_err since the
                           sample, packets                     last sample
    netdev_drops   6       rx_dropped + tx_dropped since the   rx_errors + tx_errors since
                           last sample, packets                the last sample
    cgroup_memory  7       memory in use, bytes                memory.high (v2) or the
                                                               limit (v1), bytes; -1 none

The NIC raises HOST records itself (native and agent flows alike) from its
host model in virtual time (devices/nic/host.py), with the ids of
ccevents.HOST_SOURCES in the same numbering:

    host_buffer     8      host buffer occupancy, bytes        host drops since the last sample
    host_delay      9      delivery delay into memory, ns      host bandwidth left by the hog, bit/s
    peer_host_delay 10     the receiving host's delivery       0
                           delay, echoed in its ACKs, ns
"""
import os

import numpy as np

from taurus.datapath.ccevents import HOST_SOURCES, SAMPLER_IDS
from taurus.datapath.ccshm import CUSTOM_MAX, V0
from taurus.datapath.wire import spec

# ---------------------------------------------------------------- custom parsers
CUSTOM_PARSERS = {}


def register_parser(name):
    def deco(fn):
        CUSTOM_PARSERS[name] = fn
        return fn
    return deco


def raw_bytes(rec: np.ndarray):
    """(uint8[n, CUSTOM_MAX] in wire order, lengths) of EV_CUSTOM records."""
    raw = np.ascontiguousarray(rec[:, V0 + 2:V0 + 2 + CUSTOM_MAX // 8]).view(np.uint8)
    return raw, rec[:, V0 + 1]


def get_cols(raw: np.ndarray, base: np.ndarray, loc) -> np.ndarray:
    """Field ``loc`` (spec location tuple) of the header at byte ``base`` of each row."""
    off, nbytes, shift, width, signed = loc
    rows = np.arange(len(raw))
    start = np.clip(base + off, 0, raw.shape[1] - nbytes)
    v = np.zeros(len(raw), np.int64)
    for k in range(nbytes):
        v = (v << 8) | raw[rows, start + k].astype(np.int64)
    v = (v >> shift) & ((1 << width) - 1) if width < 64 else v
    if signed and width < 64:
        v = np.where(v >= 1 << (width - 1), v - (1 << width), v)
    return v


_CSIG = {"fmt": spec.ACK_CCX_RCSIG_FMT, "t": spec.ACK_CCX_RCSIG_T, "d": spec.ACK_CCX_RCSIG_D,
         "lm": spec.ACK_CCX_RCSIG_LM, "s": spec.ACK_CCX_RCSIG_S,
         "service_time": spec.ACK_CCX_SERVICE_TIME}
_CCX_STATE_OFF = spec.ACK_CCX_CCX_STATE[0]


@register_parser("csig")
def parse_csig(raw, length):
    """CSIG reflected in an ACK_CCX: the 8-byte ccx state, or the whole header."""
    whole = length == spec.ACK_CCX_SIZE
    valid = whole | (length == spec.ACK_CCX_CCX_STATE[1])
    base = np.where(whole, 0, -_CCX_STATE_OFF)
    out = {k: get_cols(raw, base, loc) for k, loc in _CSIG.items()}
    valid &= out["fmt"] != spec.CSIG_NONE
    out["valid"] = valid
    return out


@register_parser("int")
def parse_int(raw, length):
    """HPCC INT trailer: hop 1 .. hop n (8 B each) then the 4-byte tail."""
    n, H = len(raw), spec.INT_MAX_HOPS
    tail = np.clip(length - spec.INTTAIL_SIZE, 0, raw.shape[1] - spec.INTTAIL_SIZE)
    magic = get_cols(raw, tail, spec.INTTAIL_MAGIC)
    nhop = get_cols(raw, tail, spec.INTTAIL_NHOP)
    valid = ((magic == spec.INT_MAGIC) & (nhop <= H)
             & (length == nhop * spec.INTHOP_SIZE + spec.INTTAIL_SIZE))
    nhop = np.where(valid, nhop, 0)
    rates = np.array(spec.INT_RATES_BPS, np.int64)
    out = {k: np.zeros((n, H), np.int64) for k in ("rate_bps", "ts", "tx_bytes", "qlen_bytes")}
    for h in range(H):
        base = np.full(n, h * spec.INTHOP_SIZE)
        present = h < nhop
        out["rate_bps"][:, h] = np.where(present, rates[get_cols(raw, base, spec.INTHOP_RATE_CODE)], 0)
        out["ts"][:, h] = np.where(present, get_cols(raw, base, spec.INTHOP_TS), 0)
        out["tx_bytes"][:, h] = np.where(
            present, get_cols(raw, base, spec.INTHOP_TX_BYTES) * spec.INT_TX_UNIT, 0)
        out["qlen_bytes"][:, h] = np.where(
            present, get_cols(raw, base, spec.INTHOP_QLEN) * spec.INT_QLEN_UNIT, 0)
    out["nhop"], out["valid"] = nhop, valid
    return out


@register_parser("credit")
def parse_credit(raw, length):
    """A credit grant: ACK_CC's 24-bit credit field or CONTROL's 32-bit payload."""
    c24 = get_cols(raw, np.full(len(raw), -spec.ACK_CC_CREDIT[0]), spec.ACK_CC_CREDIT)
    c32 = get_cols(raw, np.full(len(raw), -spec.CONTROL_CTL_PAYLOAD[0]), spec.CONTROL_CTL_PAYLOAD)
    l24, l32 = spec.ACK_CC_CREDIT[1], spec.CONTROL_CTL_PAYLOAD[1]
    return {"credit": np.where(length == l24, c24, c32),
            "valid": (length == l24) | (length == l32)}


# ---------------------------------------------------------------- host samplers
SAMPLERS = {}


def register_sampler(name):
    def deco(cls):
        cls.name = name
        SAMPLERS[name] = cls
        return cls
    return deco


class Unavailable(RuntimeError):
    """The host does not expose what a sampler or action needs."""


class Sampler:
    """Reads something now; ``sample()`` returns a dict of numbers and
    ``fields(values)`` the two an EV_HOST record carries (value, aux)."""
    name = "?"
    period_ns = 10_000_000

    def sample(self) -> dict:
        raise NotImplementedError

    @staticmethod
    def fields(v: dict) -> tuple[int, int]:
        raise NotImplementedError


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        raise Unavailable(f"{path}: {e.strerror}") from None


@register_sampler("cpu")
class CpuSampler(Sampler):
    """/proc/stat: busy and iowait fractions of all CPUs since the last sample."""

    def __init__(self, path="/proc/stat"):
        self.path, self.prev = path, None
        self.prev = self._counters()

    def _counters(self):
        first = _read(self.path).split("\n", 1)[0].split()
        if first[:1] != ["cpu"]:
            raise Unavailable(f"{self.path}: no aggregate cpu line")
        v = [int(x) for x in first[1:9]] + [0] * (8 - len(first[1:9]))
        idle, iowait = v[3], v[4]
        return sum(v), idle + iowait, iowait

    def sample(self):
        now = self._counters()
        dt = max(now[0] - self.prev[0], 1)
        out = {"busy": 1 - (now[1] - self.prev[1]) / dt, "iowait": (now[2] - self.prev[2]) / dt,
               "ticks": dt}
        self.prev = now
        return out

    @staticmethod
    def fields(v):
        return round(v["busy"] * 1e6), round(v["iowait"] * 1e6)


class PsiSampler(Sampler):
    """/proc/pressure/<resource>: some/full avg10/60/300 (%) and stall µs since last."""
    resource = "cpu"

    def __init__(self, path=None):
        self.path = path or f"/proc/pressure/{self.resource}"
        self.prev = self._parse()

    def _parse(self):
        out = {}
        try:
            for line in _read(self.path).splitlines():
                kind, *kv = line.split()
                for item in kv:
                    k, _, v = item.partition("=")
                    out[f"{kind}_{k}"] = float(v) if k != "total" else int(v)
        except ValueError:
            out = {}
        if "some_total" not in out:
            raise Unavailable(f"{self.path}: not a PSI file")
        return out

    def sample(self):
        now = self._parse()
        for kind in ("some", "full"):
            if f"{kind}_total" in now:
                now[f"{kind}_stall_us"] = now[f"{kind}_total"] - self.prev.get(f"{kind}_total", 0)
        self.prev = now
        return now

    @staticmethod
    def fields(v):
        return round(v["some_avg10"] * 100), int(v.get("some_stall_us", 0))


for _res in ("cpu", "memory", "io"):
    register_sampler(f"psi_{_res}")(type(f"Psi{_res.title()}Sampler", (PsiSampler,),
                                         {"resource": _res}))


@register_sampler("engine_drops")
class EngineDropsSampler(Sampler):
    """Drop and error counters of every port of a running engine (and deltas)."""
    KEYS = ("rx_nobuf", "tx_drop", "rx_err", "tx_err")

    def __init__(self, engine: str):
        from taurus.datapath.engine import attach_stats
        self.read = lambda: attach_stats(engine)["ports"]
        self.prev = self._totals()

    def _totals(self):
        try:
            ports = self.read()
        except (OSError, ValueError) as e:
            raise Unavailable(f"engine stats: {e}") from None
        return {k: sum(int(p.get(k, 0)) for p in ports.values()) for k in self.KEYS}

    def sample(self):
        now = self._totals()
        out = dict(now, **{f"{k}_delta": now[k] - self.prev[k] for k in self.KEYS})
        self.prev = now
        return out

    @staticmethod
    def fields(v):
        return (v["rx_nobuf_delta"] + v["tx_drop_delta"], v["rx_err_delta"] + v["tx_err_delta"])


@register_sampler("netdev_drops")
class NetdevDropsSampler(Sampler):
    """A kernel interface's drop/error counters (/sys/class/net/IF/statistics)."""
    KEYS = ("rx_dropped", "tx_dropped", "rx_errors", "tx_errors")

    def __init__(self, iface: str, root: str = "/sys/class/net"):
        self.dir = os.path.join(root, iface, "statistics")
        self.prev = self._totals()

    def _totals(self):
        return {k: int(_read(os.path.join(self.dir, k))) for k in self.KEYS}

    def sample(self):
        now = self._totals()
        out = dict(now, **{f"{k}_delta": now[k] - self.prev[k] for k in self.KEYS})
        self.prev = now
        return out

    @staticmethod
    def fields(v):
        return (v["rx_dropped_delta"] + v["tx_dropped_delta"],
                v["rx_errors_delta"] + v["tx_errors_delta"])


@register_sampler("cgroup_memory")
class CgroupMemorySampler(Sampler):
    """Memory use of a cgroup: v2 memory.current/high/stat, else v1 usage/limit."""
    STAT_KEYS = ("anon", "file", "pgmajfault", "rss", "cache")

    def __init__(self, cgroup: str = "", root: str | None = None):
        from .host_actions import cgroup2_root
        v2 = os.path.join(root or cgroup2_root() or "/sys/fs/cgroup", cgroup.strip("/"))
        v1 = os.path.join("/sys/fs/cgroup/memory", cgroup.strip("/"))
        if os.path.exists(os.path.join(v2, "memory.current")):
            self.dir, self.files = v2, ("memory.current", "memory.high", "memory.stat")
        elif os.path.exists(os.path.join(v1, "memory.usage_in_bytes")):
            self.dir, self.files = v1, ("memory.usage_in_bytes", "memory.limit_in_bytes",
                                        "memory.stat")
        else:
            raise Unavailable(f"no memory controller for cgroup {cgroup!r} (v2 {v2}, v1 {v1})")

    def sample(self):
        cur, lim, stat = (_read(os.path.join(self.dir, f)) for f in self.files)
        out = {"current": int(cur), "high": -1 if lim.strip() == "max" else int(lim)}
        for line in stat.splitlines():
            k, _, v = line.partition(" ")
            if k in self.STAT_KEYS:
                out[k] = int(v)
        return out

    @staticmethod
    def fields(v):
        return int(v["current"]), int(v["high"])


assert set(SAMPLER_IDS) == set(SAMPLERS) | set(HOST_SOURCES)   # ccevents' numbering


def host_fields(name: str, values: dict) -> tuple[int, int, int]:
    """(source, value, aux) of an EV_HOST record for one reading of sampler ``name``."""
    value, aux = SAMPLERS[name].fields(values)
    return SAMPLER_IDS[name], int(value), int(aux)


class SamplerSet:
    """The samplers in use, each with its own period; ``due(now)`` runs the late ones."""

    def __init__(self):
        self.items = {}     # name -> [sampler, period_ns, next_ns]
        self.errors = {}    # name -> count of failed samples

    def add(self, name: str, period_ns: int | None = None, **args) -> Sampler:
        if name in self.items:
            if period_ns:      # the fastest requested period wins
                self.items[name][1] = min(self.items[name][1], period_ns)
            return self.items[name][0]
        if name not in SAMPLERS:
            raise Unavailable(f"unknown host sampler {name!r} (known: {', '.join(sorted(SAMPLERS))})")
        s = SAMPLERS[name](**args)
        self.items[name] = [s, int(period_ns or s.period_ns), 0]
        return s

    def next_due(self) -> int | None:
        return min((it[2] for it in self.items.values()), default=None)

    def due(self, now_ns: int) -> list:
        """(name, values) of every sampler whose period has elapsed."""
        out = []
        for name, it in self.items.items():
            if now_ns >= it[2]:
                it[2] = now_ns + it[1]
                try:
                    out.append((name, it[0].sample()))
                except (Unavailable, OSError, ValueError):
                    self.errors[name] = self.errors.get(name, 0) + 1
        return out
