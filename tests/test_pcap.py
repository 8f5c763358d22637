"""Capture from the engine (pcapng) read back by tshark, `taurus dissect`,
and `taurus perf --pcap` / `taurus capture` on real ports.

tshark checks what a capture must be: every frame UDP to port 4793 (the
runs here have no CSIG tags, whose TPIDs tshark does not know), IPv4 header
checksums valid, UDP checksums absent (0: the NIC leaves them out, which
UDP over IPv4 allows) or valid, one frame per packet the captured ports
counted, the snap length and the size cap honoured."""
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import needs_root
from taurus.datapath.shm import list_segments
from taurus.experiment import schema
from taurus.experiment.runner import run_experiment
from taurus.tools import netns
from taurus.tools import topology as topo

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "dctcp_dumbbell.toml")
SHORT = ['experiment.duration="1ms"', 'experiment.warmup="0ms"', "cc.mode=native"]
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None,
                                  reason="tshark is not installed (make deps)")
FIELDS = ["frame.len", "frame.cap_len", "udp.dstport", "ip.checksum.status",
          "udp.checksum", "udp.checksum.status", "frame.interface_name", "pkt_comment"]


def tshark(path: str) -> list[dict]:
    """One dict per frame of FIELDS, with checksum verification on."""
    cmd = ["tshark", "-r", path, "-o", "udp.check_checksum:TRUE",
           "-o", "ip.check_checksum:TRUE", "-T", "fields", "-E", "separator=|"]
    for f in FIELDS:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [dict(zip(FIELDS, ln.split("|"))) for ln in r.stdout.splitlines()]


def assert_on_the_wire(rows: list[dict]) -> None:
    assert rows
    for r in rows:
        assert r["udp.dstport"] == "4793", r
        assert r["ip.checksum.status"] == "1", r                     # good
        assert (r["udp.checksum"], r["udp.checksum.status"]) == ("0x0000", "3") \
            or r["udp.checksum.status"] == "1", r            # absent, or good


def tx_total(stats: dict) -> int:
    return sum(c["tx_pkts"] for c in stats["ports"].values())


@pytest.fixture(scope="module")
def virtual_capture(tmp_path_factory):
    """The demo in virtual time, every port's transmissions captured."""
    d = tmp_path_factory.mktemp("pcap")
    x = schema.load(DEMO, SHORT)
    s = run_experiment(x, str(d / "run"), "virtual",
                       pcap={"path": str(d / "all.pcapng"), "direction": "tx"})
    return d, s


@needs_tshark
def test_virtual_run_capture_is_every_frame_sent_as_on_the_wire(virtual_capture):
    d, s = virtual_capture
    st = s["pcap"]
    assert s["complete"] and st["dropped"] == 0 and st["not_written"] == 0
    rows = tshark(st["file"])
    assert_on_the_wire(rows)
    assert len(rows) == st["frames"] == tx_total(st) > 100
    assert {r["frame.interface_name"] for r in rows} == \
        {n for n, c in st["ports"].items() if c["tx_pkts"]}


@needs_tshark
def test_run_cli_ports_snap_length_and_size_cap(tmp_path):
    """`taurus run --pcap PORT --snaplen --pcap-max-size`: that port only,
    frames cut to the snap length (their wire length kept), the file within
    the cap."""
    out = str(tmp_path / "run")
    r = subprocess.run([sys.executable, "-m", "taurus.cli", "run", DEMO, "--out", out,
                        "--no-progress", "--pcap", "h1-eth0", "--snaplen", "60",
                        "--pcap-max-size", "12KB"] + [a for kv in SHORT for a in ("--set", kv)],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT),
                       timeout=600)
    assert r.returncode == 0, r.stderr
    path = os.path.join(out, "capture.pcapng")
    assert f"pcap {path}:" in r.stdout and "not written (count or size cap)" in r.stdout
    assert os.path.getsize(path) <= 12_000
    rows = tshark(path)
    assert len(rows) > 50
    assert {r["frame.interface_name"] for r in rows} == {"h1-eth0"}
    assert all(int(r["frame.cap_len"]) <= 60 for r in rows)
    assert any(int(r["frame.len"]) > 1000 for r in rows)       # data frames, cut


def test_bad_port_name_is_a_clear_error(tmp_path):
    x = schema.load(DEMO, SHORT)
    with pytest.raises(Exception, match="no port nope in the engine"):
        run_experiment(x, str(tmp_path / "run"), "virtual",
                       pcap={"path": str(tmp_path / "x.pcapng"), "ports": ["nope"]})
    assert not [s for s in list_segments() if s.startswith(f"taurus-eng-{os.getpid()}-")]


def test_dissect_prints_uet_fields_and_scapy_reads_them(virtual_capture):
    d, s = virtual_capture
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "taurus.cli", "dissect", s["pcap"]["file"],
                        "-c", "40"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    frames = [ln for ln in r.stdout.splitlines() if ln.startswith("#")]
    assert len(frames) == 40
    assert "UDP: sport=" in r.stdout and "dport=4793" in r.stdout
    assert "PDS" in r.stdout and "psn=" in r.stdout
    from scapy.utils import rdpcap
    import taurus.datapath.wire.layers as L
    pkts = rdpcap(s["pcap"]["file"], count=40)
    assert all(p.haslayer(L.UETPDS) or any(p.haslayer(c) for c in L.PDS_CLASSES.values())
               for p in pkts)


def test_csig_tags_are_captured_and_dissected(tmp_path):
    """NSCC with CSIG asks its data frames to carry a wide CSIG tag: it is in
    the capture as on the wire, and dissect (and scapy) decode it; the
    count stops the capture."""
    x = schema.load(DEMO, SHORT + ['cc.algorithm="nscc-csig"'])
    path = str(tmp_path / "csig.pcapng")
    st = run_experiment(x, str(tmp_path / "run"), "virtual",
                        pcap={"path": path, "ports": ["h1-eth0"], "direction": "tx",
                              "count": 20})["pcap"]
    assert st["frames"] == 20 and st["not_written"] + 20 <= st["ports"]["h1-eth0"]["tx_pkts"]
    from taurus.tools.capture_cli import dissect_lines
    text = "\n".join(dissect_lines(path))
    assert text.count("CSIGWide: ") == 20 and "t=DELAY" in text and "type=0x88b6" in text
    from scapy.utils import rdpcap
    import taurus.datapath.wire.layers as L
    pkts = rdpcap(path)
    assert len(pkts) == 20 and all(p.haslayer(L.CSIGWide) and p.haslayer("UDP") for p in pkts)


@needs_tshark
def test_capture_command_attaches_to_a_running_engine(tmp_path):
    """`taurus capture` in another process takes COUNT frames of one port
    of an engine running here (a generator on a memory link, wall clock)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from taurus.datapath.engine import Engine
    frame = bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=7, dport=4793)
                  / bytes(100))
    path = str(tmp_path / "gen.pcapng")
    with Engine(clock="wall") as eng:
        a, b = eng.add_mem_link("gen", "fwd0")
        c, _ = eng.add_mem_link("fwd1", "end")
        eng.add_l2fwd(b, c)
        eng.add_pktgen(a, frame, rate_pps=20_000)
        p = subprocess.Popen([sys.executable, "-m", "taurus.cli", "capture", "--engine", eng.name,
                              "--port", "gen", "-w", path, "-c", "25", "--duration", "60"],
                             env=dict(os.environ, PYTHONPATH=ROOT), stderr=subprocess.PIPE,
                             text=True)
        try:
            end = time.monotonic() + 60
            while p.poll() is None and time.monotonic() < end:
                eng.run_for(20_000_000)
            assert p.wait(5) == 0, p.stderr.read()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert "25 frames" in p.stderr.read()
    rows = tshark(path)
    assert len(rows) == 25 and {r["frame.interface_name"] for r in rows} == {"gen"}
    assert_on_the_wire(rows)


# ---------------------------------------------------------------- real ports

PREFIX = f"{netns.PREFIX}c{os.getpid()}-"


@needs_root
@needs_tshark
def test_perf_pcap_on_real_ports(tmp_path):
    """perf -s --pcap captures in its engine's process, for its whole run:
    a `perf -c -t 1` test over AF_XDP, every frame as many as the engine
    sent; perf -c --pcap (attached from the client) is refused while the
    engine is captured."""
    from taurus.datapath.engine import attach_stats
    t = topo.load(topo.builtin("two_hosts"), prefix=PREFIX)
    env = dict(os.environ, PYTHONPATH=ROOT)
    name = f"{PREFIX}perf"
    base = [sys.executable, "-m", "taurus.cli", "perf", "--topo", "two_hosts",
            "--prefix", PREFIX, "--name", name]
    srv = None
    path = str(tmp_path / "perf.pcapng")
    try:
        t.up()
        srv = subprocess.Popen(base + ["-s", "--xdp-mode", "generic", "--pcap", path,
                                       "--pcap-dir", "tx"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = srv.stdout.readline()
        assert "serving" in line, srv.stderr.read() if srv.poll() is not None else line
        cli = subprocess.run(base + ["-c", "h2", "-t", "1", "-l", "16384"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert cli.returncode == 0, cli.stderr
        busy = subprocess.run(base + ["-c", "h2", "-t", "1", "--pcap", str(tmp_path / "x")],
                              env=env, capture_output=True, text=True, timeout=120)
        assert busy.returncode == 2 and "being captured by process" in busy.stderr
        time.sleep(0.2)
        sent = sum(c["tx_pkts"] for c in attach_stats(name)["ports"].values())
        srv.send_signal(signal.SIGINT)
        out, err = srv.communicate(timeout=30)
        assert srv.returncode == 0, err
        assert f"pcap {path}: " in out and "dropped" not in out, out
        rows = tshark(path)
        assert_on_the_wire(rows)
        assert len(rows) == sent > 1000
    finally:
        if srv is not None and srv.poll() is None:
            srv.kill()
            srv.wait()
        t.down()
    assert not netns.list_ns(PREFIX)
    assert not [s for s in list_segments() if s.startswith(PREFIX)]
