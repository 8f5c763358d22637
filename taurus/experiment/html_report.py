"""`taurus report --html DIR... [-o FILE]`: one self-contained HTML file
for runs side by side or a sweep, to mail or attach to a paper's artifact.

It holds the summary table `taurus report` prints (one column per run), each
run's plots (PNG, embedded as data URIs: redrawn from the run's CSVs when
the run wrote none), and the experiment file each run came from.  A sweep
gets its table of points, its plots and its points' runs.  Nothing is
fetched when the file is opened: no scripts or fonts from the network.
"""
from __future__ import annotations

import base64
import html
import json
import os
import shutil
import tempfile

from . import sweep as _sweep
from .report import rows_of
from .results import SUMMARY

PLOTS = ("rates.png", "queue.png", "fct_slowdown.png")
CSVS = ("flow_series.csv", "group_series.csv", "queue_series.csv", "fct.csv", "fct_bins.csv")
STYLE = """body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}
td.v{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}
img{max-width:100%;border:1px solid #eee;margin:4px 0}pre{background:#f8f8f8;padding:8px;
overflow-x:auto;font-size:12px}h2{border-bottom:1px solid #ddd;margin-top:2em}"""
# Counts the embedded images that decoded, for whoever checks the page
# (tests/test_html_report.py reads it from the rendered DOM).
CHECK = """window.addEventListener('load',function(){var n=0,b=0;
document.querySelectorAll('img').forEach(function(i){i.naturalWidth>0?n++:b++});
document.body.dataset.imagesOk=n;document.body.dataset.imagesBroken=b;
if(b)console.error('taurus report: '+b+' plot(s) did not decode')});"""

e = html.escape


def _img(path: str) -> str:
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    return f'<img alt="{e(os.path.basename(path))}" src="data:image/png;base64,{data}">'


def _plots(run_dir: str) -> list[str]:
    """The run's PNGs; drawn into a scratch directory from its CSVs when it
    has none (a run with plots = false), leaving the run as it was."""
    have = [os.path.join(run_dir, p) for p in PLOTS if os.path.exists(os.path.join(run_dir, p))]
    if have:
        return [_img(p) for p in have]
    from .plots import plot_run
    with tempfile.TemporaryDirectory() as tmp:
        for c in CSVS:
            if os.path.exists(os.path.join(run_dir, c)):
                shutil.copy(os.path.join(run_dir, c), tmp)
        return [_img(os.path.join(tmp, p)) for p in plot_run(tmp)]


def _summary_table(dirs: list[str], summaries: list[dict]) -> str:
    cols = [dict(rows_of(s)) for s in summaries]
    labels = []
    for c in cols:
        labels += [k for k in c if k not in labels]
    head = "".join(f"<th>{e(os.path.basename(os.path.normpath(d)))}</th>" for d in dirs)
    body = "".join(f"<tr><th style='text-align:left'>{e(k)}</th>"
                   + "".join(f"<td class=v>{e(c.get(k, ''))}</td>" for c in cols) + "</tr>"
                   for k in labels)
    return f"<table><tr><th></th>{head}</tr>{body}</table>"


def _experiment_file(s: dict) -> str:
    src = s.get("source") or ""
    if not os.path.isfile(src):
        return f"<p>experiment file: {e(src or '-')} (not found)</p>"
    with open(src) as f:
        text = f.read()
    return f"<details><summary>experiment file {e(src)}</summary><pre>{e(text)}</pre></details>"


def _runs(dirs: list[str]) -> str:
    summaries = []
    for d in dirs:
        with open(os.path.join(d, SUMMARY)) as f:
            summaries.append(json.load(f))
    parts = ["<h2>Summary</h2>", _summary_table(dirs, summaries)]
    for d, s in zip(dirs, summaries):
        parts.append(f"<h2>{e(os.path.basename(os.path.normpath(d)))}: {e(s['experiment'])}</h2>")
        if s.get("description"):
            parts.append(f"<p>{e(s['description'])}</p>")
        parts += _plots(d)
        parts.append(_experiment_file(s))
    return "\n".join(parts)


def _sweep_section(d: str) -> str:
    man = _sweep.load(d)
    parts = [f"<h2>Sweep {e(d)}</h2>", f"<pre>{e(_sweep.table(man))}</pre>"]
    for name in sorted(os.listdir(d)):             # sweep-KEY.png, one per swept key
        if name.startswith("sweep-") and name.endswith(".png"):
            parts.append(_img(os.path.join(d, name)))
    done = [os.path.join(d, p["dir"]) for p in man["points"]
            if os.path.exists(os.path.join(d, p["dir"], SUMMARY))]
    if done:
        parts.append(_runs(done))
    return "\n".join(parts)


def render(dirs: list[str]) -> str:
    """The whole page for these run and sweep directories."""
    sweeps = [d for d in dirs if _sweep.is_sweep(d)]
    runs = [d for d in dirs if d not in sweeps]
    body = [_sweep_section(d) for d in sweeps]
    if runs:
        body.append(_runs(runs))
    title = "Taurus report: " + ", ".join(os.path.basename(os.path.normpath(d)) for d in dirs)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(title)}</title>"
            f"<style>{STYLE}</style><script>{CHECK}</script></head><body>"
            f"<h1>{e(title)}</h1>{''.join(body)}</body></html>")


def write(dirs: list[str], out: str) -> str:
    with open(out, "w") as f:
        f.write(render(dirs))
    return out
