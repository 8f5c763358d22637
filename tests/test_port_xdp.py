"""AF_XDP port on a real veth pair: RX and TX byte-exact with exact counters,
steering (Taurus traffic to the socket, the rest to the kernel), clean close,
clear failures.  Every test gets its own namespace (conftest's veth_ns) and
closes its port and child processes whatever happens."""
import contextlib
import multiprocessing as mp
import os
import random
import socket
import time

import numba as nb
import numpy as np
import pytest
from pyroute2 import IPRoute
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from taurus.datapath.byref import byref
from taurus.datapath.mbuf import make_pool, mbuf_alloc, mbuf_free, mbuf_in_use, xdp_capacity
from taurus.datapath.ports import xdp, xdp_ring as R
from taurus.datapath.ports.common import (MEM, RX_BYTES, RX_ERR, RX_NOBUF, RX_PKTS, TX_BYTES,
                                          TX_ERR, TX_KICKS, TX_PKTS, XDP)
from taurus.datapath.ports.dispatch import port_rx_burst, port_service, port_tx_burst
from taurus.datapath.ports.table import make_ports
from taurus.datapath.ports.xdp import XdpUnavailable, open_xdp_port
from taurus.tools import netns

pytestmark = [pytest.mark.netns,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, AF_XDP)")]

NOW = 12345
MAGIC = b"TAURUS-XDP-TEST:"
PACKET_OUTGOING = 4
SO_RCVBUFFORCE = 33
VA_IP, VB_IP = "10.211.0.1", "10.211.0.2"


# -- Numba poll loops (what an engine does, minus everything else) -------------
@nb.njit
def _poll_rx(ports_t, pool_t, p, now, out, start, iters):
    ports, pool = byref(ports_t), byref(pool_t)   # the engine's specializations
    n = start
    for _ in range(iters):
        port_service(ports, pool, p, now)
        room = out.shape[0] - n
        if room <= 0:
            break
        n += port_rx_burst(ports, pool, p, now, out[n:], min(room, 64))
    return n - start


@nb.njit
def _push_tx(ports_t, pool_t, p, now, bufs, start, iters):
    ports, pool = byref(ports_t), byref(pool_t)   # the engine's specializations
    k = start
    for _ in range(iters):
        if k < bufs.shape[0]:
            k += port_tx_burst(ports, pool, p, now, bufs[k:], min(bufs.shape[0] - k, 64))
        port_service(ports, pool, p, now)
    return k - start


@pytest.fixture(scope="module", autouse=True)
def _jit_warm():
    """Compile the poll loops before any deadline starts."""
    ports, pool = make_ports([MEM]), make_pool(8)
    ports.regs[0, 0] = -1  # unconnected MEM port
    _poll_rx(ports, pool, 0, NOW, np.empty(4, np.int32), 0, 1)
    _push_tx(ports, pool, 0, NOW, np.empty(0, np.int32), 0, 1)


def rx_frames(ports, pool, p, want, timeout=5.0, settle=0.1):
    """Poll until `want` frames arrived (or timeout), then `settle` s more so
    extra frames would show too; returns their bytes and frees them."""
    out = np.empty(want + 256, np.int32)
    n = 0
    deadline = time.monotonic() + timeout
    stop = None
    while True:
        got = _poll_rx(ports, pool, p, NOW, out, n, 200)
        n += got
        t = time.monotonic()
        if n >= want and stop is None:
            stop = t + settle
        if (stop is not None and t >= stop) or t >= deadline or n == out.shape[0]:
            break
        if got == 0:
            time.sleep(0.0005)
    frames = []
    for i in out[:n]:
        assert pool.port[i] == p and pool.ts[i] == NOW
        frames.append(bytes(pool.data[i, :pool.length[i]]))
        mbuf_free(pool, i)
    return frames


# -- frames and helpers run inside the namespace ----------------------------------
def macs(ns, *ifnames):
    with IPRoute(netns=ns) as ipr:
        return [ipr.get_links(ipr.link_lookup(ifname=i)[0])[0].get_attr("IFLA_ADDRESS")
                for i in ifnames]


def udp_frames(n, dst, src, dport=4793, seed=1, max_payload=1472):
    """n distinct Ether/IPv4/UDP frames, 62..1514 bytes."""
    rng = random.Random(seed)
    frames = []
    for k in range(n):
        body = MAGIC + k.to_bytes(4, "big")
        body += rng.randbytes(rng.randint(len(body), max_payload) - len(body))
        frames.append(bytes(Ether(dst=dst, src=src) / IP(src=VB_IP, dst=VA_IP)
                            / UDP(sport=20000 + k, dport=dport) / Raw(body)))
    return frames


def raw_frame(dst, src, k, length):
    """A CSIG-TPID frame of `length` bytes, numbered k."""
    head = bytes.fromhex(dst.replace(":", "") + src.replace(":", "")) + b"\x88\xb5"
    body = head + MAGIC + k.to_bytes(4, "big")
    return body + bytes((k + j) & 0xFF for j in range(length - len(body)))


def _send_raw(ifname, frames):
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((ifname, 0))
        for f in frames:
            s.send(f)
    return len(frames)


def _quiet(*ifnames):
    # No IPv6 => the kernel sends nothing by itself on these links.
    for i in ifnames:
        with open(f"/proc/sys/net/ipv6/conf/{i}/disable_ipv6", "w") as f:
            f.write("1")
    return True


@pytest.fixture
def veth(veth_ns):
    ns, va, vb = veth_ns
    netns.run_in_ns(ns, _quiet, va, vb, timeout=10)
    return veth_ns


def _listen(conn, ifname, want_tap, udp_ports, want_udp, timeout):
    """Child: a tap on ifname (frames the kernel sees, MAGIC only) and UDP
    sockets; returns (tap frames, {port: [payloads]})."""
    tap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL
    tap.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    tap.bind((ifname, 0))
    socks = {}
    for port in udp_ports:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(("0.0.0.0", port))
        u.setblocking(False)
        socks[port] = u
    tap.settimeout(0.01)
    conn.send("ready")
    frames, udp = [], {port: [] for port in udp_ports}
    deadline = time.monotonic() + timeout
    stop = None
    while time.monotonic() < (stop or deadline):
        try:
            data, addr = tap.recvfrom(65536)
            if addr[2] != PACKET_OUTGOING and MAGIC in data:
                frames.append(data)
        except socket.timeout:
            pass
        for port, u in socks.items():
            with contextlib.suppress(BlockingIOError):
                while True:
                    udp[port].append(u.recv(65536))
        if stop is None and len(frames) >= want_tap and sum(map(len, udp.values())) >= want_udp:
            stop = time.monotonic() + 0.1
    conn.send((frames, udp))


@contextlib.contextmanager
def listener(ns, ifname, want_tap, udp_ports=(), want_udp=0, timeout=5.0):
    """Run _listen in the namespace; yields a function returning its result."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = netns.start_in_ns(ns, _listen, child, ifname, want_tap, udp_ports, want_udp, timeout)
    child.close()
    def recv(wait, what):
        try:
            if parent.poll(wait):
                return parent.recv()
        except EOFError:
            pass
        raise AssertionError(f"listener {what} (see its stderr)")
    try:
        assert recv(10, "did not start") == "ready"
        yield lambda: recv(timeout + 5, "gave no result")
    finally:
        proc.join(timeout + 5)
        if proc.is_alive():
            proc.kill()
            proc.join()
        parent.close()


def load(pool, frames):
    bufs = np.empty(len(frames), np.int32)
    for k, f in enumerate(frames):
        i = mbuf_alloc(pool)
        assert i >= 0
        pool.data[i, :len(f)] = np.frombuffer(f, np.uint8)
        pool.length[i] = len(f)
        bufs[k] = i
    return bufs


def open_fds():
    return set(os.listdir("/proc/self/fd"))


def xdp_attr(ns, ifname):
    with IPRoute(netns=ns) as ipr:
        link = ipr.get_links(ipr.link_lookup(ifname=ifname)[0])[0]
        x = link.get_attr("IFLA_XDP")
        return x.get_attr("IFLA_XDP_ATTACHED"), x.get_attr("IFLA_XDP_PROG_ID")


# -- tests -------------------------------------------------------------------------
def test_available():
    ok, why = xdp.xdp_available()
    assert ok, why


def test_rx_byte_exact_with_ring_wrap(veth):
    ns, va, vb = veth
    va_mac, vb_mac = macs(ns, va, vb)
    ports, pool = make_ports([XDP]), make_pool(1024)
    # 128 frames lent: 3 batches of 100 only fit if the fill ring is refilled.
    with open_xdp_port(ports, pool, 0, va, netns=ns, steer="all", rx_frames=128,
                       ring_size=128) as h:
        assert h.n_rx == 128 and not h.zero_copy
        assert mbuf_in_use(pool) == 128                    # lent to the kernel
        sent = []
        for b in range(3):
            frames = udp_frames(100, va_mac, vb_mac, seed=b)
            assert netns.run_in_ns(ns, _send_raw, vb, frames) == 100
            got = rx_frames(ports, pool, 0, 100)
            assert got == frames, f"batch {b}: {len(got)} frames, mismatch"
            sent += frames
        c = ports.cnt[0]
        assert c[RX_PKTS] == len(sent)
        assert c[RX_BYTES] == sum(map(len, sent))
        assert c[RX_NOBUF] == c[RX_ERR] == 0
        assert h.stats()["rx_dropped"] == 0
    assert mbuf_in_use(pool) == 0                          # closing took them back


def test_rx_pool_dry_and_too_long(veth):
    ns, va, vb = veth
    va_mac, vb_mac = macs(ns, va, vb)
    with IPRoute(netns=ns) as ipr:                         # room for a too-long frame
        for ifn in (va, vb):
            ipr.link("set", index=ipr.link_lookup(ifname=ifn)[0], mtu=3000)
    ports, pool = make_ports([XDP]), make_pool(8)
    short = [raw_frame(va_mac, vb_mac, k, 200) for k in range(16)]
    too_long = raw_frame(va_mac, vb_mac, 99, xdp_capacity(pool) + 8)
    with open_xdp_port(ports, pool, 0, va, netns=ns, rx_frames=128, ring_size=128) as h:
        assert mbuf_in_use(pool) == 8                      # all the pool had
        netns.run_in_ns(ns, _send_raw, vb, [too_long] + short[:12])
        out = np.empty(64, np.int32)
        n = _poll_rx(ports, pool, 0, NOW, out, 0, 2000)
        # Eight frames to receive into: four short ones are dropped by the
        # kernel, and taking the eight leaves their fill slots empty.
        assert n == 8
        assert [bytes(pool.data[i, :pool.length[i]]) for i in out[:n]] == short[:8]
        c = ports.cnt[0]
        assert (c[RX_PKTS], c[RX_NOBUF], c[RX_ERR], c[RX_BYTES]) == (8, 8, 0, 8 * 200)
        st = h.stats()
        assert st["rx_dropped"] == 5 and st["rx_fill_ring_empty_descs"] == 4
        # Freed frames go back to the fill ring; the port receives again.
        for i in out[:n]:
            mbuf_free(pool, i)
        port_service(ports, pool, 0, NOW)
        assert mbuf_in_use(pool) == 8
        netns.run_in_ns(ns, _send_raw, vb, short[12:])
        assert rx_frames(ports, pool, 0, 4) == short[12:]
    assert mbuf_in_use(pool) == 0


def test_tx_byte_exact(veth):
    ns, va, vb = veth
    va_mac, vb_mac = macs(ns, va, vb)
    n = 300
    frames = udp_frames(n, vb_mac, va_mac, seed=3)
    ports, pool = make_ports([XDP]), make_pool(512)
    # A 128-entry TX ring for 300 sends: completions must return frames.
    with open_xdp_port(ports, pool, 0, va, netns=ns, rx_frames=64, ring_size=128) as h, \
            listener(ns, vb, n) as result:
        bufs = load(pool, frames)
        taken = 0
        deadline = time.monotonic() + 5
        while (taken < n or ports.regs[0, R.TX_OUT]) and time.monotonic() < deadline:
            taken += _push_tx(ports, pool, 0, NOW, bufs, taken, 50)
        assert taken == n
        assert ports.regs[0, R.TX_OUT] == 0, "TX frames not all completed"
        assert mbuf_in_use(pool) == h.frames_held() == h.n_rx   # sent frames went back
        received, _ = result()
    assert mbuf_in_use(pool) == 0
    # One sender CPU may change between kicks, so compare as multisets.
    assert len(received) == n and sorted(received) == sorted(frames)
    c = ports.cnt[0]
    assert c[TX_PKTS] == n and c[TX_BYTES] == sum(map(len, frames))
    assert c[TX_ERR] == 0 and c[TX_KICKS] >= 1


def test_tx_frame_too_long_is_dropped_and_counted(veth):
    ns, va, _ = veth
    ports, pool = make_ports([XDP]), make_pool(128, buf_size=4096)
    with open_xdp_port(ports, pool, 0, va, netns=ns, rx_frames=64, ring_size=128):
        bufs = load(pool, [b"\x01" * (xdp_capacity(pool) + 1), b"\x02" * 64])
        assert port_tx_burst(ports, pool, 0, NOW, bufs, 2) == 2
        c = ports.cnt[0]
        assert (c[TX_ERR], c[TX_PKTS], c[TX_BYTES]) == (1, 1, 64)
        port_service(ports, pool, 0, NOW)
        assert mbuf_in_use(pool) == 64 + ports.regs[0, R.TX_OUT]
    assert mbuf_in_use(pool) == 0


def test_two_ports_share_the_pool_frames_cross_in_place(veth):
    """Each socket registers the whole pool: a frame received on one port is
    sent on the other as the same pool frame, and comes back intact."""
    ns, va, vb = veth
    va_mac, vb_mac = macs(ns, va, vb)
    ports, pool = make_ports([XDP, XDP]), make_pool(1024)
    frames = udp_frames(40, vb_mac, va_mac, seed=6)
    with open_xdp_port(ports, pool, 0, va, netns=ns, rx_frames=128, ring_size=128), \
            open_xdp_port(ports, pool, 1, vb, netns=ns, rx_frames=128, ring_size=128):
        bufs = load(pool, frames)
        assert _push_tx(ports, pool, 0, NOW, bufs, 0, 50) == len(frames)    # va -> vb
        out = np.empty(64, np.int32)
        n = 0
        deadline = time.monotonic() + 5
        while n < len(frames) and time.monotonic() < deadline:
            n += _poll_rx(ports, pool, 1, NOW, out, n, 50)
        assert sorted(bytes(pool.data[i, :pool.length[i]]) for i in out[:n]) == sorted(frames)
        assert _push_tx(ports, pool, 1, NOW, out[:n].copy(), 0, 50) == n     # vb -> va as is
        back = rx_frames(ports, pool, 0, n)
        assert sorted(back) == sorted(frames)
        assert ports.cnt[0, TX_ERR] == ports.cnt[1, TX_ERR] == 0
    assert mbuf_in_use(pool) == 0


def test_frames_lent_for_rx_follow_need(veth):
    """Few frames are lent while the engine keeps up; when the RX ring fills
    halfway between polls, twice as many (up to rx_frames)."""
    ns, va, vb = veth
    va_mac, vb_mac = macs(ns, va, vb)
    ports, pool = make_ports([XDP]), make_pool(4096)
    with open_xdp_port(ports, pool, 0, va, netns=ns, rx_frames=1024, ring_size=1024) as h:
        assert h.frames_held() == R.FILL_START == mbuf_in_use(pool)
        frames = udp_frames(200, va_mac, vb_mac, seed=8)
        netns.run_in_ns(ns, _send_raw, vb, frames)
        time.sleep(0.05)                                 # all 200 wait at the next poll
        assert rx_frames(ports, pool, 0, 200) == frames
        assert ports.regs[0, R.FILL_TARGET] == 2 * R.FILL_START
        assert h.frames_held() == 2 * R.FILL_START == mbuf_in_use(pool)
        assert ports.cnt[0, RX_NOBUF] == 0 and h.stats()["rx_dropped"] == 0
    assert mbuf_in_use(pool) == 0


def test_fill_target_grows_to_rx_frames_and_shrinks_when_quiet():
    r = np.zeros(64, np.int64)
    r[R.N_RX], r[R.FILL_TARGET] = 1024, R.FILL_START
    for waiting, target in ((100, 256), (128, 512), (400, 1024), (1024, 1024)):
        R.fill_adapt(r, waiting)
        assert r[R.FILL_TARGET] == target
    for _ in range(R.FILL_QUIET - 1):
        R.fill_adapt(r, 3)
    assert r[R.FILL_TARGET] == 1024
    R.fill_adapt(r, 3)
    assert r[R.FILL_TARGET] == 512
    for _ in range(10 * R.FILL_QUIET):
        R.fill_adapt(r, 1)
    assert r[R.FILL_TARGET] == R.FILL_MIN


def test_pool_that_cannot_be_umem_is_refused(veth):
    ns, va, _ = veth
    ports, pool = make_ports([XDP]), make_pool(64, buf_size=256)
    before = open_fds()
    with pytest.raises(XdpUnavailable, match="cannot be UMEM chunks"):
        open_xdp_port(ports, pool, 0, va, netns=ns)
    assert open_fds() == before and xdp_attr(ns, va)[0] is None


@pytest.mark.parametrize("mode", ["auto", "generic"])
def test_steer_taurus_only(veth, mode):
    ns, va, vb = veth
    va_mac, vb_mac = macs(ns, va, vb)
    with IPRoute(netns=ns) as ipr:
        ipr.addr("add", index=ipr.link_lookup(ifname=va)[0], address=VA_IP, prefixlen=24)
    pad = MAGIC + b"\0" * 40

    def tagged(tpid):
        return bytes.fromhex(va_mac.replace(":", "")) + bytes.fromhex(vb_mac.replace(":", "")) \
            + tpid.to_bytes(2, "big") + b"\x00\x00\x00\x2a\x08\x00" + pad
    pfc = bytes.fromhex("0180c2000001") + bytes.fromhex(vb_mac.replace(":", "")) \
        + b"\x88\x08\x01\x01\x00\xff" + b"\x00\x10" * 8 + pad
    taurus = udp_frames(5, va_mac, vb_mac, dport=4793, seed=4, max_payload=600) \
        + [pfc, tagged(0x88B5), tagged(0x88B6)]
    other_udp = udp_frames(3, va_mac, vb_mac, dport=4794, seed=5, max_payload=600)
    icmp = bytes(Ether(dst=va_mac, src=vb_mac) / IP(src=VB_IP, dst=VA_IP)
                 / ICMP(type=8, id=7, seq=1) / Raw(pad))
    other = other_udp + [icmp]
    ports, pool = make_ports([XDP]), make_pool(2048)
    with open_xdp_port(ports, pool, 0, va, netns=ns, steer="taurus", xdp_mode=mode) as h, \
            listener(ns, va, len(other), udp_ports=(4793, 4794), want_udp=3) as result:
        assert h.attach_mode == ("native" if mode == "auto" else "generic")  # veth: native works
        mixed = [taurus[0], other[0], taurus[1], other[1], other[2], icmp] + taurus[2:]
        netns.run_in_ns(ns, _send_raw, vb, mixed)
        got = rx_frames(ports, pool, 0, len(taurus))
        kernel_frames, udp = result()
    assert got == taurus                                   # all and only Taurus traffic
    assert sorted(kernel_frames) == sorted(other)          # the rest reached the kernel
    assert udp[4794] == [bytes(UDP(f[34:]).payload) for f in other_udp]
    assert udp[4793] == []
    c = ports.cnt[0]
    assert c[RX_PKTS] == len(taurus) and c[RX_BYTES] == sum(map(len, taurus))


def test_close_detaches_and_releases(veth):
    ns, va, vb = veth
    ports, pool = make_ports([XDP]), make_pool(64)
    assert xdp_attr(ns, va)[0] is None
    before = open_fds()
    h = open_xdp_port(ports, pool, 0, va, netns=ns, rx_frames=128, ring_size=128)
    try:
        fd = h.fd
        os.fstat(fd)
        assert h in xdp._OPEN
        attached, prog_id = xdp_attr(ns, va)
        assert attached in ("xdp", "xdpgeneric") and prog_id == h.prog_id
    finally:
        h.close()
    h.close()  # idempotent
    assert open_fds() == before, "file descriptors leaked"
    with pytest.raises(OSError):
        os.fstat(fd)
    assert xdp_attr(ns, va)[0] is None, "XDP program still attached"
    assert h not in xdp._OPEN and h.umem is None
    assert mbuf_in_use(pool) == 0                  # the lent frames came back
    # The port is inert now: the engine may still call it.
    assert ports.regs[0, R.FD] == -1
    assert port_rx_burst(ports, pool, 0, NOW, np.empty(8, np.int32), 8) == 0
    assert port_service(ports, pool, 0, NOW) == 0
    assert port_tx_burst(ports, pool, 0, NOW, np.zeros(1, np.int32), 1) == 0


def test_open_failures_are_clear_and_leak_nothing(veth):
    ns, va, _ = veth
    ports, pool = make_ports([XDP, XDP]), make_pool(512)
    open_before = set(xdp._OPEN)
    before = open_fds()
    with pytest.raises(XdpUnavailable, match="no interface 'nope0' in namespace"):
        open_xdp_port(ports, pool, 0, "nope0", netns=ns)
    gone = f"{netns.PREFIX}t{os.getpid()}-absent"
    with pytest.raises(XdpUnavailable, match="does not exist"):
        open_xdp_port(ports, pool, 0, va, netns=gone)
    assert gone not in netns.list_ns(), "a failed open created the namespace"
    assert open_fds() == before and set(xdp._OPEN) == open_before
    assert xdp_attr(ns, va)[0] is None
    # A second socket on a busy queue fails cleanly; the first keeps working.
    with open_xdp_port(ports, pool, 0, va, netns=ns, rx_frames=128, ring_size=128) as h:
        mid = open_fds()
        with pytest.raises(XdpUnavailable, match="busy"):
            open_xdp_port(ports, pool, 1, va, netns=ns, rx_frames=128, ring_size=128)
        assert open_fds() == mid
        assert xdp_attr(ns, va)[1] == h.prog_id
    assert open_fds() == before and mbuf_in_use(pool) == 0
