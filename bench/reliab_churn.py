"""Flow churn (bench/reliability.py): finite flows opened, posted to and
closed over and over through the NIC API (add_flow, nic_post, nic_close;
the receiver frees its PDC at CLOSE), with up to `concurrent` open at once,
in virtual time.  Reports the flows churned, the process's RSS growth from
the end of the warm-up (the first tenth) to the end, and how far the
per-connection tables grew (nic_table_use): rows are reused, so the tables
stay bounded by the flows open at once.
"""
import numpy as np


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def run(flows=20_000, concurrent=256, msg=4096, seed=1, log=print):
    from taurus.datapath.devices.nic.setup import (add_flow, add_nic, flow_closed, nic_close,
                                                   nic_post, nic_reserve,
                                                   nic_table_use)
    from taurus.datapath.engine import Engine
    G = 1_000_000_000
    rng = np.random.default_rng(seed)
    eng = Engine(clock="virtual", n_frames=32768, max_flows=4 * concurrent + 64)
    with eng:
        nic_reserve(eng, max_flows=2 * concurrent + 16, tx_bytes=(2 * concurrent + 16) * (64 << 10))
        a, b = eng.add_mem_link("h1", "h2", delay_ns=2000, rate_bps=10 * G)
        d1 = add_nic(eng, a, "02:00:00:00:00:01", "10.0.0.1", line_rate_bps=10 * G)
        add_nic(eng, b, "02:00:00:00:00:02", "10.0.0.2", line_rate_bps=10 * G)
        data = rng.integers(0, 256, msg, np.uint8).tobytes()
        open_, opened, peak = [], 0, {"flow_rows": 0, "pdc_rows": 0, "hash": 0}
        rss0 = None
        while opened < flows or open_:
            while opened < flows and len(open_) < concurrent:
                f = add_flow(eng, d1, "02:00:00:00:00:02", "10.0.0.2", buf_bytes=64 << 10)
                nic_post(eng, d1, f, data[:int(rng.integers(1, msg + 1))])
                nic_close(eng, d1, f)
                open_.append(f)
                opened += 1
            eng.run_for(20_000)
            open_ = [f for f in open_ if not flow_closed(eng, f)]
            use = nic_table_use(eng)
            for k in peak:
                peak[k] = max(peak[k], use[k])
            if rss0 is None and opened >= flows // 10:
                rss0 = rss_bytes()
        eng.run_for(10**8)
        rss1 = rss_bytes()
        end = nic_table_use(eng)
        in_use = eng.frames_in_use()
    growth = 100.0 * (rss1 - rss0) / rss0
    figs = dict(flows=opened, concurrent=concurrent, rss_mib=round(rss1 / 2**20, 1),
                rss_growth_pct=round(growth, 2), peak=peak, end=end, frames_in_use=in_use)
    log(f"  {opened} flows opened, posted to and closed ({concurrent} at once): RSS "
        f"{rss0 / 2**20:.1f} -> {rss1 / 2**20:.1f} MiB ({growth:+.2f}%), tables at most "
        f"{peak} rows, at the end {end}")
    return figs
