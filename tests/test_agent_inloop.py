"""Agents stepped inside the engine's loop (agent/inloop.py, datapath/
vagents.py) take the steps Python's stepping takes, at the same virtual
times, through the same algorithm code: the run is the same, with one
return to Python where there was one per report publish."""
import csv
import os

import pytest

from taurus.experiment import schema
from taurus.experiment.results import write_results
from taurus.experiment.runner import Runner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(tmp_path, tag, example, sets, in_loop, cls=Runner):
    x = schema.load(os.path.join(ROOT, "examples", example), ["outputs.plots=false"] + sets)
    r = cls(x)
    r.agents_in_loop = in_loop
    r.build()
    try:
        r.run()
        assert bool(r.in_loop) == in_loop
        loops = list(r.in_loop)
        steps = sum(il.steps for il in loops)
        snap = r.snapshot()
    finally:
        errors = r.teardown()
    assert errors == []                 # the steps handed back, their arguments unpinned
    assert all(il.args == 0 for il in loops)
    out = str(tmp_path / tag)
    os.makedirs(out)
    return out, write_results(r, snap, out), r.steps, steps


def _rows(out, name):
    with open(os.path.join(out, name)) as f:
        return list(csv.reader(f))


@pytest.mark.parametrize("example,sets", [
    ("dctcp_dumbbell.toml", ['experiment.duration="3ms"', 'experiment.warmup="1ms"']),
    ("dctcp_dumbbell.toml", ['experiment.duration="2ms"', 'experiment.warmup="0s"',
                             'cc.mode="per-event"']),
    ("incast_8to1.toml", ['experiment.duration="2ms"', 'experiment.warmup="0s"',
                          'cc.mode="agent"']),
])
def test_the_loop_steps_the_agents_as_python_does(tmp_path, example, sets):
    po, py, py_returns, _ = _run(tmp_path, "python", example, sets, False)
    lo, loop, loop_returns, loop_steps = _run(tmp_path, "loop", example, sets, True)
    assert py["complete"] and loop["complete"]
    for name in ("flow_series.csv", "queue_series.csv", "fct.csv"):
        assert _rows(po, name) == _rows(lo, name), name
    for key in ("flows", "ports", "nics", "groups"):
        assert py[key] == loop[key], key
    assert py["agent"]["messages"] > 0
    assert py["agent"]["hosts"] == loop["agent"]["hosts"]     # every count, every host
    assert loop_steps > 0
    assert loop_returns < py_returns / 4, (loop_returns, py_returns)


class _Opens(Runner):
    """Bumps each agent's CTL_OPENED at every sample time, as the engine
    does when a closed flow's row carries a new connection."""
    live_samples = True

    def _on_sample(self):
        from taurus.datapath.ccshm import CTL_OPENED
        for a in self.agents.values():
            a.cc.ctl[CTL_OPENED] += 1


def test_a_reused_row_hands_the_step_to_python(tmp_path):
    sets = ['experiment.duration="1ms"', 'experiment.warmup="0s"']
    po, py, _, _ = _run(tmp_path, "python", "dctcp_dumbbell.toml", sets, False, _Opens)
    lo, loop, _, steps = _run(tmp_path, "loop", "dctcp_dumbbell.toml", sets, True, _Opens)
    assert steps > 0
    for name in ("flow_series.csv", "fct.csv"):
        assert _rows(po, name) == _rows(lo, name), name
    assert py["agent"]["hosts"] == loop["agent"]["hosts"]
