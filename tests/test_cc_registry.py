"""Algorithm lookup: built-in name, alias, module:Class, entry points, roles,
bad names and classes that break the interface."""
import pytest

from taurus.cc_algorithms import registry
from taurus.cc_algorithms.algorithm import Algorithm, event_mask, kernel
from taurus.cc_algorithms.dctcp import Dctcp, DctcpParams
from taurus.cc_algorithms.params import ConfigError
from taurus.datapath.ccshm import EV_ACK, EV_RTO, EV_RTT


@kernel
def on_ack(s, p, ev, d):
    pass


class Good(Algorithm):
    name = "good"
    binds = ("ACK",)
    on_ack = staticmethod(on_ack)


class Unhandled(Algorithm):
    name = "unhandled"
    binds = ("ECN",)


class Unknown(Algorithm):
    name = "unknown-event"
    binds = ("PFC",)


class WrongRole(Algorithm):
    name = "wrong-role"
    binds = ("DATA",)
    on_data = staticmethod(on_ack)


class NoTimer(Algorithm):
    name = "no-timer"
    binds = ("TIMER",)
    on_timer = staticmethod(on_ack)


class NotAlgo:
    pass


def test_builtin_alias_and_module_class():
    assert registry.lookup("dctcp") is Dctcp
    assert registry.lookup("dctcp-jit") is Dctcp               # compiled is a mode, not a name
    assert registry.lookup("taurus.cc_algorithms.dctcp:Dctcp") is Dctcp
    assert registry.lookup(f"{__name__}:Good") is Good
    assert registry.lookup("dctcp", role="sender") is Dctcp
    assert event_mask(Dctcp, DctcpParams()) == (1 << EV_ACK) | (1 << EV_RTO)
    assert event_mask(Dctcp, DctcpParams(pace=True)) == \
        (1 << EV_ACK) | (1 << EV_RTO) | (1 << EV_RTT)


@pytest.mark.parametrize("name, msg", [
    ("nosuch", r"built-in: (\w+, )*dctcp"),   # every built-in, sorted
    ("no.such.module:X", "cannot import"),
    (f"{__name__}:Missing", "has no"),
    (f"{__name__}:NotAlgo", "not a taurus Algorithm"),
    (f"{__name__}:Unhandled", "binds ECN but has no on_ecn"),
    (f"{__name__}:Unknown", "unknown event 'PFC'"),
    (f"{__name__}:WrongRole", r"\(sender\) binds DATA, a receiver event"),
    (f"{__name__}:NoTimer", "binds TIMER but declares no timer period"),
    ("", "non-empty"),
])
def test_bad_names_are_clear(name, msg):
    with pytest.raises(ConfigError, match=msg):
        registry.lookup(name)


def test_role_is_checked():
    with pytest.raises(ConfigError, match="is a sender algorithm, not a receiver one"):
        registry.lookup("dctcp", role="receiver")


def test_entry_point_group(monkeypatch):
    class EP:
        name = "good-ep"

        def load(self):
            return Good

    monkeypatch.setattr(registry, "entry_points",
                        lambda group: [EP()] if group == registry.ENTRY_POINT_GROUP else [])
    assert registry.lookup("good-ep") is Good
    assert "good-ep" in registry.available()
