"""Soak (bench/reliability.py part "soak"): real packets for a long time,
with kills, every byte checked.  Needs root.

Phase 1, `taurus perf` (2/3 of the time): `perf -s` on two_hosts (AF_XDP,
generic XDP), and one client after another, `perf -c h2 -C dctcp
--cc-mode agent --verify -t 2..6 -P 1..2`.  Each client is
- left alone: every payload byte ACKed to it must be among those perf -s
  verified, and none wrong;
- its agent SIGKILLed mid-test: the NIC falls back and the stream goes on,
  checked the same way;
- itself SIGKILLed mid-test: its flows are reaped and what arrived is
  verified (none wrong);
- once, at a quarter of the phase: perf -s itself SIGKILLed mid-test.  The
  client must leave with status 3 (engine gone), and a new perf -s under
  the same name must start (it reclaims the dead one's segments).
The long-lived perf -s's RSS and open fds are sampled after each client
from its fifth on: its private memory (RssAnon) flat within 1%, fds
constant.  Growth is the least-squares line's rise over the samples, in %
of where it starts (rss_trend_pct): a sample lands anywhere in the few
per cent a client's buffers take and give back (the spread is reported
too), so the last sample over the first measures that, not a leak.
Its shared pages (RssShmem) are counted apart: they are its segments'
pages, touched for the first time as new PDC rows and buffers come into
use, so they grow up to the segments' size without anything leaking.

Phase 2, wall-clock `taurus run` (the rest): examples/wall_dctcp.toml (5 s
runs) one after another, each left alone (complete, both flows delivered
data), with an agent SIGKILLed (the run stops, written incomplete, naming
the agent), or SIGKILLed itself (the next run takes down its topology and
segments: Topology.up(owner=True)).

After each phase nothing of it may be left: processes, namespaces,
shared-memory segments, owner files.
"""
import glob
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "wall_dctcp.toml")
VERIFIED = re.compile(r"taurus perf: verified \S+ pdc \d+: (\d+) bytes, (\d+) wrong")
ACKED = re.compile(r"verify: flow \d+: (\d+) payload bytes ACKed")


def rss_trend_pct(samples):
    """The least-squares line's rise from the first sample to the last, in
    % of its value at the first (None under two samples)."""
    if len(samples) < 2:
        return None
    x = np.arange(len(samples), dtype=float)
    slope, start = np.polyfit(x, np.asarray(samples, dtype=float), 1)
    return 100.0 * slope * x[-1] / start


def spread_pct(samples):
    """(lowest, highest) sample in % off their median."""
    med = float(np.median(samples))
    return 100.0 * (min(samples) / med - 1), 100.0 * (max(samples) / med - 1)


def _env(**extra):
    return dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT] + sys.path), **extra)


def _children(pid):
    out = []
    for st in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(st) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(st.split("/")[2]))
        except (OSError, ValueError):
            pass
    return out


def _rss_kib(pid):
    """(private, shared) resident KiB of pid: RssAnon, RssShmem."""
    with open(f"/proc/{pid}/status") as f:
        kib = {x.split(":")[0]: int(x.split()[1]) for x in f if x.startswith("Rss")}
    return kib["RssAnon"], kib["RssShmem"]


def _fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def _mine(tag):
    """Live processes whose command line has `tag` (ours: a name only they use)."""
    out = []
    for c in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(c, "rb") as f:
                if tag.encode() in f.read() and int(c.split("/")[2]) != os.getpid():
                    out.append(int(c.split("/")[2]))
        except OSError:
            pass
    return out


class Lines:
    """A child's stdout, read without blocking."""

    def __init__(self, p):
        self.p, self.buf, self.lines = p, b"", []
        os.set_blocking(p.stdout.fileno(), False)

    def pump(self, wait_s=0.0):
        if select.select([self.p.stdout], [], [], wait_s)[0]:
            try:
                chunk = os.read(self.p.stdout.fileno(), 1 << 16)
            except BlockingIOError:
                chunk = b""
            self.buf += chunk
            *done, self.buf = self.buf.split(b"\n")
            self.lines += [x.decode(errors="replace") for x in done]
        return self.lines

    def drain(self):
        """Every line left, once the child has exited."""
        while True:
            try:
                chunk = os.read(self.p.stdout.fileno(), 1 << 16)
            except BlockingIOError:
                if self.p.poll() is None:
                    time.sleep(0.05)
                    continue
                chunk = b""
            if not chunk:
                break
            self.buf += chunk
        self.lines += [x.decode(errors="replace") for x in self.buf.split(b"\n") if x]
        self.buf = b""
        return self.lines

    def wait_for(self, pred, timeout_s):
        t_end = time.monotonic() + timeout_s
        while time.monotonic() < t_end:
            for i, x in enumerate(self.pump(0.1)):
                if pred(x):
                    del self.lines[:i + 1]
                    return x
            if self.p.poll() is not None and not self.pump(0):
                return None
        return None


def _leftovers(prefix, tag):
    from taurus.datapath.shm import list_segments
    from taurus.tools import netns
    from taurus.tools.topology import OWNER_DIR
    left = [f"namespace {x}" for x in netns.list_ns(prefix)]
    left += [f"shm {s}" for s in list_segments(prefix.rstrip("-"))]
    left += [f"owner file {f}" for f in glob.glob(os.path.join(OWNER_DIR, prefix + "*"))]
    left += [f"process {p}" for p in _mine(tag)]
    return left


def _faults(figs):
    return f"failures {figs['failures'] or 'none'}; left {figs['left'] or 'nothing'}"


def perf_phase(seconds, seed=1, log=print):
    from taurus.tools import netns
    from taurus.tools.procs import interrupt
    from taurus.tools import topology as topo
    rng = np.random.default_rng(seed)
    prefix = f"{netns.PREFIX}s{os.getpid()}-"
    name = f"{prefix}perf"
    base = [sys.executable, "-m", "taurus.cli", "perf", "--topo", "two_hosts",
            "--prefix", prefix, "--name", name]
    env = _env(TAURUS_PID_DIR=f"/tmp/{prefix}pids")
    figs = dict(clients=0, clean=0, agent_kills=0, app_kills=0, engine_kills=0,
                verified=0, wrong=0, acked=0, short=[], failures=[],
                rss_kib=[], shm_kib=[], fds=[])
    t = topo.load(topo.builtin("two_hosts"), prefix=prefix).up()
    srv = None

    def start_server():
        p = subprocess.Popen(base + ["-s", "--xdp-mode", "generic"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        ln = Lines(p)
        assert ln.wait_for(lambda x: "serving" in x, 300), "perf -s did not start"
        return p, ln

    try:
        srv, out = start_server()
        t_end = time.monotonic() + seconds
        engine_kill_at = time.monotonic() + seconds / 4
        since_start = 0
        while time.monotonic() < t_end:
            secs = float(rng.uniform(2, 6))
            streams = int(rng.integers(1, 3))
            what = rng.choice(["clean", "agent", "app"], p=[0.6, 0.2, 0.2])
            if figs["engine_kills"] == 0 and time.monotonic() >= engine_kill_at:
                what = "engine"
            cli = subprocess.Popen(base + ["-c", "h2", "-t", f"{secs:.1f}", "-P", str(streams),
                                           "-C", "dctcp", "--cc-mode", "agent", "--verify"],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            figs["clients"] += 1
            cl = Lines(cli)
            if what != "clean":
                # mid-test: after its first interval line, a random moment into it
                if cl.wait_for(lambda x: " sec " in x, 120) is None:
                    figs["failures"].append(f"client {figs['clients']}: no interval line "
                                            f"({cli.stderr.read().decode()[-300:]})")
                    continue
                time.sleep(float(rng.uniform(0, max(0.1, secs - 1.5))))
                if what == "agent":
                    kids = _children(cli.pid)
                    for k in kids:
                        os.kill(k, signal.SIGKILL)
                    figs["agent_kills"] += bool(kids)
                elif what == "app":
                    cli.send_signal(signal.SIGKILL)
                    figs["app_kills"] += 1
                else:
                    srv.send_signal(signal.SIGKILL)
                    srv.wait(10)
                    figs["engine_kills"] += 1
            try:
                rc = cli.wait(secs + 120)
            except subprocess.TimeoutExpired:
                cli.kill()
                rc = cli.wait()
                figs["failures"].append(f"client {figs['clients']} ({what}) hung")
            rest = cl.drain()
            err = cli.stderr.read().decode(errors="replace")
            if what == "engine":
                if rc != 3:
                    figs["failures"].append(f"engine killed: client exited {rc}, not 3: "
                                            f"{err[-300:]}")
                srv, out = start_server()       # the same name: the dead one's segments
                since_start, figs["rss_kib"], figs["shm_kib"], figs["fds"] = 0, [], [], []
                continue
            if what != "app" and rc != 0:
                figs["failures"].append(f"client {figs['clients']} ({what}) exited {rc}: "
                                        f"{err[-300:]}")
                continue
            acked = [int(m[1]) for x in rest if (m := ACKED.search(x))]
            got = []
            while len(got) < streams:
                x = out.wait_for(lambda y: VERIFIED.search(y) is not None, 20)
                if x is None:
                    break
                got.append(VERIFIED.search(x))
            v = sorted(int(m[1]) for m in got)
            figs["verified"] += sum(v)
            figs["wrong"] += sum(int(m[2]) for m in got)
            if len(got) < streams:
                figs["failures"].append(f"client {figs['clients']} ({what}): {len(got)} of "
                                        f"{streams} streams reported by perf -s")
            if what != "app":
                figs["acked"] += sum(acked)
                # each stream verified at least what its sender had ACKed
                miss = sum(a - b for b, a in zip(v, sorted(acked)) if a > b)
                if len(acked) != streams or miss:
                    figs["short"].append((figs["clients"], v, sorted(acked), miss))
                figs["clean"] += what == "clean"
            since_start += 1
            if since_start >= 5:
                anon, shm = _rss_kib(srv.pid)
                figs["rss_kib"].append(anon)
                figs["shm_kib"].append(shm)
                figs["fds"].append(_fds(srv.pid))
    finally:
        if srv is not None:
            interrupt(srv, 30)
        t.down()
        shutil.rmtree(env["TAURUS_PID_DIR"], ignore_errors=True)
    figs["left"] = _leftovers(prefix, name)
    r = figs["rss_kib"]
    trend = rss_trend_pct(r)
    figs["rss_growth_pct"] = None if trend is None else round(trend, 2)
    figs["rss_last_first_pct"] = round(100 * (r[-1] - r[0]) / r[0], 2) if len(r) > 1 else None
    figs["rss_spread_pct"] = [round(v, 1) for v in spread_pct(r)] if r else None
    sh = figs["shm_kib"]
    figs["shm_growth_mib"] = round((sh[-1] - sh[0]) / 1024, 1) if len(sh) > 1 else None
    figs["fds_range"] = (min(figs["fds"]), max(figs["fds"])) if figs["fds"] else None
    log(f"  perf: {figs['clients']} clients ({figs['clean']} left alone, {figs['agent_kills']} "
        f"agents and {figs['app_kills']} apps SIGKILLed, {figs['engine_kills']} engine); "
        f"{figs['verified'] / 2**20:.0f} MiB verified, {figs['wrong']} bytes wrong, "
        f"{figs['acked'] / 2**20:.0f} MiB ACKed to clients, "
        f"{len(figs['short'])} streams short of their ACKed bytes; perf -s private RSS "
        f"trend {figs['rss_growth_pct']}% over {len(r)} samples (each within "
        f"{figs['rss_spread_pct']}% of their median, last/first {figs['rss_last_first_pct']}%; "
        f"shared +{figs['shm_growth_mib']} MiB of its segments), fds {figs['fds_range']}; "
        + _faults(figs))
    return figs


def run_phase(seconds, seed=1, tmp="/tmp", log=print):
    from taurus.tools import netns
    rng = np.random.default_rng(seed + 1)
    prefix = f"{netns.PREFIX}dumbbell-"           # the example's topology, default prefix
    figs = dict(runs=0, complete=0, agent_kills=0, run_kills=0, stopped_ok=0, reclaimed=0,
                mib=0.0, failures=[])
    t_end = time.monotonic() + seconds
    k = 0
    while time.monotonic() < t_end or k == 0:
        what = rng.choice(["clean", "agent", "run"], p=[0.5, 0.3, 0.2])
        out_dir = os.path.join(tmp, f"soak-run{k}")
        k += 1
        p = subprocess.Popen([sys.executable, "-m", "taurus.cli", "run", EXAMPLE, "--clock",
                              "wall", "--set", "experiment.duration=5s", "--out", out_dir,
                              "--no-progress"], env=_env(), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
        figs["runs"] += 1
        if what != "clean":
            # the flows run once the agents have started (the runner's children)
            t0 = time.monotonic()
            while len(_children(p.pid)) < 2 and p.poll() is None and time.monotonic() - t0 < 120:
                time.sleep(0.1)
            time.sleep(float(rng.uniform(1.0, 4.0)))
            if what == "agent":
                kids = _children(p.pid)
                if kids:
                    os.kill(kids[0], signal.SIGKILL)
                    figs["agent_kills"] += 1
            else:
                p.send_signal(signal.SIGKILL)
                figs["run_kills"] += 1
        try:
            rc = p.wait(180)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            rc = p.wait()
            figs["failures"].append(f"run {k} ({what}) hung")
        err = p.stderr.read().decode(errors="replace")
        figs["reclaimed"] += "is gone; removed what it left" in err
        if what == "run":
            continue
        try:
            import json
            with open(os.path.join(out_dir, "summary.json")) as f:
                s = json.load(f)
        except (OSError, ValueError) as e:
            figs["failures"].append(f"run {k} ({what}): exit {rc}, no summary ({e}): "
                                    f"{err[-300:]}")
            continue
        delivered = [fl["bytes"] for fl in s["flows"]]
        if what == "clean":
            if s["complete"] and rc == 0 and min(delivered) > 0:
                figs["complete"] += 1
                figs["mib"] += sum(delivered) / 2**20
            else:
                figs["failures"].append(f"run {k}: exit {rc}, complete {s['complete']}, "
                                        f"bytes {delivered}, error {s['error']!r}")
        elif not s["complete"] and "agent" in s["error"]:
            figs["stopped_ok"] += 1
        elif s["complete"]:
            figs["complete"] += 1         # the agent died as the run ended: nothing to stop
        else:
            figs["failures"].append(f"run {k} (agent killed): error {s['error']!r}")
    if _leftovers(prefix, EXAMPLE):        # the last run killed: up/down once more reclaims
        from taurus.tools import topology as topo
        x = topo.load(topo.builtin("dumbbell"), prefix=netns.PREFIX)
        if x.is_up():
            x.up(owner=True)          # reclaims what the killed run left
            x.down()
            figs["reclaimed"] += 1
    figs["left"] = _leftovers(prefix, EXAMPLE)
    log(f"  taurus run --clock wall: {figs['runs']} runs ({figs['complete']} complete, "
        f"{figs['mib']:.0f} MiB delivered; {figs['agent_kills']} agents SIGKILLed, "
        f"{figs['stopped_ok']} of those runs stopped naming the agent; {figs['run_kills']} runs "
        f"SIGKILLed, {figs['reclaimed']} topologies reclaimed by the next); " + _faults(figs))
    return figs


def run(seconds, seed=1, tmp="/tmp", log=print):
    """Both phases, `seconds` in all; returns their figures."""
    a = perf_phase(seconds * 2 / 3, seed=seed, log=log)
    b = run_phase(seconds / 3, seed=seed, tmp=tmp, log=log)
    return dict(perf=a, run=b, bytes_lost=a["wrong"] + sum(x[3] for x in a["short"]),
                ok=not (a["failures"] or b["failures"] or a["left"] or b["left"]
                        or a["wrong"] or a["short"]))
