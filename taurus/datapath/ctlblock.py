"""The engine's control block: int64 words in shared memory that Python, the
loop, its devices and the agents read and write.  One layout, here at the
bottom of the datapath, so that every module that sets a word imports its
name from one place (the engine imports its devices, never the reverse).

STOP: set by Python to end the run.  NPORTS, NDEVS: ports and devices
registered.  NOW: the clock at the last pass.  ITERS, IDLE_ITERS: passes
so far, and passes that did no work.  STATE: ST_INIT / ST_RUNNING /
ST_STOPPED.  REASON: why the last run returned (R_*, engine.py).
YIELD: set by a device to end the current chunk at once, so that the
Python apps between chunks (Engine.on_chunk) act now rather than up to a
chunk later (a NIC does on each message it delivers, when asked:
devices/nic/setup.py nic_yield_on_message; the capture ring when it is
half full: ports/capture.py; the sampler when its buffer is half full).
WAKE_PUBLISH: armed (1) by Python, it makes the next report publish set
YIELD and disarms itself (report.py; Engine.run_until wake_on_publish).
IDLE_NS, RUN_NS: clock ns the loop spent in passes that did no work, and
in all (on the wall clock, its busy fraction is 1 - IDLE_NS / RUN_NS).
POLL_ALL: set by Python, the virtual-clock loop polls every device every
pass rather than only those with something to do (the same run, slower:
for tests and diagnosis).  POLLS: device polls so far.
VAG_N, VAG_DUE, VAG_STEP, VAG_AT: the agents the loop steps itself
(vagents.py): how many are registered (0: none, Python steps them), when
they are next due (0: not due), the grid step (ns), the agent a run ended
at (R_AGENT).
SEP_NS, SEP_PER_MSG_PS: the NIC-host separation model (virtual clock;
vagents.py): agents are due SEP_NS ns + n SEP_PER_MSG_PS ps after a publish
of n records rather than at the next grid point (SEP_NS 0: the grid).
OUT_AT, PAUSES, PAUSE_NS, PAUSE_MAX (wall clock): the clock when the loop
last returned (0: not counting), and the returns counted since, the clock
ns the loop was out for them in all and the longest: how long whoever runs
the engine kept it from its passes (Engine.pauses; Python zeroes OUT_AT to
start counting, so the time before a run is not a pause).
"""
(STOP, NPORTS, NDEVS, NOW, ITERS, STATE, REASON, IDLE_ITERS, YIELD, WAKE_PUBLISH, IDLE_NS,
 RUN_NS, POLL_ALL, POLLS) = range(14)
VAG_N, VAG_DUE, VAG_STEP, VAG_AT = 16, 17, 18, 19
SEP_NS, SEP_PER_MSG_PS = 20, 21
OUT_AT, PAUSES, PAUSE_NS, PAUSE_MAX = 22, 23, 24, 25
N_CTL = 32
