"""The engine samples a run's series itself (datapath/sampler.py): one row
per period on the grid, holding what Python read when it stopped the engine
there; a small buffer loses no row; and a native run needs Python only
where flows start."""
import os

import numpy as np
import pytest

from taurus.datapath import engine as engine_mod
from taurus.datapath.devices.nic.state import CX_CWND, FL_ACKED_OFF
from taurus.experiment import schema
from taurus.experiment.runner import Runner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "dctcp_dumbbell.toml")


class _Live(Runner):
    """Also reads the series in Python at every sample time, as the runner
    did before the engine sampled."""
    live_samples = True

    def _on_sample(self):
        N, R = self.eng.E.nic, self.eng.E.rep
        w = R.cwnd[self.fid]
        self.live.append((self.now, N.fl[self.fid, FL_ACKED_OFF].copy(),
                          np.where(w > 0, w, N.ctx[self.fid, CX_CWND]),
                          np.array([int(self.eng.E.sw.qb[p].sum()) for _, p in self.port_list])))


def _run(cls, mode="native"):
    x = schema.load(DEMO, ['experiment.duration="2ms"', 'experiment.warmup="0s"',
                           'experiment.sample="50us"', f"cc.mode={mode}"])
    r = cls(x)
    r.live = []
    r.build()
    try:
        r.run()
    finally:
        r.teardown()
    return r


def test_rows_hold_what_python_reads_at_each_sample_time():
    r = _run(_Live)
    assert len(r.samples_t) == len(r.live) == 40           # 2 ms / 50 us
    for k, (t, acked, cwnd, queue) in enumerate(r.live):
        assert r.samples_t[k] == t == (k + 1) * 50_000
        assert np.array_equal(r.samples_acked[k], acked)
        assert np.array_equal(r.samples_cwnd[k], cwnd)
        assert np.array_equal(r.samples_queue[k], queue)
    assert r.samples_acked[-1].sum() > 0 and max(q.sum() for q in r.samples_queue) > 0


@pytest.mark.parametrize("mode", ["agent", "native"])
def test_a_two_row_buffer_loses_no_row(monkeypatch, mode):
    """A native run does not stop for Python: the sampler's yields let the
    engine take the rows out between chunks."""
    full = _run(Runner, mode)
    monkeypatch.setattr(engine_mod, "rows_for", lambda width: 2)
    small = _run(Runner, mode)
    assert small.samples_t == full.samples_t == [(k + 1) * 50_000 for k in range(40)]
    for a, b in zip(small.samples_acked + small.samples_queue,
                    full.samples_acked + full.samples_queue):
        assert np.array_equal(a, b)


def test_a_native_run_returns_to_python_only_where_something_is_due():
    r = _run(Runner)
    assert len(r.samples_t) == 40
    assert r.steps <= 4, r.steps          # the flows' start and the end, not 40 samples
