"""The shape the code keeps: algorithms short and on the shared toolkit,
short functions, one way to spell the hot-path compile flags and the
control words (docs/DESIGN.md's layering).  Measured on the source text."""
import ast
import pathlib

import pytest

from taurus.cc_algorithms import registry

ROOT = pathlib.Path(__file__).resolve().parent.parent / "taurus"

# Functions over 80 lines, each with the reason it stays whole.
LONG_FUNCTIONS = {}


def _functions(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def logic_lines(path) -> int:
    """Lines of decision logic: the bodies of the file's ``@kernel``
    functions (what runs per event), without docstrings, comments or
    blank lines."""
    src = path.read_text().splitlines()
    lines = set()
    for node in ast.parse(path.read_text()).body:
        if not (isinstance(node, ast.FunctionDef)
                and any(getattr(d, "id", None) == "kernel" for d in node.decorator_list)):
            continue
        body = node.body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        for st in body:
            lines.update(range(st.lineno, st.end_lineno + 1))
    return sum(1 for i in lines if src[i - 1].strip() and not src[i - 1].strip().startswith("#"))


def _algorithm_files():
    files = set()
    for name in registry.available():
        mod = registry.lookup(name).__module__
        if mod.startswith("taurus.cc_algorithms."):
            files.add(ROOT / "cc_algorithms" / (mod.rsplit(".", 1)[1] + ".py"))
    return sorted(files)


@pytest.mark.parametrize("path", _algorithm_files(), ids=lambda p: p.name)
def test_each_algorithm_holds_under_100_lines_of_logic_on_the_toolkit(path):
    assert 10 < logic_lines(path) <= 100
    assert "from .lib import" in path.read_text()


def test_no_function_is_over_80_lines_but_the_named_ones():
    long = {}
    for path in ROOT.rglob("*.py"):
        for fn in _functions(path):
            n = fn.end_lineno - fn.lineno + 1
            if n > 80:
                long[f"{path.relative_to(ROOT)}:{fn.name}"] = n
    assert set(long) == set(LONG_FUNCTIONS), long


def test_the_engine_loop_is_short():
    (loop,) = [f for f in _functions(ROOT / "datapath" / "engine.py") if f.name == "_loop"]
    assert loop.end_lineno - loop.lineno + 1 <= 60


@pytest.mark.parametrize("spelled, home", [
    ("_nrt=False", ["datapath/hot.py"]),           # the hot path's compile flags: hot()
    ("YIELD = 8", []),                             # control words: ctlblock.py's one layout
    ("regs[d, 0]", []),                            # the NIC slot column: DR_SLOT
    ("report_signal6(", []),                       # signal values: by name (ccevents.W)
])
def test_one_spelling_of_each_shared_thing(spelled, home):
    where = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if spelled in p.read_text()]
    assert sorted(where) == home
