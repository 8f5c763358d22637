"""The engine's first compile on a cold cache is said on stderr, and split
with a warmer only where a core is spare and no one else warms
(datapath/first_compile.py)."""
import io
import types

from taurus.datapath import first_compile as fc


def _dispatcher(index_path):
    cache = types.SimpleNamespace(_cache_path="/cache/taurus/datapath",
                                  _cache_file=types.SimpleNamespace(_index_path=str(index_path)))
    return types.SimpleNamespace(_cache=cache)


def test_a_cached_loop_says_nothing(tmp_path):
    index = tmp_path / "engine.engine_run-1.py311.nbi"
    index.write_bytes(b"")
    out = io.StringIO()
    with fc.FirstCompile(_dispatcher(index), out) as f:
        pass
    assert not f.cold and f.warmer is None and out.getvalue() == ""


def test_a_cold_loop_is_said_with_where_it_goes_and_how_long_it_took(tmp_path, monkeypatch):
    monkeypatch.setenv(fc.WARMING, "1")                 # the session warms: no second process
    out = io.StringIO()
    with fc.FirstCompile(_dispatcher(tmp_path / "missing.nbi"), out) as f:
        assert f.cold and f.warmer is None
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("taurus: compiling the engine") and "/cache/taurus/datapath" in lines[0]
    assert lines[1].startswith("taurus: engine compiled in ")


def test_a_cold_loop_with_a_spare_core_starts_one_warmer_and_stops_it(tmp_path, monkeypatch):
    monkeypatch.delenv(fc.WARMING, raising=False)
    monkeypatch.setattr(fc, "_spare_core", lambda: True)
    started = []

    class Proc:
        def __init__(self, argv, env, **kw):
            started.append((argv, env))
            self.stopped = False

        def poll(self):
            return None

        def terminate(self):
            self.stopped = True

        def wait(self, timeout=None):
            return 0
    monkeypatch.setattr(fc.subprocess, "Popen", Proc)
    with fc.FirstCompile(_dispatcher(tmp_path / "missing.nbi"), io.StringIO()) as f:
        pass
    (argv, env), = started
    assert argv[1:] == ["-m", "taurus.datapath.warm"] and env[fc.WARMING] == "1"
    assert f.warmer.stopped


def test_numba_still_names_the_loops_cache_index():
    """cached() reads Numba's internals: a Numba that moved them would
    silence the notice."""
    from taurus.datapath.engine import engine_run
    assert engine_run._cache._cache_file._index_path.endswith(".nbi")
