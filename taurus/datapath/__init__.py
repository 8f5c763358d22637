"""The "NIC": Numba poll-mode engine, ports, devices and wire formats.

Numba's on-disk cache checks only a function's own source file, but a cached
caller embeds its callees' code: an edit to a port module would leave the
engine loop running stale code.  So the cache lives in a directory named by a
hash of every source file here; any edit selects a fresh directory.
"""
import hashlib
import os
import pathlib
import shutil
import time

import numba


def _cache_dir() -> pathlib.Path:
    here = pathlib.Path(__file__).resolve().parent
    h = hashlib.sha1(numba.__version__.encode())
    for f in sorted(here.rglob("*.py")):
        h.update(f.relative_to(here).as_posix().encode())
        h.update(f.read_bytes())
    base = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
    return base / "taurus" / f"numba-{h.hexdigest()[:16]}"


if not os.environ.get("NUMBA_CACHE_DIR"):
    _dir = _cache_dir()
    if not _dir.exists():
        for old in _dir.parent.glob("numba-*"):  # older sources, idle for an hour
            if time.time() - old.stat().st_mtime > 3600:
                shutil.rmtree(old, ignore_errors=True)
        _dir.mkdir(parents=True, exist_ok=True)
    numba.config.CACHE_DIR = str(_dir)
