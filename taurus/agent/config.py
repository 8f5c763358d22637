"""The agent's config file (TOML).  Every key is optional; unknown keys are errors.

    [agent]
    algorithm = "dctcp"              # built-in name, entry point or "module:Class"
    params = { g = 0.0625 }          # the algorithm's Params
    mss = 4096                       # bytes
    line_rate_bps = 100e9
    sleep_min_us = 50                # adaptive idle sleep (never busy-polls)
    sleep_max_us = 1000
    batch_max = 16384                # records drained per step at most
    custom_segments = { csig = 1, int = 2, credit = 3 }   # parser -> segment id

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

    [[override]]                     # per-flow algorithm
    flows = [3, 4]
    algorithm = "dctcp"
    params = { alpha_init = 0.0 }
"""
import tomllib
from dataclasses import dataclass, field

from taurus.cc_algorithms.params import ConfigError, build, require
from taurus.cc_algorithms.registry import lookup, make_params


@dataclass
class AgentSection:
    algorithm: str = "dctcp"
    params: dict = field(default_factory=dict)
    mss: int = 4096
    line_rate_bps: int = 100_000_000_000
    sleep_min_us: int = 50
    sleep_max_us: int = 1000
    batch_max: int = 16384
    custom_segments: dict[str, int] = field(default_factory=lambda: {"csig": 1, "int": 2, "credit": 3})

    def check(self):
        require(self.mss > 0, "mss", "must be > 0")
        require(self.line_rate_bps > 0, "line_rate_bps", "must be > 0")
        require(0 < self.sleep_min_us <= self.sleep_max_us, "sleep_min_us",
                "must be > 0 and <= sleep_max_us")
        require(self.batch_max >= 1, "batch_max", "must be >= 1")


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

    def check(self):
        require(bool(self.flows), "flows", "list at least one flow")
        require(all(f >= 0 for f in self.flows), "flows", "flow ids must be >= 0")
        require(bool(self.algorithm), "algorithm", "name the algorithm")


@dataclass
class AgentConfig:
    agent: AgentSection = field(default_factory=AgentSection)
    bounds: Bounds = field(default_factory=Bounds)
    backpressure: Backpressure = field(default_factory=Backpressure)
    host: Host = field(default_factory=Host)
    override: list[Override] = field(default_factory=list)

    # resolved at load: algorithm classes and their Params
    def resolve(self):
        """(default (cls, params), {flow: (cls, params)}); errors name the key."""
        cls = lookup(self.agent.algorithm)
        default = (cls, make_params(cls, self.agent.params, "[agent.params]"))
        per_flow = {}
        for i, o in enumerate(self.override):
            ocls = lookup(o.algorithm)
            op = make_params(ocls, o.params, f"[[override]] #{i + 1} params")
            for f in o.flows:
                if f in per_flow:
                    raise ConfigError(f"[[override]] #{i + 1}: flow {f} already overridden")
                per_flow[f] = (ocls, op)
        return default, per_flow

    def rate_max(self) -> int:
        return self.bounds.rate_max_bps or self.agent.line_rate_bps

    def cwnd_min(self) -> int:
        return self.bounds.cwnd_min_bytes or self.agent.mss


def parse(data: dict) -> AgentConfig:
    cfg = build(AgentConfig, data, "config")
    cfg.resolve()          # surface algorithm/param errors at load time
    return cfg


def load(path: str | None) -> AgentConfig:
    if not path:
        return parse({})
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}") from None
    try:
        return parse(data)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None

