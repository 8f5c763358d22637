"""Numba's cache is keyed by every file whose code is compiled: a cached
caller embeds its callees, so an edit to any of them must select a fresh
cache (taurus/numba_cache.py)."""
import pathlib
import re

from taurus import numba_cache

PKG = pathlib.Path(numba_cache.__file__).resolve().parent
DECORATED = re.compile(r"^@(nb\.njit|njit|hot|hot_stage|intrinsic|nb\.jit)\b", re.M)


def test_every_compiled_file_is_in_the_cache_key():
    compiled = [p for p in PKG.rglob("*.py") if DECORATED.search(p.read_text(encoding="utf-8"))]
    assert len(compiled) > 30
    missed = [str(p.relative_to(PKG)) for p in compiled
              if not numba_cache._COMPILED.search(p.read_bytes())]
    assert missed == []
