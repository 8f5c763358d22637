"""The app side of a host NIC, over shared memory (docs/DESIGN.md: app -> shm
SQ/CQ -> engine).  Works from another process (by engine name) or in the
engine's own process against a virtual engine (pass the Engine object:
waiting then runs the engine instead of sleeping).

    ep = listen("taurus-perf", "h2")          # receiving side
    c = connect("taurus-perf", "h1", "10.0.0.2")
    c.send(b"hello"); c.send(b"world")        # message boundaries are kept
    v = c.send_buffer(5); v[0][:] = b"again"; c.commit(5)    # zero-copy: written in place
    s = ep.accept(); s.recv() == b"hello"
    c.completions()                           # [(msg id, stream end, time ns)]

A Conn is one direction of a connection: ``connect`` gives the sending end
(one flow = one PDC + CCC at the host's NIC), ``accept`` the receiving end
(the peer's PDC here).  ``duplex=True`` on both sides gives a Duplex that
sends and receives (request/response): the accepting side opens the
reverse flow and names, in its first message (HELLO), the flow it answers;
the connecting side pairs that stream with its flow on its first recv()
(until then a plain accept() on the connecting host could take it).
One app per host NIC consumes its completion queue (an Endpoint per NIC
per process).
Times are the engine clock: CLOCK_MONOTONIC ns under the wall clock.

From another process, every wait (``wait``, and so ``send``, ``recv``,
``accept``, ``connect``) also watches the engine (datapath/watchdog.py):
when it is gone -- its pid exited, its segment was replaced, or its
wall-clock heartbeat stopped -- the wait raises ``EngineGone`` within
0.1 s; ``Endpoint.check()`` does the same for an app that polls.
"""
import fcntl
import ipaddress
import os
import struct
import time
from collections import deque


from ..datapath.devices.nic.app import WouldBlock, cq_drain, ring_read, ring_views, sq_submit
from ..datapath.devices.nic.shm import NicShm
from ..datapath.watchdog import EngineGone, EngineWatch
from ..datapath.devices.nic.state import (CQ_END, CQ_ID, CQ_KIND, CQ_MSG, CQ_RX, CQ_TIME, CQ_TX,
                                          CL_NONE, FL_ACKED_OFF, FL_CLOSING, FL_MQ_DONE, FL_SRTT,
                                          FL_STATE, FL_TXCAP,
                                          FL_TXOFF, FS_FAILED, M_NNIC, M_NRP, NR_IP, OP_CLOSE,
                                          OP_READ, OP_REQ_CLOSE, OP_SEND, REQ_CREDIT, REQ_NIC,
                                          REQ_PEER_IP, REQ_PID, REQ_RESULT, REQ_STATE, RP_BUFCAP,
                                          RP_BUFOFF, RP_DELIV, RP_GEN, RP_NIC, RP_PEER_IP, RP_READ,
                                          RP_CLOSED, RP_PEER_PDC,
                                          RQ_ASKED, RQ_DONE, RQ_FREE)

__all__ = ["Conn", "Duplex", "Endpoint", "EngineGone", "WouldBlock", "connect", "listen"]
HELLO = b"TDPX"          # + the connecting side's flow id (u32): a reverse stream's first message


class Endpoint:
    """One app's attachment to one host NIC of an engine."""

    def __init__(self, engine, host):
        if isinstance(engine, str):
            self.eng, self._seg = None, NicShm.attach(engine + "-nic")
            self._lockpath = "/dev/shm/" + engine + "-nic"
            self.watch = EngineWatch.for_segment(engine)
        else:                               # in-process Engine (tests, virtual time)
            self.eng, self._seg = engine, engine.nics.shm
            self._lockpath = None
            self.watch = None
        self.N = self._seg.state
        self.n = self._find(host)
        self._tx, self._rx = {}, {}          # flow -> Conn, rx PDC -> Conn
        self._new = deque()                  # rx PDCs not yet accepted
        self._seen = {}                      # rx PDC -> its RP_GEN when seen (rows are reused)

    def _find(self, host) -> int:
        N = self.N
        for n in range(int(N.meta[M_NNIC])):
            ip = str(ipaddress.IPv4Address(int(N.nr[n, NR_IP])))
            if host in (n, ip, self._seg.name_of(n)):
                return n
        raise ValueError(f"no host NIC {host!r} in this engine")

    def now(self) -> int:
        return self.eng.now() if self.eng is not None else time.monotonic_ns()

    def check(self) -> None:
        """Raise EngineGone if another process's engine is gone (one look
        per 50 ms at most: cheap to call in a polling loop)."""
        if self.watch is not None:
            self.watch.check()

    def wait(self) -> None:
        """Let the engine make progress: run it (in-process) or sleep a little."""
        if self.eng is not None:
            self.eng.run_for(20_000)
        else:
            self.check()
            time.sleep(50e-6)
        self.poll()

    def poll(self) -> int:
        """Dispatch new completions to their Conns; returns how many."""
        recs = cq_drain(self.N, self.n)
        for rec in recs:
            kind, ident = int(rec[CQ_KIND]), int(rec[CQ_ID])
            item = (int(rec[CQ_MSG]), int(rec[CQ_END]), int(rec[CQ_TIME]))
            if kind == CQ_TX and ident in self._tx:
                self._tx[ident]._done.append(item)
            elif kind == CQ_RX:
                if (ident not in self._rx
                        or self._seen.get(ident) != int(self.N.rp[ident, RP_GEN])):
                    self._discover()
                self._pending_rx(ident)._ends.append(item)
        return len(recs)

    # ---- connections ------------------------------------------------------
    def connect(self, peer, timeout: float = 10.0, duplex: bool = False, credit: bool = False):
        """A sending Conn from this NIC to peer (IPv4 address); with duplex,
        a Duplex whose receiving half the peer's ``accept(duplex=True)`` opens.
        credit: the flow sends within the credit the peer's NIC grants (its
        receiver algorithm, e.g. RCCC), starting from that NIC's initial
        credit when it is a NIC of this engine."""
        c = self._connect(peer, timeout, credit)
        return Duplex(c, None, peer=str(ipaddress.IPv4Address(peer))) if duplex else c

    def _connect(self, peer, timeout: float, credit: bool = False) -> "Conn":
        ip = int(ipaddress.IPv4Address(peer))
        lock = open(self._lockpath, "r+b") if self._lockpath else None
        try:
            if lock:
                # request rows are shared by apps: a POSIX record lock, since
                # the segment's owner holds its flock for life (datapath/shm.py)
                fcntl.lockf(lock, fcntl.LOCK_EX)
            free = [k for k in range(len(self.N.req)) if self.N.req[k, REQ_STATE] == RQ_FREE]
            if not free:
                raise WouldBlock("no free connection request row")
            row = self.N.req[free[0]]
            row[REQ_NIC], row[REQ_PEER_IP], row[REQ_PID] = self.n, ip, os.getpid()
            row[REQ_CREDIT] = int(bool(credit))
            row[REQ_STATE] = RQ_ASKED
        finally:
            if lock:
                lock.close()
        t_end = time.monotonic() + timeout
        while row[REQ_STATE] == RQ_ASKED:
            if self.eng is not None:
                from ..datapath.devices.nic.setup import nic_service
                nic_service(self.eng)
            elif time.monotonic() > t_end:
                row[REQ_STATE] = RQ_FREE
                raise TimeoutError("the engine did not answer (is it running?)")
            else:
                self.check()
                time.sleep(1e-3)
        ok, f = row[REQ_STATE] == RQ_DONE, int(row[REQ_RESULT])
        row[REQ_STATE] = RQ_FREE
        if not ok:
            raise ConnectionError(f"the engine refused a connection to {peer}")
        c = Conn(self, f, None)
        self._tx[f] = c
        return c

    def _discover(self) -> None:
        """New receive PDCs of this NIC: rows not seen, or reused by a new
        connection since (a closed PDC's row is: nic/close.py)."""
        N = self.N
        for r in range(1, int(N.meta[M_NRP]) + 1):
            if N.rp[r, RP_NIC] != self.n + 1:
                continue
            g = int(N.rp[r, RP_GEN])
            if self._seen.get(r) != g:
                self._seen[r] = g
                self._rx.pop(r, None)        # a closed connection's Conn
                if r in self._new:
                    self._new.remove(r)
                self._new.append(r)

    def _pending_rx(self, r) -> "Conn":
        """The receiving Conn of rx PDC r (made on first sight)."""
        c = self._rx.get(r)
        if c is None:
            c = self._rx[r] = Conn(self, None, r)
        return c

    def _next_new(self) -> "Conn | None":
        """The next arrived connection nobody has accepted yet, or None."""
        self._discover()
        while self._new:
            c = self._pending_rx(self._new.popleft())
            if not c._accepted:
                c._accepted = True
                return c
        return None

    def accept_ready(self) -> list["Conn"]:
        """The receiving ends of every connection arrived so far, not waiting."""
        out = []
        while (c := self._next_new()) is not None:
            out.append(c)
        return out

    def accept(self, timeout: float | None = None, duplex: bool = False):
        """The receiving end of the next connection that reached this NIC;
        with duplex, a Duplex: the reverse flow is opened and announced here."""
        rx = self._accept(timeout)
        return self.answer(rx, 10.0 if timeout is None else timeout) if duplex else rx

    def answer(self, rx: "Conn", timeout: float = 10.0, credit: bool = False) -> "Duplex":
        """Make an accepted receiving Conn duplex: open the reverse flow (with
        credit: as ``connect``) and announce it with the HELLO naming the
        flow it answers."""
        ip, flow = rx.peer
        tx = self._connect(ip, timeout, credit)
        tx.send(HELLO + struct.pack(">I", flow))
        return Duplex(tx, rx, peer=ip)

    def _reverse_of(self, peer_ip: str, flow: int, timeout: float | None) -> "Conn":
        """The incoming stream from peer_ip whose HELLO names our flow; other
        incoming streams stay for accept()."""
        want = HELLO + struct.pack(">I", flow)
        t_end = None if timeout is None else time.monotonic() + timeout
        while True:
            self._discover()
            for r in list(self._new):
                c = self._pending_rx(r)
                if c.peer[0] == peer_ip and c.peek() == want:
                    self._new.remove(r)
                    c._accepted = True
                    c.recv()                 # the HELLO itself
                    return c
            if t_end is not None and time.monotonic() > t_end:
                raise TimeoutError(f"no reverse stream from {peer_ip}")
            self.wait()

    def _accept(self, timeout: float | None = None) -> "Conn":
        t_end = None if timeout is None else time.monotonic() + timeout
        while True:
            c = self._next_new()
            if c is not None:
                return c
            if t_end is not None and time.monotonic() > t_end:
                raise TimeoutError("no connection")
            self.wait()

    def close(self) -> None:
        if self.eng is None:
            self._seg.close()
            if self.watch is not None:
                self.watch.close()
                self.watch = None


class Conn:
    """One direction of a connection: a sending flow or a receive PDC."""

    def __init__(self, ep: Endpoint, flow, pdc):
        self.ep, self.flow, self.pdc = ep, flow, pdc
        N = ep.N
        self._accepted = False
        self._done = deque()                 # TX completions (msg, end, t)
        self._ends = deque()                 # RX message ends (msg, end, t)
        if flow is not None:
            self._base, self._cap = int(N.fl[flow, FL_TXOFF]), int(N.fl[flow, FL_TXCAP])
            self.posted, self.msgs = 0, 0
            self.peer = None
        else:
            self._base, self._cap = int(N.rp[pdc, RP_BUFOFF]), int(N.rp[pdc, RP_BUFCAP])
            # What an earlier reader (a process since gone) consumed is gone
            # from the ring: start where it stopped, not at the stream's start.
            self.read = int(N.rp[pdc, RP_READ])
            self._buf = bytearray()          # copied, not yet returned
            self._start = self.read          # stream offset of _buf[0]
            self._gen = int(N.rp[pdc, RP_GEN])   # rows are reused: which connection
            self.peer = (str(ipaddress.IPv4Address(int(N.rp[pdc, RP_PEER_IP]))),
                         int(N.rp[pdc, RP_PEER_PDC]))
        self.last_time = 0

    def reused(self) -> bool:
        """A receiving end whose row a new connection has taken: nothing of
        this stream is left in it."""
        return int(self.ep.N.rp[self.pdc, RP_GEN]) != self._gen

    def ended(self) -> bool:
        """A receiving end that takes no more data: its CLOSE arrived, or
        its row was reused.  What arrived before may still be unread."""
        return self.reused() or int(self.ep.N.rp[self.pdc, RP_CLOSED]) == 1

    def close(self) -> None:
        """Close the connection: a sending end closes once everything sent
        is acknowledged (a failed one at once); a receiving end asks its
        sender to (REQ_CLOSE).  The NIC then frees both ends' rows for new
        connections."""
        if self.flow is not None:
            sq_submit(self.ep.N, self.ep.n, OP_CLOSE, self.flow, 0)
        else:
            sq_submit(self.ep.N, self.ep.n, OP_REQ_CLOSE, self.pdc, 0)
        self.ep.poll()

    # ---- sending ----------------------------------------------------------
    def _room(self, n: int) -> None:
        """Raise unless an n-byte message fits now (WouldBlock: not yet)."""
        N, f = self.ep.N, self.flow
        if f is None:
            raise ValueError("this is the receiving end of a connection")
        if N.fl[f, FL_STATE] == FS_FAILED:
            raise ConnectionError("the connection failed (retransmissions exhausted)")
        if not 0 < n <= self._cap:
            raise ValueError(f"message size must be 1..{self._cap} bytes")
        if self.msgs - int(N.fl[f, FL_MQ_DONE]) >= N.mq.shape[1]:
            raise WouldBlock("message queue full")
        if self.posted + n - int(N.fl[f, FL_ACKED_OFF]) > self._cap:
            raise WouldBlock("send ring full")

    def send_buffer(self, n: int) -> list[memoryview]:
        """Zero-copy send: where the next n-byte message goes in this flow's
        send ring, as one writable view (two where the ring wraps), or
        WouldBlock.  Write the message there, then commit(n).  The views
        hold whatever was sent through them before (a sender that writes
        only what changed keeps the rest)."""
        self._room(n)
        return ring_views(self.ep.N.txbuf, self._base, self._cap, self.posted, n)

    def commit(self, n: int) -> int:
        """Post the n bytes written at send_buffer's views as one message;
        returns its message id."""
        self._room(n)
        mid = self.msgs & 0xFFFF
        sq_submit(self.ep.N, self.ep.n, OP_SEND, self.flow, self.posted + n, mid)
        self.posted += n
        self.msgs += 1
        return mid

    def try_send(self, data) -> int:
        """Post one message now or raise WouldBlock; returns its message id."""
        try:
            buf = memoryview(data).cast("B")
        except TypeError:                  # not a contiguous buffer
            buf = memoryview(bytes(data))
        a = 0
        for v in self.send_buffer(len(buf)):
            v[:] = buf[a:a + len(v)]
            a += len(v)
        return self.commit(len(buf))

    def send(self, data, timeout: float | None = None) -> int:
        """Post one message, waiting while the rings are full."""
        t_end = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                return self.try_send(data)
            except WouldBlock:
                if t_end is not None and time.monotonic() > t_end:
                    raise
                self.ep.wait()

    def completions(self) -> list[tuple[int, int, int]]:
        """Messages fully ACKed since the last call: (msg id, stream end, time)."""
        self.ep.poll()
        out = list(self._done)
        self._done.clear()
        return out

    def acked(self) -> int:
        return int(self.ep.N.fl[self.flow, FL_ACKED_OFF])

    def closing(self) -> bool:
        """The sending end is closing (we or the peer asked): the NIC takes
        no more messages on it."""
        return int(self.ep.N.fl[self.flow, FL_CLOSING]) != CL_NONE

    @property
    def ring_bytes(self) -> int:
        """Capacity of this connection's stream ring (send or receive)."""
        return self._cap

    def srtt_ns(self) -> int:
        return int(self.ep.N.fl[self.flow, FL_SRTT])

    # ---- receiving --------------------------------------------------------
    def _pull(self, copy: bool = True) -> int:
        """Copy what was delivered (unless not `copy`), give the ring space
        back; returns bytes."""
        N, r = self.ep.N, self.pdc
        deliv = int(N.rp[r, RP_DELIV])
        if deliv <= self.read:
            return 0
        if copy:
            self._buf += ring_read(N.rxbuf, self._base, self._cap, self.read, deliv - self.read)
        n = deliv - self.read
        self.read = deliv
        try:
            sq_submit(N, self.ep.n, OP_READ, r, deliv)
        except WouldBlock:
            pass                             # the next pull reports a later point
        return n

    def try_recv(self):
        """The next whole message, or None."""
        if self.pdc is None:
            raise ValueError("this is the sending end of a connection")
        self.ep.poll()
        self._pull()
        if self._ends and self._ends[0][1] <= self.read:
            _, end, t = self._ends.popleft()
            k = end - self._start
            msg = bytes(self._buf[:k])
            del self._buf[:k]
            self._start = end
            self.last_time = t
            return msg
        return None

    def peek(self):
        """The next whole message without taking it, or None."""
        self.ep.poll()
        self._pull()
        if self._ends and self._ends[0][1] <= self.read:
            return bytes(self._buf[:self._ends[0][1] - self._start])
        return None

    def recv(self, timeout: float | None = None) -> bytes:
        """The next message, in order and intact (waits for it)."""
        t_end = None if timeout is None else time.monotonic() + timeout
        while True:
            m = self.try_recv()
            if m is not None:
                return m
            if t_end is not None and time.monotonic() > t_end:
                raise TimeoutError("no message")
            self.ep.wait()

    def stream_head(self, n: int) -> bytes:
        """The stream's first bytes, up to n of those delivered so far, read
        in place: no copy out, no completion-queue poll (an app that only
        decides whether a stream is its own).  Valid until data is consumed."""
        N = self.ep.N
        return ring_read(N.rxbuf, self._base, self._cap, 0,
                         min(n, int(N.rp[self.pdc, RP_DELIV])))

    def read_bytes(self) -> bytes:
        """Whatever arrived, ignoring message boundaries, copied out (a
        receiver that checks a stream's bytes, ``taurus perf --verify``)."""
        self.ep.poll()
        self._pull()
        out = bytes(self._buf)
        self._ends.clear()
        del self._buf[:]
        self._start = self.read
        return out

    def recv_bytes(self) -> int:
        """Consume whatever arrived, ignoring message boundaries, without
        copying it (bulk receivers such as ``taurus perf -s``); returns how
        many bytes."""
        self.ep.poll()
        n = self._pull(copy=False)
        self._ends.clear()
        del self._buf[:]
        self._start = self.read
        return n


class Duplex:
    """Both directions of a connection: ``tx`` (our flow) and ``rx`` (the
    peer's stream to us; on the connecting side found on the first recv)."""

    def __init__(self, tx: Conn, rx: Conn | None, peer: str):
        self.tx, self._rx, self.peer = tx, rx, peer

    @property
    def rx(self) -> Conn:
        if self._rx is None:
            self._rx = self.tx.ep._reverse_of(self.peer, self.tx.flow, None)
        return self._rx

    def send(self, data, timeout: float | None = None) -> int:
        return self.tx.send(data, timeout)

    def try_send(self, data) -> int:
        return self.tx.try_send(data)

    def recv(self, timeout: float | None = None) -> bytes:
        if self._rx is None:
            self._rx = self.tx.ep._reverse_of(self.peer, self.tx.flow, timeout)
        return self._rx.recv(timeout)

    def try_recv(self):
        """The next message, or None (also while the reverse stream is not there yet)."""
        if self._rx is None:
            try:
                self._rx = self.tx.ep._reverse_of(self.peer, self.tx.flow, 0)
            except TimeoutError:
                return None
        return self._rx.try_recv()

    def completions(self):
        return self.tx.completions()


_endpoints: dict = {}


def listen(engine, host) -> Endpoint:
    """The endpoint of `host`'s NIC (its name, IP or index) in `engine` (a
    running engine's name, or an in-process Engine)."""
    key = (engine if isinstance(engine, str) else (engine.name, id(engine)), host)
    ep = _endpoints.get(key)
    if ep is None:
        ep = _endpoints[key] = Endpoint(engine, host)
    return ep


def connect(engine, host, peer, duplex: bool = False, credit: bool = False):
    """A sending connection from `host`'s NIC to `peer` (IPv4); with duplex,
    both directions (the peer accepts with ``accept(duplex=True)``); with
    credit, a credit flow (Endpoint.connect)."""
    return listen(engine, host).connect(peer, duplex=duplex, credit=credit)
