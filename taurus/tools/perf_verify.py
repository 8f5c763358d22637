"""`taurus perf --verify`: every byte of a forward bulk stream checked at the
receiver.

The client sends its message (`-l` bytes from a seeded generator, the
same on both sides) again and again, copied into the send ring each time
(not sent in place, whose rotated ring contents nobody could predict).
perf -s reads the stream out after its header and compares each byte with
the pattern at its stream offset; when the stream ends (its CLOSE arrived,
or its receive row was reused) it prints one line

    taurus perf: verified 10.0.0.1 pdc 3: 123456789 bytes, 0 wrong

and the client's JSON has, per forward stream, the payload bytes ACKed to
it (`end.taurus.verify`): every ACKed byte must be among those verified.
"""
from __future__ import annotations

import numpy as np

SEED = 1          # the client's message generator (perf._client): both sides make it


def pattern(length: int) -> np.ndarray:
    """The message a --verify client sends, `length` bytes."""
    return np.random.default_rng(SEED).integers(0, 256, length, dtype=np.uint8)


class Verifier:
    """The receiving end of one verified stream: bytes seen, bytes wrong,
    the stream offset (after the header) of the first wrong byte."""

    def __init__(self, length: int):
        msg = pattern(length)
        self.twice = np.concatenate([msg, msg])   # any L bytes of the stream: one slice
        self.L = length
        self.n = 0
        self.wrong = 0
        self.first_wrong = -1

    def feed(self, data) -> None:
        b = np.frombuffer(data, np.uint8)
        i = 0
        while i < len(b):
            k = min(self.L, len(b) - i)
            o = (self.n + i) % self.L
            got, want = b[i:i + k], self.twice[o:o + k]
            if not np.array_equal(got, want):
                bad = np.flatnonzero(got != want)
                if self.first_wrong < 0:
                    self.first_wrong = self.n + i + int(bad[0])
                self.wrong += len(bad)
            i += k
        self.n += len(b)

    def line(self, peer: str, pdc: int) -> str:
        where = f" (first at offset {self.first_wrong})" if self.wrong else ""
        return f"taurus perf: verified {peer} pdc {pdc}: {self.n} bytes, {self.wrong} wrong{where}"
