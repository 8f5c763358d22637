"""Switch set-up from Python: size and install the state, configure ports,
routes and telemetry, register the device.

    d = eng.add_switch([p0, p1, p2], {
        "ports": [{"rate": "2Gbit", "delay": "5us", "buffer": "200KB",
                   "ecn": {"k": "30KB"}}, ...],        # one dict per port, or one for all
        "routes": {"10.0.0.2": [p1], "10.0.0.3": [p1, p2]},   # ECMP when several
        "default": [p2],                                # optional
        "buffer": "1MB", "telemetry": "100us", "switch_id": 1})

Port keys: rate (bit/s; 0 or absent = unlimited), delay, in_delay (a delay
applied on the way in: real ports on a host's link, see fabric.py), buffer
(egress queue limit per class), mac, locator_compact / locator_wide,
host_facing (the port's peer is a host: it trims with trim.last_hop_dscp), plus the
features of config.py (ecn, csig, int, pfc, trim, classes).

What only Python needs (which ports are switch ports, the telemetry
segment's name rows) is the engine's ``switches`` (SwitchTables).
"""
import ipaddress

import numpy as np

from ....units import parse_rate
from ...shm import Shm
from ...wheel import wheel_alloc
from ...wire.csig import locator_with_last_hop
from . import config as F
from .state import (C_ABW_IVL, C_CSIG, C_CTL_HIGH, C_DELAY, C_DEV, C_ECN, C_IN_DELAY,
                           C_INT, C_SRC, C_K, C_KMAX, C_KMIN, C_LOC_C, C_LOC_W, C_MAC, C_PFC, C_PMAX,
                           C_PNO, C_QLIM, C_RATE, C_SLACK, C_TCD, C_TCD_K, C_TIMER, C_TON_MAX, C_TRIM,
                           C_TRIM_DSCP, C_UE_CP, C_XOFF, C_XON, DATA, ECN_RED, ECN_STEP, HIGH,
                           N_STAT, N_TEL, PMAX_ONE, R_DEFAULT_GRP, R_SEED, R_SHARED_LIMIT,
                           R_SWID, R_TEL_IVL, R_TEL_TIMER, S_ABW_T0, S_PAUSE_START, S_TEL_T, STAT_NAMES, TEL_FIELDS,
                           make_switch_state)
from ..table import SWITCH
from .route import group_add, route_add

DEFAULT_BUFFER = 256_000
SLACK_DEFAULT = 2_000_000       # ns a late port may catch up (egress.py)
MTU_FRAME = 1514
_PORT_KEYS = ("rate", "delay", "in_delay", "buffer", "mac", "locator_compact",
              "locator_wide", "slack", "host_facing") + F.PORT_KEYS
SHM_MAGIC = 0x5441555255535357      # "TAURUSSW"


class SwitchTables:
    """The Python side of an engine's switches (``Engine.switches``)."""

    def __init__(self):
        self.installed = False  # install_switch_state sized E.sw
        self.ports = set()      # engine ports that belong to a switch
        self.names = None       # the telemetry segment's port-name rows (None without one)


def install_switch_state(eng, qcap=4096, fcap=2048, tel_len=1024, telemetry_shm=True,
                         seed=1):
    """Replace the engine's small default switch state by one sized for real
    use, before the first switch is added and before the engine runs.  With
    telemetry_shm, counters and telemetry live in shared memory named
    `<engine name>-sw` (read with `read_switch_telemetry`)."""
    if eng.switches.installed:
        return eng.E.sw
    P = eng.max_ports
    shm = stats = tel = telh = names = None
    if telemetry_shm:
        hdr, st_off, tel_off, h_off, nm_off, size = _shm_layout(P, tel_len)
        shm = Shm.create(eng.name + "-sw", size)
    try:
        if shm is not None:
            h = shm.array(hdr, np.int64, (8,))
            h[:4] = (SHM_MAGIC, P, tel_len, N_TEL)
            stats = shm.array(st_off, np.int64, (P, N_STAT))
            tel = shm.array(tel_off, np.int64, (P, tel_len, N_TEL))
            telh = shm.array(h_off, np.int64, (P,))
            names = shm.array(nm_off, np.uint8, (P, 32))
        sw = make_switch_state(P, qcap=qcap, fcap=fcap, tel_len=tel_len, stats=stats, tel=tel,
                               telh=telh, seed=seed)
    except BaseException:
        if shm is not None:
            shm.close()
        raise
    eng.install("sw", sw, handle=shm, first=True)   # the segment is closed last
    eng.switches.names = names
    eng.switches.installed = True
    return sw


def _shm_layout(P, tel_len):
    hdr = 0
    st = hdr + 8 * 8
    tel = st + P * N_STAT * 8
    h = tel + P * tel_len * N_TEL * 8
    nm = h + P * 8
    return hdr, st, tel, h, nm, nm + P * 32


def read_switch_telemetry(name: str) -> dict:
    """From another process: {port name: {"stats": {...}, "series": [rows]}}
    of a running engine's switches (name: the engine's name)."""
    shm = Shm.attach(name + "-sw")
    try:
        h = shm.array(0, np.int64, (8,))
        if h[0] != SHM_MAGIC:
            raise ValueError(f"{name}-sw is not a Taurus switch segment")
        P, tel_len = int(h[1]), int(h[2])
        _, st, tel, hh, nm, _ = _shm_layout(P, tel_len)
        stats = np.array(shm.array(st, np.int64, (P, N_STAT)))
        telh = np.array(shm.array(hh, np.int64, (P,)))
        series = np.array(shm.array(tel, np.int64, (P, tel_len, N_TEL)))
        names = shm.array(nm, np.uint8, (P, 32))
        out = {}
        for p in range(P):
            n = bytes(names[p]).rstrip(b"\0").decode()
            if n:
                out[n] = {"stats": dict(zip(STAT_NAMES, map(int, stats[p]))),
                          "series": _rows(series[p], int(telh[p]))}
        return out
    finally:
        shm.close()


def _rows(ring, head):
    n = ring.shape[0]
    first = max(0, head - n)
    return [dict(zip(TEL_FIELDS, map(int, ring[k % n, :len(TEL_FIELDS)]))) for k in range(first, head)]


def switch_stats(eng, ports=None) -> dict:
    """{port name: {counter: value}} of the switch ports of this engine."""
    sw = eng.E.sw
    names = eng.port_names
    out = {}
    for p in range(len(names)):
        if ports is not None and p not in ports:
            continue
        if p in eng.switches.ports:
            out[names[p]] = dict(zip(STAT_NAMES, map(int, sw.stats[p])))
    return out


def telemetry(eng, port: int) -> list:
    """Telemetry rows of engine port `port` (in-process)."""
    sw = eng.E.sw
    return _rows(sw.tel[port], int(sw.telh[port]))


def _ip(v, field):
    try:
        return int(ipaddress.IPv4Address(v))
    except (ipaddress.AddressValueError, ValueError):
        raise ValueError(f"{field}: expected an IPv4 address, got {v!r}") from None


def _mac(v, field):
    if v is None:
        return 0
    if isinstance(v, int):
        return v
    try:
        b = bytes(int(x, 16) for x in v.split(":"))
        assert len(b) == 6
    except (ValueError, AssertionError, AttributeError):
        raise ValueError(f"{field}: expected a MAC like \"02:54:00:01:00:00\", got {v!r}") from None
    return int.from_bytes(b, "big")


def _rate(v, field):
    if v in (None, 0):
        return 0
    try:
        return parse_rate(v)
    except ValueError as e:
        raise ValueError(f"{field}: {e}") from None


def ton_max_ns(pfc: dict, rate: int, delay: int) -> int:
    """TCD's max(T_on): (X_off - X_on) / (eps * C) plus the PFC reaction time
    (a round trip on the link and one MTU frame) -- docs/PROTOCOLS.md's
    reconstruction; `ton_max` in the config overrides it."""
    if "ton_max_ns" in pfc:
        return pfc["ton_max_ns"]
    c = rate if rate > 0 else 10**10
    drain = (pfc["xoff"] - pfc["xon"]) * 8 * 10**9 / (pfc["epsilon"] * c)
    return int(drain + 2 * delay + MTU_FRAME * 8 * 10**9 // c)


def _check_port(cfg: dict, field: str) -> dict:
    if not isinstance(cfg, dict):
        raise ValueError(f"{field}: expected a dict of port settings, got {cfg!r}")
    for key in cfg:
        if key not in _PORT_KEYS:
            raise ValueError(f"{field}.{key}: unknown port key (expected one of: {', '.join(_PORT_KEYS)})")
    feat = F.validate(cfg, field, switch_level=False)
    F.check_consistent(feat, field)
    _rate(cfg.get("rate"), f"{field}.rate")
    for key in ("delay", "in_delay"):
        F.delay_at(cfg.get(key, 0), f"{field}.{key}")
    F.size_at(cfg.get("buffer", DEFAULT_BUFFER), f"{field}.buffer")
    _mac(cfg.get("mac"), f"{field}.mac")
    if not isinstance(cfg.get("host_facing", False), bool):
        raise ValueError(f"{field}.host_facing: expected true or false, got {cfg['host_facing']!r}")
    return feat


def configure_port(eng, d, k, p, cfg: dict, field: str, switch_id: int) -> None:
    sw = eng.E.sw
    feat = _check_port(cfg, field)
    row = sw.pcfg[p]
    row[:] = 0
    row[C_DEV], row[C_PNO] = d, k
    row[C_RATE] = _rate(cfg.get("rate"), f"{field}.rate")
    row[C_DELAY] = F.delay_at(cfg.get("delay", 0), f"{field}.delay")
    row[C_IN_DELAY] = F.delay_at(cfg.get("in_delay", 0), f"{field}.in_delay")
    row[C_QLIM] = F.size_at(cfg.get("buffer", DEFAULT_BUFFER), f"{field}.buffer")
    row[C_MAC] = _mac(cfg.get("mac"), f"{field}.mac")
    row[C_SLACK] = F.delay_at(cfg.get("slack", SLACK_DEFAULT), f"{field}.slack")
    row[C_LOC_C] = cfg.get("locator_compact", (switch_id * 8 + k) & 0x3F)
    row[C_LOC_W] = cfg.get("locator_wide", ((switch_id << 6) | k) & 0x7FFF)
    ecn = feat.get("ecn")
    if ecn and "k" in ecn:
        row[C_ECN], row[C_K], row[C_TCD_K] = ECN_STEP, ecn["k"], ecn["k"]
    elif ecn:
        row[C_ECN], row[C_KMIN], row[C_KMAX] = ECN_RED, ecn["kmin"], ecn["kmax"]
        row[C_PMAX], row[C_TCD_K] = round(ecn["pmax"] * PMAX_ONE), ecn["kmin"]
    csig = feat.get("csig")
    if csig:
        row[C_CSIG], row[C_ABW_IVL] = 1, csig["interval_ns"]
        if csig["last_hop"]:
            last = bool(cfg.get("host_facing"))
            row[C_LOC_C] = locator_with_last_hop(int(row[C_LOC_C]), "compact", last)
            row[C_LOC_W] = locator_with_last_hop(int(row[C_LOC_W]), "wide", last)
    else:
        row[C_ABW_IVL] = F.DEFAULT_CSIG_INTERVAL
    row[C_INT] = 1 if feat.get("int") else 0
    row[C_SRC] = feat["src"]["threshold"] if feat.get("src") else 0
    pfc = feat.get("pfc")
    if pfc:
        row[C_PFC] = sum(1 << c for c in pfc["classes"])
        row[C_XOFF], row[C_XON], row[C_UE_CP] = pfc["xoff"], pfc["xon"], pfc["ue"]
        row[C_TCD] = 1 if pfc["tcd"] else 0
        row[C_TON_MAX] = ton_max_ns(pfc, int(row[C_RATE]), int(row[C_DELAY]))
    trim = feat.get("trim")
    if trim:
        row[C_TRIM] = trim["threshold"]
        row[C_TRIM_DSCP] = trim["last_hop_dscp"] if cfg.get("host_facing") else trim["dscp"]
    cls = feat.get("classes") or F.default_classes()
    sw.dscp[p, :] = DATA
    sw.dscp[p, cls["high"]] = HIGH
    if trim:
        sw.dscp[p, row[C_TRIM_DSCP]] = HIGH
    row[C_CTL_HIGH] = 1 if cls["control_high"] else 0
    t = wheel_alloc(eng.E.wheel, d, p)
    if t < 0:
        raise ValueError("switch: no free timer on the engine's wheel")
    row[C_TIMER] = t
    st = sw.pst[p]
    st[:] = 0
    st[S_PAUSE_START] = -1
    st[S_TEL_T] = st[S_ABW_T0] = eng.now()
    sw.qh[p] = sw.qt[p] = sw.qb[p] = sw.ing[p] = sw.pausu[p] = 0
    eng.switches.ports.add(p)
    names = eng.switches.names
    if names is not None:
        raw = eng.port_name(p).encode()[:31]
        names[p, :] = 0
        names[p, :len(raw)] = np.frombuffer(raw, np.uint8)


def add_switch(eng, ports, config=None, name=None) -> int:
    """A switch device on engine ports `ports`; returns the device index."""
    config = dict(config or {})
    known = ("ports", "routes", "default", "buffer", "telemetry", "switch_id")
    for key in config:
        if key not in known:
            raise ValueError(f"switch config: unknown key {key!r} (expected one of: {', '.join(known)})")
    ports = [int(p) for p in ports]
    if len(set(ports)) != len(ports) or not ports:
        raise ValueError(f"switch: needs distinct ports, got {ports}")
    install_switch_state(eng)
    sw = eng.E.sw
    for p in ports:
        if p in eng.switches.ports:
            raise ValueError(f"switch: port {p} already belongs to a switch")
    pcfgs = config.get("ports", {})
    if isinstance(pcfgs, dict):
        pcfgs = [pcfgs] * len(ports)
    if len(pcfgs) != len(ports):
        raise ValueError(f"switch config: ports: {len(pcfgs)} entries for {len(ports)} ports")
    for k, pc in enumerate(pcfgs):               # validate everything before registering
        _check_port(pc, f"switch config: ports[{k}]")
    d = eng.add_device(SWITCH, ports, name)
    regs = eng.E.devs.regs[d]
    swid = int(config.get("switch_id", d))
    regs[R_SWID] = swid
    regs[R_SEED] = (swid * 0x9E3779B1 + 1) & 0x7FFFFFFFFFFF
    for k, (p, pc) in enumerate(zip(ports, pcfgs)):
        configure_port(eng, d, k, p, pc, f"switch config: ports[{k}]", swid)
    shared = config.get("buffer")
    if shared is not None:
        F.size_at(shared, "switch config: buffer")
    regs[R_SHARED_LIMIT] = (F.size_at(shared, "switch config: buffer") if shared is not None
                            else int(sum(sw.pcfg[p, C_QLIM] for p in ports)) * 2)
    for ip, out in (config.get("routes") or {}).items():
        out = [out] if isinstance(out, int) else list(out)
        if any(o not in ports for o in out):
            raise ValueError(f"switch config: routes[{ip}]: ports {out} are not all ports of this switch {ports}")
        route_add(sw, d, ip if isinstance(ip, int) else _ip(ip, f"switch config: routes[{ip!r}]"), out)
    dflt = config.get("default")
    regs[R_DEFAULT_GRP] = -1 if not dflt else group_add(sw, [dflt] if isinstance(dflt, int) else dflt)
    tel = config.get("telemetry")
    if tel:
        ivl = F.delay_at(tel, "switch config: telemetry")
        regs[R_TEL_IVL] = ivl
        regs[R_TEL_TIMER] = t = wheel_alloc(eng.E.wheel, d, -1)
        if t < 0:
            raise ValueError("switch: no free timer on the engine's wheel")
        from ...wheel import wheel_schedule
        wheel_schedule(eng.E.wheel, t, eng.now() + ivl)
    return d
