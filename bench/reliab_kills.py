"""Kills (bench/reliability.py part 4): SIGKILL at random moments, N times
in a row, of

- an agent (`taurus agent run`) running a DCTCP flow of a wall-clock
  engine in this process: within the heartbeat timeout the NIC falls back
  (capped rate, the flow keeps going), and a new agent takes over;
- an app (a process sending through transport/client.py to an engine in
  this process): the engine closes the flows it opened for it (nic_reap)
  and the receiver frees their PDCs;
- the engine (`taurus perf -s` over AF_XDP on namespaces, a `perf -c`
  client sending to it): after `taurus topo clean` no namespace, link, XDP
  program, shared-memory segment or pid file of the run is left.

Pid files of the processes started here go to a directory of their own
($TAURUS_PID_DIR), so `topo clean` touches no one else's processes.
"""
import glob
import os
import signal
import subprocess
import sys
import time

import numpy as np

HB_TIMEOUT_NS = 50_000_000
FALLBACK_BPS = 2_000_000


def _env(**extra):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return dict(os.environ, PYTHONPATH=os.pathsep.join([root] + sys.path), **extra)


def _run_until(eng, cond, timeout_s, slice_ns=5_000_000):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        eng.run_for(slice_ns)
        if cond():
            return True
    return False


def agent_kills(n=3, seed=1, tmp="/tmp", log=print):
    """n agents in a row on one flow, each SIGKILLed a random 0-300 ms
    after it took over.  Returns figures; asserts fallback and take-over."""
    from taurus.datapath import ccshm as C
    from taurus.datapath.devices.nic.app import WouldBlock
    from taurus.datapath.devices.nic.state import DR_SLOT
    from taurus.datapath.devices.nic.setup import (add_flow, nic_post, nic_take_delivered,
                                                   set_flow_mode)
    from taurus.datapath.engine import Engine
    from taurus.tools.fabric import build_virtual, nic_host
    from taurus.tools.procs import spawn, stop
    from taurus.tools.topology import Topology

    rng = np.random.default_rng(seed)
    t = Topology("kills")
    for h in ("h1", "h2"):
        t.add_host(h)
    t.add_switch("s1")
    t.add_link("h1", "s1", rate="10Gbit", delay="2us")
    t.add_link("s1", "h2", rate="500Mbit", delay="2us", buffer="1MB",
               features={"ecn": {"k": "10KB"}})
    cfg = os.path.join(tmp, "agent.toml")
    with open(cfg, "w") as fh:
        fh.write('[agent]\nalgorithm = "dctcp"\nmss = 1024\nline_rate_bps = 10e9\n')
    chunk = bytes(1 << 20)
    procs, figs = [], dict(kills=0, fallbacks=0, takeovers=0, fallback_ms=[])
    eng = Engine(clock="wall", max_flows=16, max_nics=2)
    try:
        size = 8 << 20
        fab = build_virtual(eng, t, host_factory=lambda *a: nic_host(*a, rx_buf_bytes=size))
        h1, h2 = fab["hosts"]["h1"], fab["hosts"]["h2"]
        slot = int(eng.E.devs.regs[h1, DR_SLOT])
        cc = eng.cc
        cc.ctls[slot, C.CTL_HB_TIMEOUT_NS] = HB_TIMEOUT_NS
        cc.ctls[slot, C.CTL_FALLBACK_RATE] = FALLBACK_BPS
        f = add_flow(eng, h1, t.mac_of("h2"), t.ip_of("h2"), cwnd_bytes=20 * 1024,
                     buf_bytes=size)
        got = [0]

        def app():
            try:
                while True:
                    nic_post(eng, h1, f, chunk)
            except WouldBlock:
                pass
            got[0] += len(nic_take_delivered(eng, h2, t.ip_of("h1"), f))
        eng.on_chunk.append(app)
        for k in range(n):
            v0 = int(cc.version[f])
            a = spawn([sys.executable, "-m", "taurus.agent.cli", "run", "--nic",
                       eng.name + "-cc", "--slot", str(slot), "--config", cfg,
                       "--pid-dir", os.path.join(tmp, f"a{k}"), "--stats-dir",
                       os.path.join(tmp, f"a{k}")], env=_env())
            procs.append(a)
            # the agent's start-up (imports, compiling) is slow on a loaded machine
            assert _run_until(eng, lambda: cc.ctls[slot, C.CTL_AGENT_PID] == a.pid
                              or a.poll() is not None, 300), f"agent {k} did not start"
            if k == 0:
                set_flow_mode(eng, f, "agent")      # the agent has said which events it wants
            assert _run_until(eng, lambda: (eng.E.rep.fallback[slot] == 0
                                            and cc.version[f] >= v0 + 3) or a.poll() is not None,
                              60), f"agent {k} did not take over"
            assert a.poll() is None, f"agent {k} exited"
            figs["takeovers"] += 1
            eng.run_for(int(rng.integers(0, 300_000_000)))   # a random moment
            a.send_signal(signal.SIGKILL)
            a.wait(10)
            figs["kills"] += 1
            last_hb = int(cc.ctls[slot, C.CTL_HEARTBEAT_NS])
            d0 = got[0]
            assert _run_until(eng, lambda: eng.E.rep.fallback[slot] == 1, 10), "no fallback"
            figs["fallback_ms"].append(round((eng.now() - last_hb) / 1e6, 1))
            eng.run_for(100_000_000)
            assert got[0] > d0, "the flow stopped while its agent was dead"
            figs["fallbacks"] = int(cc.ctls[slot, C.CTL_FALLBACKS])
        assert figs["fallbacks"] == n
        figs["delivered_mib"] = round(got[0] / 2**20, 1)
    finally:
        for p in procs:
            stop(p, grace_s=0.5)
        eng.close()
    log(f"  agent: {figs['kills']} SIGKILLs, {figs['fallbacks']} fallbacks (after "
        f"{figs['fallback_ms']} ms; timeout {HB_TIMEOUT_NS // 10**6} ms), "
        f"{figs['takeovers']} take-overs, {figs['delivered_mib']} MiB delivered throughout")
    return figs


_APP = r"""
import sys, time
from taurus.transport.client import connect
c = connect(sys.argv[1], sys.argv[3], sys.argv[2])
c2 = connect(sys.argv[1], sys.argv[3], sys.argv[2])
print("connected", flush=True)
msg = bytes(64 << 10)
while True:
    for x in (c, c2):
        try:
            x.send(msg)
        except Exception:
            time.sleep(0.001)
"""


def app_kills(n=3, seed=1, log=print):
    """n apps in a row, each SIGKILLed a random 0-200 ms after it
    connected (two flows each): every flow is closed and every PDC freed."""
    from taurus.datapath.devices.nic.setup import nic_neighbour, nic_table_use
    from taurus.datapath.engine import Engine
    from taurus.tools.fabric import build_virtual, nic_host
    from taurus.tools.procs import spawn, stop
    from taurus.tools.topology import Topology

    rng = np.random.default_rng(seed)
    t = Topology("appkill")
    for h in ("h1", "h2"):
        t.add_host(h)
    t.add_switch("s1")
    for h in ("h1", "h2"):
        t.add_link(h, "s1", rate="10Gbit", delay="2us")
    figs = dict(kills=0, flows_closed=0, pdcs_freed=0)
    eng = Engine(clock="wall", max_flows=64, max_nics=2)
    procs = []
    try:
        from taurus.tools.perf import Sink
        build_virtual(eng, t, host_factory=nic_host)
        nic_neighbour(eng, t.ip_of("h2"), t.mac_of("h2"))
        eng.on_chunk.append(Sink(eng, [t.ip_of("h2")]))      # h2 drains what arrives
        for k in range(n):
            p = spawn([sys.executable, "-c", _APP, eng.name, t.ip_of("h2"), t.ip_of("h1")],
                      env=_env(), stdout=subprocess.PIPE)
            procs.append(p)
            fd = p.stdout.fileno()
            os.set_blocking(fd, False)
            buf = []

            def connected():
                try:
                    buf.append(os.read(fd, 4096).decode())
                except BlockingIOError:
                    pass
                return "connected" in "".join(buf) or p.poll() is not None
            assert _run_until(eng, connected, 120), "app did not connect"
            assert p.poll() is None, "app exited"
            _run_until(eng, lambda: nic_table_use(eng)["pdcs"] >= 2, 10)
            eng.run_for(int(rng.integers(0, 200_000_000)))
            use = nic_table_use(eng)
            assert use["flows"] == 2 and use["pdcs"] == 2, use
            p.send_signal(signal.SIGKILL)
            p.wait(10)
            figs["kills"] += 1
            assert _run_until(eng, lambda: nic_table_use(eng)["flows"] == 0
                              and nic_table_use(eng)["pdcs"] == 0, 10), nic_table_use(eng)
            use = nic_table_use(eng)
            figs["flows_closed"] += 2
            figs["pdcs_freed"] += 2
        figs["tables"] = nic_table_use(eng)
    finally:
        for p in procs:
            stop(p, grace_s=0.5)
        eng.close()
    log(f"  app: {figs['kills']} SIGKILLs, each app's 2 flows closed and their PDCs freed "
        f"(tables after: {figs['tables']})")
    return figs


def engine_kills(n=2, seed=1, tmp="/tmp", log=print):
    """`taurus perf -s` with a `perf -c` client sending to it, SIGKILLed a
    random 0.2-2 s after it serves, n times; `taurus topo clean` after each.
    Returns figures with what was left (must be nothing)."""
    from taurus.datapath.ports.xdp import prog_ids
    from taurus.datapath.shm import list_segments
    from taurus.tools import netns
    from taurus.tools import topology as topo

    rng = np.random.default_rng(seed)
    figs = dict(kills=0, leaks=[])
    for k in range(n):
        prefix = f"{netns.PREFIX}k{os.getpid()}{k}-"
        pid_dir = os.path.join(tmp, f"pids{k}")
        env = _env(TAURUS_PID_DIR=pid_dir)
        base = [sys.executable, "-m", "taurus.cli", "perf", "--topo", "two_hosts",
                "--prefix", prefix, "--name", f"{prefix}perf"]
        topo.load(topo.builtin("two_hosts"), prefix=prefix).up()
        srv = subprocess.Popen(base + ["-s", "--xdp-mode", "generic"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
        cli = None
        try:
            line = srv.stdout.readline()
            assert "serving" in line, srv.stderr.read() if srv.poll() is not None else line
            cli = subprocess.Popen(base + ["-c", "h2", "-t", "30"], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
            time.sleep(float(rng.uniform(0.2, 2.0)))
            progs = prog_ids(srv.pid)
            srv.send_signal(signal.SIGKILL)
            srv.wait(10)
            figs["kills"] += 1
        finally:
            for p in (cli, srv):
                if p is not None and p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(10)
            r = subprocess.run([sys.executable, "-m", "taurus.cli", "topo", "clean", "--prefix",
                                prefix, "--pid-dir", pid_dir], env=env, capture_output=True,
                               text=True, timeout=120)
        left = [f"namespace {x}" for x in netns.list_ns(prefix)]
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True,
                               text=True).stdout
        left += [f"link {ln.split(':')[1].strip()}" for ln in links.splitlines()
                 if ln.split(":")[1].strip().startswith(prefix)]
        left += [f"shm {s}" for s in list_segments() if s.startswith(prefix.rstrip("-"))]
        left += [f"pid file {p}" for p in glob.glob(os.path.join(pid_dir, "*.pid"))]
        left += [f"XDP program {i}" for i in sorted(progs & prog_ids())]
        if r.returncode != 0:
            left.append(f"topo clean exited {r.returncode}: {r.stderr.strip()[-200:]}")
        figs["leaks"] += left
        figs.setdefault("xdp_programs_seen", 0)
        figs["xdp_programs_seen"] += len(progs)
    log(f"  engine: {figs['kills']} SIGKILLs of `taurus perf -s` while a client sent, "
        f"{figs['xdp_programs_seen']} BPF programs it held, left after `taurus topo clean`: "
        f"{figs['leaks'] or 'nothing'}")
    return figs
