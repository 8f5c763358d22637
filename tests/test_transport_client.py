"""The shared-memory app interface: in-process against a virtual engine,
and from another process against a wall-clock engine."""
import os
import subprocess
import sys
import textwrap

import pytest

from taurus.datapath.engine import Engine
from taurus.datapath.devices.nic.setup import add_nic, nic_counters, nic_reserve
from taurus.transport import connect, listen

from test_transport_transfer import IP1, IP2, MAC1, MAC2, payload

pytestmark = pytest.mark.serial     # real packets / the wall clock: runs alone (conftest.py)

G = 1_000_000_000


def _engine(clock):
    eng = Engine(clock=clock, n_frames=8192)
    nic_reserve(eng, max_flows=16, tx_bytes=4 << 20, rx_bytes=4 << 20)
    a, b = eng.add_mem_link("h1", "h2", delay_ns=2000, rate_bps=10 * G)
    d1 = add_nic(eng, a, MAC1, IP1, line_rate_bps=10 * G, rx_buf_bytes=256 << 10, name="h1")
    d2 = add_nic(eng, b, MAC2, IP2, line_rate_bps=10 * G, rx_buf_bytes=256 << 10, name="h2")
    return eng, d1, d2


def test_messages_keep_boundaries_order_and_bytes_in_virtual_time():
    eng, d1, d2 = _engine("virtual")
    with eng:
        c = connect(eng, "h1", IP2)
        ep = listen(eng, IP2)
        msgs = [payload(n, s) for s, n in enumerate((1, 1500, 300_000, 7, 65_536, 1_000_000))]
        for m in msgs[:3]:
            c.send(m)                       # 300 kB > the receiver's ring: flows on
        s = ep.accept(timeout=5)
        assert s.peer == (IP1, c.flow)
        got = [s.recv() for _ in range(3)]
        for m in msgs[3:]:
            c.send(m)
        got += [s.recv() for _ in range(3)]
        assert got == msgs
        for _ in range(50):
            eng.run_for(100_000)
        done = c.completions()
        assert [m for m, _, _ in done] == list(range(6))
        assert [e for _, e, _ in done] == list(__import__("itertools").accumulate(map(len, msgs)))
        assert all(b[2] >= a[2] for a, b in zip(done, done[1:]))
        assert nic_counters(eng, d1)["sq_bad"] == 0 and nic_counters(eng, d2)["sq_bad"] == 0


def test_bulk_receive_frees_the_ring_without_copying_and_keeps_the_stream():
    """recv_bytes (a sink such as taurus perf -s) consumes what arrived without
    copying it: more than the 256 kB receive ring gets through, and later
    messages still arrive whole; nic_skip_delivered does the same for a
    direct NIC user."""
    from taurus.datapath.devices.nic.setup import (add_flow, nic_post, nic_skip_delivered,
                                                   nic_take_delivered)
    eng, d1, d2 = _engine("virtual")
    with eng:
        c = connect(eng, "h1", IP2)
        ep = listen(eng, IP2)
        for k in range(8):
            c.send(payload(100_000, k))                 # 800 kB: the ring fills up
        s = ep.accept(timeout=5)
        got = 0
        while got < 800_000:
            n = s.recv_bytes()
            got += n
            if n == 0:
                eng.run_for(50_000)
        assert got == 800_000 and s._buf == bytearray()
        tail = payload(5_000, 99)
        c.send(tail)
        assert s.recv(timeout=5) == tail
        # The same through the NIC's own app functions.
        f = add_flow(eng, d1, MAC2, IP2)
        nic_post(eng, d1, f, payload(600_000, 3))
        skipped = 0
        for _ in range(200):
            eng.run_for(20_000)
            skipped += nic_skip_delivered(eng, d2, IP1, f)
        assert skipped == 600_000
        nic_post(eng, d1, f, tail)
        eng.run_for(200_000)
        assert nic_take_delivered(eng, d2, IP1, f) == tail


def test_a_later_reader_of_a_connection_starts_where_the_last_one_stopped():
    """An endpoint opened later (a restarted app, another process: taurus
    perf's client finds its reverse stream among the NIC's PDCs) reads a
    connection from where its last reader stopped: the bytes before are
    gone from the ring, and copying them would cost time for nothing."""
    from taurus.transport.client import Endpoint
    eng, d1, d2 = _engine("virtual")
    with eng:
        c = connect(eng, "h1", IP2)
        first = listen(eng, IP2)
        c.send(payload(600_000, 1))                    # more than the 256 kB ring
        s = first.accept(timeout=5)
        assert s.recv(timeout=5) == payload(600_000, 1)
        c.send(payload(5_000, 2))
        for _ in range(20):
            eng.run_for(50_000)
        later = Endpoint(eng, IP2).accept(timeout=5)     # a second app on h2's NIC
        assert later.pdc == s.pdc and later.read == 600_000
        assert later.recv_bytes() == 5_000


def test_zero_copy_send_writes_in_place_across_the_ring_end():
    """Conn.send_buffer + commit: the message goes where the views point,
    also when it wraps round the flow's 1 MiB send ring (two views)."""
    from taurus.transport import WouldBlock
    eng, d1, d2 = _engine("virtual")
    with eng:
        c = connect(eng, "h1", IP2)
        ep = listen(eng, IP2)
        msgs = [payload(n, s) for s, n in enumerate((300_000, 500_000, 400_000, 9))]
        s, splits = None, 0
        for m in msgs:                      # the third crosses the ring's end
            for _ in range(1000):
                try:
                    views = c.send_buffer(len(m))
                    break
                except WouldBlock:          # the previous message is not ACKed yet
                    eng.run_for(50_000)
            splits += len(views) == 2
            a = 0
            for v in views:
                v[:] = m[a:a + len(v)]
                a += len(v)
            c.commit(len(m))
            s = s or ep.accept(timeout=5)
            assert s.recv(timeout=5) == m
        assert splits == 1 and c.posted == sum(map(len, msgs))


APP = textwrap.dedent("""
    import sys
    from taurus.transport import connect, listen
    name = sys.argv[1]
    c = connect(name, "h1", "%s")
    s_ep = listen(name, "h2")
    for k in range(20):
        c.send(bytes([k]) * (1000 + 997 * k))
    s = s_ep.accept(timeout=20)
    for k in range(20):
        m = s.recv(timeout=20)
        assert m == bytes([k]) * (1000 + 997 * k), k
    print("ok", len(c.completions()) >= 0)
""" % IP2)


def test_an_app_in_another_process_sends_and_receives():
    eng, d1, d2 = _engine("wall")
    with eng:
        p = subprocess.Popen([sys.executable, "-c", APP, eng.name], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=os.getcwd()))
        try:
            for _ in range(3000):                 # up to ~60 s of 20 ms chunks
                eng.run_for(20_000_000)
                if p.poll() is not None:
                    break
            out, err = p.communicate(timeout=5)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == 0, err
        assert out.startswith("ok")
        assert nic_counters(eng, d1)["sq_bad"] == 0
    assert not os.path.exists(f"/dev/shm/{eng.name}-nic")


def test_duplex_request_response_beside_one_way_streams():
    """connect/accept(duplex=True): requests one way, responses back on the
    reverse flow the acceptor opened; one-way streams in both directions
    beside it are left for plain accept()."""
    eng, d1, d2 = _engine("virtual")
    with eng:
        c = connect(eng, "h1", IP2, duplex=True)
        plain = connect(eng, "h1", IP2)
        other = connect(eng, "h2", IP1)          # h2 -> h1, not a reverse stream
        c.send(b"ping 0")
        plain.send(b"one way")
        other.send(b"unrelated")
        s = listen(eng, IP2).accept(timeout=5, duplex=True)
        assert s.peer == IP1 and s.recv() == b"ping 0"
        s.send(b"pong 0")
        assert c.recv(timeout=5) == b"pong 0"   # paired with s's flow, not `other`
        for k in range(1, 5):
            req, resp = payload(100 * k, k), payload(50_000 * k, 10 + k)
            c.send(req)
            assert s.recv(timeout=5) == req
            s.send(resp)
            assert c.recv(timeout=5) == resp
        for k in range(50):                       # non-blocking receive on the duplex
            c.send(bytes([k]) * 2000)
            s.send(s.recv(timeout=5))              # the acceptor echoes
            for _ in range(100):
                r = c.try_recv()
                if r is not None:
                    break
                eng.run_for(20_000)
            assert r == bytes([k]) * 2000
        assert listen(eng, IP2).accept(timeout=5).recv(timeout=5) == b"one way"   # (same endpoints:
        assert listen(eng, "h1").accept(timeout=5).recv(timeout=5) == b"unrelated"  # one app per NIC)
        assert nic_counters(eng, d1)["sq_bad"] == 0 and nic_counters(eng, d2)["sq_bad"] == 0


def test_a_closed_connection_frees_its_rows_and_a_new_one_reuses_them():
    """Conn.close: the sending end closes once its data is acknowledged,
    both ends' rows are freed; the next connection takes them, and the
    listener accepts it as a new connection with its own stream."""
    from taurus.datapath.devices.nic.setup import flow_closed, nic_table_use
    eng, d1, d2 = _engine("virtual")
    with eng:
        c = connect(eng, "h1", IP2)
        ep = listen(eng, IP2)
        c.send(b"one" * 1000)
        s = ep.accept(timeout=5)
        assert s.recv(timeout=5) == b"one" * 1000
        c.close()
        for _ in range(10):
            eng.run_for(100_000)
        assert flow_closed(eng, c.flow)
        assert nic_table_use(eng)["pdcs"] == 0
        c2 = connect(eng, "h1", IP2)
        assert c2.flow == c.flow                   # the closed row, reused
        c2.send(b"two")
        s2 = ep.accept(timeout=5)
        assert s2 is not s and s2.pdc == s.pdc and s2.peer == (IP1, c2.flow)
        assert s2.recv(timeout=5) == b"two"
        s2.close()                                 # the receiver asks the sender to close
        for _ in range(10):
            eng.run_for(100_000)
        assert flow_closed(eng, c2.flow) and nic_table_use(eng)["pdcs"] == 0
