"""The experiment file (TOML).  Every table but [experiment] and [topology]
is optional; unknown keys and bad values are errors that name the key, as
``<file>: <key>: <what was expected>``.

    [experiment]
    name = "dctcp-dumbbell"        # letters, digits, "_" and "-"
    description = "..."            # optional, one line
    duration = "10ms"              # ns, us, ms, s
    seed = 1                       # drives every random draw (same seed, same plan)
    step = "10us"                  # the runner acts at multiples of step: agents, app events
    stepping = "event"             # ... only where something is due | "fixed": at every one
    sample = "100us"               # time-series period (a multiple of step)
    warmup = "2ms"                 # left out of goodput and fairness aggregates
    frames = 131072                # the engine's packet pool (frames of 2 KB, never fewer
                                   #   than the runner's default): what every queue, link and
                                   #   NIC holds at once; hundreds of hosts and deep buffers
                                   #   may need more (NICs count tx_nobuf when it runs out)

    [topology]                     # a shipped topology ... (`taurus topo list`)
    builtin = "dumbbell"
    # file = "my_topo.toml"        # ... or a topology file (relative to this file),
    #                              # ... or a generator: fat_tree = { k = 4 } or
    #                              #   leaf_spine = { leaves = 4, spines = 2, hosts_per_leaf = 8 }
    #                              #   (tools/topogen.py), with a name
    #                              # ... or neither: inline name/hosts/switches/links
    defaults = { rate = "10Gbit" } # parameters: over the topology's [defaults]
    [[topology.switches]]          # with a base topology: the named switch's features
    name = "s1"
    ecn = { k = "20KB" }           # switch features (switch/config.py): ecn, csig,
    [[topology.links]]             #   int, pfc, trim, classes, buffer, telemetry
    endpoints = ["s1", "h3"]       # with a base: the link between these two nodes;
    rate = "2Gbit"                 #   its rate/delay/buffer/mtu and per-port features

    [cc]                           # every sending host, unless overridden
    algorithm = "dctcp"            # a built-in or plugin name, "path/to/file.py:Class"
                                   #   (relative to this file) or "module:Class"
    mode = "agent"                 # agent | per-event | native | static
    params = {}                    # the algorithm's parameters
    mss = 1024                     # bytes per packet payload
    cwnd = "20KB"                  # initial window (0: none)
    rate = "0"                     # initial pacing rate (0: unpaced)
    jit = true                     # agent modes: the algorithm compiled (false: its
                                   #   handlers as plain Python; per host, not per flow;
                                   #   false with mode native is an error)
    on_fault = "fail"              # a handler that raises fails the run; "fallback":
                                   #   the event's decision is dropped, faults are counted
    separation = "none"            # virtual clock, agent modes: "pcie" models the NIC-host
                                   #   link (Separation); or { report = "500ns", decision =
                                   #   "500ns", per_message = "1.4ns" }; "none": the grid
    receiver = ""                  # the receiving host's algorithm (role "receiver", native
    receiver_params = {}           #   in its NIC); flows to it are credit (RCCC) flows
    receiver_idle = "500us"        # its senders leave (LEAVE) after this long silent
    receiver_init_credit = "auto"  # credit a new sender starts with (auto: one BDP of the
                                   #   receiver's link, RTT = 4 x its delay, >= 2 MSS)
    ack_every = 4                  # the host's NIC ACKs every N packets it receives or
    ack_delay = "2us"              #   this long after the first unacked (the NIC's
                                   #   defaults); fewer ACKs, fewer veth crossings on
                                   #   the wall clock
    [cc.hosts.h2]                  # per host: the same keys
    mode = "native"

    [[traffic]]                    # kinds: bulk, incast, rpc, workload
    kind = "bulk"                  # long flows, one per sender (parallel = N: N each)
    from = ["h1", "h2"]            # a host or a list
    to = "h3"
    start = "0ms"                  # default 0
    stop = "10ms"                  # default: the end of the run
    size = "500KB"                 # optional: a finite flow (FCT measured)
    cc = { mode = "native" }       # per flow: algorithm, mode, params, cwnd, rate

    [[traffic]]
    kind = "incast"                # N:1, every sender sends `size` at once
    from = ["h1", "h2"]
    to = "h9"
    size = "500KB"
    start = "1ms"
    rounds = 1                     # repeat every `interval`
    interval = "1ms"

    [[traffic]]
    kind = "rpc"                   # closed loop: a new request when the last is answered
    from = ["h1"]                  # clients
    to = "h3"                      # server
    count = 1000                   # requests per client
    request = "64B"
    response = "1KB"               # 0: one-way messages (FCT = until acked)
    concurrency = 1                # requests in flight per client
    start = "1ms"

    [[traffic]]
    kind = "workload"              # open loop: Poisson arrivals, sizes from a CDF
    from = ["h1", "h2"]
    to = ["h3"]                    # each flow to a random receiver (not itself)
    cdf = "websearch"              # websearch | hadoop | cachefollower | a CSV file
    load = 0.5                     # of each sender's link rate
    start = "0ms"
    stop = "5ms"
    max_flows = 1000               # a cap on the plan (error if exceeded)
    scale = 1.0                    # multiply drawn sizes (shrink a CDF to a short run)

    [host_model]                   # the host behind each receiving NIC (nic/host.py)
    host_bw = "8Gbit"              # delivery into host memory (0: unlimited, no model)
    buffer = "256KB"               # host buffer; what overflows it is a counted host drop
    sample = "10us"                # HOST sampling period (HOST records, the ACKs' echo)
    hosts = ["h3"]                 # default: every host

    [[host_load]]                  # a CPU/memory hog in a cgroup (namespaces only) ...
    host = "h3"
    cpu = 1                        # spinning workers
    memory = "512MB"               # one worker streaming over this much memory
    share = 0.5                    # ... and/or, in the host model (any clock), a hog taking
                                   #   this share of host_bw from start to stop
    start = "0s"
    stop = "..."                   # default: the end
    tool = "auto"                  # auto (stress-ng if installed) | stress-ng | builtin
    cpu_max = 0.5                  # optional cgroup limit, in CPUs
    memory_max = "1GB"             # optional cgroup limit

    [outputs]
    csv = true
    plots = true
    size_bins = ["0B", "10KB", "100KB", "1MB", "1GB"]   # FCT slowdown bins
"""
from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field

from taurus import errors, units as U
from taurus.tools import topogen, topology as T

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*\Z")
MODES = ("agent", "per-event", "native", "static")
KINDS = ("bulk", "incast", "rpc", "workload")
_REQ = object()


class ExperimentError(errors.ConfigError):
    """A bad experiment file; str() is "<source>: <key>: <message>"."""

    def __init__(self, source: str, key: str | None, message: str):
        super().__init__(message, file=source, key=key)

    @property
    def source(self) -> str:
        return self.file


# ---------------------------------------------------------------- plain values

@dataclass(frozen=True)
class Separation:
    """The NIC-host separation model (virtual clock, agent modes): a decision
    lands report + decision + n x per_message after the publish of n records
    that caused it (Engine.separate_agents), instead of at the runner's next
    step.  The "pcie" defaults: the TAURUS paper's "1 us PCIe latency" between
    the NIC and the host, as its simulations model it after Neugebauer et al.,
    "Understanding PCIe performance for end host networking" (SIGCOMM'18),
    split evenly between a record's DMA write to the host and the decision's
    write back; per message, the bus time of one 64-byte record plus 24 bytes
    of TLP header and framing at PCIe Gen5 x16 (~63 GB/s), the paper's NIC."""
    report: int = 500              # ns
    decision: int = 500            # ns
    per_message_ps: int = 1400     # ps

    @property
    def latency(self) -> int:
        return self.report + self.decision


SEPARATIONS = {"pcie": Separation()}


@dataclass
class CcSpec:
    algorithm: str = "dctcp"
    mode: str = "agent"
    params: dict = field(default_factory=dict)
    mss: int = 1024
    cwnd: int = 20 * 1024
    rate: int = 0
    jit: bool = True                # the host's agent: [agent] jit
    on_fault: str = "fail"          # a handler that raises: fail the run | "fallback": go on
    separation: Separation | None = None   # the run's NIC-host model ([cc] only)
    receiver: str = ""              # the host's receiver algorithm ("" none)
    receiver_params: dict = field(default_factory=dict)
    receiver_idle: int = 500_000    # ns: its senders leave after this long silent (0: never)
    receiver_init_credit: int = 0   # bytes a new credit sender starts with (0: auto, a BDP)
    ack_every: int | None = None    # the host NIC ACKs every N packets (None: the NIC's default)
    ack_delay: int | None = None    # ... or this many ns after the first unacked (None: default)


@dataclass
class Traffic:
    kind: str
    key: str                        # "traffic[i]", for messages and labels
    src: list[str]
    dst: list[str]
    start: int = 0
    stop: int | None = None
    size: int | None = None
    rounds: int = 1
    interval: int = 0
    count: int = 0
    request: int = 0
    response: int = 0
    concurrency: int = 1
    parallel: int = 1               # bulk: flows per sender (iperf's -P)
    cdf: str = ""
    load: float = 0.0
    max_flows: int = 1000
    scale: float = 1.0
    cc: dict = field(default_factory=dict)


@dataclass
class HostModel:
    host_bw: int = 0               # bit/s into host memory (0: no model)
    buffer: int = 256 << 10        # bytes
    sample: int = 10_000           # ns between HOST samples


@dataclass
class HostLoad:
    host: str
    cpu: int = 0
    memory: int = 0
    share: float = 0.0             # of the host model's host_bw, from start to stop
    start: int = 0
    stop: int | None = None
    tool: str = "auto"
    cpu_max: float | None = None
    memory_max: int | None = None


@dataclass
class Experiment:
    name: str
    source: str
    topo: T.Topology
    duration: int
    seed: int = 1
    step: int = 10_000
    stepping: str = "event"
    sample: int = 100_000
    warmup: int = 0
    frames: int = 0                 # the engine's pool; 0: engine_limits' default
    description: str = ""
    cc: CcSpec = field(default_factory=CcSpec)
    cc_hosts: dict[str, CcSpec] = field(default_factory=dict)
    traffic: list[Traffic] = field(default_factory=list)
    host_load: list[HostLoad] = field(default_factory=list)
    host_model: dict[str, HostModel] = field(default_factory=dict)   # per host
    csv: bool = True
    plots: bool = True
    size_bins: list[int] = field(default_factory=lambda: [0, 10_000, 100_000, 1_000_000, 10**9])

    def host_cc(self, host: str) -> CcSpec:
        return self.cc_hosts.get(host, self.cc)


# ---------------------------------------------------------------- reading tables

class _Table:
    """Take keys out of one TOML table; close() rejects what is left."""

    def __init__(self, src: str, key: str, raw, allowed: tuple[str, ...]):
        if not isinstance(raw, dict):
            raise ExperimentError(src, key, f"expected a table, got {U.quote(raw)}")
        self.src, self.key, self.raw, self.allowed = src, key, raw, allowed
        for k in raw:
            if k not in allowed:
                raise ExperimentError(src, self.sub(k), f"unknown key (expected one of: "
                                                        f"{', '.join(allowed)})")

    def sub(self, k: str) -> str:
        return f"{self.key}.{k}" if self.key else k

    def err(self, k: str, msg: str) -> ExperimentError:
        return ExperimentError(self.src, self.sub(k), msg)

    def get(self, k: str, conv, default=_REQ):
        if k not in self.raw:
            if default is _REQ:
                raise self.err(k, "missing")
            return default
        try:
            return conv(self.raw[k])
        except ValueError as e:
            raise self.err(k, str(e)) from None


def _str(v) -> str:
    if not isinstance(v, str) or not v:
        raise ValueError(f"expected a non-empty string, got {U.quote(v)}")
    return v


def _str0(v) -> str:
    if not isinstance(v, str):
        raise ValueError(f"expected a string, got {U.quote(v)}")
    return v


def _bool(v) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expected true or false, got {U.quote(v)}")
    return v


def _int(lo: int, hi: int | None = None):
    def conv(v) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
            rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise ValueError(f"expected an integer {rng}, got {U.quote(v)}")
        return v
    return conv


def _float(lo: float, hi: float, lo_open: bool = True):
    def conv(v) -> float:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if not ok or v > hi or v < lo or (lo_open and v == lo):
            raise ValueError(f"expected a number in {'(' if lo_open else '['}{lo}, {hi}], "
                             f"got {U.quote(v)}")
        return float(v)
    return conv


def _choice(options):
    def conv(v) -> str:
        if v not in options:
            raise ValueError(f"expected one of {', '.join(map(U.quote, options))}, got {U.quote(v)}")
        return v
    return conv


_ZERO_RE = re.compile(r"\s*0*\.?0*\s*[A-Za-zµ]*\s*\Z")


def _zero(v) -> bool:
    """0, "0", "0B", "0ms": the unit parsers refuse zero, these keys allow it."""
    return (v == 0 and not isinstance(v, bool)) or (isinstance(v, str) and "0" in v
                                                    and bool(_ZERO_RE.match(v)))


def _size0(v) -> int:
    return 0 if _zero(v) else U.parse_size(v)


def _auto_size(v) -> int:
    return 0 if v == "auto" else _size0(v)


def _rate0(v) -> int:
    return 0 if _zero(v) else U.parse_rate(v)


def _delay0(v) -> int:
    return 0 if _zero(v) else U.parse_delay(v)


def _dict(v) -> dict:
    if not isinstance(v, dict):
        raise ValueError(f"expected a table, got {U.quote(v)}")
    return dict(v)


# ---------------------------------------------------------------- sections

_CC_KEYS = ("algorithm", "mode", "params", "mss", "cwnd", "rate", "jit", "on_fault", "receiver",
            "receiver_params", "receiver_idle", "receiver_init_credit", "separation",
            "ack_every", "ack_delay")
ON_FAULT = ("fail", "fallback")
_FLOW_CC_KEYS = ("algorithm", "mode", "params", "cwnd", "rate")   # mss is the host NIC's


def _separation(v) -> Separation | None:
    if v is False or v == "none":
        return None
    if isinstance(v, str):
        if v not in SEPARATIONS:
            raise ValueError(f"expected {' or '.join(map(U.quote, ['none', *SEPARATIONS]))} or a "
                             f"table {{ report, decision, per_message }}, got {U.quote(v)}")
        return SEPARATIONS[v]
    if not isinstance(v, dict):
        raise ValueError(f"expected \"pcie\", \"none\" or a table, got {U.quote(v)}")
    unknown = set(v) - {"report", "decision", "per_message"}
    if unknown:
        raise ValueError(f"unknown key {U.quote(sorted(unknown)[0])} (known: report, decision, "
                         f"per_message)")
    d = SEPARATIONS["pcie"]
    s = Separation(report=U.parse_delay(v.get("report", d.report)),
                   decision=U.parse_delay(v.get("decision", d.decision)),
                   per_message_ps=U.parse_delay_ps(v["per_message"]) if "per_message" in v
                   else d.per_message_ps)
    if s.latency == 0:
        raise ValueError("report + decision must be > 0 (\"none\" turns the model off)")
    return s


def _cc(src, key, raw, base: CcSpec, keys=_CC_KEYS) -> CcSpec:
    t = _Table(src, key, raw, keys + (("hosts",) if key == "cc" else ()))
    if key != "cc" and "separation" in raw:
        raise t.err("separation", "is the run's: set it in [cc]")
    return CcSpec(algorithm=t.get("algorithm", _str, base.algorithm),
                  mode=t.get("mode", _choice(MODES), base.mode),
                  params=t.get("params", _dict, dict(base.params)),
                  mss=t.get("mss", _int(64, 9000), base.mss),
                  cwnd=t.get("cwnd", _size0, base.cwnd),
                  rate=t.get("rate", _rate0, base.rate),
                  jit=t.get("jit", _bool, base.jit),
                  on_fault=t.get("on_fault", _choice(ON_FAULT), base.on_fault),
                  separation=t.get("separation", _separation, base.separation),
                  receiver=t.get("receiver", _str0, base.receiver),
                  receiver_params=t.get("receiver_params", _dict, dict(base.receiver_params)),
                  receiver_idle=t.get("receiver_idle", _delay0, base.receiver_idle),
                  receiver_init_credit=t.get("receiver_init_credit", _auto_size,
                                             base.receiver_init_credit),
                  ack_every=t.get("ack_every", _int(1, 1 << 16), base.ack_every),
                  ack_delay=t.get("ack_delay", _delay0, base.ack_delay))


def cc_table(path: str) -> CcSpec:
    """The [cc] table of an experiment file (or a file that is just one),
    per-host overrides left out: what `taurus perf --cc-config` takes."""
    data = read_toml(path)
    raw = data.get("cc", data)
    if not isinstance(raw, dict):
        raise ExperimentError(path, "cc", "expected a table")
    return _cc(path, "cc", {k: v for k, v in raw.items() if k != "hosts"}, CcSpec())


def _hosts(topo: T.Topology, one: bool):
    hosts = set(topo.hosts)

    def conv(v):
        vs = [v] if isinstance(v, str) else v
        if not isinstance(vs, list) or not vs or not all(isinstance(x, str) for x in vs):
            raise ValueError(f"expected {'a host name' if one else 'a host name or a list of them'}"
                             f", got {U.quote(v)}")
        if one and len(vs) != 1:
            raise ValueError(f"expected one host name, got {U.quote(v)}")
        for x in vs:
            if x not in hosts:
                raise ValueError(f"unknown host {U.quote(x)} (hosts: {', '.join(topo.hosts)})")
        if len(set(vs)) != len(vs):
            raise ValueError(f"a host is listed twice in {U.quote(v)}")
        return vs
    return conv


_TRAFFIC_KEYS = {
    "bulk": ("kind", "from", "to", "start", "stop", "size", "parallel", "cc"),
    "incast": ("kind", "from", "to", "start", "size", "rounds", "interval", "cc"),
    "rpc": ("kind", "from", "to", "start", "stop", "count", "request", "response",
            "concurrency", "cc"),
    "workload": ("kind", "from", "to", "start", "stop", "cdf", "load", "max_flows", "scale",
                 "cc"),
}


def _traffic(src, key, raw, topo, duration, base_dir) -> Traffic:
    if not isinstance(raw, dict):
        raise ExperimentError(src, key, f"expected a table, got {U.quote(raw)}")
    kind = _Table(src, key, {"kind": raw.get("kind")}, ("kind",)).get("kind", _choice(KINDS))
    t = _Table(src, key, raw, _TRAFFIC_KEYS[kind])
    tr = Traffic(kind=kind, key=key, src=t.get("from", _hosts(topo, False)),
                 dst=t.get("to", _hosts(topo, kind != "workload")),
                 start=t.get("start", _delay0, 0))
    if kind != "incast":
        tr.stop = t.get("stop", _delay0, None)
        if tr.stop is not None and tr.stop <= tr.start:
            raise t.err("stop", f"must come after start ({tr.start} ns), got {tr.stop} ns")
    if tr.start >= duration:
        raise t.err("start", f"must be before the end of the run ({duration} ns)")
    if kind != "workload":
        for s in tr.src:
            if s in tr.dst:
                raise t.err("from", f"host {s!r} sends to itself")
    if kind == "bulk":
        tr.size = t.get("size", U.parse_size, None)
        tr.parallel = t.get("parallel", _int(1, 1_000_000), 1)
    elif kind == "incast":
        tr.size = t.get("size", U.parse_size)
        tr.rounds = t.get("rounds", _int(1, 10_000), 1)
        tr.interval = t.get("interval", U.parse_delay, 0 if tr.rounds == 1 else _REQ)
    elif kind == "rpc":
        tr.count = t.get("count", _int(1, 10_000_000))
        tr.request = t.get("request", U.parse_size)
        tr.response = t.get("response", _size0, 0)
        tr.concurrency = t.get("concurrency", _int(1, 64), 1)
    else:
        name = t.get("cdf", _str)
        from taurus.tools.workload import SHIPPED
        if name not in SHIPPED:
            name = name if os.path.isabs(name) else os.path.join(base_dir, name)
            if not os.path.isfile(name):
                raise t.err("cdf", f"expected {', '.join(SHIPPED)} or a CSV file, got "
                                   f"{U.quote(raw['cdf'])} (no such file)")
        tr.cdf = name
        tr.load = t.get("load", _float(0.0, 1.0))
        tr.max_flows = t.get("max_flows", _int(1, 1_000_000), 1000)
        tr.scale = t.get("scale", _float(0.0, 1.0), 1.0)
        if len(tr.dst) == 1 and tr.dst == tr.src:
            raise t.err("to", "every flow needs a receiver other than its sender")
    tr.cc = t.get("cc", _dict, {})
    if tr.cc:
        _cc(src, f"{key}.cc", tr.cc, CcSpec(), _FLOW_CC_KEYS)     # checked here, applied later
    return tr


def _host_load(src, key, raw, topo, duration) -> HostLoad:
    t = _Table(src, key, raw, ("host", "cpu", "memory", "share", "start", "stop", "tool",
                               "cpu_max", "memory_max"))
    h = HostLoad(host=t.get("host", _hosts(topo, True))[0],
                 cpu=t.get("cpu", _int(0, 256), 0), memory=t.get("memory", _size0, 0),
                 share=t.get("share", _float(0.0, 1.0, lo_open=False), 0.0),
                 start=t.get("start", _delay0, 0), stop=t.get("stop", _delay0, None),
                 tool=t.get("tool", _choice(("auto", "stress-ng", "builtin")), "auto"),
                 cpu_max=t.get("cpu_max", _float(0.0, 256.0), None),
                 memory_max=t.get("memory_max", U.parse_size, None))
    if not h.cpu and not h.memory and not h.share:
        raise t.err("cpu", "a host load needs cpu workers, memory or a share (or several)")
    if h.start >= duration:
        raise t.err("start", f"must be before the end of the run ({duration} ns)")
    return h


def _host_model(src, raw, topo) -> dict[str, HostModel]:
    t = _Table(src, "host_model", raw, ("host_bw", "buffer", "sample", "hosts"))
    m = HostModel(host_bw=t.get("host_bw", _rate0, 0),
                  buffer=t.get("buffer", U.parse_size, HostModel.buffer),
                  sample=t.get("sample", U.parse_delay, HostModel.sample))
    hosts = t.get("hosts", _hosts(topo, False), list(topo.hosts))
    return {h: m for h in hosts} if m.host_bw else {}


def _check_hogs(src, x) -> None:
    """A hog's share needs its host's model; one such window per host."""
    seen = set()
    for i, h in enumerate(x.host_load):
        if not h.share:
            continue
        k = f"host_load[{i}].share"
        if h.host not in x.host_model:
            raise ExperimentError(src, k, f"needs a [host_model] with host_bw > 0 on {h.host}")
        if h.host in seen:
            raise ExperimentError(src, k, f"one hog share per host ({h.host} has two)")
        seen.add(h.host)


# ---------------------------------------------------------------- topology

_TOPO_KEYS = ("builtin", "file", "name", "allow_jumbo", *topogen.GENERATORS, "defaults", "hosts",
              "switches", "links")


def _topology(src, raw, base_dir) -> T.Topology:
    t = _Table(src, "topology", raw, _TOPO_KEYS)
    builtin, path = t.get("builtin", _str, None), t.get("file", _str, None)
    if builtin and path:
        raise t.err("file", "give builtin or file, not both")
    gens = [g for g in topogen.GENERATORS if g in raw]
    if gens and (builtin or path):
        raise t.err(gens[0], f"give builtin, file or {gens[0]}, not several")
    if builtin or path:
        if builtin:
            path = T.builtin(builtin)
            if not os.path.isfile(path):
                have = sorted(f[:-5] for f in os.listdir(os.path.dirname(path)) if f.endswith(".toml"))
                raise t.err("builtin", f"unknown topology {builtin!r} (shipped: {', '.join(have)})")
        elif not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise t.err("builtin" if builtin else "file", f"cannot read {path}: {e}") from None
        for k in ("name", "allow_jumbo"):
            if k in raw:
                data.setdefault("topology", {})[k] = raw[k]
        _merge_params(t, data, raw)
    else:
        data = {"topology": {k: raw[k] for k in ("name", "allow_jumbo", *gens) if k in raw}}
        if "name" not in raw:
            raise t.err("name", "missing (or give builtin = \"...\" or file = \"...\")")
        for k in ("defaults", "hosts", "switches", "links"):
            if k in raw:
                data[k] = raw[k]
    try:
        return T.from_dict(data, source=src)
    except T.TopologyError as e:
        raise ExperimentError(src, f"topology.{e.field}" if e.field else "topology",
                              e.message) from None


def _merge_params(t: _Table, data: dict, raw: dict) -> None:
    """Parameters over a base topology: defaults, switch features, link values."""
    if "hosts" in raw:
        raise t.err("hosts", "hosts come from the base topology (drop builtin/file to inline)")
    if "defaults" in raw:
        if not isinstance(raw["defaults"], dict):
            raise t.err("defaults", "expected a table")
        data["defaults"] = {**data.get("defaults", {}), **raw["defaults"]}
    try:
        topogen.overlay(data, raw)
    except topogen.GenError as e:
        raise t.err(e.field, e.message) from None


# ---------------------------------------------------------------- the file

_TOP = ("experiment", "topology", "cc", "traffic", "host_model", "host_load", "outputs")


def from_dict(data: dict, source: str = "<dict>", base_dir: str = ".") -> Experiment:
    src = source
    top = _Table(src, "", data, _TOP)
    if "experiment" not in data:
        raise ExperimentError(src, "experiment", "missing [experiment] table")
    if "topology" not in data:
        raise ExperimentError(src, "topology", "missing [topology] table")
    e = _Table(src, "experiment", data["experiment"],
               ("name", "description", "duration", "seed", "step", "stepping", "sample",
                "warmup", "frames"))
    name = e.get("name", _str)
    if not _NAME_RE.match(name):
        raise e.err("name", f"expected letters, digits, '_' and '-', got {U.quote(name)}")
    topo = _topology(src, data["topology"], base_dir)
    x = Experiment(name=name, source=src, topo=topo, duration=e.get("duration", U.parse_delay),
                   description=e.get("description", str, ""),
                   seed=e.get("seed", _int(0, 2**63 - 1), 1),
                   step=e.get("step", U.parse_delay, 10_000),
                   stepping=e.get("stepping", _choice(("event", "fixed")), "event"))
    x.sample = e.get("sample", U.parse_delay, max(x.step, 100_000 // x.step * x.step))
    x.warmup = e.get("warmup", _delay0, 0)
    x.frames = e.get("frames", _int(1024, 1 << 24), 0)
    if x.sample % x.step:
        raise e.err("sample", f"must be a multiple of step ({x.step} ns)")
    if x.step > x.duration:
        raise e.err("step", "must not exceed the duration")
    if x.warmup >= x.duration:
        raise e.err("warmup", "must be shorter than the duration")
    if "cc" in data:
        x.cc = _cc(src, "cc", data["cc"], CcSpec())
        hosts = _Table(src, "cc", data["cc"], _CC_KEYS + ("hosts",)).get("hosts", _dict, {})
        for h, raw in hosts.items():
            if h not in topo.hosts:
                raise ExperimentError(src, f"cc.hosts.{h}", f"unknown host (hosts: "
                                                            f"{', '.join(topo.hosts)})")
            x.cc_hosts[h] = _cc(src, f"cc.hosts.{h}", raw, x.cc)
    base_dir = base_dir or "."
    traffic = top.get("traffic", lambda v: v if isinstance(v, list) else _bad_array("traffic"), [])
    x.traffic = [_traffic(src, f"traffic[{i}]", t, topo, x.duration, base_dir)
                 for i, t in enumerate(traffic)]
    loads = top.get("host_load", lambda v: v if isinstance(v, list) else _bad_array("host_load"), [])
    x.host_load = [_host_load(src, f"host_load[{i}]", h, topo, x.duration)
                   for i, h in enumerate(loads)]
    if "host_model" in data:
        x.host_model = _host_model(src, data["host_model"], topo)
    _check_hogs(src, x)
    if "outputs" in data:
        o = _Table(src, "outputs", data["outputs"], ("csv", "plots", "size_bins"))
        x.csv, x.plots = o.get("csv", _bool, True), o.get("plots", _bool, True)
        x.size_bins = o.get("size_bins", _bins, x.size_bins)
    _check_modes(x)
    _resolve_files(x, base_dir)
    return x


def _resolve_files(x: Experiment, base_dir: str) -> None:
    """Algorithms given as files (``path/to/file.py:Class``) by absolute path:
    relative to the experiment file, wherever the run is started from."""
    from taurus.cc_algorithms.registry import resolve
    for c in [x.cc, *x.cc_hosts.values()]:
        c.algorithm = resolve(c.algorithm, base_dir)
        c.receiver = resolve(c.receiver, base_dir) if c.receiver else c.receiver
    for tr in x.traffic:
        if "algorithm" in tr.cc and isinstance(tr.cc["algorithm"], str):
            tr.cc["algorithm"] = resolve(tr.cc["algorithm"], base_dir)


def _bad_array(k):
    raise ValueError(f"expected an array of tables ([[{k}]])")


def _bins(v) -> list[int]:
    if not isinstance(v, list) or len(v) < 2:
        raise ValueError(f"expected at least two sizes like [\"0B\", \"100KB\", \"1GB\"], got {U.quote(v)}")
    out = [_size0(s) for s in v]
    if any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError("sizes must increase")
    return out


def _check_modes(x: Experiment) -> None:
    """One NIC aggregates or not: agent and per-event flows cannot share a host."""
    seen: dict[str, tuple[str, str]] = {}
    for tr in x.traffic:
        for h in tr.src:
            m = tr.cc.get("mode", x.host_cc(h).mode)
            if m in ("agent", "per-event"):
                if h in seen and seen[h][0] != m:
                    raise ExperimentError(x.source, f"{tr.key}.cc.mode",
                                          f"host {h!r} has {seen[h][0]} flows ({seen[h][1]}); "
                                          f"{m} and {seen[h][0]} cannot share one NIC")
                seen.setdefault(h, (m, tr.key))
        if tr.kind == "rpc" and tr.response:
            m = x.host_cc(tr.dst[0]).mode
            if m in ("agent", "per-event") and tr.dst[0] in seen and seen[tr.dst[0]][0] != m:
                raise ExperimentError(x.source, f"{tr.key}.to", f"responses from "
                                      f"{tr.dst[0]!r} would mix {m} with {seen[tr.dst[0]][0]}")


def apply_set(data: dict, assignment: str, source: str = "--set") -> None:
    """`cc.mode=native`, `experiment.duration="5ms"`: one TOML value at a
    dotted key of tables (arrays of tables are indexed: traffic.0.size)."""
    key, eq, raw = assignment.partition("=")
    if not eq or not key.strip():
        raise ExperimentError(source, None, f"expected KEY=VALUE, got {assignment!r}")
    value = U.toml_value(raw)           # a bare word is a string: mode=native
    parts = key.strip().split(".")
    node = data
    for i, p in enumerate(parts[:-1]):
        nxt = node[int(p)] if isinstance(node, list) and p.isdigit() and int(p) < len(node) \
            else node.setdefault(p, {}) if isinstance(node, dict) else None
        if not isinstance(nxt, (dict, list)):
            raise ExperimentError(source, ".".join(parts[:i + 1]), "not a table")
        node = nxt
    if not isinstance(node, dict):
        raise ExperimentError(source, key, "not a table key")
    node[parts[-1]] = value


def read_toml(path: str) -> dict:
    """An experiment file's TOML, or an ExperimentError saying why not."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ExperimentError(path, None, f"TOML syntax error: {e}") from None
    except OSError as e:
        raise ExperimentError(path, None, f"cannot read: {e.strerror}") from None


def load(path: str, sets: list[str] = ()) -> Experiment:
    data = read_toml(path)
    for a in sets:
        apply_set(data, a)
    return from_dict(data, source=path, base_dir=os.path.dirname(os.path.abspath(path)))
