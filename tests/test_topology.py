"""Topologies: validation (no root needed) and real namespaces (root).

Every namespace here uses the prefix taurus-t<pid>-tp-, and cleanup runs
with that prefix only, so other test runs on the machine are untouched."""
import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest
from pyroute2 import IPRoute

from taurus.tools import netns, topo_cli
from taurus.tools import topology as topo
from taurus.tools.topology import Topology, TopologyError

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
PREFIX = f"taurus-t{os.getpid()}-tp-"

LINE = """
[topology]
name = "line"
[[hosts]]
name = "h1"
ip = "10.0.0.1/24"
[[hosts]]
name = "h2"
[[switches]]
name = "s1"
[[links]]
endpoints = ["h1", "s1"]
rate = "10Gbit"
delay = "2us"
[[links]]
endpoints = ["h2", "s1"]
"""


# ------------------------------------------------------------ validation

BAD = {
    "syntax": ("[topology\nname = 'x'", None, "line 1"),
    "unknown_key": (LINE.replace('rate = "10Gbit"', 'bandwidth = "10Gbit"'), "links[0]", "unknown key"),
    "unknown_table": (LINE + "\n[extra]\na = 1\n", "extra", "unknown table"),
    "missing_name": (LINE.replace('name = "line"', ""), "topology.name", "missing"),
    "missing_endpoints": (LINE.replace('endpoints = ["h2", "s1"]', 'mtu = 1500'), "links[1].endpoints", "missing"),
    "missing_host_name": (LINE.replace('name = "h2"', 'ip = "10.0.0.2"'), "hosts[1].name", "missing"),
    "dup_name": (LINE.replace('name = "h2"', 'name = "h1"'), "hosts[1].name", "duplicate node name"),
    "dup_switch_host": (LINE.replace('name = "s1"', 'name = "h2"'), "switches[0].name", "duplicate node name"),
    "unknown_node": (LINE.replace('["h2", "s1"]', '["h2", "s9"]'), "links[1].endpoints", "unknown node"),
    "self_link": (LINE.replace('["h2", "s1"]', '["s1", "s1"]'), "links[1].endpoints", "two different"),
    "bad_rate": (LINE.replace('"10Gbit"', '"fast"'), "links[0].rate",
                 'expected a rate like "10Gbit", got "fast"'),
    "rate_bytes": (LINE.replace('"10Gbit"', '"10GB"'), "links[0].rate", "expected a rate"),
    "bad_delay": (LINE.replace('"2us"', '"2 parsecs"'), "links[0].delay", "expected a delay"),
    "neg_delay": (LINE.replace('"2us"', '-5'), "links[0].delay", "expected a delay"),
    "bad_buffer": (LINE.replace('delay = "2us"', 'buffer = "lots"'), "links[0].buffer", "expected a size"),
    "dup_ip": (LINE.replace('name = "h2"', 'name = "h2"\nip = "10.0.0.1/24"'), "hosts[1].ip", "duplicate IP"),
    "bad_ip": (LINE.replace('"10.0.0.1/24"', '"10.0.0.300/24"'), "hosts[0].ip", "expected an IPv4 address"),
    "name_too_long": (LINE.replace('"h2"', '"host_number2"'), "hosts[1].name", "too long"),
    "bad_node_name": (LINE.replace('"h2"', '"h 2"'), "hosts[1].name", "expected a node name"),
    "mtu_high": (LINE.replace('delay = "2us"', "mtu = 9000"), "links[0].mtu", "allow_jumbo"),
    "mtu_low": (LINE.replace('delay = "2us"', "mtu = 10"), "links[0].mtu", "between 68 and"),
    "mtu_type": (LINE.replace('delay = "2us"', 'mtu = "big"'), "links[0].mtu", "expected an MTU"),
    "host_no_link": (LINE + '[[hosts]]\nname = "h3"\n', "hosts[2]", "has no link"),
    "host_two_links": (LINE + '[[links]]\nendpoints = ["h1", "h2"]\n', "links[2].endpoints", "one NIC"),
    "disconnected": (LINE + '[[hosts]]\nname = "h3"\n[[hosts]]\nname = "h4"\n'
                     '[[links]]\nendpoints = ["h3", "h4"]\n', "links", "cannot reach"),
    "bad_default": (LINE.replace("[[hosts]]", '[defaults]\nbuffer = "9 apples"\n[[hosts]]', 1),
                    "defaults.buffer", "expected a size"),
    "endpoints_type": (LINE.replace('["h2", "s1"]', '"h2"'), "links[1].endpoints", "two node names"),
    "hosts_not_array": ('[topology]\nname = "x"\n[hosts]\nname = "h1"\n', "hosts", "array of tables"),
    "jumbo_type": (LINE.replace('name = "line"', 'name = "line"\nallow_jumbo = 1'),
                   "topology.allow_jumbo", "true or false"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_file_names_file_and_field(tmp_path, case):
    text, field, expect = BAD[case]
    path = tmp_path / f"{case}.toml"
    path.write_text(text)
    with pytest.raises(TopologyError) as ei:
        topo.load(str(path), prefix=PREFIX)
    msg = str(ei.value)
    assert msg.startswith(str(path) + ": "), msg
    if field:
        assert ei.value.field == field, msg
        assert f": {field}: " in msg
    assert expect in msg, msg


def test_jumbo_allowed_when_asked(tmp_path):
    path = tmp_path / "j.toml"
    path.write_text(LINE.replace('name = "line"', 'name = "line"\nallow_jumbo = true')
                    .replace('delay = "2us"', "mtu = 9000"))
    assert topo.load(str(path)).links[0].mtu == 9000


def test_missing_file():
    with pytest.raises(TopologyError, match="cannot read"):
        topo.load("/nonexistent/x.toml")


def test_units():
    assert topo.parse_rate("10Gbit") == 10**10
    assert topo.parse_rate("2.5 Gbps") == 25 * 10**8
    assert topo.parse_rate(1000) == 1000
    assert topo.parse_delay("5us") == 5000 and topo.parse_delay("1.5ms") == 1_500_000
    assert topo.parse_delay(0) == 0 and topo.parse_delay("2s") == 2 * 10**9
    assert topo.parse_size("256KB") == 256_000 and topo.parse_size("64KiB") == 65536
    for fn, bad in ((topo.parse_rate, "0Gbit"), (topo.parse_rate, True), (topo.parse_delay, "5"),
                    (topo.parse_size, "1Mbit"), (topo.parse_size, [1])):
        with pytest.raises(ValueError):
            fn(bad)


def test_shipped_topologies_validate():
    for name in ("line", "dumbbell", "two_hosts"):
        t = topo.load(topo.builtin(name))
        assert t.name == name and len(t.hosts) >= 2
    d = topo.load(topo.builtin("dumbbell"))
    assert d.routes("s1")[d.ip_of("h3")] == ["s1-eth2"]
    assert d.links[2].rate == 5 * 10**9


def test_python_model_accessors():
    t = Topology(f"api{os.getpid()}", prefix=PREFIX)
    h1 = t.add_host("h1")
    h2 = t.add_host("h2", ip="10.0.0.7/24")
    h3 = t.add_host("h3")
    s1, s2, s3, s4 = (t.add_switch(f"s{i}") for i in range(1, 5))
    t.add_link(h1, s1, rate="10Gbit", delay="5us", buffer="256KB")
    t.add_link(s1, s2)
    t.add_link(s1, s3)
    t.add_link(s2, s4)
    t.add_link(s3, s4)
    t.add_link(s4, h2)
    t.add_link(s4, h3, mtu=3000)
    t.validate()
    assert t.hosts == ["h1", "h2", "h3"] and t.switches == ["s1", "s2", "s3", "s4"]
    assert [t.ip_of(h) for h in t.hosts] == ["10.0.0.1", "10.0.0.7", "10.0.0.3"]
    assert t.ns_of("h1") == f"{PREFIX}api{os.getpid()}-h1"
    lk = t.links[0]
    assert (lk.rate, lk.delay, lk.buffer, lk.mtu) == (10**10, 5000, 256000, 1500)
    assert t.mac_of("h1", "h1-eth0") == "02:54:00:01:00:00"
    assert t.mac_of("s4", 3) == "02:54:00:07:00:03"
    i = t.ifaces_of("s1")[1]
    assert (i.name, i.peer_node, i.peer_iface, i.ip) == ("s1-eth1", "s2", "s2-eth0", None)
    assert t.ifaces_of("h2")[0].ip == "10.0.0.7"
    # ECMP: s1 reaches h2 through s2 and s3 with equal hop counts
    assert t.routes("s1") == {"10.0.0.1": ["s1-eth0"], "10.0.0.7": ["s1-eth1", "s1-eth2"],
                              "10.0.0.3": ["s1-eth1", "s1-eth2"]}
    assert t.routes("s4")["10.0.0.1"] == ["s4-eth0", "s4-eth1"]
    with pytest.raises(TopologyError, match="add_link.*rate.*expected a rate"):
        t.add_link(h1, s2, rate="fast")
    with pytest.raises(TopologyError, match="duplicate IP 10.0.0.7"):
        t.add_host("h9", ip="10.0.0.7")
    with pytest.raises(TopologyError, match="must start with"):
        Topology("x", prefix="other-")


# ------------------------------------------------------------ namespaces

@pytest.fixture
def pid_dir(tmp_path):
    """Own pid-file dir + guaranteed cleanup of this test run's prefix."""
    d = tmp_path / "run"
    d.mkdir()
    yield d
    removed, left = topo.clean(prefix=PREFIX, pid_dir=str(d))
    assert not left


def _links_in(ns):
    with IPRoute(netns=ns) as ipr:
        return {lk.get_attr("IFLA_IFNAME"): lk for lk in ipr.link("dump")}


@needs_root
def test_two_hosts_ping_arp_offloads_ipv6(pid_dir):
    t = topo.load(topo.builtin("two_hosts"), prefix=PREFIX)
    t.up()
    try:
        h1, h2 = t.ns_of("h1"), t.ns_of("h2")
        assert set(t.namespaces()) <= set(netns.list_ns(PREFIX))
        links = _links_in(h1)
        assert links["h1-eth0"].get_attr("IFLA_ADDRESS") == t.mac_of("h1", 0)
        assert links["h1-eth0"].get_attr("IFLA_MTU") == 1500
        assert links["h1-eth0"].get_attr("IFLA_OPERSTATE") == "UP"
        # kernel datapath works end to end (UDP echo, no ARP needed)
        srv = netns.start_in_ns(h2, _udp_echo_once, "10.0.0.2", 7007)
        try:
            assert netns.run_in_ns(h1, _udp_ask, "10.0.0.2", 7007, timeout=10) == b"pong"
        finally:
            srv.join(5)
            if srv.is_alive():
                srv.kill()
        if subprocess.run(["which", "ping"], capture_output=True).returncode == 0:
            r = subprocess.run(["ip", "netns", "exec", h1, "ping", "-c1", "-W2", "10.0.0.2"],
                               capture_output=True)
            assert r.returncode == 0, r.stdout
        with IPRoute(netns=h1) as ipr:
            neigh = [(n.get_attr("NDA_DST"), n.get_attr("NDA_LLADDR"), n["state"])
                     for n in ipr.neigh("dump") if n.get_attr("NDA_DST") == "10.0.0.2"]
        assert neigh == [("10.0.0.2", t.mac_of("h2", 0), 0x80)]   # permanent
        for ns, ifn in ((h1, "h1-eth0"), (h2, "h2-eth0")):
            feats = topo.offloads_of(ns, ifn)
            for f in ("tx-checksum-ip-generic", "tx-tcp-segmentation", "tx-generic-segmentation", "rx-gro"):
                assert feats.get(f) is False, (ifn, f, feats)
            assert not any(feats.values()), feats
            assert netns.read_sysctl(ns, f"net/ipv6/conf/{ifn}/disable_ipv6") == "1"
            with IPRoute(netns=ns) as ipr:
                idx = ipr.link_lookup(ifname=ifn)[0]
                assert not ipr.get_addr(family=socket.AF_INET6, index=idx)
        with pytest.raises(TopologyError, match="already exists"):
            t.up()
    finally:
        removed = t.down()
    assert not set(t.namespaces()) & set(netns.list_ns(PREFIX))
    assert len([r for r in removed if r.startswith("namespace")]) == 2


def _udp_echo_once(ip, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((ip, port))
    s.settimeout(8)
    data, addr = s.recvfrom(100)
    s.sendto(b"pong", addr)


def _udp_ask(ip, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.5)
    for _ in range(12):   # the server may not be bound yet
        s.sendto(b"ping", (ip, port))
        try:
            return s.recv(100)
        except socket.timeout:
            pass
    return None


@needs_root
def test_python_api_context_manager(pid_dir):
    t = Topology(f"api{os.getpid()}", prefix=PREFIX)
    hs = [t.add_host(f"h{i}") for i in (1, 2, 3)]
    s1 = t.add_switch("s1")
    for h in hs:
        t.add_link(h, s1, rate="1Gbit", mtu=3000)
    with pytest.raises(RuntimeError, match="boom"):
        with t:
            assert netns.list_ns(PREFIX) == sorted(t.namespaces())
            sw = _links_in(t.ns_of("s1"))
            for i in t.ifaces_of("s1"):
                assert sw[i.name].get_attr("IFLA_ADDRESS") == i.mac
                assert sw[i.name].get_attr("IFLA_MTU") == 3000
            with IPRoute(netns=t.ns_of("s1")) as ipr:
                assert not ipr.get_addr(family=socket.AF_INET, label="s1-eth0")
            with IPRoute(netns=t.ns_of("h3")) as ipr:
                assert [a.get_attr("IFA_ADDRESS") for a in ipr.get_addr(label="h3-eth0")] == ["10.0.0.3"]
            raise RuntimeError("boom")
    assert netns.list_ns(PREFIX) == []


@needs_root
def test_failed_up_rolls_back(pid_dir, monkeypatch):
    t = topo.load(topo.builtin("dumbbell"), prefix=PREFIX)
    calls = []

    def flaky(ns, ifnames):
        calls.append(ns)
        if len(calls) == 3:
            raise OSError("injected failure")
    monkeypatch.setattr(topo, "_set_offloads", flaky)
    with pytest.raises(OSError, match="injected"):
        t.up()
    assert netns.list_ns(PREFIX) == []


HOLDER = textwrap.dedent("""
    import os, socket, sys, time
    from taurus.nsenter import in_ns
    with in_ns(sys.argv[1]):          # socket in the namespace, process outside
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((sys.argv[2], 0))
    if len(sys.argv) > 3:
        with open(sys.argv[3] + ".tmp", "w") as f:
            f.write(f"{os.getpid()} {sys.argv[4]}")       # as pidfiles.py writes
        os.rename(sys.argv[3] + ".tmp", sys.argv[3])
    else:
        print("ready", flush=True)
    time.sleep(60)
""")


@needs_root
def test_clean_after_crash(pid_dir):
    t = topo.load(topo.builtin("line"), prefix=PREFIX).up()
    shm = f"/dev/shm/{PREFIX}ring0"
    procs = []
    try:
        with open(shm, "w") as f:
            f.write("x")
        procs.append(subprocess.Popen(["ip", "netns", "exec", t.ns_of("h1"), "sleep", "60"]))
        pidfile = pid_dir / "engine.pid"
        procs.append(subprocess.Popen([sys.executable, "-c", HOLDER, t.ns_of("h2"), "10.0.0.2",
                                       str(pidfile), PREFIX]))
        # no pid file: found through its socket's namespace
        procs.append(subprocess.Popen([sys.executable, "-c", HOLDER, t.ns_of("h1"), "10.0.0.1"],
                                      stdout=subprocess.PIPE))
        deadline = time.monotonic() + 10
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert procs[2].stdout.readline() == b"ready\n"
        assert pidfile.exists()
        ns_ino = os.stat(f"/run/netns/{t.ns_of('h1')}").st_ino
        while os.stat(f"/proc/{procs[0].pid}/ns/net").st_ino != ns_ino:   # `ip` did setns
            assert time.monotonic() < deadline
            time.sleep(0.01)
        removed, left = topo.clean(prefix=PREFIX, pid_dir=str(pid_dir))
        assert left == []
        assert netns.list_ns(PREFIX) == []
        assert not pidfile.exists() and not os.path.exists(shm)
        for p in procs:
            assert p.wait(5) is not None
        assert any("pid file" in r for r in removed)
        assert sum(r.startswith("namespace") for r in removed) == 3
        assert topo.clean(prefix=PREFIX, pid_dir=str(pid_dir)) == ([], [])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if os.path.exists(shm):
            os.unlink(shm)


@needs_root
def test_clean_with_a_prefix_leaves_other_prefixes_processes(pid_dir):
    """`topo clean --prefix P` stops only what works under P: a run under the
    default prefix (a `taurus reproduce` beside a test) keeps running; a
    dead process's pid file goes whatever its prefix."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (pid_dir / f"run-{other.pid}.pid").write_text(f"{other.pid} taurus-\n")
        (pid_dir / "run-1999999.pid").write_text("1999999 taurus-\n")   # no such process
        removed, left = topo.clean(prefix=PREFIX, pid_dir=str(pid_dir))
        assert other.poll() is None and left == []
        assert os.listdir(pid_dir) == [f"run-{other.pid}.pid"]
    finally:
        other.kill()
        other.wait()


@needs_root
def test_cli_up_show_down(pid_dir, tmp_path, capsys):
    path = tmp_path / "cli.toml"
    path.write_text(LINE.replace('name = "line"', f'name = "cli{os.getpid()}"'))
    assert topo_cli.main(["topo", "up", str(path), "--prefix", PREFIX]) == 0
    assert len(netns.list_ns(PREFIX)) == 3
    assert topo_cli.main(["topo", "show", str(path), "--prefix", PREFIX]) == 0
    out = capsys.readouterr().out
    assert "(up)" in out and "route 10.0.0.2" in out
    assert topo_cli.main(["topo", "down", str(path), "--prefix", PREFIX]) == 0
    assert netns.list_ns(PREFIX) == []
    assert topo_cli.main(["topo", "clean", "--prefix", PREFIX, "--pid-dir", str(pid_dir)]) == 0
    assert "nothing to clean" in capsys.readouterr().out


def test_cli_reports_bad_file(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(BAD["bad_rate"][0])
    assert topo_cli.main(["topo", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert "links[0].rate" in err and str(path) in err


def test_forked_helpers_do_not_inherit_our_signal_handlers():
    """pyroute2 forks helpers; one that ran our handlers could unwind through
    the parent's cleanup and delete the parent's namespaces."""
    import signal
    import taurus.tools.netns  # noqa: F401  (installs the at-fork hook)
    # Handlers of our own on both: one the process inherited as ignored (a
    # background job's SIGINT) stays ignored in the child, by design.
    old = {s: signal.signal(s, lambda *a: None) for s in (signal.SIGINT, signal.SIGTERM)}
    r, w = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:
            plain = all(signal.getsignal(s) == signal.SIG_DFL
                        for s in (signal.SIGINT, signal.SIGTERM))
            os.write(w, b"1" if plain else b"0")
            os._exit(0)
        os.waitpid(pid, 0)
        assert os.read(r, 1) == b"1"
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        os.close(r)
        os.close(w)
