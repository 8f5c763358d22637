"""Compiled symbols stay unique across processes (taurus/numba_uids.py).

Numba names a function's symbol by its qualified name and a per-process
counter, and its cache keeps the name: two closures of one factory compiled
in two processes in the same order got one symbol, and a process loading
both ran one body for both (a full `taurus reproduce baselines` ran NSCC's
native entry for DCTCP's flows).  Each test compiles in fresh processes
against a cache of its own, as runs and the test session's warmers do."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _py(cache, code: str) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", "import taurus\n" + code], env=env, cwd=HERE,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip()


def test_the_counter_starts_at_random_in_every_process(tmp_path):
    peek = "from numba.core import bytecode; print(next(bytecode.FunctionIdentity._unique_ids))"
    a, b = int(_py(tmp_path, peek)), int(_py(tmp_path, peek))
    assert a != b and a > 1 << 32 and b > 1 << 32


def test_closures_compiled_apart_keep_their_bodies_when_loaded_together(tmp_path):
    for k in (1, 2):                       # each the first compile of its process
        assert _py(tmp_path, f"import uid_closures as u; print(u.constant({k})())") == str(k)
    out = _py(tmp_path, "import uid_closures as u\n"
                        "f, g = u.constant(1), u.constant(2)\n"
                        "print(f(), g(), u.pair(f, g)())\n"
                        "names = {h.overloads[()].fndesc.mangled_name for h in (f, g)}\n"
                        "print(len(names))")
    assert out.splitlines() == ["1 2 12", "2"]


_ALG = """
import numpy as np
import uid_closures as u
from taurus.cc_algorithms.runtime import Runtime, events
from taurus.datapath.ccevents import EV_ACK
from taurus.datapath import ccshm as C
"""


def test_algorithms_compiled_apart_each_run_their_own_code_native_and_agent(tmp_path):
    """The runtime's closures (native entry, agent drain) of two algorithms,
    compiled in two processes, loaded in a third in the other order."""
    for cls in ("UidOne", "UidTwo"):
        _py(tmp_path, _ALG + f"Runtime(u.{cls})")
    out = _py(tmp_path, _ALG + """
rts = [Runtime(u.UidTwo), Runtime(u.UidOne)]
print(len({rt.entry_address() for rt in rts}))
for rt in reversed(rts):
    S, P, D = rt.tables(2)
    rec = np.zeros((1, C.REC_WIDTH), np.int64)
    rec[0, C.FLOW], rec[0, C.EVENT], rec[0, C.COUNT] = 1, EV_ACK, 1
    nf = rt.drain(S, P, D, rec, np.zeros(1, np.int64), np.zeros(1, np.int64))   # agent
    st = np.zeros(2 * S.dtype.itemsize // 8)
    par = np.zeros(2 * P.dtype.itemsize // 8)
    dec = np.zeros(D.dtype.itemsize // 8, np.int64)
    r = rt.entry(st, par, 1, rec[0], dec)                                    # native
    print(nf, D[1].cwnd, r, dec.view(D.dtype)[0]["cwnd"])
""")
    assert out.splitlines() == ["2", "0 1001.0 0 1001.0", "0 2001.0 0 2001.0"]
