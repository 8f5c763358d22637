"""`taurus reproduce`: named scenarios that put a seed's or paper's figure
beside ours.

    taurus reproduce --list
    taurus reproduce NAME [--out DIR] [--quick] [--mode native|agent|per-event]
    taurus reproduce --all [--check | --record] [--only A,B] [--workers N | --scheduler ADDR]
    taurus reproduce --results        # docs/RESULTS.md, made from the ledger

A scenario is one function registered with ``@scenario(name, about)``
(``core.py``) in a module of this package, one module per paper or seed:
it builds experiments as dicts (``schema.from_dict``, the same keys as the
files in examples/), runs them in virtual time (so the result is
deterministic), and returns its figures and one headline line.  ``run``
writes ``figures.json`` and the scenario's plots into DIR (each
experiment's own run directory below it) and ends with ``NAME: ...``.
``--quick`` shortens the runs (the tests use it); ``--mode`` picks where the
algorithms decide (native by default: the same decisions as the agent
modes, tests/test_cc_replay.py, at less cost).

What each scenario gives in full is recorded in the results ledger
(``ledger.toml``, ``ledger.py``): figures with tolerances, the seed's beside
them, and claims its quick run must hold too; ``--all --check`` (suite.py)
runs every scenario and compares.  A new scenario gets a ledger entry.

Every module here is imported on first use, so a new scenario module needs
no registration beyond its ``@scenario``.
"""
import importlib
import pkgutil

from .core import SCENARIOS, Scenario, run, scenario

_SKIP = {"core", "cli", "ledger", "suite"}


def load() -> dict[str, Scenario]:
    """Import every scenario module (once); the registry, by name."""
    for m in pkgutil.iter_modules(__path__):
        if m.name not in _SKIP:
            importlib.import_module(f"{__name__}.{m.name}")
    return SCENARIOS


__all__ = ["SCENARIOS", "Scenario", "load", "run", "scenario"]
