"""Traffic the NIC makes and takes itself: generated streams and sinks.

A bulk sender that only wants bytes on the wire (an experiment's bulk flow,
iperf's zero-copy send) should cost nothing per byte outside the NIC and
no memory per second of run.  A *generated* flow (FL_GEN_END > 0) has its
messages posted by the NIC: whenever its ACKs free room, messages of
GEN_CHUNK bytes are queued up to FL_GEN_END, keeping at most FL_TXCAP
bytes posted beyond what is acknowledged (the app's send buffer).  The
payload is whatever the send ring holds, so every generated flow may share
one ring.  Only the message ending at FL_GEN_END completes (CQ_TX); an
open-ended stream has FL_GEN_END far away, and whoever stops it sets
FL_GEN_END to FL_POSTED.

A *sink* NIC (NR_SINK) is an app that discards what it receives: each
in-order byte is consumed as it is delivered (RP_READ = RP_DELIV) and never
copied, so its receive PDCs need no ring memory and NR_RXCAP is only the
window the sender sees.  Message completions (CQ_RX) are still pushed.

A *planned* stream starts and stops on the NIC's own timer (TK_GEN,
gen_timer), so a run loaded before it starts needs nobody between the
engine's passes to begin or end its flows (experiment/wallproc.py).
"""
from ...hot import hot
from ...wheel import wheel_schedule
from .state import (FL_ACKED_OFF, FL_GEN_END, FL_GEN_ONE, FL_MQ_DONE, FL_MQ_TAIL, FL_PLAN_END,
                    FL_PLAN_STOP, FL_POSTED, FL_TXCAP, GEN_CHUNK, GEN_FOREVER)
from .tx import flow_wake


@hot
def gen_refill(E, f, now):
    """Post generated messages on flow f while they fit (module docstring);
    wakes the flow when it posted any."""
    N = E.nic
    end = N.fl[f, FL_GEN_END]
    if end <= 0:
        return
    M = N.mq.shape[1]
    posted = N.fl[f, FL_POSTED]
    lim = N.fl[f, FL_ACKED_OFF] + N.fl[f, FL_TXCAP] - GEN_CHUNK   # room for one more chunk
    tail = N.fl[f, FL_MQ_TAIL]
    added = 0
    while posted < end and posted < lim and tail - N.fl[f, FL_MQ_DONE] < M:
        posted = min(posted + GEN_CHUNK, end)
        N.mq[f, tail % M, 0] = posted
        N.mq[f, tail % M, 1] = tail & 0xFFFF
        tail += 1
        added += 1
    if added > 0:
        N.fl[f, FL_POSTED] = posted
        N.fl[f, FL_MQ_TAIL] = tail
        flow_wake(E, f, now)


@hot
def gen_completes(N, f, end):
    """Whether the message ending at stream offset `end` of flow f gets a
    completion: every message of an app's flow, the last of a generated one."""
    g = N.fl[f, FL_GEN_END]
    return g <= 0 or end >= g


@hot
def gen_timer(E, f, timer, now):
    """Flow f's TK_GEN timer: the planned stream starts (FL_PLAN_END > 0),
    re-arming the timer for its stop if it has one; else it stops where it
    is posted (nic_generate_stop's rule)."""
    N = E.nic
    end = N.fl[f, FL_PLAN_END]
    if end > 0:
        N.fl[f, FL_PLAN_END] = 0
        if end > N.fl[f, FL_POSTED]:
            N.fl[f, FL_GEN_END] = end
            N.fl[f, FL_GEN_ONE] = 1 if end < GEN_FOREVER else 0
            gen_refill(E, f, now)
        if N.fl[f, FL_PLAN_STOP] > 0:
            wheel_schedule(E.wheel, timer, N.fl[f, FL_PLAN_STOP])
        return 1
    N.fl[f, FL_PLAN_STOP] = 0
    if N.fl[f, FL_GEN_END] > 0:
        N.fl[f, FL_GEN_END] = max(1, N.fl[f, FL_POSTED])
    return 1
