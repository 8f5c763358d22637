"""`taurus algorithms`: every registered algorithm with its role, events and
documented parameters; `--events` the event table."""
import json

from taurus.cli import main


def test_json_lists_every_builtin_with_role_binds_params(capsys):
    assert main(["algorithms", "--json"]) == 0
    algs = {a["name"]: a for a in json.loads(capsys.readouterr().out)}
    d = algs["dctcp"]
    assert d["role"] == "sender" and "ACK" in d["binds"]
    g = {p["name"]: p for p in d["params"]}["g"]
    assert g["default"] == 1 / 16 and g["meaning"]


def test_text_and_one_by_module_path(capsys):
    assert main(["algorithms", "taurus.cc_algorithms.dctcp:Dctcp"]) == 0
    out = capsys.readouterr().out
    assert "(sender)" in out and "init_cwnd_pkts = 10 packets" in out


def test_unknown_name_is_an_error_line(capsys):
    assert main(["algorithms", "nosuch"]) == 1
    assert "unknown algorithm 'nosuch'" in capsys.readouterr().out


def test_events_table(capsys):
    assert main(["algorithms", "--events", "--json"]) == 0
    evs = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert {"ACK", "RTT", "CNP", "CSIG", "INT", "TIMER", "DATA", "JOIN", "LEAVE"} <= set(evs)
    rtt = {f["name"] for f in evs["RTT"]["fields"]}
    assert {"rtt", "send_time", "qdelay", "hops", "psn"} <= rtt
    assert evs["DATA"]["role"] == "receiver"
