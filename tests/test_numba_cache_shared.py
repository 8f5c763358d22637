"""Two copies of the same sources (two clones, a worktree, an installed
wheel) share one Numba cache: the second loads what the first compiled
(numba_cache.py's package-relative locator)."""
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = ("import numpy as np, taurus.datapath.clock as c; "
         "c.clock_advance_to(c.make_clock('virtual'), np.int64(5))")


def _compile(pkg_parent, env):
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=pkg_parent, capture_output=True,
                       text=True, timeout=300, env={**env, "PYTHONPATH": pkg_parent,
                                                    "NUMBA_DEBUG_CACHE": "1"})
    assert r.returncode == 0, r.stderr
    return [ln for ln in r.stdout.splitlines() if "clock_advance_to" in ln and "data" in ln]


def test_a_second_copy_loads_the_first_ones_cache(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")        # an empty cache
    copies = []
    for name in ("clone1", "clone2"):
        d = tmp_path / name
        # shutil.copy: fresh time stamps, as a clone has
        shutil.copytree(os.path.join(ROOT, "taurus"), d / "taurus", copy_function=shutil.copy,
                        ignore=shutil.ignore_patterns("__pycache__"))
        copies.append(str(d))
    first = _compile(copies[0], env)
    assert any("data saved" in ln for ln in first), first           # compiled and stored
    second = _compile(copies[1], env)
    assert any("data loaded" in ln for ln in second), second         # not compiled again
    assert not any("data saved" in ln for ln in second), second
    # a child of a process that loaded Numba inherits NUMBA_CACHE_DIR (the
    # session's warmers, an engine's agents): it files and finds code where
    # its parent does
    show = "import os, taurus, numba; print(os.environ['NUMBA_CACHE_DIR'])"
    d = subprocess.run([sys.executable, "-c", show],
                       cwd=copies[0], capture_output=True, text=True, check=True,
                       env={**env, "PYTHONPATH": copies[0]}).stdout.strip()
    child = _compile(copies[1], {**env, "NUMBA_CACHE_DIR": d})
    assert any("data loaded" in ln for ln in child), child
    assert not any("data saved" in ln for ln in child), child
