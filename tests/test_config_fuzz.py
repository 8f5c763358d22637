"""Bad configuration, property-tested: every shipped experiment file with
random keys, values of the wrong type, bad units and random deletions gives
either a valid experiment or a ConfigError that names the file and the key,
never another exception; topology tables likewise (and a generated one).
Validation builds nothing, so nothing can be left half-built."""
import copy
import glob
import os
import tomllib

from hypothesis import HealthCheck, given, settings, strategies as st

from taurus.errors import ConfigError
from taurus.experiment import schema
from taurus.tools import topology as T

ROOT = os.path.join(os.path.dirname(__file__), "..")
EXAMPLES = {os.path.basename(p): tomllib.load(open(p, "rb"))
            for p in sorted(glob.glob(os.path.join(ROOT, "examples", "*.toml")))}
TOPOLOGIES = {os.path.basename(p): tomllib.load(open(p, "rb"))
              for p in sorted(glob.glob(os.path.join(ROOT, "taurus", "tools", "topologies",
                                                     "*.toml")))}
TOPOLOGIES["fat_tree"] = {"topology": {"name": "ft", "fat_tree": {"k": 4}}}
TOPOLOGIES["leaf_spine"] = {"topology": {"name": "ls", "leaf_spine": {"leaves": 2}}}

# values of every kind a file can hold, and the shapes that break parsers
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=True),
    st.sampled_from(["", "10Gbit", "-5us", "1e99MB", "3", "x", "dctcp", "nan", "inf",
                     "h1", "s1", "10.0.0.1", "10ms", "0", "native", "agent", "ecn"]),
    st.text(max_size=12), st.lists(st.integers(0, 5), max_size=3),
    st.lists(st.text(max_size=3), max_size=3), st.builds(dict), st.builds(lambda: [{}]),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


def _paths(node, prefix=()):
    """Every (path, value) in a TOML tree, tables and arrays included."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


@st.composite
def mutated(draw, files):
    name = draw(st.sampled_from(sorted(files)))
    data = copy.deepcopy(files[name])
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p, _ in _paths(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for k in path[:-1]:
            parent = parent[k]
        op = draw(st.sampled_from(["set", "delete", "add"]))
        if op == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=8))] = draw(VALUES)
        else:
            parent[path[-1]] = draw(VALUES)
    return name, data


def _check(fn, name, data):
    try:
        fn(data, name)
    except ConfigError as e:
        assert e.file == name, (e.file, name, str(e))
        assert e.message and str(e).startswith(name)
    # anything else propagates: a traceback is the bug this test finds


@settings(max_examples=500, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(mutated(EXAMPLES))
def test_bad_experiment_files_give_a_clear_error(case):
    name, data = case
    _check(lambda d, n: schema.from_dict(d, source=n, base_dir=os.path.join(ROOT, "examples")),
           name, data)


@settings(max_examples=500, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(mutated(TOPOLOGIES))
def test_bad_topology_files_give_a_clear_error(case):
    name, data = case
    _check(lambda d, n: T.from_dict(d, source=n), name, data)
