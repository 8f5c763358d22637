"""Owner locks (taurus/flocks.py): a free lock is an owner gone, a held one
names its holder; and procs.interrupt stops a child as Ctrl-C would."""
import fcntl
import os
import subprocess
import sys

import pytest

from taurus.flocks import abandoned, holder
from taurus.tools.procs import interrupt


def test_a_held_lock_is_a_live_owner_and_a_free_one_is_gone(tmp_path):
    path = str(tmp_path / "seg")
    with open(path, "w") as f:
        f.write("4242\n")
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)               # the owner, alive
    try:
        with abandoned(path) as got:
            assert got is None
        assert holder(path).startswith(f"pid {os.getpid()} (")
    finally:
        os.close(fd)                             # the owner dies: the kernel frees its lock
    with abandoned(path) as got:
        assert got is not None and os.read(got, 32) == b"4242\n"
    assert holder(path) == "a live process"      # nobody holds it now
    with pytest.raises(FileNotFoundError):
        with abandoned(str(tmp_path / "none")):
            pass


def test_interrupt_lets_the_child_handle_sigint_then_kills():
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGINT, lambda *a: sys.exit(7))\n"
            "print('up', flush=True)\n"
            "time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"up\n"
    assert interrupt(p, 10) == 7                 # its own handler ran
    stubborn = code.replace("sys.exit(7)", "None")
    p = subprocess.Popen([sys.executable, "-c", stubborn], stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"up\n"
    assert interrupt(p, 0.2) == -9               # ignored SIGINT: SIGKILLed
    assert interrupt(None) is None
