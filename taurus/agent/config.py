"""The agent's config file (TOML).  Every key is optional; unknown keys are errors.

    [agent]
    algorithm = "dctcp"              # built-in name, entry point or "module:Class" (sender role)
    params = { g = 0.0625 }          # the algorithm's Params
    jit = true                       # compile the algorithms (false: the same handlers as
                                     # plain Python: print() and pdb work; no busy loop)
    receiver = ""                    # a receiver-role algorithm ("": none; validated only,
    receiver_params = {}             # the engine side of receivers is not there yet)
    mss = 4096                       # bytes
    line_rate_bps = 100e9
    init_cwnd_bytes = 0              # the window and rate the NIC gives a new flow until
    init_rate_bps = 0                #   a decision (p.init_cwnd, p.init_rate; 0: none)
    sleep_min_us = 50                # adaptive idle sleep (never busy-polls)
    sleep_max_us = 1000
    nap_rtt = 0.0                    # nap after work: this share of the flows' median
                                     # srtt, within the two above (0: sleep_min_us)
    busy_loop = true                 # jit, one algorithm class: rest and step inside Numba
    doorbell = true                  # idle: block until the engine publishes ...
    idle_max_us = 10000              # ... or this long (heartbeat, samplers)
    batch_max = 16384                # records drained per step at most
    batch_bytes = 512                # engine: publish a batch of records at this size ...
    deadline_us = 1.0                # ... or when its oldest record is this old

    [bounds]                         # boundary filter (defaults: 100 kbit/s .. line rate)
    rate_min_bps = 100_000
    rate_max_bps = 0                 # 0: line_rate_bps
    cwnd_min_bytes = 0               # 0: 1 MSS
    cwnd_max_bytes = 1_073_741_824
    credit_min_bytes = 0
    credit_max_bytes = 1_073_741_824

    [backpressure]                   # ring occupancy fractions, drain lag
    high = 0.5                       # raise (x2) at or above
    low = 0.05                       # lower (/2) after calm_steps steps at or below
    calm_steps = 8
    max_factor = 64
    lag_high_us = 2000
    evict = 0.75                     # merge/evict mode at or above
    raw_keep = 8                     # newest Raw records kept per flow and event

    [host]
    cgroup = ""                      # host actions on this cgroup v2 ("" = none)
    create_cgroup = false            # create it (name must start with taurus-)
    samplers = { cpu = { period_us = 10000 } }   # extra samplers and their args

    [[override]]                     # per-flow algorithm (each class: its own tables)
    flows = [3, 4]
    algorithm = "dctcp"
    params = { alpha_init = 0.0 }
    init_cwnd_bytes = -1             # these flows' start (-1: [agent]'s)
    init_rate_bps = -1

    [probe]                          # RTT samples reaching the agent (0, 0: every one)
    every_pkts = 0                   # one in N samples
    every_us = 0                     # or one per T us, whichever first

    [[segment]]                      # custom feedback segment (at most 4; paper §3.3)
    id = 1                           # segment id (1..): the CUSTOM record's ``segment``
    types = ["ACK_CCX"]              # PDS types it applies to ([] = every feedback packet)
    offset = 12                      # bytes from the PDS header
    length = 20
    match_offset = 0                 # optional byte match: (byte & mask) == value
    match_mask = 0
    match_value = 0
"""
import tomllib
from dataclasses import dataclass, field

from taurus.cc_algorithms.params import ConfigError, build, require
from taurus.datapath.ccshm import CUSTOM_MAX, MAX_SEGS
from taurus.datapath.wire import spec
from taurus.cc_algorithms.registry import lookup, make_params


@dataclass
class AgentSection:
    algorithm: str = "dctcp"
    params: dict = field(default_factory=dict)
    jit: bool = True                # Runtime(cls, jit): compiled, or the same handlers in Python
    receiver: str = ""              # a receiver-role algorithm (validated; no engine side yet)
    receiver_params: dict = field(default_factory=dict)
    mss: int = 4096
    line_rate_bps: int = 100_000_000_000
    init_cwnd_bytes: int = 0
    init_rate_bps: int = 0
    sleep_min_us: int = 50
    sleep_max_us: int = 1000
    # Decisions act on per-RTT reports: waking much more often than once per
    # RTT buys little, and each wake-up costs tens of us of CPU on a VM.
    nap_rtt: float = 0.0
    busy_loop: bool = True          # busyloop.py (jit, one algorithm class: the busy phase)
    doorbell: bool = True
    idle_max_us: int = 10_000
    batch_max: int = 16384
    # Message-level aggregation (paper §3.4).  The deadline is short: with
    # per-RTT signal aggregation a batch rarely fills, so every message would
    # wait the whole deadline, and a late decision is an unfair one (measured:
    # 10 us on an 85 us RTT doubled the two-flow DCTCP gap).
    batch_bytes: int = 512
    deadline_us: float = 1.0

    def check(self):
        require(self.mss > 0, "mss", "must be > 0")
        require(self.line_rate_bps > 0, "line_rate_bps", "must be > 0")
        require(self.init_cwnd_bytes >= 0, "init_cwnd_bytes", "must be >= 0")
        require(self.init_rate_bps >= 0, "init_rate_bps", "must be >= 0")
        require(0 < self.sleep_min_us <= self.sleep_max_us, "sleep_min_us",
                "must be > 0 and <= sleep_max_us")
        require(0 <= self.nap_rtt <= 4, "nap_rtt", "must be in [0, 4] (a share of the srtt)")
        require(0 < self.idle_max_us <= 50_000, "idle_max_us",
                "must be > 0 and <= 50000 (the engine's heartbeat timeout is 100 ms)")
        require(self.batch_max >= 1, "batch_max", "must be >= 1")
        require(self.batch_bytes >= 1, "batch_bytes", "must be >= 1")
        require(self.deadline_us >= 0, "deadline_us", "must be >= 0")


@dataclass
class Bounds:
    rate_min_bps: int = 100_000
    rate_max_bps: int = 0
    cwnd_min_bytes: int = 0
    cwnd_max_bytes: int = 1 << 30
    credit_min_bytes: int = 0
    credit_max_bytes: int = 1 << 30

    def check(self):
        require(self.rate_min_bps > 0, "rate_min_bps", "must be > 0 (0 would mean 'no limit')")
        for k in ("rate", "cwnd", "credit"):
            lo, hi = getattr(self, f"{k}_min_{'bps' if k == 'rate' else 'bytes'}"), \
                getattr(self, f"{k}_max_{'bps' if k == 'rate' else 'bytes'}")
            require(lo >= 0 and hi >= 0, f"{k}_min", "bounds must be >= 0")
            require(hi == 0 or lo <= hi, f"{k}_max", "must be >= the minimum")


@dataclass
class Backpressure:
    high: float = 0.5
    low: float = 0.05
    calm_steps: int = 8
    max_factor: int = 64
    lag_high_us: int = 2000
    evict: float = 0.75
    raw_keep: int = 8

    def check(self):
        require(0 <= self.low < self.high <= 1, "high", "need 0 <= low < high <= 1")
        require(self.high <= self.evict <= 1, "evict", "need high <= evict <= 1")
        require(self.max_factor >= 1, "max_factor", "must be >= 1")
        require(self.calm_steps >= 1, "calm_steps", "must be >= 1")
        require(self.raw_keep >= 1, "raw_keep", "must be >= 1")


@dataclass
class Host:
    cgroup: str = ""
    create_cgroup: bool = False
    samplers: dict[str, dict] = field(default_factory=dict)

    def check(self):
        require(not self.create_cgroup or self.cgroup.startswith("taurus-"), "cgroup",
                "a cgroup the agent creates must be named taurus-*")
        require("/" not in self.cgroup.strip("/") or not self.create_cgroup, "cgroup",
                "a created cgroup must be a single name")


@dataclass
class Override:
    flows: list[int] = field(default_factory=list)
    algorithm: str = ""
    params: dict = field(default_factory=dict)
    init_cwnd_bytes: int = -1       # -1: the [agent] section's
    init_rate_bps: int = -1

    def check(self):
        require(bool(self.flows), "flows", "list at least one flow")
        require(self.init_cwnd_bytes >= -1 and self.init_rate_bps >= -1, "init_cwnd_bytes",
                "must be >= 0, or -1 for the [agent] section's")
        require(all(f >= 0 for f in self.flows), "flows", "flow ids must be >= 0")
        require(bool(self.algorithm), "algorithm", "name the algorithm")


@dataclass
class Probe:
    every_pkts: int = 0
    every_us: int = 0

    def check(self):
        require(self.every_pkts >= 0 and self.every_us >= 0, "every_pkts", "must be >= 0")


FEEDBACK_TYPES = ("ACK", "ACK_CC", "ACK_CCX")     # the packets the engine cuts segments from


@dataclass
class Segment:
    id: int = 0
    types: list[str] = field(default_factory=list)
    offset: int = 0
    length: int = 0
    match_offset: int = 0
    match_mask: int = 0
    match_value: int = 0

    def check(self):
        require(self.id >= 1, "id", "must be >= 1")
        require(0 < self.length <= CUSTOM_MAX, "length", f"must be in 1..{CUSTOM_MAX}")
        require(self.offset >= 0 and self.match_offset >= 0, "offset", "must be >= 0")
        require(0 <= self.match_mask <= 255 and 0 <= self.match_value <= 255, "match_mask",
                "mask and value are one byte")
        for t in self.types:
            require(t in FEEDBACK_TYPES, "types", f"{t!r} is not one of {', '.join(FEEDBACK_TYPES)}")

    def row(self) -> list[int]:
        """The control-block rule (ccshm SEG_*)."""
        types = sum(1 << getattr(spec, f"T_{t}") for t in self.types)
        return [self.id, types, self.match_offset, self.match_mask, self.match_value,
                self.offset, self.length, 0]


@dataclass
class AgentConfig:
    agent: AgentSection = field(default_factory=AgentSection)
    bounds: Bounds = field(default_factory=Bounds)
    backpressure: Backpressure = field(default_factory=Backpressure)
    host: Host = field(default_factory=Host)
    override: list[Override] = field(default_factory=list)
    probe: Probe = field(default_factory=Probe)
    segment: list[Segment] = field(default_factory=list)

    # resolved at load: algorithm classes and their Params
    def resolve(self):
        """(default (cls, params), {flow: (cls, params)}): sender algorithms;
        errors name the key."""
        cls = _lookup(self.agent.algorithm, "sender", "config.agent.algorithm")
        default = (cls, make_params(cls, self.agent.params, "[agent.params]"))
        per_flow = {}
        for i, o in enumerate(self.override):
            ocls = _lookup(o.algorithm, "sender", f"[[override]] #{i + 1} algorithm")
            op = make_params(ocls, o.params, f"[[override]] #{i + 1} params")
            for f in o.flows:
                if f in per_flow:
                    raise ConfigError(f"[[override]] #{i + 1}: flow {f} already overridden")
                per_flow[f] = (ocls, op)
        return default, per_flow

    def resolve_receiver(self):
        """The receiver algorithm (cls, params), or None (``receiver = ""``)."""
        if not self.agent.receiver:
            if self.agent.receiver_params:
                raise ConfigError("set without a receiver algorithm",
                                  key="config.agent.receiver_params")
            return None
        cls = _lookup(self.agent.receiver, "receiver", "config.agent.receiver")
        return cls, make_params(cls, self.agent.receiver_params, "[agent.receiver_params]")

    def flow_start(self, flow: int) -> tuple[float, float]:
        """(init_cwnd bytes, init_rate bit/s) the NIC gives ``flow``."""
        a = self.agent
        for o in self.override:
            if flow in o.flows:
                return (float(a.init_cwnd_bytes if o.init_cwnd_bytes < 0 else o.init_cwnd_bytes),
                        float(a.init_rate_bps if o.init_rate_bps < 0 else o.init_rate_bps))
        return float(a.init_cwnd_bytes), float(a.init_rate_bps)

    def rate_max(self) -> int:
        return self.bounds.rate_max_bps or self.agent.line_rate_bps

    def cwnd_min(self) -> int:
        return self.bounds.cwnd_min_bytes or self.agent.mss


def _lookup(name: str, role: str, key: str):
    """registry.lookup with the role checked; a ConfigError names ``key``."""
    try:
        return lookup(name, role=role)
    except ConfigError as e:
        raise ConfigError(e.message, key=key) from None


def parse(data: dict) -> AgentConfig:
    cfg = build(AgentConfig, data, "config")
    if len(cfg.segment) > MAX_SEGS:
        raise ConfigError(f"config.segment: at most {MAX_SEGS} segments, got {len(cfg.segment)}")
    cfg.resolve()          # surface algorithm/param errors at load time
    cfg.resolve_receiver()
    return cfg


def load(path: str | None) -> AgentConfig:
    if not path:
        return parse({})
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"not valid TOML: {e}", file=path) from None
    except OSError as e:
        raise ConfigError(f"{e.strerror}", file=path) from None
    try:
        return parse(data)
    except ConfigError as e:
        if e.file:
            raise ConfigError(f"{path}: {e}") from None
        raise ConfigError(e.message, file=path, key=e.key) from None

