"""Where Numba keeps its on-disk cache, chosen before any compiled module loads.

Numba's cache checks only a function's own source file, but a cached caller
embeds its callees' code: an edit to a port module would leave the engine
loop running stale code, an edit to the agent's message handler its fast
path.  So the cache lives in a directory named by a hash of every source
file under taurus/ that uses Numba, directly or through ``hot`` /
``hot_stage`` (datapath/hot.py); any edit to one selects a fresh directory
(a NUMBA_CACHE_DIR set beforehand wins).
"""
import hashlib
import importlib.metadata
import os
import pathlib
import re
import shutil
import sys
import time

# Files with compiled code: they name Numba, or compile through datapath/hot.py.
_COMPILED = re.compile(rb"numba|\bhot(_stage)?\b")


def cache_dir() -> pathlib.Path:
    here = pathlib.Path(__file__).resolve().parent
    h = hashlib.sha1(importlib.metadata.version("numba").encode())
    for f in sorted(here.rglob("*.py")):
        src = f.read_bytes()
        if _COMPILED.search(src):
            h.update(f.relative_to(here).as_posix().encode())
            h.update(src)
    base = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
    return base / "taurus" / f"numba-{h.hexdigest()[:16]}"


def configure() -> None:
    """Through the environment (Numba reads it on import, and the agent and
    engine processes we start inherit it), so ``import taurus`` stays cheap."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    d = cache_dir()
    if not d.exists():
        for old in d.parent.glob("numba-*"):  # older sources, idle for an hour
            if time.time() - old.stat().st_mtime > 3600:
                shutil.rmtree(old, ignore_errors=True)
        d.mkdir(parents=True, exist_ok=True)
    os.environ["NUMBA_CACHE_DIR"] = str(d)
    if "numba" in sys.modules:            # imported before us: tell it directly
        sys.modules["numba"].config.CACHE_DIR = str(d)
