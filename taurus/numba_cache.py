"""Where Numba keeps its on-disk cache, chosen before any compiled module loads.

Numba's cache checks only a function's own source file, but a cached caller
embeds its callees' code: an edit to a port module would leave the engine
loop running stale code, an edit to the agent's message handler its fast
path.  So the cache lives in a directory named by a hash of every source
file under taurus/ that uses Numba, directly or through ``hot`` /
``hot_stage`` (datapath/hot.py); any edit to one selects a fresh directory
(a NUMBA_CACHE_DIR set beforehand wins).

Inside it, Numba files each source file's functions under a hash of the
file's absolute directory, so a second clone, a git worktree or an
installed wheel would compile everything again.  ``configure`` puts first a
locator of its own for the package's files: it files them under their path
relative to the package, so every copy of the same sources shares one
cache.  (The index's freshness stamp is already the file's content hash;
user algorithm files outside the package keep Numba's own locator.)
"""
import hashlib
import os
import pathlib
import re
import shutil
import time

from .numba_hooks import after_import

PACKAGE = pathlib.Path(__file__).resolve().parent

# Files with compiled code: they name Numba, or compile through datapath/hot.py.
_COMPILED = re.compile(rb"numba|\bhot(_stage)?\b")


def cache_dir() -> pathlib.Path:
    import importlib.metadata           # 50 ms: only a process that loads Numba pays it
    here = PACKAGE
    h = hashlib.sha1(importlib.metadata.version("numba").encode())
    for f in sorted(here.rglob("*.py")):
        src = f.read_bytes()
        if _COMPILED.search(src):
            h.update(f.relative_to(here).as_posix().encode())
            h.update(src)
    base = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
    return base / "taurus" / f"numba-{h.hexdigest()[:16]}"


def configure() -> None:
    """When Numba's config loads (a process that never loads Numba, as a
    listing, pays nothing): the directory goes into the environment, which
    the agent and engine processes we start inherit, and into Numba's
    config.  The locator goes in whatever the directory: a child that
    inherits it must file what it compiles where its parent looks (the test
    session's warmers compile for the session)."""
    after_import("numba.core.config", _use_dir)
    after_import("numba.core.caching", _add_locator)


def _use_dir(config) -> None:
    d = os.environ.get("NUMBA_CACHE_DIR")
    if not d:
        d = cache_dir()
        if not d.exists():
            for old in d.parent.glob("numba-*"):  # older sources, idle for an hour
                try:
                    if time.time() - old.stat().st_mtime > 3600:
                        shutil.rmtree(old, ignore_errors=True)
                except FileNotFoundError:         # another process pruned it first
                    pass
            d.mkdir(parents=True, exist_ok=True)
        os.environ["NUMBA_CACHE_DIR"] = str(d)
    config.CACHE_DIR = str(d)


def _add_locator(caching) -> None:
    """Numba's cache picks the first locator class that accepts a function:
    ours, for the package's files (idempotent)."""
    if any(c.__name__ == "PackageCacheLocator" for c in caching.CacheImpl._locator_classes):
        return

    class PackageCacheLocator(caching.UserProvidedCacheLocator):
        """CACHE_DIR/<the file's directory relative to the package>."""

        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            rel = pathlib.Path(py_file).resolve().parent.relative_to(PACKAGE)
            self._cache_path = os.path.join(caching.config.CACHE_DIR, "taurus", *rel.parts)

        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                pathlib.Path(py_file).resolve().relative_to(PACKAGE)
            except (ValueError, OSError):
                return None                  # not ours: Numba's own locators
            return super().from_function(py_func, py_file)

    caching.CacheImpl._locator_classes.insert(0, PackageCacheLocator)
