"""Experiments: a TOML file in, a run directory of results out.

schema.py  read and validate an experiment file (errors name the key)
traffic.py expand the traffic tables into a deterministic plan of flows
runner.py  build the topology (virtual time or namespaces), run, collect, tear down
results.py summary.json, CSV time series, FCT slowdown bins, fairness
plots.py   PNG plots of a run directory
report.py  `taurus report`: runs side by side
cli.py     `taurus run` and `taurus report`
demo.py    `taurus demo`: the DCTCP dumbbell experiment
hog.py     host load: a CPU/memory hog in a cgroup inside a host's namespace
"""
