"""Reliability under bad input, faults, hostile shared memory, kills, flow
churn and a long run under load (bench/README.md).  Each part prints its
figures; the last line (its churn figure from the load part when it ran):

    reliability: F frames fuzzed, 0 crashes; B MiB through faults, 0 bytes lost;
    K kills, 0 leaks; churn C flows, RSS growth R%; R restarts reconnected;
    S spoofed frames, 0 accepted; F flood SYNs, established goodput G%;
    soak T s: V MiB verified, 0 bytes wrong, K kills, private RSS trend R%

    sudo python bench/reliability.py            # the full run
    sudo python bench/reliability.py --quick    # the CI-sized one
    python bench/reliability.py --parts fuzz,synflood,restarts,spoof,faults,shm,churn,load   # no root
    python bench/reliability.py --quick --boundscheck --no-xdp   # every access bounds-checked

A crash (a Numba segfault) ends the process, so it shows as the missing
last line; a hang is caught by faulthandler (--hang-s) and counted too.
"""
import argparse
import faulthandler
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import reliab_churn  # noqa: E402
import reliab_faults  # noqa: E402
import reliab_fuzz  # noqa: E402
import reliab_kills  # noqa: E402
import reliab_load  # noqa: E402
import reliab_shm  # noqa: E402
import reliab_soak  # noqa: E402
import reliab_spoof  # noqa: E402
import reliab_synflood  # noqa: E402

PARTS = ("fuzz", "synflood", "restarts", "spoof", "faults", "shm", "kills", "churn", "load",
         "soak")
SIZES = {  # quick / full
    "fuzz_frames": (20_000, 1_000_000), "xdp_frames": (3_000, 100_000),
    "fault_bytes": (1 << 20, 8 << 20), "fault_flows": (2, 4),
    "shm_seconds": (3.0, 30.0), "agent_kills": (2, 10), "app_kills": (2, 10),
    "engine_kills": (2, 10), "churn_flows": (5_000, 100_000),
    "syn_frames": (20_000, 1_000_000), "syn_pdc_rows": (1024, 4096),
    "restarts": (3, 30), "spoof_frames": (2_000, 100_000),
    "load_long": (1_000, 10_000), "load_churn": (5_000, 100_000), "load_wall_s": (0.0, 600.0),
    "load_concurrent": (128, 256), "load_max_wall_s": (None, 600.0),
    "soak_s": (60.0, 1800.0),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the CI-sized run")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma list of {PARTS}")
    ap.add_argument("--xdp", action=argparse.BooleanOptionalAction, default=None,
                    help="the AF_XDP cases too (default: when root)")
    ap.add_argument("--boundscheck", action="store_true",
                    help="run compiled with NUMBA_BOUNDSCHECK=1 (an access out of bounds raises "
                         "IndexError; its own Numba cache: a full compile)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hang-s", type=float, default=1800.0,
                    help="a part that runs longer than this is a hang (stack dump, exit)")
    ap.add_argument("--json", default=None, help="write every figure here")
    ap.add_argument("--progress", action="store_true", help="the load part prints its samples")
    a = ap.parse_args(argv)
    if a.boundscheck and os.environ.get("NUMBA_BOUNDSCHECK") != "1":
        from taurus.numba_cache import cache_dir
        env = dict(os.environ, NUMBA_BOUNDSCHECK="1",
                   NUMBA_CACHE_DIR=str(cache_dir()) + "-boundscheck")
        args = [x for x in (sys.argv[1:] if argv is None else argv) if x != "--boundscheck"]
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *args], env)
    q = 0 if a.quick else 1
    n = {k: v[q] for k, v in SIZES.items()}
    parts = [p for p in a.parts.split(",") if p]
    root = os.geteuid() == 0
    xdp = root if a.xdp is None else a.xdp
    out, tot = {}, dict(frames=0, crashes=0, mib=0.0, lost=0, kills=0, leaks=0, churn=0, rss=None,
                        restarts=None, spoofed=None, accepted=0, syn=None, goodput=None,
                        soak=None)
    t_all = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="taurus-reliab-")

    def part(name, fn, hang_s=None):
        faulthandler.dump_traceback_later(hang_s or a.hang_s, exit=True)
        t0 = time.monotonic()
        print(f"{name}:", flush=True)
        r = fn()
        print(f"  ({time.monotonic() - t0:.0f} s)", flush=True)
        faulthandler.cancel_dump_traceback_later()
        out[name] = r
        return r

    if "fuzz" in parts:
        def fuzz():
            r = reliab_fuzz.run_virtual(n["fuzz_frames"], seed=a.seed)
            print(reliab_fuzz.fmt(r))
            return r
        r = part("malformed input, memory links", fuzz)
        tot["frames"] += r["frames"]
        if xdp:
            r = part("malformed input, AF_XDP",
                     lambda: reliab_fuzz.run_xdp(n["xdp_frames"], seed=a.seed))
            tot["frames"] += r["frames"]
    if "synflood" in parts:
        r = part("SYN flood, memory links",
                 lambda: reliab_synflood.run(n["syn_frames"], max_flows=n["syn_pdc_rows"],
                                             seed=a.seed))
        tot["syn"], tot["goodput"] = r["syn_frames"], r["goodput_pct"]
        tot["lost"] += r["bytes_lost"]
    if "restarts" in parts:
        r = part("restarts, memory links",
                 lambda: reliab_spoof.restarts(n["restarts"], seed=a.seed))
        tot["restarts"] = r["reconnected"]
    if "spoof" in parts:
        r = part("spoofed peers, memory links",
                 lambda: reliab_spoof.spoof(n["spoof_frames"], seed=a.seed))
        tot["spoofed"], tot["accepted"] = r["frames"], r["accepted"]
    if "faults" in parts:
        rows = part("network faults, memory links (virtual time)",
                    lambda: reliab_faults.run_virtual(n_flows=n["fault_flows"],
                                                      nbytes=n["fault_bytes"], seed=a.seed))
        if xdp:
            rows = rows + part("network faults, AF_XDP (wall clock)",
                               lambda: reliab_faults.run_xdp(n_flows=n["fault_flows"],
                                                             nbytes=n["fault_bytes"] // 2,
                                                             seed=a.seed))
        tot["mib"] += sum(r["bytes"] for r in rows) / 2**20
        tot["lost"] += sum(r["bytes_lost"] for r in rows)
    if "shm" in parts:
        part("hostile shared memory", lambda: reliab_shm.run(n["shm_seconds"], seed=a.seed))
    if "kills" in parts:
        r = part("kills: agent", lambda: reliab_kills.agent_kills(n["agent_kills"], a.seed, tmp))
        tot["kills"] += r["kills"]
        r = part("kills: app", lambda: reliab_kills.app_kills(n["app_kills"], a.seed))
        tot["kills"] += r["kills"]
        if root:
            r = part("kills: engine", lambda: reliab_kills.engine_kills(n["engine_kills"],
                                                                         a.seed, tmp))
            tot["kills"] += r["kills"]
            tot["leaks"] += len(r["leaks"])
    if "churn" in parts:
        r = part("flow churn", lambda: reliab_churn.run(n["churn_flows"], seed=a.seed))
        tot["churn"], tot["rss"] = r["flows"], r["rss_growth_pct"]
    if "load" in parts:      # the last line's churn figure: this part's when it ran
        r = part("load: long flows and churn", lambda: reliab_load.run(
            n["load_long"], n["load_churn"], wall_s=n["load_wall_s"],
            concurrent=n["load_concurrent"], seed=a.seed, progress=a.progress,
            max_wall_s=n["load_max_wall_s"]))
        tot["churn"], tot["rss"] = r["flows"], r["rss_growth_pct"]
    if "soak" in parts and root:    # real packets: namespaces, AF_XDP
        r = part("soak: perf and wall-clock runs on real packets, with kills",
                 lambda: reliab_soak.run(n["soak_s"], seed=a.seed, tmp=tmp),
                 hang_s=a.hang_s + n["soak_s"])     # the soak runs this long by design
        p, w = r["perf"], r["run"]
        tot["lost"] += r["bytes_lost"]
        tot["leaks"] += len(p["left"]) + len(w["left"])
        tot["soak"] = (n["soak_s"], p["verified"] / 2**20, p["wrong"],
                       p["agent_kills"] + p["app_kills"] + p["engine_kills"]
                       + w["agent_kills"] + w["run_kills"], p["rss_growth_pct"])
    print(f"(all parts: {time.monotonic() - t_all:.0f} s)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    churn = (f"churn {tot['churn']} flows, RSS growth {tot['rss']:.1f}%" if tot["rss"] is not None
             else "churn: not measured")
    extra = "".join([
        f"; {tot['restarts']} restarts reconnected" if tot["restarts"] is not None else "",
        f"; {tot['spoofed']} spoofed frames, {tot['accepted']} accepted"
        if tot["spoofed"] is not None else "",
        f"; {tot['syn']} flood SYNs, established goodput {tot['goodput']:.0f}%"
        if tot["syn"] is not None else "",
        "; soak {:.0f} s: {:.0f} MiB verified, {} bytes wrong, {} kills, "
        "private RSS trend {:+.2f}%".format(
            *tot["soak"]) if tot["soak"] is not None else ""])
    print(f"reliability: {tot['frames']} frames fuzzed, {tot['crashes']} crashes; "
          f"{tot['mib']:.0f} MiB through faults, {tot['lost']} bytes lost; "
          f"{tot['kills']} kills, {tot['leaks']} leaks; {churn}{extra}")


if __name__ == "__main__":
    main()
