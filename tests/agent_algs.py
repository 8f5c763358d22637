"""Small algorithms on the v2 interface for the agent's tests: each one
handler or two (``@kernel``), run compiled or as plain Python alike.  Named
in configs as ``agent_algs:<Class>`` (tests/ is on sys.path under pytest)."""
import math
from dataclasses import dataclass

from taurus.cc_algorithms.algorithm import (Algorithm, host_cpu, host_mba, kernel, param,
                                            request_probe, rotate_ev, set_cwnd, set_ev, set_rate,
                                            spray_ev)
from taurus.cc_algorithms.params import Params


# ---- Scripted: cwnd = the ACK's bytes; special values misbehave ---------------------
@kernel
def scripted_on_ack(s, p, ev, d):
    v = ev.bytes
    if v == -1:
        raise RuntimeError("boom")
    if v == -8:                      # decides, then raises: a half-made decision
        set_cwnd(d, 12345.0)
        raise RuntimeError("half")
    if v == -9:
        s.x = 1.0 / int(s.zero)      # ZeroDivisionError (a float64 zero: inf in numpy)
    x = float(v)
    if v == -2:
        x = math.nan
    elif v == -3:
        x = -5.0
    elif v == -4:
        x = 1e30
    elif v == -6:
        x = math.inf
    set_cwnd(d, x)


class Scripted(Algorithm):
    """Publishes cwnd = the ACK's ``bytes``; -1, -8, -9 raise, -2 NaN, -3
    negative, -4 absurd, -6 infinite."""
    name = "scripted"
    state = ("x", "zero")
    binds = ("ACK",)
    on_ack = staticmethod(scripted_on_ack)


# ---- BadSetup: init raises ------------------------------------------------------------
@kernel
def bad_init(s, p, d):
    raise ValueError("no")


@kernel
def nothing(s, p, ev, d):
    pass


class BadSetup(Algorithm):
    name = "badsetup"
    binds = ("ACK",)
    init = staticmethod(bad_init)
    on_ack = staticmethod(nothing)


# ---- Custom: CUSTOM words and HOST readings into its state ----------------------------
@kernel
def custom_on_custom(s, p, ev, d):
    s.segment = ev.segment
    s.length = ev.length
    s.w0 = ev.w0
    s.ncustom += 1


@kernel
def custom_on_host(s, p, ev, d):
    s.source = ev.source
    s.value = ev.value
    s.aux = ev.aux
    s.nhost += 1
    set_rate(d, 1e9)


class Custom(Algorithm):
    name = "custom"
    state = ("segment", "length", "w0", "ncustom", "source", "value", "aux", "nhost")
    binds = ("CUSTOM", "HOST")
    samplers = {"cpu": 1}
    on_custom = staticmethod(custom_on_custom)
    on_host = staticmethod(custom_on_host)


# ---- Prober: periods, and an RTT probe when an ACK says so ----------------------------
@kernel
def prober_on_ack(s, p, ev, d):
    if ev.bytes == 7:
        request_probe(d)


class Prober(Algorithm):
    name = "prober"
    binds = ("ACK", "OOO", "RTT")
    periods = {"ACK": "0.5rtt", "OOO": 30_000, "RTT": "rtt"}    # RTT is Raw: ignored
    on_ack = staticmethod(prober_on_ack)
    on_ooo = staticmethod(nothing)
    on_rtt = staticmethod(nothing)


# ---- Ticker: a TIMER period from a parameter ------------------------------------------
@dataclass
class TickerParams(Params):
    tick_ns: int = param(50_000, "ns", "TIMER period")


@kernel
def ticker_on_timer(s, p, ev, d):
    s.ticks += ev.ticks
    set_cwnd(d, 4096.0 * (1 + s.ticks))


class Ticker(Algorithm):
    name = "ticker"
    Params = TickerParams
    state = ("ticks",)
    binds = ("ACK", "TIMER")
    timer = "tick_ns"
    on_ack = staticmethod(nothing)
    on_timer = staticmethod(ticker_on_timer)


# ---- Entropy: the entropy decisions -------------------------------------------------
@kernel
def entropy_on_ack(s, p, ev, d):
    v = ev.bytes
    if v == 1:
        set_ev(d, 77)
    elif v == 2:
        rotate_ev(d)
    elif v == 3:
        spray_ev(d, 100, 8)


class Entropy(Algorithm):
    name = "entropy"
    binds = ("ACK",)
    on_ack = staticmethod(entropy_on_ack)


# ---- HostAct: host actions: cpu share = bytes / 1000, MBA percent = psn ------------------
@kernel
def hostact_on_ack(s, p, ev, d):
    if ev.bytes != 0:
        host_cpu(d, math.nan if ev.bytes < 0 else ev.bytes / 1000.0)
    if ev.psn != 0:
        host_mba(d, float(ev.psn))


class HostAct(Algorithm):
    name = "hostact"
    binds = ("ACK",)
    on_ack = staticmethod(hostact_on_ack)


# ---- Recorder: keeps what it was given, per flow, in its state ----------------------
LOG = 512


@kernel
def recorder_on_any(s, p, ev, d):
    i = int(s.n)
    if i < LOG:
        s.event[i] = ev.event
        s.t[i] = ev.t_first
        s.v0[i] = ev.bytes
        s.v1[i] = ev.packets
        s.v2[i] = ev.psn
    s.n += 1


class Recorder(Algorithm):
    """Remembers every record it was given, per flow in delivery order."""
    name = "recorder"
    state = ("n", ("event", LOG), ("t", LOG), ("v0", LOG), ("v1", LOG), ("v2", LOG))
    binds = ("ACK", "ECN", "RTT", "OOO")
    on_ack = on_ecn = on_rtt = on_ooo = staticmethod(recorder_on_any)


def recorded(S, flows=None):
    """A Recorder's log: [(flow, event, t_first, (v0, v1, v2))], flow by flow."""
    out = []
    for f in range(len(S)) if flows is None else flows:
        for i in range(min(int(S.n[f]), LOG)):
            out.append((f, int(S.event[f, i]), int(S.t[f, i]),
                        (int(S.v0[f, i]), int(S.v1[f, i]), int(S.v2[f, i]))))
    return out


# ---- Echo: a digest of everything delivered, and a cwnd from it ------------------------
@kernel
def echo_mix(s, ev, k):
    x = (ev.flow * 7 + ev.event * 13 + ev.t_first + ev.count * 3 + ev.bytes * 5 + ev.packets
         + ev.psn * 11 + ev.ecn_bytes)
    s.h = (s.h * k + (x % 1000003)) % 1000003
    s.n += 1


@kernel
def echo_decide(s, d):
    v = int(s.h) % 5                 # duplicates, clamps and rejects (NaN) on purpose
    if v == 0:
        set_cwnd(d, 4096.0)
    elif v == 1:
        set_cwnd(d, 8192.0)
    elif v == 2:
        set_cwnd(d, -1.0)
    elif v == 3:
        set_cwnd(d, math.nan)
    else:
        set_cwnd(d, 1e12)


@kernel
def echo_on_any(s, p, ev, d):
    echo_mix(s, ev, 31)
    echo_decide(s, d)


@kernel
def echo_on_custom(s, p, ev, d):
    s.h = (s.h * 17 + ev.segment * 5 + ev.length + (ev.w0 % 1000)) % 1000003
    s.n += 1


class Echo(Algorithm):
    """Its state is a digest of every record in delivery order."""
    name = "echo"
    state = ("h", "n")
    binds = ("ACK", "ECN", "RTT", "OOO", "CUSTOM")
    on_ack = on_ecn = on_rtt = on_ooo = staticmethod(echo_on_any)
    on_custom = staticmethod(echo_on_custom)


@kernel
def echo2_on_any(s, p, ev, d):
    echo_mix(s, ev, 37)
    set_rate(d, 1e6 * (1 + int(s.h) % 7))


class Echo2(Algorithm):
    """Another class (its own tables): a rate from its digest."""
    name = "echo2"
    state = ("h", "n")
    binds = ("ACK", "RTT", "TX")
    on_ack = on_rtt = on_tx = staticmethod(echo2_on_any)


# ---- Grant: a receiver-role algorithm (config validation) -----------------------------
@kernel
def grant_on_data(s, p, ev, d):
    pass


class Grant(Algorithm):
    name = "grant"
    role = "receiver"
    binds = ("DATA",)
    on_data = staticmethod(grant_on_data)
