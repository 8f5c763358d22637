"""The algorithm author's path (docs/algorithms.md): the page's example runs
from the page's text in every mode and decides the same in each; every
mistake an author makes is one line at `taurus run --check`, naming the
file and the key; a failed validation leaves no run directory; a handler
that raises fails the run; the outputs name the algorithm."""
import json
import os
import re
import subprocess
import sys
import tomllib

import numpy as np
import pytest

from taurus.cc_algorithms import registry
from taurus.cc_algorithms.validate import compile_error, handler_errors, param_errors
from taurus.cli import main
from taurus.experiment import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "algorithms.md")


def doc_file(name: str) -> str:
    """The code block under ``<!-- file: name -->`` in docs/algorithms.md."""
    text = open(DOC).read()
    m = re.search(rf"<!-- file: {re.escape(name)} -->\n```\w*\n(.*?)```", text, re.S)
    assert m, f"docs/algorithms.md has no block for {name}"
    return m.group(1)


@pytest.fixture
def author(tmp_path):
    """The doc's two files in a directory of their own (not on sys.path)."""
    d = tmp_path / "work"
    d.mkdir()
    (d / "ecn_aimd.py").write_text(doc_file("ecn_aimd.py"))
    (d / "ecn_aimd.toml").write_text(doc_file("ecn_aimd.toml"))
    return d


def variant(d, name: str, old: str, new: str) -> str:
    """A copy of the doc's algorithm with one edit, and an experiment using it."""
    src = (d / "ecn_aimd.py").read_text()
    assert old in src
    (d / f"{name}.py").write_text(src.replace(old, new))
    (d / f"{name}.toml").write_text((d / "ecn_aimd.toml").read_text()
                                    .replace("ecn_aimd.py:EcnAimd", f"{name}.py:EcnAimd"))
    return str(d / f"{name}.toml")


def run(capsys, *args):
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


# ---- loading -----------------------------------------------------------------------
def test_file_path_loads_relative_to_the_experiment_without_pythonpath(author, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=ROOT)      # taurus only: not the algorithm's directory
    r = subprocess.run([sys.executable, "-m", "taurus.cli", "run", str(author / "ecn_aimd.toml"),
                        "--check"], cwd=elsewhere, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ok (4 hosts" in r.stdout
    cls = registry.lookup("ecn_aimd.py:EcnAimd", base_dir=str(author))
    assert cls.name == "ecn-aimd" and cls.Params().beta == 0.5
    src = registry.source(registry.resolve("ecn_aimd.py:EcnAimd", str(author)))
    assert src["kind"] == "file" and src["path"] == str(author / "ecn_aimd.py")
    assert len(src["sha256"]) == 64


def test_module_class_still_loads():
    assert registry.lookup("taurus.cc_algorithms.dctcp:Dctcp").name == "dctcp"
    assert registry.source("dctcp")["kind"] == "builtin"


# ---- --check: each mistake, one line ----------------------------------------------
MISTAKES = [
    ("cc.algorithm=nosuch", "cc.algorithm: unknown algorithm 'nosuch'"),
    ("cc.params.betta=0.3", "cc.params.betta: unknown parameter of ecn-aimd "
                            "(known: beta, init_cwnd_pkts)"),
    ("cc.params.beta=1.5", "cc.params.beta: must be in (0, 1)"),
    ("cc.params.init_cwnd_pkts=2.5", "cc.params.init_cwnd_pkts: expected an integer, got float 2.5"),
    ("cc.params.mss=9000", "cc.params.mss: set by the framework"),
    ('cc.algorithm="ecn_aimd.py:EcnAimdd"', "has no 'EcnAimdd' (algorithms in it: EcnAimd)"),
    ('cc.algorithm="ecn_aimd:EcnAimd"', "cannot import module 'ecn_aimd'"),
    ('cc.algorithm="nofile.py:EcnAimd"', "cannot read"),
    ("cc.receiver=dctcp", "cc.receiver: algorithm 'dctcp' is a sender algorithm"),
]


@pytest.mark.parametrize("assignment,message", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_check_names_each_mistake_in_one_line(author, capsys, assignment, message):
    exp = str(author / "ecn_aimd.toml")
    rc, out, err = run(capsys, "run", exp, "--check", "--set", assignment)
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"taurus run: {exp}: ") and message in lines[0], lines[0]


def test_check_lists_every_mistake(author, capsys):
    exp = str(author / "ecn_aimd.toml")
    rc, _, err = run(capsys, "run", exp, "--check", "--set", "cc.params.betta=1",
                     "--set", "cc.params.gamma=2")
    assert rc == 2
    assert [ln.split(": ")[2] for ln in err.strip().splitlines()] == \
        ["cc.params.betta", "cc.params.gamma"]


def test_jit_false_with_native_is_an_error(author, capsys):
    exp = str(author / "ecn_aimd.toml")
    rc, _, err = run(capsys, "run", exp, "--check", "--set", "cc.mode=native",
                     "--set", "cc.jit=false")
    assert rc == 2 and f"{exp}: cc.jit: jit = false" in err and "not native" in err
    rc, _, _ = run(capsys, "run", exp, "--check", "--set", "cc.jit=false")
    assert rc == 0


def test_wrong_handler_signature_names_file_and_line(author, capsys):
    exp = variant(author, "bad_sig", "def aimd_on_ack(s, p, ev, d):", "def aimd_on_ack(s, p, d):")
    line = 1 + (author / "bad_sig.py").read_text().splitlines().index("def aimd_on_ack(s, p, d):")
    rc, _, err = run(capsys, "run", exp, "--check")
    assert rc == 2
    assert err.strip().splitlines() == [
        f"taurus run: {registry.shown(str(author / 'bad_sig.py'))}:{line}: "
        f"on_ack(s, p, d): expected on_ack(s, p, ev, d)"]
    rc, out, _ = run(capsys, "algorithms", str(author / "bad_sig.py") + ":EcnAimd")
    assert rc == 1 and "expected on_ack(s, p, ev, d)" in out


def test_handler_for_no_event_and_bad_init():
    from taurus.cc_algorithms.algorithm import Algorithm

    class Odd(Algorithm):
        name = "odd"

        def init(s, p):
            pass

        def on_acks(s, p, ev, d):
            pass
    errs = handler_errors(Odd)
    assert any(": init(s, p): expected init(s, p, d)" in e for e in errs)
    assert any(": on_acks: no event ACKS" in e for e in errs)


def test_param_errors_lists_all_unknown_keys():
    cls = registry.lookup("dctcp")
    errs = param_errors(cls, {"gg": 1, "pace": "yes", "g": 0.5}, "cc.params")
    assert [(e.key, e.message.split(" (")[0]) for e in errs] == [
        ("cc.params.gg", "unknown parameter of dctcp"),
        ("cc.params.pace", "expected true/false, got str 'yes'")]
    assert [str(e) for e in param_errors(cls, {"g": 2.0}, "cc.params")] == \
        ["cc.params.g: must be in (0, 1]"]


def test_failed_validation_makes_no_run_directory(author, capsys, tmp_path):
    out = tmp_path / "run-out"
    rc, _, err = run(capsys, "run", str(author / "ecn_aimd.toml"), "--out", str(out),
                     "--set", "cc.params.betta=1")
    assert rc == 2 and "cc.params.betta: unknown parameter" in err
    assert "partial results" not in err and not out.exists()
    from taurus.experiment.runner import run_experiment
    from taurus.experiment.schema import ExperimentError, load
    x = load(str(author / "ecn_aimd.toml"), ["cc.params.beta=2"])
    with pytest.raises(ExperimentError, match="cc.params.beta: must be in"):
        run_experiment(x, str(out))
    assert not out.exists()


def test_unknown_field_is_named_before_compiling(author, capsys):
    exp = variant(author, "typo", "s.marked += ev.ecn_bytes", "s.marked += ev.ecn_byte")
    line = 1 + (author / "typo.py").read_text().splitlines().index("    s.marked += ev.ecn_byte")
    rc, _, err = run(capsys, "run", exp, "--check")
    assert rc == 2
    assert err.startswith(f"taurus run: {registry.shown(str(author / 'typo.py'))}:{line}: "
                          f"in aimd_on_ack: ev.ecn_byte: an ACK event has no 'ecn_byte' "
                          f"(fields: seq, flow,") and len(err.strip().splitlines()) == 1


def test_typing_error_is_one_line_naming_the_handler(author):
    from taurus.cc_algorithms.runtime import Runtime
    (author / "untyped.py").write_text((author / "ecn_aimd.py").read_text().replace(
        "    s.marked += ev.ecn_bytes", "    s.marked += nosuch(ev.ecn_bytes)"))
    cls = registry.lookup(str(author / "untyped.py") + ":EcnAimd")
    line = 1 + (author / "untyped.py").read_text().splitlines().index(
        "    s.marked += nosuch(ev.ecn_bytes)")
    with pytest.raises(Exception) as e:
        Runtime(cls, jit=True)
    msg = compile_error(e.value, cls)
    assert "\n" not in msg and "\x1b" not in msg
    assert msg.startswith(f"{registry.shown(str(author / 'untyped.py'))}:{line}: "), msg
    assert msg.endswith("in aimd_on_ack: NameError: name 'nosuch' is not defined"), msg


# ---- the doc's example decides the same in every mode ------------------------------
def test_doc_example_replays_identically_in_every_mode(author):
    from taurus.testing.replay import random_stream, replay
    cls = registry.lookup(str(author / "ecn_aimd.py") + ":EcnAimd")
    assert handler_errors(cls) == []
    rec = random_stream(cls, cls.Params(), n=400)
    py, _ = replay(cls, cls.Params(), rec, "python")
    for mode in ("agent", "native"):
        got, _ = replay(cls, cls.Params(), rec, mode)
        assert np.array_equal(py, got), mode
    assert (py["set"] >= 0).all()                    # no handler raised
    assert (py["set"][3:] > 0).sum() > 10            # beyond the 3 flows' inits, it decides


# ---- algorithms NAME --params, conditional binds -----------------------------------
def test_algorithms_params_is_toml_to_paste(author, capsys):
    rc, out, _ = run(capsys, "algorithms", str(author / "ecn_aimd.py") + ":EcnAimd", "--params")
    assert rc == 0
    assert tomllib.loads(out) == {"cc": {"params": {"beta": 0.5, "init_cwnd_pkts": 10}}}
    assert "# packets: initial window of a new flow" in out


def test_algorithms_marks_conditional_binds(capsys):
    rc, out, _ = run(capsys, "algorithms", "dctcp")
    assert rc == 0 and "binds: ACK, RTO, RTT (with pace = true)" in out
    rc, out, _ = run(capsys, "algorithms", "nscc")
    assert "CSIG (with csig = true)" in out


# ---- outputs -----------------------------------------------------------------------
def test_report_shows_algorithm_mode_jit_and_faults(tmp_path):
    base = {"experiment": "x", "clock": "virtual", "complete": True, "duration_ns": 10**6,
            "throughput_bps": 1e9, "fairness": {"jain_mean": 1.0, "jain_min": 1.0},
            "busiest_port": None, "ports": {}, "agent": {"messages": 0, "updates": 0, "cpu_s": 0},
            "groups": {}}
    runs = {"a": dict(base, algorithms=[{"name": "ecn-aimd", "mode": "agent", "jit": False}],
                      faults={"handler": 3, "hosts": {"h1": 3}}),
            "n": dict(base, algorithms=[{"name": "ecn-aimd", "mode": "native", "jit": True}])}
    for k, s in runs.items():
        (tmp_path / k).mkdir()
        (tmp_path / k / "summary.json").write_text(json.dumps(s))
    t = report.table([str(tmp_path / "a"), str(tmp_path / "n")])
    row = [ln for ln in t.splitlines() if ln.startswith("algorithm")][0]
    assert "ecn-aimd agent jit=false" in row and "ecn-aimd native" in row
    assert [ln for ln in t.splitlines() if ln.startswith("handler faults")][0].split()[-1] == "3"
    assert "handler faults: 3 (h1 3)" in report.fault_line(runs["a"])


def test_doc_shows_dctcp_py_as_it_is():
    src = open(os.path.join(ROOT, "taurus", "cc_algorithms", "dctcp.py")).read()
    body = src[src.index('"""', 3) + 3:].lstrip("\n")          # after the module docstring
    assert doc_file("taurus/cc_algorithms/dctcp.py") == body
