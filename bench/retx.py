#!/usr/bin/env python3
"""Where a `taurus perf` run's retransmissions come from.

    sudo python bench/retx.py                 # 10 s, two_hosts, perf's defaults
    sudo python bench/retx.py -t 3 --xdp-mode generic -- -P 2

`taurus perf -s`'s engine runs in this process (the same build_engine and
Sink, so its sockets' kernel statistics can be read) and `taurus perf -c h2
-t T -J` as a child, over two_hosts in namespaces `taurus-retx<pid>-*`
(removed at the end).  Then every counter on the path of a data packet:

- kernel -> socket at h2: the XDP socket's `rx_ring_full` (RX ring full),
  `rx_fill_ring_empty_descs` (fill ring starved), `rx_dropped`; the veth's
  own drops (`ip -s link`);
- engine ports: `rx_nobuf` (frame pool empty), `tx_drop` (TX ring full);
- h2's NIC: `drop_rx_window` (data refused: the app had not freed the
  receive ring; the sender learns the edge from the NACK), and the edges it
  advertised before that (`tx_window_adv`) or as the app read
  (`tx_window_update`);
- h1's NIC: `tx_retx` (all retransmissions), `retx_sack`, `retx_nack`,
  `rto_fire`.

Last line: `retransmits: N of M data packets (P%)`.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def _ip_drops(ns: str, ifname: str) -> dict:
    """The veth's rx/tx drop counters (ip -s link, JSON)."""
    r = subprocess.run(["ip", "netns", "exec", ns, "ip", "-j", "-s", "link", "show", ifname],
                       capture_output=True, text=True)
    try:
        st = json.loads(r.stdout)[0]["stats64"]
        return {"rx_dropped": st["rx"]["dropped"], "tx_dropped": st["tx"]["dropped"]}
    except (ValueError, LookupError):
        return {}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-t", "--time", type=float, default=10.0)
    ap.add_argument("--xdp-mode", default="auto", choices=["auto", "native", "generic"])
    ap.add_argument("client", nargs="*", help="more `taurus perf -c` options (after --)")
    args = ap.parse_args(argv)
    from taurus.datapath.devices.nic.setup import nic_counters
    from taurus.datapath.devices.table import NIC
    from taurus.datapath.engine import NDEVS
    from taurus.tools import topology as topo
    from taurus.tools.perf import Sink, build_engine, native_table

    prefix = f"taurus-retx{os.getpid()}-"
    t = topo.load(topo.builtin("two_hosts"), prefix=prefix)
    name = f"{prefix}perf"
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    try:
        t.up()
        tab, ids = native_table([])
        eng = build_engine(t, name, "af_xdp", xdp_mode=args.xdp_mode, native=tab)
        with eng:
            sink = Sink(eng, t.hosts, tab, ids)
            eng.on_chunk.append(sink)
            cmd = [sys.executable, "-m", "taurus.cli", "perf", "--topo", "two_hosts",
                   "--prefix", prefix, "--name", name, "-c", "h2", "--from", "h1",
                   "-t", str(args.time), "-J", *args.client]
            h = {n: eng.port_handle(eng.port_index(n)) for n in ("h1", "h2")}
            x0 = {n: h[n].stats() for n in h}
            v0 = {n: _ip_drops(t.ns_of(n), t.ifaces_of(n)[0].name) for n in h}
            p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
            while p.poll() is None:
                eng.run_for(100_000_000)
            out, err = p.communicate()
            eng.run_for(200_000_000)                 # what is in flight lands
            if p.returncode != 0:
                print(err, file=sys.stderr)
                return 1
            end = json.loads(out)["end"]
            print(f"perf: {end['sum_sent']['bits_per_second'] / 1e9:.2f} Gbit/s, "
                  f"retransmits {end['sum_sent'].get('retransmits')}")
            for n in ("h1", "h2"):
                xs = h[n].stats()
                print(f"{n} xsk:   " + ", ".join(f"{k} {xs[k] - x0[n].get(k, 0)}" for k in
                                                 ("rx_ring_full", "rx_fill_ring_empty_descs",
                                                  "rx_dropped")))
                vd = _ip_drops(t.ns_of(n), t.ifaces_of(n)[0].name)
                print(f"{n} veth:  " + ", ".join(f"{k} {vd[k] - v0[n].get(k, 0)}" for k in vd))
            ports = eng.counters()
            for n in ("h1", "h2"):
                c = ports[n]
                print(f"{n} port:  rx_pkts {c['rx_pkts']}, tx_pkts {c['tx_pkts']}, "
                      f"rx_nobuf {c['rx_nobuf']}, tx_drop {c['tx_drop']}")
            # build_engine adds one NIC per host, in the topology's order
            devs = [d for d in range(int(eng.ctl[NDEVS])) if eng.E.devs.kind[d] == NIC]
            nics = {h: nic_counters(eng, d) for h, d in zip(t.hosts, devs)}
            keys = ("tx_data", "tx_retx", "retx_sack", "retx_nack", "rto_fire", "rx_window_nack",
                    "drop_rx_window", "tx_window_adv", "tx_window_update", "rx_dup", "rx_ooo")
            for n, c in nics.items():
                print(f"{n} nic:   " + ", ".join(f"{k} {c[k]}" for k in keys if c.get(k)))
            snd = nics["h1"]
            data = snd["tx_data"]
            print(f"retransmits: {snd['tx_retx']} of {data} data packets "
                  f"({100 * snd['tx_retx'] / max(1, data):.3f}%)")
    finally:
        t.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
