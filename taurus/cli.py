"""The `taurus` command."""
import argparse
import logging
import sys

from taurus import errors
from taurus.agent.cli import add_agent_parser
from taurus.experiment.cli import add_run_parsers
from taurus.experiment.demo import add_demo_parser
from taurus.reproduce.cli import add_reproduce_parser
from taurus.tools.algorithms_cli import add_algorithms_parser
from taurus.tools.capture_cli import add_capture_parsers
from taurus.tools.engine_cli import add_engine_parser
from taurus.tools.perf import add_perf_parser
from taurus.tools.topo_cli import add_topo_parser


def _perf_cc_table(path):
    """`taurus perf --cc-config`: the experiment file's [cc] parser, as a
    ConfigError (perf's own) when the file is bad."""
    from taurus.cc_algorithms.params import ConfigError
    from taurus.experiment.schema import ExperimentError, cc_table
    try:
        return cc_table(path)
    except ExperimentError as e:
        raise ConfigError(str(e)) from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="taurus", description=__doc__)
    ap.add_argument("-v", "--verbose", action="store_true")
    sub = ap.add_subparsers(dest="cmd", required=True)
    add_topo_parser(sub)
    add_engine_parser(sub)
    add_agent_parser(sub)
    add_run_parsers(sub)
    add_demo_parser(sub)
    add_reproduce_parser(sub)
    add_perf_parser(sub, cc_table=_perf_cc_table)
    add_algorithms_parser(sub)
    add_capture_parsers(sub)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(name)s: %(message)s")
    try:
        return args.func(args)
    except errors.SegmentBusy as e:            # another run holds the name: one line
        print(f"taurus {args.cmd}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
