"""The wheel works outside the repository: built with `python -m build`,
installed into a clean venv, `taurus algorithms`, `taurus reproduce
--list`, `taurus demo` and (as root) `taurus perf -s/-c` run from it, with
the examples, the CDFs, the XDP object and the AF_XDP binding inside it.

The venv sees the machine's site-packages as a plain path (no editable
install's finder), so the dependencies need no download; it shares the
Numba cache with the checkout (numba_cache.py), so nothing compiles again."""
import glob
import os
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from conftest import needs_root
from taurus.tools import netns
from taurus.tools.procs import interrupt

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    d = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                        str(d / "dist"), ROOT], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    [whl] = glob.glob(str(d / "dist" / "taurus-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", str(d / "venv")], check=True, timeout=300)
    py = str(d / "venv" / "bin" / "python")
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "_machine_site.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", whl],
                   check=True, timeout=300, capture_output=True)
    return d, whl


def _taurus(d, *args, timeout=600):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR")}
    return subprocess.run([str(d / "venv" / "bin" / "taurus"), *args], cwd=str(d),
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_the_wheel_carries_its_data(venv):
    _, whl = venv
    names = set(zipfile.ZipFile(whl).namelist())
    for f in ("taurus/examples/dctcp_dumbbell.toml", "taurus/examples/wall_dctcp.toml",
              "taurus/data/websearch_cdf.csv", "taurus/data/hadoop_cdf.csv",
              "taurus/datapath/ports/bpf/xdp_redirect.bpf.o",
              "taurus/tools/topologies/dumbbell.toml", "taurus/reproduce/ledger.toml"):
        assert f in names, f
    assert any(n.startswith("taurus/datapath/ports/_xsk") and n.endswith(".so") for n in names)
    meta = [n for n in names if n.endswith("METADATA")]
    text = zipfile.ZipFile(whl).read(meta[0]).decode()
    for field in ("License:", "Classifier: Programming Language :: Python :: 3.11",
                  "Requires-Python: >=3.11", "Version: "):
        assert field in text, field


def test_commands_run_from_the_installed_wheel(venv):
    d, _ = venv
    where = subprocess.run([str(d / "venv" / "bin" / "python"), "-c",
                            "import taurus; print(taurus.__file__)"], capture_output=True,
                           text=True, cwd=str(d)).stdout
    assert str(d / "venv") in where                      # the wheel's copy, not the checkout
    r = _taurus(d, "algorithms")
    assert r.returncode == 0 and "dctcp (sender)" in r.stdout, r.stderr
    r = _taurus(d, "reproduce", "--list")
    assert r.returncode == 0 and "taurus-fct" in r.stdout, r.stderr
    r = _taurus(d, "demo", "--duration", "2ms", "--out", str(d / "demo"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert os.path.exists(d / "demo" / "summary.json")


@needs_root
def test_perf_runs_from_the_installed_wheel(venv):
    d, _ = venv
    prefix = f"{netns.PREFIX}w{os.getpid()}-"
    exe = str(d / "venv" / "bin" / "taurus")
    base = [exe, "perf", "--topo", "two_hosts", "--prefix", prefix, "--name", f"{prefix}perf"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR")}
    srv = None
    try:
        r = subprocess.run([exe, "topo", "up", "two_hosts", "--prefix", prefix], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        srv = subprocess.Popen(base + ["-s"], env=env, cwd=str(d), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        line = srv.stdout.readline()
        assert "serving" in line, srv.stderr.read() if srv.poll() is not None else line
        r = subprocess.run(base + ["-c", "h2", "-t", "1"], env=env, cwd=str(d),
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        assert "receiver" in r.stdout
    finally:
        interrupt(srv, 30)
        subprocess.run([exe, "topo", "down", "two_hosts", "--prefix", prefix], env=env,
                       capture_output=True, timeout=120)
    assert not netns.list_ns(prefix)
