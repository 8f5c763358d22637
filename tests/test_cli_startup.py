"""`taurus` imports only what the command it runs uses (cli.py): the
listing and `taurus algorithms` load neither Numba nor pyroute2, and every
command's parser still builds, with its help in the listing."""
import subprocess
import sys

from taurus import cli


def _modules_after(args) -> set:
    code = ("import sys, contextlib, io\n"
            "from taurus import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            f"        cli.main({args!r})\n"
            "    except SystemExit:\n"
            "        pass\n"
            "print(' '.join(sorted(sys.modules)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return set(r.stdout.split())


def test_help_loads_no_command_module():
    mods = _modules_after(["--help"])
    assert not {"numba", "numpy", "pyroute2", "scapy"} & mods
    assert not any(m.startswith("taurus.tools.") for m in mods)


def test_algorithms_loads_no_numba():
    mods = _modules_after(["algorithms"])
    assert "taurus.cc_algorithms.registry" in mods
    assert not {"numba", "pyroute2", "scapy"} & mods


def test_every_command_builds_and_lists_its_help():
    ap = cli.build_parser("*")
    sub = next(a for a in ap._actions if a.dest == "cmd")
    assert list(sub.choices) == list(cli.COMMANDS)
    helps = {c.dest: c.help for c in sub._choices_actions}
    assert helps == {name: h for name, (_, _, h) in cli.COMMANDS.items()}


def test_a_command_parses_with_only_its_module_loaded():
    args = cli.build_parser("algorithms").parse_args(["algorithms", "--json"])
    assert args.cmd == "algorithms" and args.json
