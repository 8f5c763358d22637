"""The NIC's entry points for the engine: one poll (RX burst -> parse ->
rx/ack -> app submissions -> schedule -> TX flush) and one timer handler.
The stages are listed in the package docstring (nic/__init__.py)."""
import numba as nb
from ...hot import hot  # compiled without reference counting (the hot path)

from ...ccguard import cc_watch
from ...report import report_engine, report_timer_commands

from ...lowlevel import prefetch_bytes
from ...mbuf import mbuf_free
from ...ports.dispatch import port_rx_burst
from ...wire import spec as S
from ...wire.codec import udp_checksum_ok
from ...wire.desc import (D_DGRAM_END, D_IP_DST, D_IP_OFF, D_IP_PROTO, D_L4_OFF, D_PDS_NEXT,
                          D_PDS_TYPE, P_OK)
from ...wire.parse import parse_frame
from .ack import rx_ack, rx_cnp, rx_nack, rx_src
from .close import rx_close
from .reset import rx_reset
from .frame import tx_flush
from .gen import gen_timer
from .rx import ack_timer, rx_control, rx_data, rx_tick
from .host import host_tick
from .rxcc import rx_cc_idle
from .state import (DR_SLOT, C_DROP_BAD_TYPE, C_DROP_CSUM, C_DROP_NOT_MINE, C_DROP_PARSE, C_RX_FRAMES, NR_IP,
                        NR_PORT, TK_ACK, TK_GEN, TK_HOST, TK_PACE, TK_RTO, TK_RXIDLE, TK_RXTICK, TK_SHIFT, FL_SCHED, SCH_IDLE,
                        NicState, make_nic_state)
from .sq import sq_poll
from .tx import flow_wake, probe_commands, rto_expired, tx_schedule

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
    if d[D_IP_PROTO] == S.IPPROTO_UDP and not udp_checksum_ok(
            E.pool.data[i], d[D_IP_OFF], d[D_L4_OFF], d[D_DGRAM_END]):
        N.ncnt[n, C_DROP_CSUM] += 1        # corrupted on the way (we send none)
        return
    t = d[D_PDS_TYPE]
    if t == S.T_RUD_REQ or t == S.T_RUD_CC_REQ:
        rx_data(E, n, i, now)
    elif t == S.T_ACK or t == S.T_ACK_CC or t == S.T_ACK_CCX:
        rx_ack(E, n, i, now)
    elif t == S.T_NACK:
        rx_nack(E, n, i, now)
    elif t == S.T_CONTROL and d[D_PDS_NEXT] == S.CTL_CNP:
        rx_cnp(E, n, i, now)
    elif t == S.T_CONTROL and d[D_PDS_NEXT] == S.CTL_SRC:
        rx_src(E, n, i, now)
    elif t == S.T_CONTROL:
        c = d[D_PDS_NEXT]
        if c == S.CTL_CLOSE or c == S.CTL_REQ_CLOSE:
            f = rx_close(E, n, i, now)
            if f != 0:
                flow_wake(E, f, now)
        elif c == S.CTL_RESET:
            rx_reset(E, n, i, now)
        else:
            rx_control(E, n, i, now)
    else:
        N.ncnt[n, C_DROP_BAD_TYPE] += 1


@hot
def nic_poll(E, d, now):
    n = E.devs.regs[d, DR_SLOT]
    cc_watch(E, n, now)  # a silent agent puts this NIC's flows on the fallback rate
    k = port_rx_burst(E.ports, E.pool, E.nic.nr[n, NR_PORT], now, E.burst, E.burst.shape[0])
    for j in range(k):
        i = E.burst[j]
        if j + 1 < k:
            # The next frame's body (xdp_rx_burst fetched its headers): the
            # kernel wrote it a window's worth of frames ago, and rx_data
            # copies it out.
            nx = E.burst[j + 1]
            prefetch_bytes(E.pool.data[nx].ctypes.data + 128, E.pool.length[nx] - 128)
        nic_rx_frame(E, n, i, now)
        mbuf_free(E.pool, i)
    work = (k + sq_poll(E, n, now) + probe_commands(E, n, now)
            + report_timer_commands(report_engine(E), n, now) + tx_schedule(E, n, now))
    tx_flush(E, n, now)
    return work


@hot
def nic_timer(E, d, timer, now):
    n = E.devs.regs[d, DR_SLOT]
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
    elif kind == TK_RXIDLE:
        rx_cc_idle(E, n, now)
    elif kind == TK_HOST:
        host_tick(E, n, now)
    elif kind == TK_RXTICK:
        rx_tick(E, n, now)
    elif kind == TK_GEN:
        work = gen_timer(E, x, timer, now)
    tx_flush(E, n, now)
    return work      # TK_TX: the line is free again; the poll that follows sends
