"""Congestion control for `taurus perf`: which algorithm and mode the
client's flows run (-C, --cc-mode, --cc-param, --cc-config) and which
receiver algorithm the receiving NICs run (--receiver-cc, the file's
receiver_params, receiver_idle, receiver_init_credit), checked before
anything touches a namespace, and the agent process the client starts and
stops itself.

The agent is built the way `taurus run` builds its agents
(experiment/runner.py `_start_agents`: the [agent] table from the [cc]
choice, `taurus.agent.config.parse`, `Agent(engine + "-cc", cfg, slot=...)`),
but runs in a child process of the client (the docs/DESIGN.md picture:
one agent process per NIC), so that the client's loop and the agent's
wake-ups do not share one interpreter.  The child asks the kernel for
SIGTERM when its parent dies (PR_SET_PDEATHSIG): a client killed with
SIGKILL leaves no agent behind; the agent's own SIGTERM handling tears it
down (its algorithms, stats file).
"""
from __future__ import annotations

import ctypes
import dataclasses
import multiprocessing as mp
import os
import signal
import sys
import time
import types

from taurus.cc_algorithms.native import IDLE_NS
from taurus.cc_algorithms.params import ConfigError
from taurus.units import toml_value

AGENT_MODES = ("agent", "per-event")
MODES = ("native",) + AGENT_MODES
PR_SET_PDEATHSIG = 1


@dataclasses.dataclass
class CcChoice:
    algorithm: str                    # as given (a built-in, an entry point, module:Class)
    name: str                         # the class's name (end.sender_tcp_congestion)
    mode: str
    params: dict
    jit: bool = True
    receiver: str = ""
    receiver_name: str = ""
    receiver_params: dict = dataclasses.field(default_factory=dict)
    receiver_idle: int = IDLE_NS          # ns: its senders leave after this long silent
    receiver_init_credit: int = 0         # bytes a new sender starts with (0: pipe_credit)

    def header(self) -> dict:
        """What perf -s needs to set a flow's mode and start the receiver
        algorithm (the stream header)."""
        return {"algorithm": self.algorithm, "mode": self.mode, "params": self.params,
                "receiver": self.receiver, "receiver_params": self.receiver_params,
                "receiver_idle": self.receiver_idle,
                "receiver_init_credit": self.receiver_init_credit}


def choose(args) -> CcChoice | None:
    """The client's CC from its options, validated (the algorithm exists,
    has the sender role, its parameters build), or None: no -C and no
    --cc-config, flows keep the NIC's fixed window.  Raises ConfigError."""
    from taurus.cc_algorithms.registry import lookup, make_params
    spec = None
    if args.cc_config:
        if getattr(args, "cc_table", None) is None:
            raise ConfigError("--cc-config: no [cc] parser wired in (taurus.cli provides it)")
        spec = args.cc_table(args.cc_config)
    if spec is None and not args.congestion:
        if args.cc_param or args.cc_mode or args.receiver_cc:
            raise ConfigError("--cc-mode, --cc-param and --receiver-cc need -C/--congestion "
                              "or --cc-config")
        return None
    if spec is None:            # -C alone: the experiment file's [cc] defaults
        spec = types.SimpleNamespace(algorithm=args.congestion, mode="agent", params={},
                                     jit=True, receiver="", receiver_params={},
                                     receiver_idle=IDLE_NS, receiver_init_credit=0)
    params = dict(spec.params)
    if args.congestion and args.congestion != spec.algorithm:
        params = {}                     # a file's params belong to the file's algorithm
    for kv in args.cc_param or []:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            raise ConfigError(f"--cc-param {kv!r}: expected KEY=VALUE")
        params[k.strip()] = toml_value(v.strip())
    algorithm = args.congestion or spec.algorithm
    mode = args.cc_mode or spec.mode
    if mode not in MODES:
        raise ConfigError(f"--cc-mode must be one of {', '.join(MODES)}, got {mode!r}")
    cls = lookup(algorithm, role="sender")
    make_params(cls, params, "cc.params")
    receiver = args.receiver_cc if args.receiver_cc is not None else spec.receiver
    rname, rparams = "", {}
    if receiver:
        rcls = lookup(receiver, role="receiver")
        # a file's receiver_params belong to the receiver it names, if it names one
        rparams = dict(spec.receiver_params) if spec.receiver in ("", receiver) else {}
        make_params(rcls, rparams, "cc.receiver_params")
        rname = rcls.name
    return CcChoice(algorithm, cls.name, mode, params, spec.jit, receiver, rname, rparams,
                    int(spec.receiver_idle), int(spec.receiver_init_credit))


# ---- the agent process ---------------------------------------------------------
def _agent_main(engine: str, slot: int, cfg_dict: dict, parent: int, stats_dir) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the client's handler, until the agent's
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:              # the parent died before the line above
        os._exit(0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # ^C is the client's; it stops us
    from taurus.agent.agent import Agent
    from taurus.agent.config import parse
    from taurus.pidfiles import pidfile
    cfg = parse(cfg_dict)
    with pidfile("agent"):
        agent = Agent(engine + "-cc", cfg, stats_dir=stats_dir, slot=slot)
        rc = agent.run()
    if agent.gone is not None:
        print(f"taurus agent: {agent.gone}; exiting", file=sys.stderr, flush=True)
    os._exit(rc)


class AgentProc:
    """One agent process for NIC slot ``slot`` of engine ``engine``."""

    def __init__(self, engine: str, slot: int, choice: CcChoice, mss: int, line_rate: int,
                 stats_dir: str | None = None):
        self.engine, self.slot = engine, slot
        # The same [agent] table runner._start_agents builds for a host.
        self.cfg = {"agent": {"algorithm": choice.algorithm, "params": choice.params,
                              "mss": int(mss), "line_rate_bps": int(line_rate or 100e9),
                              "jit": choice.jit}}
        from taurus.agent.config import parse
        parse(self.cfg)                                     # errors here, not in the child
        ctx = mp.get_context("fork")
        self.proc = ctx.Process(target=_agent_main, daemon=True,
                                args=(engine, slot, self.cfg, os.getpid(), stats_dir))
        self.proc.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, cc, timeout: float = 600.0) -> None:
        """Until the agent announced itself (CTL_AGENT_PID: configured, its
        algorithm compiled), or raise."""
        from taurus.datapath.ccshm import CTL_AGENT_PID
        t_end = time.monotonic() + timeout
        while int(cc.ctls[self.slot, CTL_AGENT_PID]) != self.pid:
            if not self.proc.is_alive():
                raise RuntimeError(f"the agent of NIC slot {self.slot} exited "
                                   f"(code {self.proc.exitcode})")
            if time.monotonic() > t_end:
                raise RuntimeError(f"the agent of NIC slot {self.slot} did not start "
                                   f"within {timeout:.0f} s")
            time.sleep(0.01)

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc.is_alive():
            os.kill(self.pid, signal.SIGTERM)
            self.proc.join(timeout)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join(2)
