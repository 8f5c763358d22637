"""`taurus demo`: traffic between two namespaces through the engine.

h1 -- s1 -- h2, where s1's two interfaces are served by the engine (an L2
forwarder for now).  Runs ping and an iperf3 TCP flow from h1 to h2 and prints
the engine's per-port rates every second.  Everything is torn down at the end,
also on Ctrl-C or error.
"""
import json
import subprocess
import sys
import time

from taurus.datapath.engine import attach_stats
from taurus.tools import procs, topology as topo

ENGINE_NAME = "taurus-eng-demo"


def wait_for_engine(name: str, nports: int, proc, timeout_s: float = 120.0) -> dict:
    """Wait until the engine process has opened its ports (first start JITs)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"engine exited early with code {proc.returncode}")
        try:
            st = attach_stats(name)
            if len(st["ports"]) == nports and st["state"] == 1:
                return st
        except (FileNotFoundError, ValueError):
            pass
        time.sleep(0.1)
    raise TimeoutError(f"engine {name} did not start within {timeout_s:.0f}s")


def _rates(prev: dict, cur: dict, dt: float) -> str:
    cells = []
    for port, c in cur["ports"].items():
        p = prev["ports"][port]
        pps = (c["rx_pkts"] - p["rx_pkts"]) / dt
        gbps = (c["rx_bytes"] - p["rx_bytes"]) * 8 / dt / 1e9
        cells.append(f"{port} rx {pps / 1e3:7.1f} kpps {gbps:5.2f} Gbit/s")
    return " | ".join(cells)


def run(args) -> int:
    t = topo.load(topo.builtin("line"))
    if t.is_up():
        t.down()
    procs_started = []
    try:
        t.up()
        h1, h2 = t.ns_of("h1"), t.ns_of("h2")
        print(f"topology up: h1 {t.ip_of('h1')} -- s1 (engine) -- h2 {t.ip_of('h2')}")
        eng = procs.spawn([sys.executable, "-m", "taurus.cli", "engine", "run", "line",
                           "--port-kind", args.port_kind, "--name", ENGINE_NAME],
                          stdout=subprocess.DEVNULL)
        procs_started.append(eng)
        st = wait_for_engine(ENGINE_NAME, 2, eng)
        print("engine ports: " + ", ".join(f"{p} ({c['kind']})" for p, c in st["ports"].items()))
        ping = subprocess.run(["ip", "netns", "exec", h1, "ping", "-c", "3", "-i", "0.2",
                               t.ip_of("h2")], capture_output=True, text=True, timeout=30)
        print("ping h1 -> h2: " + (ping.stdout.strip().splitlines()[-1] if ping.stdout else
                                    ping.stderr.strip()))
        srv = procs.spawn(["iperf3", "-s", "-1"], netns=h2, stdout=subprocess.DEVNULL)
        procs_started.append(srv)
        time.sleep(0.3)
        cli = procs.spawn(["iperf3", "-c", t.ip_of("h2"), "-t", str(args.seconds), "-J"],
                          netns=h1, stdout=subprocess.PIPE, text=True)
        procs_started.append(cli)
        prev, tp = attach_stats(ENGINE_NAME), time.monotonic()
        while cli.poll() is None:
            time.sleep(1.0)
            cur, tc = attach_stats(ENGINE_NAME), time.monotonic()
            print(f"[{tc - tp:4.2f}s] " + _rates(prev, cur, tc - tp), flush=True)
            prev, tp = cur, tc
        out = json.loads(cli.stdout.read() or "{}")
        if "end" in out:
            rx = out["end"]["sum_received"]["bits_per_second"] / 1e9
            print(f"iperf3 TCP h1 -> h2 through the engine: {rx:.2f} Gbit/s "
                  f"({out['end']['sum_sent']['retransmits']} retransmits)")
        else:
            print(f"iperf3 failed: {out.get('error', 'no result')}")
            return 1
        final = attach_stats(ENGINE_NAME)
        for port, c in final["ports"].items():
            print(f"  {port}: rx {c['rx_pkts']} tx {c['tx_pkts']} "
                  f"drops {c['tx_drop'] + c['rx_nobuf']}")
        return 0
    finally:
        for p in reversed(procs_started):
            procs.stop(p)
        t.down()
