"""The `taurus` command.

Each subcommand's module is imported only when that subcommand runs: the
top-level listing (`taurus --help`) is drawn from COMMANDS alone, so a
command pays for the libraries it uses (Numba, pyroute2, Scapy), not for
every other command's."""
import argparse
import importlib
import logging
import os
import sys

from taurus import errors

# name: (module, the function that adds its parser, help in the listing).
# A module that adds several commands (run/sweep/report) adds them all.
COMMANDS = {
    "topo": ("taurus.tools.topo_cli", "add_topo_parser", "network-namespace topologies"),
    "engine": ("taurus.tools.engine_cli", "add_engine_parser",
               "run the datapath engine, read its counters"),
    "agent": ("taurus.agent.cli", "add_agent_parser", "the CC agent (one per NIC)"),
    "run": ("taurus.experiment.cli", "add_run_parsers", "run an experiment file (TOML)"),
    "sweep": ("taurus.experiment.cli", "add_run_parsers",
              "run an experiment file over a grid of parameters "
              "(virtual time; local processes or a Dask cluster)"),
    "report": ("taurus.experiment.cli", "add_run_parsers",
               "print runs side by side, or a sweep's table"),
    "demo": ("taurus.experiment.demo", "add_demo_parser",
             "DCTCP dumbbell experiment: throughput, queue, fairness, plots"),
    "reproduce": ("taurus.reproduce.cli", "add_reproduce_parser",
                  "run a named scenario: a paper's figure beside ours"),
    "perf": ("taurus.tools.perf", "add_perf_parser",
             "iperf3-like throughput / RPC test over the Taurus transport"),
    "algorithms": ("taurus.tools.algorithms_cli", "add_algorithms_parser",
                   "list the registered congestion-control algorithms"),
    "capture": ("taurus.tools.capture_cli", "add_capture_parsers",
                "capture a running engine's ports into a pcapng file"),
    "dissect": ("taurus.tools.capture_cli", "add_capture_parsers",
                "print the UET / CSIG fields of a pcap(ng) file, or install the Wireshark plugin"),
}


def _perf_cc_table(path):
    """`taurus perf --cc-config`: the experiment file's [cc] parser, as a
    ConfigError (perf's own) when the file is bad."""
    from taurus.cc_algorithms.params import ConfigError
    from taurus.experiment.schema import ExperimentError, cc_table
    try:
        return cc_table(path)
    except ExperimentError as e:
        raise ConfigError(str(e)) from None


class _Listing:
    """The subparsers action as a module's adder sees it: each command's
    help comes from COMMANDS; commands other than `wanted` stay stubs."""

    def __init__(self, sub, wanted):
        self.sub, self.wanted = sub, wanted

    def add_parser(self, name, **kw):
        kw.setdefault("help", COMMANDS[name][2])
        if self.wanted not in ("*", name):
            return argparse.ArgumentParser(add_help=False)  # built, then dropped
        return self.sub.add_parser(name, **kw)


def build_parser(wanted=None) -> argparse.ArgumentParser:
    """The parser with `wanted`'s arguments in full (every command's when
    wanted is "*") and the others listed by name and help."""
    ap = argparse.ArgumentParser(prog="taurus", description=__doc__.split("\n")[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="{" + ",".join(COMMANDS) + "}")
    added = set()
    for name, (module, adder, hlp) in COMMANDS.items():
        if wanted not in ("*", name):
            sub.add_parser(name, help=hlp)
            continue
        if (module, adder) in added:
            continue
        added.add((module, adder))
        kw = {"cc_table": _perf_cc_table} if name == "perf" else {}
        add = getattr(importlib.import_module(module), adder)
        add(_Listing(sub, wanted), **kw)
    return ap


def _wanted(argv) -> str | None:
    """The subcommand named on the command line (the first word that is
    not an option: the top level's options take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    wanted = _wanted(argv)
    ap = build_parser(wanted if wanted in COMMANDS else None)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(name)s: %(message)s")
    try:
        return args.func(args)
    except errors.SegmentBusy as e:            # another run holds the name: one line
        print(f"taurus {args.cmd}: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:                    # `taurus algorithms | head`: as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
