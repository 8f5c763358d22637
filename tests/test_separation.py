"""The NIC-host separation model ([cc] separation, virtual clock): the
agents step, and their decisions land, exactly the modelled time after the
publish that carried the reports -- whether Python or the loop steps them."""
import os

import numpy as np
import pytest

from taurus.datapath.ctlblock import N_CTL, SEP_NS, SEP_PER_MSG_PS, VAG_DUE, VAG_N, VAG_STEP
from taurus.datapath.vagents import vagents_published
from taurus.experiment import schema
from taurus.experiment.results import write_results
from taurus.experiment.runner import Runner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHORT = ['experiment.duration="2ms"', 'experiment.warmup="0s"', "outputs.plots=false"]


def test_a_publish_makes_the_agents_due_after_the_modelled_time():
    ctl = np.zeros(N_CTL, np.int64)
    ctl[VAG_N], ctl[VAG_STEP] = 1, 10_000
    vagents_published(ctl, 12_345, 3)
    assert ctl[VAG_DUE] == 20_000                    # no model: the next grid point
    ctl[VAG_DUE], ctl[SEP_NS], ctl[SEP_PER_MSG_PS] = 0, 1_000, 1_400
    vagents_published(ctl, 12_345, 10)
    assert ctl[VAG_DUE] == 12_345 + 1_000 + 14       # 10 records of 1.4 ns on the bus
    vagents_published(ctl, 13_000, 1)
    assert ctl[VAG_DUE] == 13_359                    # a later publish: the earlier due stands
    ctl[VAG_N], ctl[VAG_DUE] = 0, 0                  # Python steps the agents: due all the same
    vagents_published(ctl, 50_000, 0)
    assert ctl[VAG_DUE] == 51_000


class _Timed(Runner):
    """Records, for each publish that woke Python, when it woke and when
    the agents then stepped."""
    agents_in_loop = False

    def build(self):
        super().build()
        self.wakes = []
        run_until = self.eng.run_until

        def timed(until, **kw):
            r = run_until(until, **kw)
            if r == "woken":
                self.wakes.append([self.eng.now(), None])
            elif self.wakes and self.wakes[-1][1] is None:
                self.wakes[-1][1] = self.eng.now()
            return r
        self.eng.run_until = timed


def _run(tmp_path, tag, sets, cls=Runner, in_loop=True):
    x = schema.load(os.path.join(ROOT, "examples", "dctcp_dumbbell.toml"), SHORT + sets)
    r = cls(x)
    r.agents_in_loop = in_loop
    r.build()
    try:
        r.run()
        snap = r.snapshot()
    finally:
        assert r.teardown() == []
    out = str(tmp_path / tag)
    os.makedirs(out)
    return r, write_results(r, snap, out)


def test_python_steps_the_agents_exactly_the_latency_after_each_publish(tmp_path):
    sep = 'cc.separation={report="3us", decision="2us", per_message="0ns"}'
    r, res = _run(tmp_path, "sep", [sep], _Timed, in_loop=False)
    end = r.t0 + r.x.duration                       # a wake within 5 us of it stops there
    gaps = {t1 - t0 for t0, t1 in r.wakes if t0 + 5_000 <= end}
    assert len(r.wakes) > 10 and gaps == {5_000}
    assert res["separation"] == {"report_ns": 3_000, "decision_ns": 2_000, "per_message_ps": 0}


def test_the_loop_steps_the_agents_as_python_does_under_the_model(tmp_path):
    sets = ['cc.separation="pcie"']
    _, py = _run(tmp_path, "py", sets, in_loop=False)
    _, loop = _run(tmp_path, "loop", sets, in_loop=True)
    assert py["flows"] == loop["flows"] and py["agent"]["hosts"] == loop["agent"]["hosts"]
    _, grid = _run(tmp_path, "grid", [], in_loop=True)
    assert grid["separation"] is None and grid["flows"] != loop["flows"]   # the model acts


@pytest.mark.parametrize("value, message", [
    ('"pci"', 'expected "none" or "pcie"'),
    ('{report="1us", delay="1us"}', 'unknown key "delay"'),
    ('{report="0ns", decision="0ns"}', "must be > 0"),
])
def test_bad_separations_are_named(value, message):
    with pytest.raises(schema.ExperimentError, match=message) as e:
        schema.load(os.path.join(ROOT, "examples", "dctcp_dumbbell.toml"),
                    SHORT + [f"cc.separation={value}"])
    assert "cc.separation" in str(e.value)


def test_the_model_needs_event_stepping(tmp_path):
    with pytest.raises(RuntimeError, match="event stepping"):
        _run(tmp_path, "fixed", ['cc.separation="pcie"', 'experiment.stepping="fixed"'])
