"""The package's imports run one way through the layers (docs/DESIGN.md):

    taurus/*.py -> datapath -> cc_algorithms, transport -> agent -> tools
                -> experiment -> reproduce, results -> cli (and examples, user code)

Every import counts, those inside functions too; only the command-line
entry point (taurus/cli.py) may import anything.  And the repository
explains itself: no file in it points at a path outside it."""
import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "taurus"
BELOW = {
    "": set(),
    "datapath": {""},
    "cc_algorithms": {"datapath", ""},
    "transport": {"datapath", ""},
    "agent": {"cc_algorithms", "datapath", ""},
    "testing": {"agent", "cc_algorithms", "datapath", "transport", ""},
    "tools": {"agent", "cc_algorithms", "datapath", "transport", ""},
    "experiment": {"tools", "agent", "cc_algorithms", "datapath", "transport", ""},
    "reproduce": {"experiment", "tools", "agent", "cc_algorithms", "datapath", "transport", ""},
    "results": {"experiment", "tools", "agent", "cc_algorithms", "datapath", "transport", ""},
}
EXEMPT = {"examples"}          # user code shipped as examples: imports anything, as cli.py


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "taurus":
        return None
    if len(parts) == 1 or not (PKG / parts[1]).is_dir():
        return ""
    return parts[1]


def _imports(path: pathlib.Path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    package = parts[:-1]          # a module's package; an __init__'s is its own
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if node.module:
                yield node.lineno, mod
            else:
                for a in node.names:
                    yield node.lineno, f"{mod}.{a.name}"


def test_imports_run_one_way():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.as_posix() == "taurus/cli.py" or rel.parts[1] in EXEMPT:
            continue
        src = _layer(".".join(rel.with_suffix("").parts))
        for line, mod in _imports(path):
            dst = _layer(mod)
            if dst is None or dst == src:
                continue
            if dst not in BELOW[src]:
                bad.append(f"{rel}:{line}: {src or 'taurus'} imports {mod}")
    assert bad == []


def test_every_subpackage_has_a_layer():
    subs = {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()}
    assert subs <= set(BELOW) | EXEMPT


def test_nothing_points_outside_the_repository():
    outside = re.compile(r"\.\./shared/|/work/shared|shared/(DESIGN|PROTOCOLS|PLATFORM)\.md")
    files = [p for d in ("taurus", "docs", "bench", "examples", "tests")
             for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".md", ".toml")]
    files.append(ROOT / "README.md")
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in files if p != pathlib.Path(__file__).resolve()
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if outside.search(line)]
    assert hits == []
