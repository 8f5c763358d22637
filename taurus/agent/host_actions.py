"""Host actions for host-congestion algorithms (paper §4.2: MBA, memory QoS).

- cgroup v2 ``cpu.max`` and ``memory.high`` of a named cgroup, created under
  the cgroup2 mount if asked (name taurus-*) and removed at teardown; values
  of a cgroup we did not create are restored at teardown.
- resctrl MBA (``MB:<id>=<percent>`` in a taurus-* resource group) where
  /sys/fs/resctrl is mounted.
Every action returns an ``ActionResult``; a missing controller or file gives
``ok=False`` with the reason, never an exception in the algorithm's path.
"""
import contextlib
import dataclasses
import logging
import os

log = logging.getLogger("taurus.agent.host")
RESCTRL = "/sys/fs/resctrl"


@dataclasses.dataclass
class ActionResult:
    ok: bool
    detail: str


def cgroup2_root() -> str | None:
    """Mount point of the cgroup2 hierarchy (unified or hybrid mode)."""
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 2 and parts[2] == "cgroup2":
                    return parts[1]
    except OSError:
        pass
    return None


class HostActions:
    def __init__(self, cgroup: str = "", create: bool = False, root: str | None = None,
                 resctrl: str = RESCTRL):
        self.root = root or cgroup2_root()
        self.created = []            # directories we made (removed at teardown)
        self.saved = {}              # file -> original content (restored at teardown)
        self.resctrl = resctrl
        self.counts = {}             # action -> [ok, failed]
        self.path = None
        if cgroup:
            if self.root is None:
                raise OSError("no cgroup2 hierarchy is mounted")
            self.path = os.path.join(self.root, cgroup.strip("/"))
            if create and not os.path.isdir(self.path):
                if not os.path.basename(self.path).startswith("taurus-"):
                    raise ValueError(f"refusing to create cgroup {cgroup!r}: name must be taurus-*")
                os.mkdir(self.path)
                self.created.append(self.path)
            elif not os.path.isdir(self.path):
                raise FileNotFoundError(f"cgroup {self.path} does not exist (set create_cgroup)")

    def _write(self, what: str, path: str, value: str) -> ActionResult:
        ok_fail = self.counts.setdefault(what, [0, 0])
        if not os.path.exists(path):
            ok_fail[1] += 1
            return ActionResult(False, f"{what} unavailable: {path} does not exist "
                                       "(controller not enabled here?)")
        try:
            if path not in self.saved and not any(path.startswith(c + "/") for c in self.created):
                with open(path) as f:
                    self.saved[path] = f.read().strip()
            with open(path, "w") as f:
                f.write(value)
        except OSError as e:
            ok_fail[1] += 1
            return ActionResult(False, f"{what}: writing {value!r} to {path}: {e.strerror}")
        ok_fail[0] += 1
        return ActionResult(True, f"{path} = {value}")

    def cpu_max(self, quota_us: int | None, period_us: int = 100_000) -> ActionResult:
        """Limit the cgroup to quota/period of a CPU (None: no limit)."""
        if self.path is None:
            return ActionResult(False, "cpu.max unavailable: no cgroup configured")
        q = "max" if quota_us is None else str(max(int(quota_us), 1000))
        return self._write("cpu.max", os.path.join(self.path, "cpu.max"), f"{q} {int(period_us)}")

    def memory_high(self, nbytes: int | None) -> ActionResult:
        """Throttle the cgroup above nbytes of memory (None: no limit)."""
        if self.path is None:
            return ActionResult(False, "memory.high unavailable: no cgroup configured")
        v = "max" if nbytes is None else str(max(int(nbytes), 4096))
        return self._write("memory.high", os.path.join(self.path, "memory.high"), v)

    def mba(self, percent: int, domain: int = 0, group: str = "taurus-agent") -> ActionResult:
        """Memory-bandwidth allocation of a resctrl group (created if needed)."""
        if not os.path.exists(os.path.join(self.resctrl, "schemata")):
            self.counts.setdefault("mba", [0, 0])[1] += 1
            return ActionResult(False, f"MBA unavailable: {self.resctrl} is not mounted here")
        gdir = os.path.join(self.resctrl, group)
        if not os.path.isdir(gdir):
            try:
                os.mkdir(gdir)
            except OSError as e:
                return ActionResult(False, f"MBA: creating {gdir}: {e.strerror}")
            self.created.append(gdir)
        pct = min(max(int(percent), 10), 100)
        return self._write("mba", os.path.join(gdir, "schemata"), f"MB:{domain}={pct}\n")

    def teardown(self) -> None:
        """Restore values we changed, remove what we created (newest first)."""
        for path, value in self.saved.items():
            with contextlib.suppress(OSError):
                with open(path, "w") as f:
                    f.write(value)
        self.saved.clear()
        for d in reversed(self.created):
            _evacuate(d)
            try:
                os.rmdir(d)
            except OSError as e:
                log.warning("could not remove %s: %s", d, e.strerror)
        self.created.clear()


def _evacuate(cgroup_dir: str) -> None:
    """Move any processes left in a cgroup we created to its parent (so rmdir works)."""
    procs = os.path.join(cgroup_dir, "cgroup.procs")
    parent = os.path.join(os.path.dirname(cgroup_dir), "cgroup.procs")
    with contextlib.suppress(OSError):
        with open(procs) as f:
            pids = f.read().split()
        for pid in pids:
            with contextlib.suppress(OSError), open(parent, "w") as f:
                f.write(pid)
