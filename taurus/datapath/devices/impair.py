"""The impairment device (stub): sits between two ports like l2fwd and drops,
delays or reorders frames with a seeded generator (netem-like)."""
import numba as nb


@nb.njit(cache=True)
def impair_poll(E, d, now):
    return 0


@nb.njit(cache=True)
def impair_timer(E, d, timer, now):
    return 0
