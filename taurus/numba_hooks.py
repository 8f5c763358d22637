"""Run a function right after one of Numba's modules loads, so ``import
taurus`` stays free of Numba (numba_uids.py and numba_cache.py adjust
Numba's internals this way)."""
import importlib.abc
import importlib.machinery
import sys


_waiting: dict[str, list] = {}      # module name -> functions to run once it loads


class _OnLoad(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of module ``name`` so the
    functions waiting for it run on the module right after it executes."""

    def __init__(self, name):
        self.name = name

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
            for then in _waiting.pop(name, []):
                then(module)
        spec.loader.exec_module = exec_module
        return spec


def after_import(name: str, then) -> None:
    """``then(module)`` once module ``name`` is loaded: now if it is."""
    if name in sys.modules:
        then(sys.modules[name])
        return
    if name not in _waiting:
        _waiting[name] = []
        sys.meta_path.insert(0, _OnLoad(name))
    _waiting[name].append(then)
