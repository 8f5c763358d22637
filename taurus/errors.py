"""The one error of every config validator: ``ConfigError``, naming the file
and the key the bad value came from.

Each layer raises its own subclass (cc_algorithms.params.ConfigError,
experiment.schema.ExperimentError, tools.topology.TopologyError,
datapath.devices.switch.config.FeatureError), so callers may catch one kind
or all of them.  A ValueError, so ``except ValueError`` catches them too.

A top-level module: it imports nothing from taurus, so every layer may use it.
"""


class ConfigError(ValueError):
    """A value that cannot be used.  file: where it was read (a path,
    ``<dict>``, ...); key: the field in it (dotted); message: what was
    expected or went wrong.  str() is "<file>: <key>: <message>", without
    the parts that are None or empty."""

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None):
        self.file, self.key, self.message = file, key, message
        super().__init__(": ".join(str(x) for x in (file, key, message) if x))

    def __reduce__(self):
        # Subclasses take other constructor arguments: rebuild from the
        # fields, so the error crosses process boundaries (multiprocessing).
        return _rebuild, (type(self), self.args, self.__dict__.copy())


class SegmentBusy(FileExistsError):
    """A named shared-memory segment belongs to a live process (datapath/
    shm.py); the message names it.  ``taurus`` prints it as one line."""


def _rebuild(cls, args, fields):
    e = cls.__new__(cls)
    e.args = args
    e.__dict__.update(fields)
    return e
