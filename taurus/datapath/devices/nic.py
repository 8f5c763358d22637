"""The host NIC device: a UET-style reliable transport (RUD) on one port.

One poll = DESIGN.md's packet path: RX burst -> parse (wire.parse, once per
frame) -> transport (nic_rx: receiver; nic_ack: sender feedback) -> signal
collection (nic_signal) -> app submissions (nic_sq) -> schedule (nic_tx) ->
TX burst (nic_frame).
Timers on the engine wheel: per-flow pacing and RTO, per-PDC ACK
coalescing, and one per NIC for "line free again".

Modules: nic_state (tables), nic_shm (the tables in shared memory),
nic_frame (framing, TX batch, line rate), nic_rx, nic_ack, nic_tx,
nic_signal, nic_sq (app queues), nic_setup (Python API).
Malformed or hostile frames are dropped under a named counter
(nic_state.NIC_COUNTERS, plus parser statuses per NIC in ``pcnt``).
"""
import numba as nb
from ..wire.codec import hot  # compiled without reference counting (the hot path)

from ..ccguard import cc_watch

from ..mbuf import mbuf_free
from ..ports.dispatch import port_rx_burst
from ..wire import spec as S
from ..wire.desc import D_IP_DST, D_PDS_TYPE, P_OK
from ..wire.parse import parse_frame
from .nic_ack import rx_ack, rx_nack
from .nic_frame import tx_flush
from .nic_rx import ack_timer, rx_control, rx_data
from .nic_state import (C_DROP_BAD_TYPE, C_DROP_NOT_MINE, C_DROP_PARSE, C_RX_FRAMES, NR_IP,
                        NR_PORT, TK_ACK, TK_PACE, TK_RTO, TK_SHIFT, FL_SCHED, SCH_IDLE,
                        NicState, make_nic_state)
from .nic_sq import sq_poll
from .nic_tx import flow_wake, probe_commands, rto_expired, tx_schedule

__all__ = ["NicState", "make_nic_state", "nic_poll", "nic_timer"]


@hot
def nic_rx_frame(E, n, i, now):
    N = E.nic
    N.ncnt[n, C_RX_FRAMES] += 1
    st = parse_frame(E.pool.data[i], 0, E.pool.length[i], N.pcfg, N.desc, N.pcnt[n])
    if st != P_OK:
        N.ncnt[n, C_DROP_PARSE] += 1
        return
    d = N.desc
    if d[D_IP_DST] != N.nr[n, NR_IP]:
        N.ncnt[n, C_DROP_NOT_MINE] += 1
        return
    t = d[D_PDS_TYPE]
    if t == S.T_RUD_REQ or t == S.T_RUD_CC_REQ:
        rx_data(E, n, i, now)
    elif t == S.T_ACK or t == S.T_ACK_CC or t == S.T_ACK_CCX:
        rx_ack(E, n, i, now)
    elif t == S.T_NACK:
        rx_nack(E, n, i, now)
    elif t == S.T_CONTROL:
        rx_control(E, n, i, now)
    else:
        N.ncnt[n, C_DROP_BAD_TYPE] += 1


@hot
def nic_poll(E, d, now):
    n = E.devs.regs[d, 0]
    cc_watch(E, n, now)  # a silent agent puts this NIC's flows on the fallback rate
    k = port_rx_burst(E.ports, E.pool, E.nic.nr[n, NR_PORT], now, E.burst, E.burst.shape[0])
    for j in range(k):
        i = E.burst[j]
        nic_rx_frame(E, n, i, now)
        mbuf_free(E.pool, i)
    work = k + sq_poll(E, n, now) + probe_commands(E, n, now) + tx_schedule(E, n, now)
    tx_flush(E, n, now)
    return work


@hot
def nic_timer(E, d, timer, now):
    n = E.devs.regs[d, 0]
    arg = E.wheel.arg[timer]
    kind = arg >> TK_SHIFT
    x = arg & 0xFFFFFFFF
    work = 1
    if kind == TK_PACE:
        E.nic.fl[x, FL_SCHED] = SCH_IDLE
        flow_wake(E, x, now)
    elif kind == TK_RTO:
        work = rto_expired(E, n, x, timer, now)
    elif kind == TK_ACK:
        work = ack_timer(E, n, x, now)
    tx_flush(E, n, now)
    return work      # TK_TX: the line is free again; the poll that follows sends
