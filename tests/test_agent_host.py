"""Host actions: a temporary cgroup v2 is created and removed; cpu.max and
memory.high are written where the controllers exist, else a clear result."""
import os

import pytest

from taurus.agent.host_actions import HostActions, cgroup2_root

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

ROOT = cgroup2_root()
writable = ROOT is not None and os.geteuid() == 0 and os.access(ROOT, os.W_OK)


@pytest.mark.skipif(not writable, reason="cgroup v2 not writable here")
def test_cgroup_created_limited_and_removed():
    name = f"taurus-t{os.getpid()}"
    h = HostActions(name, create=True)
    path = os.path.join(ROOT, name)
    assert os.path.isdir(path)
    for r, f in ((h.cpu_max(50_000), "cpu.max"), (h.memory_high(1 << 30), "memory.high")):
        if os.path.exists(os.path.join(path, f)):
            assert r.ok, r.detail
            assert open(os.path.join(path, f)).read().split()[0] in ("50000", str(1 << 30))
        else:
            assert not r.ok and "unavailable" in r.detail
    h.teardown()
    assert not os.path.exists(path)


def test_refusals_and_mba_unavailable(tmp_path):
    with pytest.raises(ValueError, match="taurus-"):
        HostActions("mine", create=True, root=str(tmp_path))
    with pytest.raises(FileNotFoundError):
        HostActions("taurus-absent", create=False, root=str(tmp_path))
    h = HostActions(resctrl=str(tmp_path / "resctrl"))
    r = h.mba(50)
    assert not r.ok and "unavailable" in r.detail
    assert not h.cpu_max(1000).ok


def test_existing_cgroup_values_are_restored(tmp_path):
    cg = tmp_path / "taurus-x"
    cg.mkdir()
    (cg / "cpu.max").write_text("max 100000\n")
    h = HostActions("taurus-x", root=str(tmp_path))
    assert h.cpu_max(20_000, 100_000).ok and (cg / "cpu.max").read_text() == "20000 100000"
    h.teardown()
    assert (cg / "cpu.max").read_text() == "max 100000" and cg.exists()
