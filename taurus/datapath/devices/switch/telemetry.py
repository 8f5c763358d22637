"""Per-port telemetry: every `interval` ns a record per port of each switch
(time, queue bytes, bytes sent, departure rate over the interval, marks,
drops, paused time) goes into a ring, sw.tel[p, k % len], k = sw.telh[p].
With shared memory (setup.install_switch_state(telemetry_shm=True)),
tools read it while the engine runs: a record is complete once telh has
passed it (the engine writes the record, then bumps telh)."""
import numba as nb
import numpy as np

from ...wheel import wheel_schedule
from ...hot import hot
from .pfc import pause_expire
from .queues import q_bytes
from .state import (R_TEL_IVL, R_TEL_TIMER, S_PAUSE_START, S_TEL_T, S_TEL_TXB, S_TXB,
                           T_DROP, T_ECN, T_PAUSED_NS, T_UE)


@hot
def tel_sample(E, d, now):
    sw = E.sw
    n = sw.tel.shape[1]
    for k in range(E.devs.nports[d]):
        p = np.int64(E.devs.ports[d, k])
        pause_expire(sw, p, now)
        row = sw.telh[p] % n
        r = sw.tel[p, row]
        r[0] = now
        r[1] = q_bytes(sw, p)
        r[2] = sw.pst[p, S_TXB]
        el = now - sw.pst[p, S_TEL_T]
        r[3] = (sw.pst[p, S_TXB] - sw.pst[p, S_TEL_TXB]) * 8 * 1_000_000_000 // el if el > 0 else 0
        r[4] = sw.stats[p, T_ECN] + sw.stats[p, T_UE]
        r[5] = sw.stats[p, T_DROP]
        paused = sw.stats[p, T_PAUSED_NS]
        if sw.pst[p, S_PAUSE_START] >= 0:
            paused += now - sw.pst[p, S_PAUSE_START]
        r[6] = paused
        sw.pst[p, S_TEL_T] = now
        sw.pst[p, S_TEL_TXB] = sw.pst[p, S_TXB]
        sw.telh[p] += 1
    regs = E.devs.regs[d]
    wheel_schedule(E.wheel, regs[R_TEL_TIMER], now + regs[R_TEL_IVL])
    return 1
