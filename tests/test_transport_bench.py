"""bench/transport.py's measurement plan: the ratio's two rows run back to
back in every round, in alternating order, on a core of their own."""
import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("bench_transport",
                                               os.path.join(HERE, "bench", "transport.py"))
tb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tb)


def test_the_ratio_rows_are_adjacent_and_alternate_first():
    for rows in ("all", "ratio"):
        a, b = tb.round_keys(0, rows), tb.round_keys(1, rows)
        assert a[:2] == ["raw", tb.RATIO_KEY] and b[:2] == [tb.RATIO_KEY, "raw"]
    assert tb.round_keys(2, "ratio") == ["raw", tb.RATIO_KEY]
    others = tb.round_keys(0, "all")[2:]
    assert "raw-xsk" in others and ("per-host", 8) in others
    assert "raw" not in others and tb.RATIO_KEY not in others


def test_the_xsk_rows_are_raw_xsk_and_the_ratio_row_alternating():
    assert tb.round_keys(0, "xsk") == ["raw-xsk", tb.RATIO_KEY]
    assert tb.round_keys(1, "xsk") == [tb.RATIO_KEY, "raw-xsk"]


def test_the_ratio_is_a_median_of_rounds_with_its_range():
    assert tb.spread([0.9, 0.5, 1.1]) == "0.90 (median of 3 rounds, range 0.50-1.10)"


def test_the_engine_core_is_an_allowed_one_and_the_receiver_another():
    allowed = sorted(os.sched_getaffinity(0))
    eng, rx = tb.pick_cpus(None)
    assert eng == allowed[-1]
    assert rx == (allowed[0] if len(allowed) > 1 else -1)
    assert tb.pick_cpus(allowed[0])[0] == allowed[0]
    with pytest.raises(SystemExit, match="not one of the allowed cores"):
        tb.pick_cpus(max(allowed) + 1000)


def test_the_perf_map_names_numba_code_by_its_python_name():
    spec = importlib.util.spec_from_file_location("bench_perfmap",
                                                  os.path.join(HERE, "bench", "perfmap.py"))
    pm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pm)
    name = "_ZN6taurus8datapath7devices3nic2rx7rx_dataB4v445B40c8tJTIeFIjxB2IKSgI4E5404ByRef"
    assert pm.short_name(name) == "taurus.datapath.devices.nic.rx.rx_data"
    assert pm.short_name("cfunc." + name) == "cfunc.taurus.datapath.devices.nic.rx.rx_data"
    assert pm.short_name("not_mangled") == "not_mangled"


def test_the_flows_share_the_rings_so_the_working_set_stays_put():
    """8 flows get 1 MiB each, one flow all 8 MiB: the rows' rings take
    the same memory whatever the flows (bench/README.md: the rings are
    the working set)."""
    assert tb.ring_bytes(tb.SETTINGS, 8) == (1 << 20, 1 << 20)
    assert tb.ring_bytes(tb.SETTINGS, 1) == (8 << 20, 8 << 20)
