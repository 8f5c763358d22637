"""The doc's example (docs/algorithms.md) run by `taurus run` from the page's
text in every mode, in virtual time; a handler that raises fails the run
unless cc.on_fault = "fallback"; init (the agent's warm-up's too) sees real
parameters.  Slower than test_algorithm_author.py: these build the
engine (cached on disk after the first run)."""
import json
import sys

import pytest

from taurus.cc_algorithms import registry
from taurus.cli import main

from test_algorithm_author import author, doc_file, run, variant  # noqa: F401  (fixture)


def summary(out) -> dict:
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("sets", [[], ["cc.mode=native"], ["cc.mode=per-event"], ["cc.jit=false"]],
                         ids=["agent", "native", "per-event", "plain-python"])
def test_doc_example_runs_in_every_mode(author, capsys, tmp_path, sets):
    out = tmp_path / "run"
    args = ["run", str(author / "ecn_aimd.toml"), "--out", str(out), "--no-progress"]
    for s in sets:
        args += ["--set", s]
    rc, stdout, err = run(capsys, *args)
    assert rc == 0, err
    s = summary(out)
    mode = "native" if "cc.mode=native" in sets else "per-event" if "cc.mode=per-event" in sets \
        else "agent"
    jit = "cc.jit=false" not in sets
    assert s["complete"] and s["faults"]["handler"] == 0
    [a] = s["algorithms"]
    assert (a["name"], a["mode"], a["jit"], a["flows"]) == ("ecn-aimd", mode, jit, 2)
    assert a["source"]["kind"] == "file" and a["source"]["path"] == str(author / "ecn_aimd.py")
    assert all(f["algorithm"] == "ecn-aimd" for f in s["flows"])
    assert s["throughput_bps"] > 1e9
    cell = "ecn-aimd native" if mode == "native" else \
        f"ecn-aimd {mode} jit={'true' if jit else 'false'}"
    assert [ln for ln in stdout.splitlines() if ln.startswith("algorithm")][0].endswith(cell)
    rc, rep, _ = run(capsys, "report", str(out))
    assert rc == 0 and cell in rep


def test_raising_handler_fails_the_run(author, capsys, tmp_path):
    exp = variant(author, "raises", "    s.marked += ev.ecn_bytes",
                  "    s.marked += ev.ecn_bytes + 1 / int(ev.count - ev.count)")
    line = 1 + (author / "raises.py").read_text().splitlines().index(
        "    s.marked += ev.ecn_bytes + 1 / int(ev.count - ev.count)")
    out = tmp_path / "run"
    rc, _, err = run(capsys, "run", exp, "--out", str(out), "--no-progress", "--set", "cc.jit=false")
    assert rc == 1
    where = f"{registry.shown(str(author / 'raises.py'))}:{line}"
    assert f'File "{author / "raises.py"}", line {line}, in aimd_on_ack' in err
    assert "runtime.py" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("taurus run: failed: algorithm 'ecn-aimd' on h")
    assert "ZeroDivisionError" in last and f"at {where}" in last
    s = summary(out)
    assert not s["complete"] and "ZeroDivisionError" in s["error"]


def test_on_fault_fallback_goes_on_and_counts(author, capsys, tmp_path):
    exp = variant(author, "raises", "    s.marked += ev.ecn_bytes",
                  "    s.marked += ev.ecn_bytes + 1 / int(ev.count - ev.count)")
    out = tmp_path / "run"
    rc, _, err = run(capsys, "run", exp, "--out", str(out), "--no-progress",
                     "--set", "cc.jit=false", "--set", "cc.on_fault=fallback")
    assert rc == 0, err
    s = summary(out)
    n = s["faults"]["handler"]
    assert s["complete"] and n > 0
    assert f"handler faults: {n} (" in err
    rc, rep, _ = run(capsys, "report", str(out))
    assert [ln for ln in rep.splitlines() if ln.startswith("handler faults")][0].split()[-1] == str(n)


def test_init_sees_real_parameters(author, capsys, tmp_path):
    exp = variant(author, "spy", "    s.cwnd = resume(d.cwnd, p.init_cwnd_pkts * p.mss)",
                  "    CALLS.append((p.mss, p.beta, d.cwnd, p.init_cwnd, p.init_rate))\n"
                  "    s.cwnd = resume(d.cwnd, p.init_cwnd_pkts * p.mss)")
    (author / "spy.py").write_text((author / "spy.py").read_text() + "\nCALLS = []\n")
    rc, _, err = run(capsys, "run", exp, "--out", str(tmp_path / "run"), "--no-progress",
                     "--set", "cc.jit=false", "--set", "cc.params.beta=0.25",
                     "--set", 'cc.cwnd="30KB"', "--set", 'cc.rate="2Gbit"')
    assert rc == 0, err
    calls = [m for name, m in sys.modules.items() if name.startswith("taurus_file_spy_")][0].CALLS
    assert calls and all(mss == 1024 and beta == 0.25 for mss, beta, *_ in calls)
    # a new flow: no decision of its own in force, the configured start in p
    assert {c[2:] for c in calls} == {(0.0, 30e3, 2e9)}


def test_the_configured_start_reaches_p_in_every_mode(tmp_path):
    """p.init_cwnd / p.init_rate are the flow's configured cwnd and rate:
    the host's [cc], or the flow's own (in agent mode an [[override]])."""
    from taurus.experiment import schema
    from taurus.experiment.runner import Runner
    exp = tmp_path / "start.toml"
    exp.write_text("""
[experiment]
name = "start"
duration = "1ms"
[topology]
builtin = "dumbbell"
[cc]
algorithm = "dctcp"
cwnd = "30KB"
rate = "2Gbit"
[[traffic]]
kind = "bulk"
from = "h1"
to = "h3"
[[traffic]]
kind = "bulk"
from = "h2"
to = "h3"
cc = { cwnd = "50KB" }
""")
    for mode in ("native", "agent"):
        r = Runner(schema.load(str(exp), ["outputs.plots=false", f'cc.mode="{mode}"']))
        r.build()
        try:
            starts = []
            for k, f in enumerate(r.plan.flows):
                fid = int(r.fid[k])
                if mode == "native":
                    p = r.native.params(r.native_flows[k][0])[fid]
                else:
                    h = r.agents[f.src].handler
                    p = h.per_flow.get(fid, h.default).prow
                starts.append((float(p["init_cwnd"]), float(p["init_rate"])))
            assert starts == [(30e3, 2e9), (50e3, 2e9)], (mode, starts)
        finally:
            r.teardown()
