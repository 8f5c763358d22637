"""A planned generated stream (nic_generate_at): the NIC starts and stops
it on its own timer (gen.py: gen_timer), so a run loaded before it starts
needs nobody between the engine's passes."""
import pytest

from taurus.datapath.devices.nic.setup import add_flow, flow_done, nic_generate_at
from taurus.datapath.devices.nic.state import FL_ACKED_OFF, FL_GEN_END, FL_POSTED
from test_transport_transfer import IP2, MAC2, two_hosts

MS = 1_000_000


def test_a_planned_stream_starts_and_stops_on_the_nics_timer():
    eng, d1, _d2, _ = two_hosts()
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=64 << 10, buf_bytes=1 << 20,
                     shared_ring=True)
        t0 = eng.now()
        nic_generate_at(eng, f, t0 + 1 * MS, None, t0 + 3 * MS)
        eng.run_until(t0 + MS - 1, stop_idle=False)
        fl = eng.E.nic.fl
        assert fl[f, FL_POSTED] == 0 and fl[f, FL_ACKED_OFF] == 0      # not before its start
        eng.run_until(t0 + 2 * MS, stop_idle=False)
        assert fl[f, FL_ACKED_OFF] > 0                                  # started on time
        eng.run_until(t0 + 6 * MS, stop_idle=False)
        stopped = int(fl[f, FL_ACKED_OFF])
        assert fl[f, FL_GEN_END] == fl[f, FL_POSTED]                    # ended at its stop
        # 10 Gbit/s for the 2 ms it ran, at most
        assert 0 < stopped <= 2 * MS * 10 // 8 + (64 << 10)
        eng.run_until(t0 + 8 * MS, stop_idle=False)
        assert fl[f, FL_ACKED_OFF] == stopped                           # and sent nothing after


def test_a_planned_finite_flow_completes():
    eng, d1, _d2, _ = two_hosts()
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, cwnd_bytes=64 << 10, buf_bytes=1 << 20,
                     shared_ring=True)
        t0 = eng.now()
        nic_generate_at(eng, f, t0 + MS, 300_000)
        eng.run_until(t0 + 10 * MS, stop_idle=False)
        assert flow_done(eng, f) and eng.E.nic.fl[f, FL_ACKED_OFF] == 300_000


def test_a_plan_is_refused_for_a_flow_already_sending():
    eng, d1, _d2, _ = two_hosts()
    with eng:
        f = add_flow(eng, d1, MAC2, IP2, buf_bytes=1 << 20, shared_ring=True)
        with pytest.raises(ValueError, match="stop .* before start"):
            nic_generate_at(eng, f, 2 * MS, None, MS)
        nic_generate_at(eng, f, eng.now(), 1000)
        eng.run_for(MS)
        with pytest.raises(ValueError, match="nothing posted"):
            nic_generate_at(eng, f, eng.now() + MS)
