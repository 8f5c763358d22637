"""`taurus demo`: a DCTCP dumbbell experiment.

Two senders share an ECN bottleneck (s1 -> s2); DCTCP runs in the agent.
Prints throughput, the bottleneck queue and fairness, and where the plots
are.  `--clock virtual` (default) runs examples/dctcp_dumbbell.toml (2
Gbit/s, microsecond delays) in virtual time in this process; `--clock wall`
runs examples/wall_dctcp.toml (100 Mbit/s, base RTT 8 ms: rates and delays
one engine core keeps faithfully) on namespaces and real ports (torn down at
the end, also on Ctrl-C or error), and prints its fidelity report.
"""
import os
import sys

# examples/ at the repository's root links here, so a wheel carries them too
_EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
DEMO_FILE = os.path.join(_EXAMPLES, "dctcp_dumbbell.toml")
WALL_DEMO_FILE = os.path.join(_EXAMPLES, "wall_dctcp.toml")
BOTTLENECK = ("s1", "s2")


def add_demo_parser(sub) -> None:
    d = sub.add_parser("demo")
    d.add_argument("--clock", choices=["virtual", "wall"], default="virtual")
    d.add_argument("--duration", help="override the experiment's duration, e.g. 20ms")
    d.add_argument("--out", default=os.path.join("runs", "demo"))
    d.add_argument("--port-kind", default="auto", choices=["auto", "af_xdp", "af_packet"])
    d.set_defaults(func=run)


def run(args) -> int:
    from taurus.experiment.report import fidelity_rows, fidelity_warnings
    from taurus.experiment.runner import run_experiment
    from taurus.experiment.schema import ExperimentError, load
    from taurus.units import parse_delay
    path = WALL_DEMO_FILE if args.clock == "wall" else DEMO_FILE
    sets = []
    try:
        if args.duration:
            sets = [f'experiment.duration="{args.duration}"']
            # a run shorter than the file's warm-up keeps its first fifth as warm-up
            if parse_delay(args.duration) <= load(path, []).warmup:
                sets.append(f"experiment.warmup={parse_delay(args.duration) // 5}")
        x = load(path, sets)
    except (ExperimentError, ValueError) as e:
        print(f"taurus demo: {e}", file=sys.stderr)
        return 2
    print(f"{x.description} ({args.clock} clock, {x.duration / 1e6:g} ms)")
    s = run_experiment(x, args.out, args.clock, progress=sys.stderr.isatty(),
                       port_kind=args.port_kind)
    lk = next(lk for lk in x.topo.links if (lk.a, lk.b) == BOTTLENECK)
    bott = s["ports"][lk.a_iface]
    k = lk.features.get("ecn", {}).get("k", "-")
    print(f"throughput     {s['throughput_bps'] / 1e9:.2f} Gbit/s of {lk.rate / 1e9:g} Gbit/s "
          f"(goodput, after {x.warmup / 1e6:g} ms warm-up)")
    for f in s["flows"]:
        print(f"  {f['src']} -> {f['dst']}  {f['goodput_bps'] / 1e9:.2f} Gbit/s  "
              f"({f['bytes'] / 1e6:.2f} MB)")
    print(f"queue s1->s2   mean {bott['queue_mean'] / 1e3:.1f} KB, p99 {bott['queue_p99'] / 1e3:.1f} KB, "
          f"max {bott['queue_max'] / 1e3:.1f} KB (ECN K = {k}); {bott['marks']} marks, "
          f"{bott['drops']} drops")
    j = s["fairness"]
    print(f"fairness       Jain mean {j['jain_mean']:.3f}, min {j['jain_min']:.3f}"
          if j["jain_mean"] is not None else "fairness       n/a")
    print(f"agent          {s['agent']['messages']} messages, {s['agent']['updates']} updates, "
          f"{s['agent']['cpu_s']:.2f} s CPU")
    for label, v in fidelity_rows(s.get("fidelity")):
        print(f"{label:<30} {v}")
    for w in fidelity_warnings(s):
        print(w, file=sys.stderr)
    print(f"results        {os.path.join(args.out, 'summary.json')}")
    for p in s.get("plots", []):
        print(f"plot           {os.path.join(args.out, p)}")
    if not s["complete"]:
        print(f"INCOMPLETE: {s['error']}")
        return 130
    return 0
