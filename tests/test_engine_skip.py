"""Under the virtual clock the loop polls only the devices with something to
do (a frame waiting, a timer fired, work in their last poll); a skipped poll
would have done nothing, so a run is the run that polls every device every
pass (ctl POLL_ALL), with far fewer polls."""
import csv
import os

import pytest

from taurus.datapath.engine import POLL_ALL
from taurus.experiment import schema
from taurus.experiment.results import write_results
from taurus.experiment.runner import Runner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(tmp_path, tag, example, sets, poll_all):
    x = schema.load(os.path.join(ROOT, "examples", example),
                    ["outputs.plots=false"] + sets)
    r = Runner(x)
    r.build()
    r.eng.ctl[POLL_ALL] = int(poll_all)
    try:
        r.run()
        snap = r.snapshot()
        timing = r.eng.loop_timing()
    finally:
        r.teardown()
    out = str(tmp_path / tag)
    os.makedirs(out)
    return out, write_results(r, snap, out), timing


def _rows(out, name):
    with open(os.path.join(out, name)) as f:
        return list(csv.reader(f))


@pytest.mark.parametrize("example,sets", [
    ("dctcp_dumbbell.toml", ['experiment.duration="3ms"', 'experiment.warmup="1ms"']),
    ("dctcp_dumbbell.toml", ['experiment.duration="3ms"', 'experiment.warmup="1ms"',
                             "cc.mode=native"]),
    ("incast_8to1.toml", ['experiment.duration="2ms"', 'experiment.warmup="0s"']),
])
def test_polling_only_busy_devices_gives_the_poll_all_run(tmp_path, example, sets):
    ao, every, t_all = _run(tmp_path, "all", example, sets, True)
    so, skip, t_skip = _run(tmp_path, "skip", example, sets, False)
    assert every["complete"] and skip["complete"]
    for name in ("flow_series.csv", "queue_series.csv", "fct.csv"):
        assert _rows(ao, name) == _rows(so, name), name
    for key in ("flows", "ports", "nics", "groups"):
        assert every[key] == skip[key], key
    assert every["agent"]["messages"] == skip["agent"]["messages"]
    assert t_all["iters"] == t_skip["iters"]               # the same passes
    assert t_skip["polls"] < 0.6 * t_all["polls"], (t_skip["polls"], t_all["polls"])
