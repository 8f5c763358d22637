"""A `taurus reproduce NAME --quick` run for the tests: what it printed and
its figures.json, with the check every quick test makes (the headline is
the last line printed)."""
import json
import os


def run_quick(name: str, out: str, capsys) -> tuple[str, dict]:
    """(everything printed, figures) of NAME's --quick run into ``out``."""
    from taurus.cli import main
    assert main(["reproduce", name, "--quick", "--out", out]) == 0
    text = capsys.readouterr().out
    with open(os.path.join(out, "figures.json")) as f:
        fig = json.load(f)
    assert fig["headline"] == text.strip().splitlines()[-1]
    return text, fig
