"""SIGKILL at random moments, repeatedly (bench/reliab_kills.py): agents
(fallback, then a new agent takes over), apps (their flows are closed and
the PDCs freed) and the engine (nothing is left after `taurus topo
clean`)."""
import os
import sys

from conftest import needs_root

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import reliab_kills  # noqa: E402


def test_agents_killed_twice(tmp_path):
    r = reliab_kills.agent_kills(2, seed=3, tmp=str(tmp_path))
    assert r["kills"] == r["fallbacks"] == 2 and r["takeovers"] == 2


def test_apps_killed_twice():
    r = reliab_kills.app_kills(2, seed=3)
    assert r["kills"] == 2 and r["tables"]["flows"] == 0 and r["tables"]["pdcs"] == 0


@needs_root
def test_engine_killed_leaves_nothing_after_clean(tmp_path):
    r = reliab_kills.engine_kills(1, seed=3, tmp=str(tmp_path))
    assert r["kills"] == 1 and r["leaks"] == []
