"""PACKET port (AF_PACKET, TPACKET_V3) on a real veth pair.

Frames carry a private EtherType and a marker so the assertions are about our
frames only; IPv6 is switched off on the pair so the kernel stays quiet too.
"""
import os
import socket
import struct
import time

import numba as nb
import numpy as np
import pytest

from taurus.datapath.byref import byref
from taurus.datapath.mbuf import make_pool, mbuf_alloc, mbuf_free, mbuf_in_use, mbuf_put_bytes
from taurus.datapath.ports import afpacket_ring as R
from taurus.datapath.ports.afpacket import PacketPortError, open_packet_port
from taurus.datapath.ports.common import (PACKET, RX_BYTES, RX_ERR, RX_NOBUF, RX_PKTS,
                                          TX_BYTES, TX_DROP, TX_ERR, TX_KICKS, TX_PKTS)
from taurus.datapath.ports.dispatch import port_rx_burst, port_service, port_tx_or_drop
from taurus.datapath.ports.table import make_ports
from taurus.tools.netns import list_ns as netns_list, run_in_ns
from taurus.nsenter import in_ns

from conftest import needs_root

pytestmark = [needs_root, pytest.mark.netns]

SOL_PACKET, PACKET_AUXDATA, SO_RCVBUFFORCE = 263, 8, 33
ETYPE = 0x88B5  # IEEE local experimental
MARK = b"TAURUS-AFP"
DST = bytes.fromhex("02aabbccdd01")  # not va's MAC: only promiscuous mode sees it
SRC = bytes.fromhex("02aabbccdd02")


def frame(seq, size, vlan=None):
    """A frame of `size` bytes (without FCS), unique by seq."""
    hdr = DST + SRC
    if vlan is not None:
        hdr += struct.pack("!HH", 0x8100, vlan)
    hdr += struct.pack("!H", ETYPE) + MARK + struct.pack("!I", seq)
    body = bytes((seq * 7 + k) & 0xFF for k in range(size - len(hdr)))
    return hdr + body


def ours(b):
    off = 16 if b[12:14] == b"\x81\x00" else 12
    return b[off:off + 2] == struct.pack("!H", ETYPE) and b[off + 2:off + 2 + len(MARK)] == MARK


def quiet(ns):
    """No IPv6 (router solicitations, MLD) on the pair from now on."""
    def body():
        for dev in ("all", "default", "va", "vb"):
            with open(f"/proc/sys/net/ipv6/conf/{dev}/disable_ipv6", "w") as f:
                f.write("1")
    run_in_ns(ns, body)


def send_raw(ifname, frames):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        s.bind((ifname, 0))
        for f in frames:
            s.send(f)
    finally:
        s.close()
    return len(frames)


def recv_frame(sock):
    """Our next frame from a plain packet socket, with the 802.1Q tag the
    kernel stripped into auxdata put back."""
    while True:
        data, anc, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(20))
        for level, typ, val in anc:
            if level == SOL_PACKET and typ == PACKET_AUXDATA:
                st, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", val[:20])
                if st & 0x10:  # TP_STATUS_VLAN_VALID
                    tag = struct.pack("!HH", tpid if st & 0x40 else 0x8100, tci)
                    data = data[:12] + tag + data[12:]
        if ours(data):
            return data


def receiver(ns, ifname):
    """A plain packet socket on `ifname` (opened in ns).  ETH_P_ALL, because a
    socket bound to one EtherType gets a tagged frame only after the kernel
    has thrown away the tag of a VLAN it has no device for."""
    with in_ns(ns):
        rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    try:
        rx.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
        rx.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        rx.bind((ifname, 3))
        rx.settimeout(2.0)
    except BaseException:
        rx.close()
        raise
    return rx


@nb.njit(cache=True)
def rx_poll(ports_t, pool_t, p, out, maxn, rounds):
    """Service and drain port p `rounds` times; frames land in out[:n]."""
    ports, pool = byref(ports_t), byref(pool_t)   # the engine's specializations
    n = 0
    for _ in range(rounds):
        port_service(ports, pool, p, 0)
        room = min(maxn, out.shape[0] - n)
        if room <= 0:
            break
        n += port_rx_burst(ports, pool, p, 12345, out[n:], room)
    return n


def collect(ports, pool, p, want, timeout=3.0, maxn=64):
    """Poll until `want` frames came in or the deadline passed; returns the
    frames' bytes (pool frames freed)."""
    out = np.empty(max(want, 1) * 2 + 64, np.int32)
    got = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got += rx_poll(ports, pool, p, out[got:], maxn, 1000)
        if got >= want:
            break
        time.sleep(0.001)
    res = []
    for i in out[:got]:
        assert pool.port[i] == p and pool.ts[i] == 12345
        res.append(bytes(pool.data[i, :pool.length[i]]))
        mbuf_free(pool, i)
    return res


@nb.njit(cache=True)
def tx_frames(ports_t, pool_t, p, data, lens, n):
    ports, pool = byref(ports_t), byref(pool_t)   # the engine's specializations
    bufs = np.empty(n, np.int32)
    for k in range(n):
        i = mbuf_alloc(pool)
        mbuf_put_bytes(pool, i, data[k], lens[k])
        bufs[k] = i
    sent = port_tx_or_drop(ports, pool, p, 0, bufs, n)
    for _ in range(100):  # a kick may be answered "busy": retry a little
        port_service(ports, pool, p, 0)
        if ports.regs[p, R.TX_UNSENT] == 0:
            break
    return sent


def pack(frames):
    data = np.zeros((len(frames), 2048), np.uint8)
    lens = np.zeros(len(frames), np.int64)
    for k, f in enumerate(frames):
        data[k, :len(f)] = np.frombuffer(f, np.uint8)
        lens[k] = len(f)
    return data, lens


@pytest.fixture
def port(veth_ns):
    ns, va, vb = veth_ns
    quiet(ns)
    ports = make_ports([PACKET])
    pool = make_pool(4096)
    h = open_packet_port(ports, 0, va, netns=ns)
    try:
        yield ns, ports, pool, h
    finally:
        h.close()


def test_rx_byte_exact(port):
    ns, ports, pool, h = port
    sizes = [60, 1514, 64, 128, 500, 1000, 1500, 61] + [60 + 37 * k for k in range(32)]
    frames = [frame(k, s) for k, s in enumerate(sizes)]
    frames.append(frame(len(frames), 200, vlan=0x2005))  # tag must survive
    assert run_in_ns(ns, send_raw, "vb", frames) == len(frames)
    # Small bursts: a burst stops inside a block and the next one resumes there.
    got = collect(ports, pool, 0, len(frames), maxn=3)
    assert got == frames
    c = ports.cnt[0]
    assert c[RX_PKTS] == len(frames)
    assert c[RX_BYTES] == sum(map(len, frames))
    assert c[RX_ERR] == 0 and c[RX_NOBUF] == 0
    assert mbuf_in_use(pool) == 0
    assert h.stats()["drops"] == 0
    # Nothing more trickles in.
    assert collect(ports, pool, 0, 1, timeout=0.05) == []


def test_rx_pool_exhausted_counts_nobuf(veth_ns):
    ns, va, vb = veth_ns
    quiet(ns)
    ports = make_ports([PACKET])
    pool = make_pool(4)
    with open_packet_port(ports, 0, va, netns=ns):
        frames = [frame(k, 100) for k in range(10)]
        run_in_ns(ns, send_raw, "vb", frames)
        out = np.empty(16, np.int32)
        n = 0
        deadline = time.monotonic() + 3
        while ports.cnt[0, RX_PKTS] + ports.cnt[0, RX_NOBUF] < 10 and time.monotonic() < deadline:
            n += rx_poll(ports, pool, 0, out[n:], 16, 100)
        assert n == 4
        assert [bytes(pool.data[i, :pool.length[i]]) for i in out[:4]] == frames[:4]
        assert ports.cnt[0, RX_PKTS] == 4 and ports.cnt[0, RX_NOBUF] == 6


def test_tx_byte_exact_and_no_echo(port):
    ns, ports, pool, h = port
    rx = receiver(ns, "vb")
    try:
        frames = [frame(k, s) for k, s in enumerate([60, 1514] + [60 + 41 * k for k in range(35)])]
        frames.append(frame(99, 1518, vlan=7))  # a tagged frame may be 4 bytes longer
        data, lens = pack(frames)
        assert tx_frames(ports, pool, 0, data, lens, len(frames)) == len(frames)
        got = []
        while len(got) < len(frames):
            got.append(recv_frame(rx))
        assert got == frames
        c = ports.cnt[0]
        assert c[TX_PKTS] == len(frames) and c[TX_BYTES] == sum(map(len, frames))
        assert c[TX_ERR] == 0 and c[TX_DROP] == 0 and c[TX_KICKS] >= 1
        assert mbuf_in_use(pool) == 0
        assert ports.regs[0, R.TX_UNSENT] == 0
        # The port must not see its own transmissions.
        assert collect(ports, pool, 0, 1, timeout=0.1) == []
        assert ports.cnt[0, RX_PKTS] == 0

        # Frames the kernel would refuse are taken, freed and counted, and the
        # ring keeps going.
        bad = [frame(0, 60)[:10], frame(1, 1515), frame(2, 300)]
        data, lens = pack(bad)
        assert tx_frames(ports, pool, 0, data, lens, 3) == 3
        assert ports.cnt[0, TX_ERR] == 2
        assert recv_frame(rx) == bad[2]
        assert mbuf_in_use(pool) == 0
    finally:
        rx.close()


def test_tx_ring_full_and_wraps(veth_ns):
    """More frames than TX slots in one burst: the ring takes what fits, the
    rest is tx_drop; once the kernel drained it the ring wraps cleanly.  (A
    small ring, so the veth backlog never overflows.)"""
    ns, va, vb = veth_ns
    quiet(ns)
    ports = make_ports([PACKET])
    pool = make_pool(512)
    rx = receiver(ns, vb)
    try:
        with open_packet_port(ports, 0, va, netns=ns, block_size=16384, n_blocks=4,
                              tx_frames=64):
            nr = int(ports.regs[0, R.TX_NR])
            assert nr == 64
            frames = [frame(k, 60) for k in range(nr + 100)]
            data, lens = pack(frames)
            assert tx_frames(ports, pool, 0, data, lens, len(frames)) == nr
            assert ports.cnt[0, TX_DROP] == 100
            assert [recv_frame(rx) for _ in range(nr)] == frames[:nr]
            for rnd in range(3):  # head wraps several times
                more = [frame(1000 * rnd + k, 60 + rnd * 100 + k) for k in range(50)]
                data, lens = pack(more)
                assert tx_frames(ports, pool, 0, data, lens, 50) == 50
                assert [recv_frame(rx) for _ in range(50)] == more
            assert ports.cnt[0, TX_PKTS] == nr + 150 and ports.cnt[0, TX_ERR] == 0
            assert mbuf_in_use(pool) == 0
    finally:
        rx.close()


@nb.njit(cache=True)
def pump(ports_t, pool_t, src, dst, state, total, size, rounds):
    """Send numbered frames from port src to port dst and check each arrival
    in order and byte by byte.  state: [sent, received, bad]."""
    ports, pool = byref(ports_t), byref(pool_t)   # the engine's specializations
    bufs = np.empty(32, np.int32)
    out = np.empty(64, np.int32)
    for _ in range(rounds):
        n = 0
        while n < 32 and state[0] + n < total and state[0] + n - state[1] < 300:
            seq = state[0] + n
            i = mbuf_alloc(pool)
            d = pool.data[i]
            d[:6] = 0x02
            d[6:12] = 0x04
            d[12] = 0x88
            d[13] = 0xB5
            for j in range(14, size):
                d[j] = (seq * 13 + j) & 0xFF
            pool.length[i] = size + seq % 7
            for j in range(size, size + seq % 7):
                d[j] = j & 0xFF
            bufs[n] = i
            n += 1
        state[0] += port_tx_or_drop(ports, pool, src, 0, bufs, n)
        port_service(ports, pool, src, 0)
        m = port_rx_burst(ports, pool, dst, 0, out, 64)
        for k in range(m):
            i = out[k]
            seq = state[1]
            d = pool.data[i]
            ok = pool.length[i] == size + seq % 7 and d[12] == 0x88 and d[13] == 0xB5
            for j in range(14, size):
                if d[j] != (seq * 13 + j) & 0xFF:
                    ok = False
            if not ok:
                state[2] += 1
            state[1] += 1
            mbuf_free(pool, i)
        if state[1] >= total:
            break


def test_two_ports_one_loop(veth_ns):
    """Both ends as PACKET ports of one table, served by one loop: many RX
    block and TX slot wrap-arounds, no loss, every frame checked."""
    ns, va, vb = veth_ns
    quiet(ns)
    ports = make_ports([PACKET, PACKET])
    pool = make_pool(2048)
    total = 30000
    with open_packet_port(ports, 0, va, netns=ns, block_size=16384, n_blocks=8) as ha, \
            open_packet_port(ports, 1, vb, netns=ns, block_size=16384, tx_frames=128):
        state = np.zeros(3, np.int64)
        deadline = time.monotonic() + 10
        while state[1] < total and time.monotonic() < deadline:
            pump(ports, pool, 1, 0, state, total, 60, 2000)
        assert list(state) == [total, total, 0]
        assert ports.cnt[0, RX_PKTS] == total and ports.cnt[1, TX_PKTS] == total
        assert ports.cnt[1, TX_DROP] == 0 and ports.cnt[1, TX_ERR] == 0
        assert ports.cnt[0, RX_ERR] == 0 and ports.cnt[0, RX_NOBUF] == 0
        assert ha.stats()["drops"] == 0
        assert ports.cnt[1, RX_PKTS] == 0  # vb's port does not see its own frames
        assert mbuf_in_use(pool) == 0


def test_rx_overrun_drops_in_kernel(veth_ns):
    """More frames than the RX ring holds between polls: the kernel drops
    (visible in stats()), we get a byte-exact prefix, nothing breaks."""
    ns, va, vb = veth_ns
    quiet(ns)
    ports = make_ports([PACKET])
    pool = make_pool(1024)
    n_sent = 400
    with open_packet_port(ports, 0, va, netns=ns, block_size=8192, n_blocks=4,
                          block_timeout_ms=1) as h:
        frames = [frame(k, 1000) for k in range(n_sent)]
        run_in_ns(ns, send_raw, "vb", frames)
        got = collect(ports, pool, 0, n_sent, timeout=0.5)
        st = h.stats()
        assert 0 < len(got) < n_sent
        assert st["drops"] > 0 and st["packets"] == n_sent
        assert len(got) + st["drops"] == n_sent
        assert all(g in frames for g in got)
        assert got == sorted(got, key=frames.index)
        assert ports.cnt[0, RX_PKTS] == len(got) and ports.cnt[0, RX_ERR] == 0
        # The port still works afterwards.
        again = [frame(5000 + k, 90) for k in range(5)]
        run_in_ns(ns, send_raw, "vb", again)
        assert collect(ports, pool, 0, 5) == again
        assert h.stats()["drops"] == st["drops"]  # accumulated, not reset


def test_close_releases_everything(veth_ns):
    ns, va, vb = veth_ns
    ports = make_ports([PACKET])
    pool = make_pool(64)
    h = open_packet_port(ports, 0, va, netns=ns)
    fd, addr = h.fileno(), h.addr
    ino = os.fstat(fd).st_ino
    assert f"{addr:x}-" in open("/proc/self/maps").read()
    h.close()
    h.close()  # idempotent
    try:
        assert os.fstat(fd).st_ino != ino
    except OSError:
        pass  # fd closed, as expected
    assert f"{addr:x}-" not in open("/proc/self/maps").read()
    assert ports.regs[0, R.RX_BASE] == 0 and ports.regs[0, R.TX_BASE] == 0
    # A closed port is inert, not a crash.
    out = np.empty(8, np.int32)
    assert rx_poll(ports, pool, 0, out, 8, 3) == 0
    data, lens = pack([frame(0, 60)])
    assert tx_frames(ports, pool, 0, data, lens, 1) == 0
    assert mbuf_in_use(pool) == 0


def test_open_missing_interface(veth_ns):
    ns, va, vb = veth_ns
    ports = make_ports([PACKET])
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(PacketPortError, match="'nosuch0'.*no such interface"):
        open_packet_port(ports, 0, "nosuch0", netns=ns)
    assert set(os.listdir("/proc/self/fd")) <= before
    assert ports.regs[0, R.RX_BASE] == 0
    with pytest.raises(PacketPortError, match="no such network namespace"):
        open_packet_port(ports, 0, va, netns=ns + "-missing")
    assert ns + "-missing" not in netns_list()
    with pytest.raises(ValueError):
        open_packet_port(ports, 0, va, netns=ns, block_size=1000)


def test_failure_after_mmap_releases_all(veth_ns, monkeypatch):
    """A step failing after the rings were mapped leaves no fd or mapping."""
    from taurus.datapath.ports import afpacket
    ns, va, vb = veth_ns
    ports = make_ports([PACKET])
    fds = set(os.listdir("/proc/self/fd"))
    maps = open("/proc/self/maps").read().count("socket:[")
    monkeypatch.setattr(afpacket, "PACKET_ADD_MEMBERSHIP", 0x7FFF)  # unknown option
    with pytest.raises(PacketPortError, match="'va'.*promiscuous membership failed"):
        open_packet_port(ports, 0, va, netns=ns)
    assert set(os.listdir("/proc/self/fd")) <= fds
    assert open("/proc/self/maps").read().count("socket:[") == maps  # ring mappings
    assert ports.regs[0, R.RX_BASE] == 0
