"""Flake counts: run tests N times, each in a fresh pytest process, while K
processes spin on the CPUs, and count each test's failures.

    sudo python bench/flakes.py                        # the default tests, 50 runs, 2 hogs
    sudo python bench/flakes.py --runs 20 --hogs 0 tests/test_watchdog.py
    sudo python bench/flakes.py --repo /path/to/old/checkout   # the same tests on other code

The default tests are those that failed under load before: `perf --bidir`'s
reverse stream, the agent doorbell, the engine watchdog.  Prints one line
per test, `failed F of N`, and the first lines of each failure's reason.
"""
import argparse
import collections
import json
import multiprocessing as mp
import os
import re
import subprocess
import sys
import time

DEFAULT = ["tests/test_perf_iperf3.py::test_reverse_and_bidir_move_data_the_right_way",
           "tests/test_agent_doorbell.py", "tests/test_watchdog.py"]


def _spin():
    while True:
        pass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tests", nargs="*", default=DEFAULT)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--hogs", type=int, default=2, help="processes spinning meanwhile")
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="the checkout whose tests and code run (default: this one)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per pytest run")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=a.repo)
    hogs = [mp.Process(target=_spin, daemon=True) for _ in range(a.hogs)]
    for h in hogs:
        h.start()
    fails, runs, why = collections.Counter(), collections.Counter(), collections.defaultdict(list)
    t0 = time.monotonic()
    try:
        for k in range(a.runs):
            try:
                r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfE", "-p",
                                    "no:cacheprovider", *a.tests], cwd=a.repo, env=env,
                                   capture_output=True, text=True, timeout=a.timeout)
                out = r.stdout
            except subprocess.TimeoutExpired as e:
                out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else e.stdout or ""
                out += "\nFAILED (the pytest run timed out)"
            failed = re.findall(r"^(?:FAILED|ERROR) (\S+)(?: - (.*))?$", out, re.M)
            for t in a.tests:
                runs[t] += 1
            for test, reason in failed:
                key = next((t for t in a.tests if test.startswith(t)), test)
                fails[key] += 1
                why[key].append(f"run {k}: {test.split('::')[-1]}: {(reason or '')[:160]}")
            print(f"run {k + 1}/{a.runs}: {len(failed)} failed ({time.monotonic() - t0:.0f} s)",
                  flush=True)
    finally:
        for h in hogs:
            h.terminate()
            h.join()
    print(f"flakes: {a.runs} runs under {a.hogs} CPU hogs, code at {a.repo}")
    for t in a.tests:
        print(f"  {t}: failed {fails[t]} of {runs[t]}")
        for w in why[t][:5]:
            print(f"    {w}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": a.runs, "hogs": a.hogs, "repo": a.repo, "failed": dict(fails),
                       "why": why}, f, indent=1)


if __name__ == "__main__":
    main()
