"""When the agent wakes: the timer's schedule, which the doorbell stands in for.

Timer: after work the agent naps ``lo``; after an empty step the nap doubles,
up to ``hi``.  A nap lasts about its length plus the kernel's timer slack.
With ``nap_rtt`` set, ``lo`` follows that share of the flows' median srtt
(rtt_nap), refreshed every NAP_EVERY_NS.

Doorbell: an idle agent blocks until the engine publishes (or ``idle_max``).
The empty steps the timer would have taken meanwhile still count for
back-pressure (its calm steps), so the factor falls on the timer's wall-clock
schedule; while it is raised, the wait ends when the timer would have
lowered it.  Only the wake-ups that found nothing are gone.

After work the agent also waits on the doorbell, instead of napping, when the
engine's publications come further apart than the nap lasts (Cadence; the
nap plus the timer slack): the nap would end in an empty step, a wake-up for
nothing, while a bell per publication would wake it more often than the nap.
"""
import numba as nb
import numpy as np

NAP_EVERY_NS = 10_000_000


def rtt_nap(srtt_ns, active, share: float, lo: int, hi: int) -> int:
    """The nap after work: ``share`` of the median srtt of the ``active``
    flows that have one, within [lo, hi]; lo without any."""
    if not share:
        return lo
    s = srtt_ns[active & (srtt_ns > 0)]
    if not len(s):
        return lo
    return int(min(max(share * float(np.median(s)), lo), hi))


@nb.njit(cache=True, nogil=True)
def cadence_update(cad, now, bells):
    """``cad`` float64[3]: when the last publication was seen, the BELL count
    then (-1: none yet), and the moving average of the ns per publication."""
    if cad[0] >= 0 and bells > cad[1]:
        g = (now - cad[0]) / (bells - cad[1])
        cad[2] = g if cad[2] == 0 else cad[2] + (g - cad[2]) / 4
    if cad[0] < 0 or bells > cad[1]:
        cad[0], cad[1] = now, bells


@nb.njit(cache=True, nogil=True)
def cadence_sparse(cad, nap_ns):
    """Publications further apart than a nap of ``nap_ns`` lasts (none seen
    yet: no)."""
    return cad[2] >= nap_ns > 0


class Cadence:
    """How far apart the engine publishes (ns): a moving average over the
    agent's steps of the time per publication (the ring's BELL count).  The
    state is an array the compiled busy loop updates too."""

    def __init__(self):
        self.a = np.array([-1.0, 0.0, 0.0])

    @property
    def gap(self) -> float:
        return self.a[2]

    def update(self, now: int, bells: int) -> None:
        cadence_update(self.a, now, bells)

    def sparse(self, nap_ns: int) -> bool:
        """Publications further apart than the nap (none seen yet: no)."""
        return cadence_sparse(self.a, nap_ns)


def timer_slack_ns() -> int:
    """How late the kernel may fire this thread's timers (default 50 us)."""
    try:
        with open("/proc/self/timerslack_ns") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 50_000


class TimerSchedule:
    def __init__(self, lo_ns: int, hi_ns: int, slack_ns: int | None = None):
        self.lo, self.hi = lo_ns, hi_ns
        self.slack = timer_slack_ns() if slack_ns is None else slack_ns

    def next(self, sleep: int) -> int:
        """The nap after an empty step that followed a nap of ``sleep``."""
        return min(sleep * 2, self.hi)

    def span(self, sleep: int, k: int) -> int:
        """How long the timer's next k idle naps (and steps) last."""
        t = 0
        for _ in range(k):
            sleep = self.next(sleep)
            t += sleep + self.slack
        return t

    def fit(self, sleep: int, elapsed: int) -> tuple[int, int]:
        """(idle naps the timer would have finished within ``elapsed``, the
        nap it would be at then)."""
        k = 0
        while True:
            nxt = self.next(sleep)
            if nxt == sleep:                      # at hi: the rest divide evenly
                return k + elapsed // (sleep + self.slack), sleep
            if elapsed < nxt + self.slack:
                return k, sleep
            elapsed -= nxt + self.slack
            sleep, k = nxt, k + 1
