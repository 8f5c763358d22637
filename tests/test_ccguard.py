"""The engine's side of a dead agent: fallback after the heartbeat timeout,
last decision restored when a heartbeat comes back, episodes counted."""
import numba as nb

from taurus.datapath.byref import byref
from taurus.datapath import ccshm as C
from taurus.datapath.ccguard import cc_cwnd, cc_rate, cc_watch
from taurus.datapath.engine import Engine


@nb.njit(cache=True)
def probe(state, k, flow, now):
    E = byref(state)     # the engine's own specializations: no new compile
    f = cc_watch(E, k, now)
    return f, cc_rate(E, flow, 7), cc_cwnd(E, flow, 11)


def test_fallback_and_recovery():
    with Engine(clock="virtual", max_flows=8, max_nics=2) as eng:
        cc = eng.cc
        cc.owner[3] = 1
        cc.ctls[1, C.CTL_HB_TIMEOUT_NS] = 1000
        cc.ctls[1, C.CTL_FALLBACK_RATE] = 1_000_000
        assert probe(eng.E, 1, 3, 10**6) == (0, 7, 11)     # no agent yet: defaults, no fallback
        cc.rate[3], cc.cwnd[3] = 5_000_000, 64_000          # the agent decides ...
        cc.ctls[1, C.CTL_HEARTBEAT_NS] = 10**6
        assert probe(eng.E, 1, 3, 10**6 + 1000) == (0, 5_000_000, 64_000)
        assert probe(eng.E, 1, 3, 10**6 + 1001) == (1, 1_000_000, 64_000)   # ... and goes silent
        assert probe(eng.E, 1, 3, 10**6 + 5000) == (1, 1_000_000, 64_000)
        assert cc.ctls[1, C.CTL_FALLBACKS] == 1                              # one episode
        cc.ctls[1, C.CTL_HEARTBEAT_NS] = 10**6 + 6000                        # a restarted agent
        assert probe(eng.E, 1, 3, 10**6 + 6001) == (0, 5_000_000, 64_000)   # last decision back
        assert cc.ctls[0, C.CTL_FALLBACKS] == 0


def test_native_flows_are_never_in_fallback():
    """A silent agent caps its flows, not the native ones of its NIC."""
    with Engine(clock="virtual", max_flows=8, max_nics=2) as eng:
        cc = eng.cc
        cc.owner[3] = cc.owner[4] = 1
        cc.flags[4] = C.FL_NATIVE
        cc.ctls[1, C.CTL_HB_TIMEOUT_NS] = 1000
        cc.ctls[1, C.CTL_FALLBACK_RATE] = 1_000_000
        cc.rate[3] = cc.rate[4] = 5_000_000
        cc.ctls[1, C.CTL_HEARTBEAT_NS] = 10**6
        assert probe(eng.E, 1, 3, 10**6 + 5000)[:2] == (1, 1_000_000)
        assert probe(eng.E, 1, 4, 10**6 + 5000)[:2] == (1, 5_000_000)
