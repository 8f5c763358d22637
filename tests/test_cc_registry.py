"""Algorithm lookup: built-in name, module:Class, entry points, bad names."""
import pytest

from taurus.cc_algorithms import registry
from taurus.cc_algorithms.base import Algorithm, event_mask
from taurus.cc_algorithms.dctcp import Dctcp
from taurus.cc_algorithms.params import ConfigError
from taurus.datapath.ccshm import EV_ACK, EV_RTO, EV_RTT


class Good(Algorithm):
    name = "good"
    binds = ("ACK",)

    def on_ack(self, ev):
        pass


class Unhandled(Algorithm):
    name = "unhandled"
    binds = ("ECN",)


class Unknown(Algorithm):
    name = "unknown-event"
    binds = ("PFC",)


class NotAlgo:
    pass


def test_builtin_and_module_class():
    assert registry.lookup("dctcp") is Dctcp
    assert registry.lookup("taurus.cc_algorithms.dctcp:Dctcp") is Dctcp
    assert registry.lookup(f"{__name__}:Good") is Good
    assert event_mask(Dctcp) == (1 << EV_ACK) | (1 << EV_RTO) | (1 << EV_RTT)


@pytest.mark.parametrize("name, msg", [
    ("nosuch", "built-in: dctcp"),
    ("no.such.module:X", "cannot import"),
    (f"{__name__}:Missing", "has no"),
    (f"{__name__}:NotAlgo", "not a taurus Algorithm"),
    (f"{__name__}:Unhandled", "does not define on_ecn"),
    (f"{__name__}:Unknown", "unknown event 'PFC'"),
    ("", "non-empty"),
])
def test_bad_names_are_clear(name, msg):
    with pytest.raises(ConfigError, match=msg):
        registry.lookup(name)


def test_entry_point_group(monkeypatch):
    class EP:
        name = "good-ep"

        def load(self):
            return Good

    monkeypatch.setattr(registry, "entry_points",
                        lambda group: [EP()] if group == registry.ENTRY_POINT_GROUP else [])
    assert registry.lookup("good-ep") is Good
    assert "good-ep" in registry.available()
