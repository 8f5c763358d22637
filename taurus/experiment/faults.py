"""Handler faults in a run: a handler that raises fails the run (unless
``[cc] on_fault = "fallback"``), with its message and the traceback's
frames in the algorithm's own file, not the framework's."""
from __future__ import annotations

import os
import traceback

RAISED = ("handler raised", "setup failed", "drain raised")   # the agent's kinds of raising
_FRAMEWORK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # taurus/


class AlgorithmFault(RuntimeError):
    """A handler raised and the run stops; ``trace``: the frames in the
    algorithm's file(s), formatted (empty when compiled)."""

    def __init__(self, message: str, trace: str = ""):
        super().__init__(message)
        self.trace = trace


def agent_faults(handler) -> int:
    """Records (and inits) whose handler raised, of an agent's AlgorithmHandler."""
    return sum(n for (_, what), n in handler.faults.items() if what in RAISED)


def user_frames(exc: BaseException) -> str:
    """The traceback of ``exc`` without the framework's frames (runtime.py's
    drain and dispatch) or the library's: what the algorithm's author wrote."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not (f.filename.startswith(_FRAMEWORK) and f.filename.endswith("runtime.py"))
              and "site-packages" not in f.filename]
    if not frames:
        return ""
    return "Traceback (the algorithm's frames):\n" + "".join(traceback.format_list(frames)) + \
        "".join(traceback.format_exception_only(type(exc), exc))


def first_fault(handler, host: str) -> tuple[str, str]:
    """(message, trace) of an agent's first handler fault."""
    cls, detail, exc = handler.first_fault or (None, "a handler raised", None)
    name = cls.name if cls is not None else "?"
    at = ""
    if exc is not None and exc.__traceback__ is not None:
        tb = traceback.extract_tb(exc.__traceback__)
        mine = [f for f in tb if not f.filename.endswith("runtime.py")]
        if mine:
            from taurus.cc_algorithms.registry import shown
            at = f" at {shown(mine[-1].filename)}:{mine[-1].lineno}"
    return (f"algorithm {name!r} on {host}: {detail}{at} "
            f"(cc.on_fault = \"fallback\" drops the event's decision and goes on)",
            user_frames(exc) if exc is not None else "")
