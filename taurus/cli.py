"""The `taurus` command."""
import argparse
import logging
import sys

from taurus.agent.cli import add_agent_parser
from taurus.tools.engine_cli import add_engine_parser
from taurus.tools.topo_cli import add_topo_parser


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="taurus", description=__doc__)
    ap.add_argument("-v", "--verbose", action="store_true")
    sub = ap.add_subparsers(dest="cmd", required=True)
    add_topo_parser(sub)
    add_engine_parser(sub)
    add_agent_parser(sub)
    __import__("taurus.tools.perf", fromlist=["add_perf_parser"]).add_perf_parser(sub)
    d = sub.add_parser("demo", help="traffic between two namespaces through the engine")
    d.add_argument("--seconds", type=float, default=5.0)
    d.add_argument("--port-kind", default="auto", choices=["auto", "af_xdp", "af_packet"])
    d.set_defaults(func=lambda a: __import__("taurus.tools.demo", fromlist=["run"]).run(a))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(name)s: %(message)s")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
