"""The results ledger: what every `taurus reproduce` scenario gives in full.

``ledger.toml`` beside this file holds, per scenario: the command, the
headline line, the commit and date it was measured at, how long it ran, the
seed's figure beside ours, notes (why a figure is what it is), and

- ``figure`` entries: a figure of the scenario's figures.json by its key
  path (``rows/dctcp/onset``: keys joined by ``/``, since keys hold dots),
  the value measured, and a tolerance: ``tol`` relative, ``atol`` absolute,
  the larger wins; neither means exact.  Values that are not numbers
  (lists, strings, ``"-"`` for a figure the scenario leaves empty) must be
  equal.  ``seed`` and ``goal`` (``">= 10"``) document the figure;
- ``claims``: orderings such as ``"mse_bls < mse_divide_ewma"`` that the
  full run and the ``--quick`` run both satisfy (the quick tests assert
  them).  An operand is a key path, a number, or ``number * path``; a figure
  left empty (``None``: "not within the run") counts as infinite.

docs/RESULTS.md is rendered from it (``taurus reproduce --results``);
``taurus reproduce --all --check`` compares fresh runs with it (suite.py).
"""
from __future__ import annotations

import datetime
import math
import operator
import os
import re
import subprocess
import tomllib
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
LEDGER = os.path.join(HERE, "ledger.toml")
RESULTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "RESULTS.md")
BENCH_TABLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "bench")
"""Tables benchmarks record (bench/vs_htsim.py --record), appended to
docs/RESULTS.md as they are: they compare against other programs, which
the ledger's re-runs cannot check."""
EMPTY = "-"             # a figure the scenario left empty (None in figures.json)


@dataclass
class Figure:
    key: str
    label: str
    value: object
    tol: float = 0.0
    atol: float = 0.0
    seed: str = ""
    goal: str = ""

    def allowed(self) -> str:
        if not isinstance(self.value, (int, float)) or isinstance(self.value, bool):
            return "equal"
        parts = ([f"±{100 * self.tol:g}%"] if self.tol else []) + \
                ([f"±{self.atol:g}"] if self.atol else [])
        return " or ".join(parts) or "exact"


@dataclass
class Entry:
    name: str
    command: str
    headline: str
    commit: str
    date: str
    seconds: float
    seed: str = ""
    notes: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    claims: list = field(default_factory=list)


class LedgerError(ValueError):
    pass


def load(path: str | None = None) -> dict[str, Entry]:
    path = path or LEDGER
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    out = {}
    for name, t in raw.items():
        try:
            figs = [Figure(**f) for f in t.get("figure", [])]
            out[name] = Entry(name, t["command"], t["headline"], t["commit"], t["date"],
                              float(t["seconds"]), t.get("seed", ""), list(t.get("notes", [])),
                              figs, list(t.get("claims", [])))
        except (KeyError, TypeError) as e:
            raise LedgerError(f"{path}: [{name}]: {e}") from None
        for c in out[name].claims:
            _parse_claim(c)
    return out


# ---- figures by key path ----------------------------------------------------------------
def get(figures: dict, key: str):
    """The figure at ``key`` (``a/b/c``); KeyError naming the path if absent."""
    v = figures
    for i, part in enumerate(key.split("/")):
        if isinstance(v, list) and part.isdigit():
            part = int(part)
        try:
            v = v[part]
        except (KeyError, IndexError, TypeError):
            raise KeyError(f"no figure {'/'.join(key.split('/')[:i + 1])!r}") from None
    return EMPTY if v is None else v


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def fmt(v) -> str:
    if _number(v):
        if isinstance(v, int) or float(v).is_integer() and abs(v) < 1e15:
            return f"{int(v)}"
        return f"{v:.4g}"
    return str(v)


def within(f: Figure, now) -> bool:
    if _number(f.value) and _number(now):
        return abs(now - f.value) <= max(f.atol, f.tol * abs(f.value)) + 1e-12
    return now == f.value


def drift(entry: Entry, figures: dict) -> list[str]:
    """What moved beyond its tolerance, and which claims broke: one line each."""
    out = []
    for f in entry.figures:
        try:
            now = get(figures, f.key)
        except KeyError as e:
            out.append(f"{f.key}: {e.args[0]}")
            continue
        if not within(f, now):
            out.append(f"{f.key} {fmt(f.value)} → {fmt(now)} ({f.allowed()})")
    out += [f"claim broken: {c}" for c in broken_claims(entry, figures)]
    return out


# ---- claims -----------------------------------------------------------------------------
_OPS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
        "<": operator.lt, ">": operator.gt}
_CLAIM = re.compile(r"^\s*(.+?)\s*(<=|>=|==|!=|<|>)\s*(.+?)\s*$")
_TERM = re.compile(r"^(?:([-+]?[\d.]+(?:e[-+]?\d+)?)\s*\*\s*)?(\S+)$")


def _parse_claim(c: str):
    m = _CLAIM.match(c)
    if not m or not _TERM.match(m[1]) or not _TERM.match(m[3]):
        raise LedgerError(f"claim {c!r}: expected 'A op B' (op one of {', '.join(_OPS)}; "
                          f"A, B a key path, a number or 'number * path')")
    return m[1], _OPS[m[2]], m[3]


def _term(figures: dict, t: str) -> float:
    k, path = _TERM.match(t).groups()
    try:
        return float(path)
    except ValueError:
        pass
    v = get(figures, path)
    v = math.inf if v == EMPTY else float(v)
    return float(k) * v if k else v


def broken_claims(entry: Entry, figures: dict) -> list[str]:
    out = []
    for c in entry.claims:
        a, op, b = _parse_claim(c)
        try:
            ok = op(_term(figures, a), _term(figures, b))
        except KeyError as e:
            ok, c = False, f"{c} ({e.args[0]})"
        if not ok:
            out.append(f"{c} (is {fmt(_show(figures, a))} vs {fmt(_show(figures, b))})")
    return out


def _show(figures, t):
    try:
        return _term(figures, t)
    except (KeyError, ValueError):
        return "?"


def assert_claims(name: str, figures: dict) -> None:
    """The quick tests' guard: the scenario's ledger claims hold."""
    bad = broken_claims(load()[name], figures)
    assert not bad, f"{name}: " + "; ".join(bad)


# ---- goals ------------------------------------------------------------------------------
def goal_met(f: Figure) -> bool | None:
    """Whether the recorded value meets the figure's goal (None: no goal)."""
    if not f.goal:
        return None
    op, ref = _parse_claim(f"x {f.goal}")[1:]
    v = math.inf if f.value == EMPTY else float(f.value)
    return op(v, float(ref))


# ---- recording --------------------------------------------------------------------------
def commit() -> str:
    """HEAD's short hash, with '+' when files other than the ledger and its
    doc differ from it."""
    root = os.path.dirname(os.path.dirname(HERE))
    try:
        h = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                           capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ".", f":!{os.path.relpath(LEDGER, root)}", ":!docs/RESULTS.md"],
                               cwd=root, text=True, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return h + ("+" if dirty.strip() else "")


def record(results: dict, path: str | None = None) -> list[str]:
    """Write each run's figures, headline, commit, date and seconds into the
    ledger (its tolerances, notes and claims kept); returns the names."""
    import tomlkit
    path = path or LEDGER
    with open(path) as f:
        doc = tomlkit.parse(f.read())
    at, today = commit(), datetime.date.today().isoformat()
    done = []
    for name, r in results.items():
        if name not in doc or "figures" not in r:
            continue
        t = doc[name]
        t["headline"], t["commit"], t["date"] = r["figures"]["headline"], at, today
        t["seconds"] = round(float(r["seconds"]))
        for f in t.get("figure", []):
            v = get(r["figures"], f["key"])
            f["value"] = round(v, 6) if isinstance(v, float) else v
        done.append(name)
    with open(path, "w") as f:
        f.write(tomlkit.dumps(doc))
    return done


# ---- docs/RESULTS.md --------------------------------------------------------------------
def render(ledger: dict[str, Entry], scenarios: dict) -> str:
    total = sum(e.seconds for e in ledger.values())
    lines = [
        "# Results",
        "",
        "What `taurus reproduce` reproduces of the seeds, and how well: every scenario's",
        "full run (virtual time, native mode, deterministic), its key figures with the",
        "tolerance a re-run must stay within, and the seed's figure beside ours.  This",
        "file is made from `taurus/reproduce/ledger.toml` by",
        "`taurus reproduce --results > docs/RESULTS.md`; edit the ledger, not this file.",
        "",
        "```sh",
        "taurus reproduce --all --check        # every scenario in full, compared with the ledger",
        "taurus reproduce --all --check --workers 2 --out runs/all   # or --scheduler tcp://HOST:PORT",
        "taurus reproduce --all --record --only NAME   # re-record NAME after a change you can explain",
        "```",
        "",
        f"The whole set runs {total / 60:.0f} min of scenario time one after another "
        "(the sum of the seconds below, measured on 2 cores with a warm compile cache; a "
        "cold cache adds about 4 min while the first processes compile the engine).  "
        "`--check` prints one line per scenario, `ok` or "
        "`DRIFT: figure was → now`, and exits non-zero on any crash, drift or scenario "
        "missing from the ledger.  A change to the datapath, the runner or an algorithm "
        "runs it before its issue is resolved.",
        "",
        "| scenario | headline (full run) | seed | goals |",
        "|---|---|---|---|",
    ]
    for name, e in ledger.items():
        goals = [goal_met(f) for f in e.figures if f.goal]
        g = (f"{sum(goals)}/{len(goals)} met" if goals else "-")
        lines.append(f"| [{name}](#{name}) | {e.headline.split(': ', 1)[-1]} | {e.seed or '-'} "
                     f"| {g} |")
    for name, e in ledger.items():
        about = scenarios[name].about if name in scenarios else "(no such scenario)"
        lines += ["", f"## {name}", "", about[0].upper() + about[1:] + ".", "",
                  f"`{e.command}` ({e.seconds:.0f} s; measured at {e.commit}, {e.date}):", "",
                  "```", e.headline, "```", ""]
        lines += ["| figure | key | ours | tolerance | seed | goal |", "|---|---|---|---|---|---|"]
        for f in e.figures:
            met = goal_met(f)
            goal = f"{f.goal} ({'met' if met else 'missed'})" if f.goal else "-"
            lines.append(f"| {f.label} | `{f.key}` | {fmt(f.value)} | {f.allowed()} | "
                         f"{f.seed or '-'} | {goal} |")
        if e.claims:
            lines += ["", "Claims the full and the quick run both hold: "
                      + "; ".join(f"`{c}`" for c in e.claims) + "."]
        if e.notes:
            lines += [""] + [f"- {n}" for n in e.notes]
    for name in sorted(os.listdir(BENCH_TABLES)) if os.path.isdir(BENCH_TABLES) else ():
        if name.endswith(".md"):
            with open(os.path.join(BENCH_TABLES, name)) as f:
                lines += ["", f.read().rstrip("\n")]
    return "\n".join(lines) + "\n"
