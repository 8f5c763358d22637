"""`taurus perf` with congestion control and iperf3's options and JSON
(issue 24), on real packets between namespaces.  Every test removes its
namespaces, engine and processes whatever happens (module fixtures: one
perf -s per topology)."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import needs_root
from taurus.datapath.shm import list_segments
from taurus.tools import netns
from taurus.tools import topology as topo
from taurus.tools.procs import interrupt

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

PREFIX = f"{netns.PREFIX}t{os.getpid()}i-"
ENV = dict(os.environ, PYTHONPATH=os.getcwd())

# The dumbbell with a slow bottleneck and ECN at the switches: the queue
# builds at s1's port toward s2, whatever the machine's packet rate.
DUMBBELL = """
[topology]
name = "pdumb"
[defaults]
rate = "1Gbit"
delay = "1us"
buffer = "1MB"
[[hosts]]
name = "h1"
[[hosts]]
name = "h3"
[[switches]]
name = "s1"
ecn = { k = "15KB" }
[[switches]]
name = "s2"
ecn = { k = "15KB" }
[[links]]
endpoints = ["h1", "s1"]
[[links]]
endpoints = ["s1", "s2"]
rate = "150Mbit"
delay = "5us"
[[links]]
endpoints = ["s2", "h3"]
"""


def _base(topo_arg, name):
    return [sys.executable, "-m", "taurus.cli", "perf", "--topo", topo_arg,
            "--prefix", PREFIX, "--name", f"{PREFIX}{name}"]


class Server:
    def __init__(self, topo_arg, name, *extra):
        self.t = topo.load(topo.builtin(topo_arg) if "/" not in topo_arg else topo_arg,
                           prefix=PREFIX)
        self.base = _base(topo_arg, name)
        self.name = f"{PREFIX}{name}"
        self.extra = extra
        self.srv = None

    def __enter__(self):
        try:
            self.t.up()
            self.srv = subprocess.Popen(self.base + ["-s", "--xdp-mode", "generic",
                                                     "--ack-every", "16", "--ack-delay-us",
                                                     "200", *self.extra],
                                        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
            line = self.srv.stdout.readline()          # printed once the ports are open
            assert "serving" in line, self.srv.stderr.read() if self.srv.poll() is not None \
                else line
        except BaseException:
            self.__exit__()
            raise
        return self

    def client(self, *a, timeout=180):
        return subprocess.run(self.base + ["-c", *a], env=ENV, capture_output=True, text=True,
                              timeout=timeout)

    def json(self, *a):
        r = self.client(*a, "-J")
        assert r.returncode == 0, (r.stderr + r.stdout
                                   + "\nthe server's stderr:\n" + self.stderr_so_far())
        return json.loads(r.stdout)

    def stdout_lines(self, want: int, timeout: float = 20.0) -> list[str]:
        """The server's next `want` lines on stdout (fewer at the timeout)."""
        import select
        out, t_end = [], time.monotonic() + timeout
        while len(out) < want and time.monotonic() < t_end:
            if select.select([self.srv.stdout], [], [], 0.2)[0]:
                out.append(self.srv.stdout.readline())
        return out

    def stderr_so_far(self) -> str:
        """What the server wrote to stderr until now (without blocking)."""
        import fcntl
        fd = self.srv.stderr.fileno()
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        try:
            return os.read(fd, 1 << 16).decode(errors="replace")
        except BlockingIOError:
            return ""

    def __exit__(self, *exc):
        try:
            interrupt(self.srv)
        finally:
            self.t.down()


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, ValueError):
                pass
    return out


def _tree(o, p=""):
    """Key paths of a JSON document (list items merged: '[]')."""
    out = set()
    if isinstance(o, dict):
        for k, v in o.items():
            out.add(f"{p}.{k}")
            out |= _tree(v, f"{p}.{k}")
    elif isinstance(o, list):
        for v in o:
            out |= _tree(v, p + "[]")
    return out


@pytest.fixture(scope="module")
def two():
    if os.geteuid() != 0:
        pytest.skip("needs root for network namespaces")
    with Server("two_hosts", "perf2") as s:
        yield s
    assert not netns.list_ns(PREFIX)
    assert not [x for x in list_segments() if x.startswith(PREFIX)]


def test_bad_algorithm_and_bad_combinations_fail_before_any_namespace():
    base = _base("two_hosts", "none")
    cases = [(["-c", "h2", "-C", "nosuch"], "unknown algorithm 'nosuch'"),
             (["-c", "h2", "-C", "dctcp", "--cc-param", "nosuch=1"], "nosuch"),
             (["-c", "h2", "-C", "taurus.cc_algorithms.dctcp:Nope"], "has no 'Nope'"),
             (["-c", "h2", "-R", "--bidir"], "cannot be both reverse and bidirectional"),
             (["-c", "h2", "--verify", "-R"], "--verify checks forward bulk streams"),
             (["-s", "--verify"], "client only"),
             (["-s", "-R"], "client only"),
             (["-c", "h2", "--cc-mode", "agent"], "need -C/--congestion"),
             (["-c", "h2", "-C", "dctcp", "--receiver-cc", "dctcp"], "not a receiver one")]
    for argv, msg in cases:
        r = subprocess.run(base + argv, env=ENV, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and msg in r.stderr, (argv, r.stderr)
        assert "not up" not in r.stderr                  # failed before looking at the topology
    assert not netns.list_ns(PREFIX)


@needs_root
def test_json_contains_iperf3s_key_tree(two, tmp_path):
    """Real iperf3 -J (kernel TCP, which the perf engine's AF_XDP ports leave
    to the kernel) in the same namespaces: every key path of its document
    exists in ours, forward, -R and --bidir."""
    t = two.t
    for extra in ([], ["-R"], ["--bidir"]):
        srv = subprocess.Popen(["ip", "netns", "exec", t.ns_of("h2"), "iperf3", "-s", "-1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            r = subprocess.run(["ip", "netns", "exec", t.ns_of("h1"), "iperf3", "-c",
                                t.ip_of("h2"), "-J", "-t", "1", "-P", "2", *extra],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stdout + r.stderr
            theirs = json.loads(r.stdout)
        finally:
            srv.kill()
            srv.wait()
        ours = two.json("h2", "-t", "1", "-P", "2", *extra)
        missing = _tree(theirs) - _tree(ours)
        assert not missing, sorted(missing)
        assert ours["start"]["test_start"]["protocol"] == "TCP"
        assert ours["start"]["taurus"]["protocol"] == "UET-RUD"
        for c in ours["start"]["connected"]:
            assert c["local_port"] > 0 and c["remote_port"] > 0
        assert set(ours["end"]["cpu_utilization_percent"]) == \
            set(theirs["end"]["cpu_utilization_percent"])


@needs_root
def test_verify_checks_every_byte_each_stream_had_acked(two):
    """--verify, DCTCP in an agent: perf -s checks the stream's bytes against
    the client's pattern and reports them when the stream closes; every
    byte ACKed to the client is among those verified."""
    doc = two.json("h2", "-t", "1.5", "--verify", "-C", "dctcp", "--cc-mode", "agent")
    acked = [v["acked_bytes"] for v in doc["end"]["taurus"]["verify"]]
    assert len(acked) == 1 and min(acked) > 0
    lines = [x for x in two.stdout_lines(1, timeout=60) if "verified" in x]
    got = [re.match(r"taurus perf: verified \S+ pdc \d+: (\d+) bytes, (\d+) wrong", x)
           for x in lines]
    assert len(got) == 1 and all(got), lines
    assert [int(m[2]) for m in got] == [0]
    # the streams pair off so that each verified at least what its sender had ACKed
    assert all(v >= a for v, a in zip(sorted(int(m[1]) for m in got), sorted(acked))), \
        (lines, acked)


@needs_root
def test_reverse_and_bidir_move_data_the_right_way(two):
    from taurus.datapath.devices.nic.state import FL_NIC
    from taurus.transport.client import Endpoint
    h1, h2 = Endpoint(two.name, "h1"), Endpoint(two.name, "h2")
    out = two.json("h2", "--from", "h1", "-t", "1.5", "-R")
    assert out["start"]["test_start"]["reverse"] == 1
    for s in out["end"]["streams"]:
        assert s["sender"]["sender"] is False
        assert int(h1.N.fl[s["sender"]["socket"], FL_NIC]) - 1 == h2.n   # h2's NIC sends
        assert s["receiver"]["bytes"] > 100_000
    assert out["end"]["sum_received"]["bytes"] > 100_000
    r = two.client("h2", "--from", "h1", "-t", "1", "-R", "-C", "dctcp")
    assert r.returncode == 0 and "Reverse mode" in r.stdout, r.stderr + two.stderr_so_far()
    assert re.search(r"sec .* \d+us ", r.stdout), r.stdout    # the server flow's CC columns
    out = two.json("h2", "--from", "h1", "-t", "1.5", "--bidir")
    ss = out["end"]["streams"]
    fwd = [s for s in ss if s["sender"]["sender"]]
    rev = [s for s in ss if not s["sender"]["sender"]]
    assert len(fwd) == len(rev) == 1
    assert int(h1.N.fl[fwd[0]["sender"]["socket"], FL_NIC]) - 1 == h1.n
    assert int(h1.N.fl[rev[0]["sender"]["socket"], FL_NIC]) - 1 == h2.n
    assert out["end"]["sum_received"]["bytes"] > 100_000
    assert out["end"]["sum_received_bidir_reverse"]["bytes"] > 100_000
    assert "sum_bidir_reverse" in out["intervals"][0]


@needs_root
def test_iperf3_options_omit_title_bitrate_logfile_server_output(two, tmp_path):
    log = tmp_path / "perf.log"
    r = two.client("h2", "-t", "2", "-O", "1", "-T", "run7", "-b", "40M", "-f", "m",
                   "--logfile", str(log), "--get-server-output", "-V", "-C", "dctcp")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""                                # everything went to the log file
    text = log.read_text()
    lines = [ln for ln in text.splitlines() if ln]
    assert lines and all(ln.startswith("run7:  ") for ln in lines)
    assert "(omitted)" in text and "Mbits/sec" in text and "Server output:" in text
    assert "snd_tcp_congestion dctcp" in text and "CPU Utilization" in text
    out = two.json("h2", "-t", "2", "-O", "1", "-b", "40M", "-T", "run8",
                   "--get-server-output")
    assert out["title"] == "run8"
    assert out["start"]["test_start"]["omit"] == 1
    assert any(iv["sum"]["omitted"] for iv in out["intervals"])
    assert not all(iv["sum"]["omitted"] for iv in out["intervals"])
    # -b 40M: app-paced to the target (the totals start after -O)
    bps = out["end"]["sum_sent"]["bits_per_second"]
    assert 20e6 < bps < 48e6, bps
    so = out["server_output_json"]
    assert so["end"]["sum_received"]["bytes"] == out["end"]["sum_received"]["bytes"]


@needs_root
def test_agent_started_by_perf_is_gone_after_exit_sigint_and_sigkill(two):
    out = two.json("h2", "-t", "1", "-C", "dctcp")
    pids = out["start"]["taurus"]["agent_pids"]
    assert len(pids) == 1 and not _alive(pids[0])
    assert out["end"]["sender_tcp_congestion"] == "dctcp"
    for sig in (signal.SIGINT, signal.SIGKILL):
        cli = subprocess.Popen(two.base + ["-c", "h2", "-t", "60", "-C", "dctcp"],
                               env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        try:
            while "sec" not in (line := cli.stdout.readline()):    # the first interval
                assert line, cli.stderr.read()
            agents = _children(cli.pid)
            assert agents and all(_alive(p) for p in agents)
            cli.send_signal(sig)
            rest = cli.stdout.read()
            cli.wait(30)
            t_end = time.monotonic() + 10
            while any(_alive(p) for p in agents) and time.monotonic() < t_end:
                time.sleep(0.1)
            assert not any(_alive(p) for p in agents), (sig, agents)
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.wait()
        if sig == signal.SIGINT:
            assert cli.returncode == 0 and "sender" in rest and "receiver" in rest, rest


@needs_root
def test_perf_dctcp_on_the_dumbbell_marks_and_moves_cwnd(tmp_path):
    """-C dctcp through two engine switches with ECN: the bottleneck marks,
    the sender sees ECN bytes and the agent's window moves interval by
    interval, in both agent modes; native mode does the same in the engine."""
    path = tmp_path / "pdumb.toml"
    path.write_text(DUMBBELL)
    with Server(str(path), "dumb") as s:
        for mode in ("agent", "per-event", "native"):
            out = s.json("h3", "--from", "h1", "-t", "3", "-i", "0.5", "-C", "dctcp",
                         "--cc-mode", mode)
            end = out["end"]
            snd = end["streams"][0]["sender"]
            assert snd["taurus"]["ecn_bytes"] > 0, (mode, snd)
            assert end["sum_sent"]["bytes"] > 1_000_000
            cw = [iv["streams"][0]["snd_cwnd"] for iv in out["intervals"]]
            print(f"{mode}: {end['sum_sent']['bits_per_second'] / 1e6:.0f} Mbit/s, ECN "
                  f"{snd['taurus']['ecn_bytes']} B, cwnd per interval {cw}, decisions "
                  f"{snd['taurus']['agent_decisions']}, messages {end['taurus']['agent_messages']}")
            # on failure, everything the sender reported (a stall shows as
            # retransmits / max_rtt) and what the server said
            if len(set(cw)) < 3 or snd["taurus"]["agent_decisions"] <= 0:
                pytest.fail(f"{mode}: cwnd per interval {cw}, sender {snd}, "
                            f"server stderr {s.stderr_so_far()!r}")
            assert end["taurus"]["agent_messages"] > 0
            # agent messages are the stream's own (one stream: all of them)
            assert snd["taurus"]["agent_messages"] == end["taurus"]["agent_messages"]
    assert not [n for n in netns.list_ns(PREFIX) if "pdumb" in n]


@needs_root
def test_receiver_cc_rccc_grants_each_streams_credit(two):
    """-C nscc --receiver-cc rccc: perf -s runs RCCC on the receiving NIC,
    every stream is a credit flow that moves data on its grants, and each
    stream reports its own flow's agent messages.  --bidir: the client's NIC
    receives too (as with -R), so it runs RCCC and the server's flows are
    credit flows as well."""
    from taurus.datapath.devices.nic.state import FL_USES_CREDIT
    from taurus.transport.client import Endpoint
    N = Endpoint(two.name, "h1").N
    for extra in ([], ["--bidir"]):
        out = two.json("h2", "--from", "h1", "-t", "1", "-P", "2", "-C", "nscc",
                       "--cc-mode", "native", "--receiver-cc", "rccc", *extra)
        end = out["end"]
        assert end["receiver_tcp_congestion"] == "rccc"
        assert out["start"]["taurus"]["cc"]["receiver"] == "rccc"
        assert end["taurus"]["receiver"]["grants"] > 0, (extra, end["taurus"])
        assert end["sum_received"]["bytes"] > 100_000
        for s in end["streams"]:
            assert int(N.fl[s["sender"]["socket"], FL_USES_CREDIT]) == 1
            assert s["sender"]["taurus"]["credit"] >= s["sender"]["bytes"] > 0
            assert s["sender"]["taurus"]["agent_messages"] > 0
        for iv in out["intervals"]:             # the sums add up their streams'
            mine = [r for r in iv["streams"] if r["sender"]]
            theirs = [r for r in iv["streams"] if not r["sender"]]
            for key, rs in (("sum", mine or theirs), ("sum_bidir_reverse", theirs)):
                if key in iv:
                    assert iv[key]["taurus"]["agent_messages"] == \
                        sum(r["taurus"]["agent_messages"] for r in rs)
        print(f"{extra}: {end['sum_received']['bits_per_second'] / 1e6:.0f} Mbit/s, grants "
              f"{end['taurus']['receiver']['grants']}, messages per stream "
              f"{[s['sender']['taurus']['agent_messages'] for s in end['streams']]}")
    r = two.client("h2", "-t", "0.5", "-C", "nscc", "--cc-mode", "native",
                   "--receiver-cc", "rccc")
    assert r.returncode == 0 and "receiver algorithm: rccc (native), grants" in r.stdout, \
        r.stdout + r.stderr


def _sink_pair():
    """perf -s's Sink on h2 in a virtual-clock engine h1 -- h2 (DCTCP in
    its native table): (engine, sink, h1's endpoint, h1's NIC device)."""
    from taurus.cc_algorithms.native import NativeTable
    from taurus.cc_algorithms.registry import lookup
    from taurus.datapath.devices.nic.setup import add_nic, nic_reserve
    from taurus.datapath.engine import Engine
    from taurus.tools.perf import Sink
    from taurus.transport import listen
    from test_transport_client import G, IP1, IP2, MAC1, MAC2
    tab = NativeTable(16)
    ids = {"dctcp": tab.add(lookup("dctcp"))}
    eng = Engine(clock="virtual", n_frames=8192, max_flows=16, native=tab.native)
    nic_reserve(eng, max_flows=15, tx_bytes=8 << 20, rx_bytes=4 << 20)
    a, b = eng.add_mem_link("h1", "h2", delay_ns=2000, rate_bps=10 * G)
    d1 = add_nic(eng, a, MAC1, IP1, line_rate_bps=10 * G, rx_buf_bytes=256 << 10, name="h1")
    add_nic(eng, b, MAC2, IP2, line_rate_bps=10 * G, rx_buf_bytes=256 << 10, name="h2")
    sink = Sink(eng, ["h1", "h2"], tab, ids)
    eng.on_chunk.append(sink)
    return eng, sink, listen(eng, "h1"), d1


def test_a_reverse_stream_the_client_ends_is_closed_at_both_ends():
    """The client ends a reverse test by asking the server to close
    (REQ_CLOSE) and reading what is still in flight (perf._close_reverse):
    perf -s stops posting, its flow closes once ACKed and the client's PDC
    is freed.  A long-lived perf -s collects no open connections, and a
    later client does not find them among its NIC's PDCs."""
    from taurus.datapath.devices.nic.setup import nic_counters
    from taurus.datapath.devices.nic.state import FL_STATE, FS_ACTIVE
    from taurus.tools.perf import _header
    from test_transport_client import IP2
    eng, sink, ep, d1 = _sink_pair()
    with eng:
        rev = ep.connect(IP2, duplex=True)
        rev.send(_header({"dir": "rev", "cc": None, "length": 8192, "time": 60, "bitrate": 0}))
        rx, got = rev.rx, 0
        for _ in range(10):
            eng.run_for(100_000)
            got += rx.recv_bytes()
        assert got > 100_000 and len(sink.senders) == 1
        flow = rx.peer[1]
        rx.close()
        for _ in range(100):
            eng.run_for(100_000)
            rx.recv_bytes()
            if int(eng.E.nic.fl[flow, FL_STATE]) != FS_ACTIVE:
                break
        assert int(eng.E.nic.fl[flow, FL_STATE]) != FS_ACTIVE and sink.senders == []
        assert nic_counters(eng, d1)["pdc_close"] == 1


def test_sink_sets_each_streams_cc_and_sends_reverse_tests():
    """perf -s's Sink, in-process on the virtual clock: a stream's header
    puts its flow under the CC it names (native: the engine's table; agent:
    set_flow_mode), and a reverse test's header gets a flow back that the
    server keeps full."""
    from taurus.datapath.ccshm import FL_CC_ACTIVE, FL_NATIVE
    from taurus.tools.perf import _header
    from test_transport_client import IP2
    eng, sink, ep, _ = _sink_pair()
    with eng:
        cc = {"algorithm": "dctcp", "params": {"g": 0.125}}
        nat = ep.connect(IP2)
        nat.send(_header({"dir": "fwd", "cc": dict(cc, mode="native")}))
        agt = ep.connect(IP2)
        agt.send(_header({"dir": "fwd", "cc": dict(cc, mode="agent")}))
        bad = ep.connect(IP2)
        bad.send(_header({"dir": "fwd", "cc": dict(cc, mode="native", algorithm="swift")}))
        rev = ep.connect(IP2, duplex=True)
        rev.send(_header({"dir": "rev", "cc": None, "length": 8192, "time": 5, "bitrate": 0}))
        for _ in range(20):
            eng.run_for(100_000)
        assert int(eng.cc.flags[nat.flow]) & FL_NATIVE
        assert int(eng.cc.flags[agt.flow]) & FL_CC_ACTIVE
        assert int(eng.cc.flags[bad.flow]) == 0 and "no algorithm 'swift'" in sink.errors[0]
        rx, got = rev.rx, 0                   # the server's flow back (its HELLO is here)
        for _ in range(50):
            eng.run_for(100_000)
            got += rx.recv_bytes()
        assert got > 100_000
        assert int(eng.cc.flags[rx.peer[1]]) == 0      # cc None: the server's flow stays static


def test_sink_starts_the_receiver_algorithm_and_credit_flows_run_on_its_grants():
    """--receiver-cc, in-process on the virtual clock: a setup header makes
    perf -s start the receiver algorithm natively on the receiving NIC (with
    its initial credit) and answer; the test's streams, opened as credit
    flows, send on that algorithm's grants (the NIC counts them), and each
    stream's agent messages are its flow's own (ccshm delivered)."""
    from taurus.cc_algorithms.native import NativeTable
    from taurus.cc_algorithms.registry import lookup
    from taurus.datapath.devices.nic.setup import add_nic, nic_counters, nic_reserve
    from taurus.datapath.devices.nic.state import (CX_CREDIT, FL_USES_CREDIT, NR_INIT_CREDIT,
                                                   RP_CREDIT)
    from taurus.datapath.engine import Engine
    from taurus.tools.perf import Sink, _header
    from taurus.transport import listen
    from taurus.transport.client import WouldBlock
    from test_transport_client import G, IP1, IP2, MAC1, MAC2
    tab = NativeTable(16)
    ids = {n: tab.add(lookup(n)) for n in ("nscc", "rccc")}
    eng = Engine(clock="virtual", n_frames=8192, max_flows=16, native=tab.native)
    nic_reserve(eng, max_flows=15, tx_bytes=12 << 20, rx_bytes=4 << 20)   # 1 MiB per flow
    a, b = eng.add_mem_link("h1", "h2", delay_ns=2000, rate_bps=10 * G)
    add_nic(eng, a, MAC1, IP1, line_rate_bps=10 * G, rx_buf_bytes=256 << 10, name="h1")
    d2 = add_nic(eng, b, MAC2, IP2, line_rate_bps=10 * G, rx_buf_bytes=256 << 10, name="h2")
    with eng:
        sink = Sink(eng, ["h1", "h2"], tab, ids)
        eng.on_chunk.append(sink)
        ep = listen(eng, "h1")
        cc = {"algorithm": "nscc", "mode": "native", "params": {}, "receiver": "rccc",
              "receiver_params": {}, "receiver_idle": 500_000, "receiver_init_credit": 6000}
        bad = ep.connect(IP2, duplex=True)
        bad.send(_header({"dir": "setup", "cc": dict(cc, receiver="nosuch"),
                          "receivers": [IP2]}))
        setup = ep.connect(IP2, duplex=True)
        setup.send(_header({"dir": "setup", "cc": cc, "receivers": [IP2]}))
        eng.run_for(1_000_000)
        assert "no receiver algorithm 'nosuch'" in json.loads(bad.recv(timeout=10))["error"]
        assert json.loads(setup.recv(timeout=10)) == {"ok": True}
        n2 = int(eng.E.devs.regs[d2, 0])
        assert int(eng.E.nic.nr[n2, NR_INIT_CREDIT]) == 6000
        assert int(eng.E.alg.nic_alg[n2]) == ids["rccc"]
        streams = []
        for _ in range(2):
            c = ep.connect(IP2, credit=True)
            c.send(_header({"dir": "fwd", "cc": cc}))
            streams.append(c)
        plain = ep.connect(IP2)                 # not asked for credit: not a credit flow
        N = eng.E.nic
        assert [int(N.fl[c.flow, FL_USES_CREDIT]) for c in streams] == [1, 1]
        assert int(N.fl[plain.flow, FL_USES_CREDIT]) == 0
        assert all(int(N.ctx[c.flow, CX_CREDIT]) == 6000 for c in streams)   # h2's initial
        msg = bytes(32 << 10)

        def pump(rounds):
            for _ in range(rounds):
                for c in streams:
                    try:
                        c.try_send(msg)
                    except WouldBlock:          # rings full: the next round
                        pass
                eng.run_for(100_000)
                for c in streams:
                    c.completions()
        pump(40)
        grants = nic_counters(eng, d2)["rx_grant"]
        assert grants > 0
        for c in streams:
            assert c.acked() > 200_000                              # moved on credit
            assert int(N.ctx[c.flow, CX_CREDIT]) >= c.acked() > 6000
        assert max(int(N.rp[r, RP_CREDIT]) for r in range(1, 8)) > 6000
        # the same setup again keeps the running algorithm (its senders stay joined)
        again = ep.connect(IP2, duplex=True)
        again.send(_header({"dir": "setup", "cc": cc, "receivers": [IP2]}))
        eng.run_for(1_000_000)
        assert json.loads(again.recv(timeout=10)) == {"ok": True}
        pump(10)
        assert nic_counters(eng, d2)["rx_grant"] > grants
        # agent messages per stream: records handed to each flow's own algorithm
        per = [int(eng.cc.delivered[c.flow].sum()) for c in streams]
        assert all(m > 0 for m in per)
        assert int(eng.cc.delivered[plain.flow].sum()) == 0


def test_receiver_cc_takes_the_config_files_receiver_settings():
    """--receiver-cc with --cc-config: the file's receiver_params (checked:
    a bad one names its key), receiver_idle and receiver_init_credit go to
    perf -s in the stream header; a file naming another receiver keeps its
    parameters to itself."""
    import types
    from taurus.cc_algorithms.params import ConfigError
    from taurus.experiment.schema import CcSpec
    from taurus.tools.perf_cc import choose

    def args(spec, receiver="rccc"):
        return types.SimpleNamespace(cc_config="x.toml", cc_table=lambda _p: spec,
                                     congestion="nscc", cc_param=[], cc_mode="native",
                                     receiver_cc=receiver)
    spec = CcSpec(algorithm="nscc", receiver_params={"slice": 2000}, receiver_idle=50_000,
                  receiver_init_credit=9000)
    h = choose(args(spec)).header()
    assert (h["receiver"], h["receiver_params"], h["receiver_idle"],
            h["receiver_init_credit"]) == ("rccc", {"slice": 2000}, 50_000, 9000)
    with pytest.raises(ConfigError, match="slice"):
        choose(args(CcSpec(algorithm="nscc", receiver_params={"slice": -1})))
    other = CcSpec(algorithm="nscc", receiver="test_cc_receiver:Window",
                   receiver_params={"window": 4096})
    assert choose(args(other)).receiver_params == {}
    assert choose(args(other, receiver=None)).receiver_params == {"window": 4096}
