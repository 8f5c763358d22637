"""The `taurus` command: topo up/down/show/clean and engine stats, as a user
runs them (subprocesses), including the errors a bad file gets."""
import os
import subprocess
import sys

import pytest

from conftest import needs_root
from taurus.tools import netns

PREFIX = f"taurus-t{os.getpid()}c-"


def taurus(*args, check=True):
    r = subprocess.run([sys.executable, "-m", "taurus.cli", *args], capture_output=True,
                       text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"taurus {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def test_help_and_show():
    assert "topo" in taurus("--help").stdout
    out = taurus("topo", "show", "line").stdout
    assert "s1-eth0" in out and "10.0.0.2" in out


def test_bad_file_names_file_and_field(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('[topology]\nname = "x"\n[[hosts]]\nname = "h1"\n[[links]]\n'
                 'endpoints = ["h1", "nope"]\n')
    r = taurus("topo", "up", str(f), "--prefix", PREFIX, check=False)
    assert r.returncode == 2
    assert "bad.toml" in r.stderr and "links[0]" in r.stderr and "nope" in r.stderr


def test_engine_and_perf_name_a_bad_topology_without_a_traceback(capsys):
    """topo_cli.load_up, which `taurus engine run` and `taurus perf` use."""
    from taurus.tools.topo_cli import load_up
    for who in ("engine", "perf"):
        assert load_up("fat_tree:k=4", "bad-", who) is None
        err = capsys.readouterr().err
        assert err.startswith(f"taurus {who}: error: fat_tree:k=4: prefix") and "taurus-" in err


@needs_root
def test_up_engine_stats_down(tmp_path):
    try:
        taurus("topo", "up", "line", "--prefix", PREFIX)
        assert len(netns.list_ns(PREFIX)) == 3
        r = taurus("engine", "run", "line", "--prefix", PREFIX, "--duration", "0.5",
                   "--port-kind", "af_packet", "--name", f"{PREFIX}eng")
        assert '"s1-eth0"' in r.stdout
        taurus("topo", "down", "line", "--prefix", PREFIX)
        assert netns.list_ns(PREFIX) == []
    finally:
        taurus("topo", "clean", "--prefix", PREFIX, check=False)
    assert netns.list_ns(PREFIX) == []


def test_run_check_and_bad_experiment(tmp_path):
    ex = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
    out = taurus("run", os.path.join(ex, "incast_8to1.toml"), "--check").stdout
    assert "ok (9 hosts, 1 switches, 24 flows" in out
    f = tmp_path / "bad.toml"
    f.write_text('[experiment]\nname = "x"\nduration = "1ms"\n[topology]\nbuiltin = "line"\n'
                 '[[traffic]]\nkind = "bulk"\nfrom = "h1"\nto = "h2"\nrate = "1Gbit"\n')
    r = taurus("run", str(f), check=False)
    assert r.returncode == 2 and "bad.toml: traffic[0].rate: unknown key" in r.stderr
    r = taurus("run", os.path.join(ex, "incast_8to1.toml"), "--set", "cc.mode", check=False)
    assert r.returncode == 2 and "KEY=VALUE" in r.stderr
    assert "--clock" in taurus("run", "--help").stdout and "--clock" in taurus("demo", "--help").stdout
