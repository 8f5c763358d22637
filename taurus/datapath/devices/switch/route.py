"""Forwarding: destination IP -> ECMP group of egress ports, and the ECMP
hash over the 5-tuple.  For UET the UDP source port is the entropy value, so
a sender that changes its EV may change its path."""
import numba as nb
import numpy as np

from ...wire.desc import D_IP_DST, D_IP_HLEN, D_IP_OFF, D_IP_PROTO, D_IP_SRC
from ...hot import hot
from .state import GRP_W, MAX_GRP, RT_SIZE

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@nb.njit(cache=True, inline="always")
def mix64(x):
    """splitmix64's finalizer: every input bit moves every output bit."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


@nb.njit(cache=True, inline="always")
def _slot(key):
    return np.int64(mix64(np.uint64(key)) & np.uint64(RT_SIZE - 1))


@hot
def route_lookup(sw, d, ip):
    """ECMP group of (device d, destination ip), or -1."""
    key = (np.int64(d) << 32) | np.int64(ip)
    s = _slot(key)
    for _ in range(RT_SIZE):
        k = sw.rt_key[s]
        if k == key:
            return np.int64(sw.rt_grp[s])
        if k == -1:
            return np.int64(-1)
        s = (s + 1) & (RT_SIZE - 1)
    return np.int64(-1)


@hot
def flow_hash(buf, desc, seed):
    """Hash of (src IP, dst IP, protocol, source port, destination port);
    ports are read for UDP and TCP whatever the parser made of the frame."""
    ip = desc[D_IP_OFF]
    proto = desc[D_IP_PROTO]
    ports = np.int64(0)
    l4 = ip + desc[D_IP_HLEN]
    if (proto == 17 or proto == 6) and l4 + 4 <= buf.shape[0]:
        ports = (np.int64(buf[l4]) << 24) | (np.int64(buf[l4 + 1]) << 16) \
            | (np.int64(buf[l4 + 2]) << 8) | np.int64(buf[l4 + 3])
    h = mix64(np.uint64(seed) ^ np.uint64((desc[D_IP_SRC] << 32) | desc[D_IP_DST]))
    h = mix64(h ^ np.uint64((proto << 32) | ports))
    return h


@nb.njit(cache=True, inline="always")
def ecmp_pick(sw, g, h):
    n = sw.grpn[g]
    if n == 1:
        return np.int64(sw.grp[g, 0])
    return np.int64(sw.grp[g, np.int64(h % np.uint64(n))])


# ---- set-up (Python) ----
def group_add(sw, ports) -> int:
    ports = list(ports)
    if not 1 <= len(ports) <= GRP_W:
        raise ValueError(f"an ECMP group needs 1..{GRP_W} ports, got {len(ports)}")
    for g in range(int(sw.meta[0])):
        if int(sw.grpn[g]) == len(ports) and list(sw.grp[g, :len(ports)]) == ports:
            return g
    g = int(sw.meta[0])
    if g >= MAX_GRP:
        raise ValueError(f"more than {MAX_GRP} ECMP groups")
    sw.grp[g, :len(ports)] = ports
    sw.grpn[g] = len(ports)
    sw.meta[0] = g + 1
    return g


def route_add(sw, d: int, ip: int, ports) -> None:
    """Install (device d, ip) -> ECMP group of these engine ports."""
    g = group_add(sw, ports)
    key = (int(d) << 32) | int(ip)
    s = int(_slot(np.int64(key)))
    for _ in range(RT_SIZE):
        if sw.rt_key[s] in (-1, key):
            sw.rt_key[s] = key
            sw.rt_grp[s] = g
            return
        s = (s + 1) & (RT_SIZE - 1)
    raise ValueError(f"route table full ({RT_SIZE} entries)")
