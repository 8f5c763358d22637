"""Run a function right after one of Numba's modules loads, so ``import
taurus`` stays free of Numba (numba_uids.py and numba_cache.py adjust
Numba's internals this way)."""
import importlib.abc
import importlib.machinery
import sys


class _OnLoad(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of module ``name`` so ``then``
    runs on the module right after it executes."""

    def __init__(self, name, then):
        self.name, self.then = name, then

    def find_spec(self, name, path, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            self.then(module)
        spec.loader.exec_module = exec_module
        return spec


def after_import(name: str, then) -> None:
    """``then(module)`` once module ``name`` is loaded: now if it is."""
    if name in sys.modules:
        then(sys.modules[name])
    else:
        sys.meta_path.insert(0, _OnLoad(name, then))
