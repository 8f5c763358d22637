"""Frame sizes: UET's 4 KB MTU (and jumbo frames) run in virtual time, the
wall clock refuses what its ports cannot carry, and `taurus run --check`
refuses exactly what the run would."""
import mmap
import os
import subprocess
import sys

import pytest

from taurus.datapath.devices.nic.setup import DATA_HDR
from taurus.experiment import frames, schema
from taurus.experiment.runner import run_experiment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def exp(mss: int, mtu: int = 4150, jumbo: bool = True) -> dict:
    link = {"rate": "100Gbit", "delay": "1us", "mtu": mtu}
    return {"experiment": {"name": "t", "duration": "200us"},
            "topology": {"name": "t", "allow_jumbo": jumbo,
                         "hosts": [{"name": "h1"}, {"name": "h2"}], "switches": [{"name": "s1"}],
                         "links": [{"endpoints": ["h1", "s1"], **link},
                                   {"endpoints": ["s1", "h2"], **link}]},
            "cc": {"algorithm": "nscc", "mode": "native", "mss": mss},
            "traffic": [{"kind": "bulk", "from": "h1", "to": "h2", "size": "400KB"}]}


def load(d):
    return schema.from_dict(d, "x.toml")


def test_pool_buffer_fits_the_largest_frame():
    assert frames.pool_buffer(load(exp(1024)), "virtual") == 2048
    assert frames.pool_buffer(load(exp(2048 - DATA_HDR)), "virtual") == 2048
    b = frames.pool_buffer(load(exp(4040)), "virtual")
    assert b % 64 == 0 and DATA_HDR + 4040 <= b < DATA_HDR + 4040 + 64
    # the wall clock: AF_XDP chunks (a power of two up to a page, minus the headroom)
    assert frames.pool_buffer(load(exp(1024)), "wall") == 2048
    assert frames.pool_buffer(load(exp(1800)), "wall") == mmap.PAGESIZE


def test_limits_per_clock():
    assert frames.problems(load(exp(4040)), "virtual") == []
    assert frames.problems(load(exp(9000, mtu=9200)), "virtual") == []
    assert frames.max_frame(load(exp(1024)), "h1", "virtual") == 65535 + 14   # a jumbo frame
    # wall: the link's MTU (plus Ethernet) and a page-sized chunk bound the frame
    assert frames.problems(load(exp(1404, mtu=1500, jumbo=False)), "wall") == []
    e = frames.problems(load(exp(1405, mtu=1500, jumbo=False)), "wall")
    assert len(e) == 1 and "64..1404" in e[0].message and "MTU 1500" in e[0].message
    cap = mmap.PAGESIZE - 256 - DATA_HDR
    assert frames.problems(load(exp(4040)), "wall")[0].message.startswith(f"mss 4040 on the wall clock: expected 64..{min(cap, 4150 + 14 - DATA_HDR)}")


def test_a_per_host_mss_names_its_site():
    d = exp(1024)
    d["cc"]["hosts"] = {"h2": {"mss": 4040}}
    e = frames.problems(load(d), "wall")
    assert [x.key for x in e] == ["cc.hosts.h2.mss"]


def _toml(mss: int) -> str:
    link = 'rate = "100Gbit", delay = "1us", mtu = 4150'
    return f"""[experiment]
name = "t"
duration = "200us"
[topology]
name = "t"
allow_jumbo = true
hosts = [{{ name = "h1" }}, {{ name = "h2" }}]
switches = [{{ name = "s1" }}]
links = [{{ endpoints = ["h1", "s1"], {link} }}, {{ endpoints = ["s1", "h2"], {link} }}]
[cc]
algorithm = "nscc"
mode = "native"
mss = {mss}
[[traffic]]
kind = "bulk"
from = "h1"
to = "h2"
size = "400KB"
"""


def _write(tmp_path):
    p = tmp_path / "x.toml"
    p.write_text(_toml(4040))
    return p


def _check(tmp_path, mss, clock):
    p = tmp_path / "x.toml"
    p.write_text(_toml(mss))
    return subprocess.run([sys.executable, "-c", "import sys; from taurus.cli import main; sys.exit(main())",
                           "run", str(p), "--check", "--clock", clock],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})


def test_check_refuses_what_the_run_refuses(tmp_path):
    assert load(exp(4040)).topo.hosts == schema.load(str(_write(tmp_path))).topo.hosts
    ok = _check(tmp_path, 4040, "virtual")
    assert ok.returncode == 0, ok.stderr
    bad = _check(tmp_path, 4040, "wall")
    assert bad.returncode == 2 and "cc.mss" in bad.stderr and "mss 4040 on the wall clock" in bad.stderr
    with pytest.raises(schema.ExperimentError) as e:
        run_experiment(load(exp(4040)), str(tmp_path / "run"), clock="wall", progress=False)
    assert e.value.key == "cc.mss"
    assert not (tmp_path / "run").exists()


def test_4k_mtu_runs_in_virtual_time(tmp_path):
    """A 4 KB frame (htsim's 4150-byte packet) end to end: the flow finishes
    at about line rate, in frames of DATA_HDR + 4040 bytes."""
    s = run_experiment(load(exp(4040)), str(tmp_path / "run"), clock="virtual", progress=False)
    assert s["complete"], s["error"]
    (f,) = s["flows"]
    wire = 400_000 / 4040 * (4040 + DATA_HDR) * 8 / 100e9 * 1e9
    assert wire < f["fct_ns"] < wire + 20_000
