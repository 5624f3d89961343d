"""Streaming JSON output: arrays written element by element, and the one time conversion.

Only the ends of a document are built as text; each element is encoded by msgspec and
buffered in small batches, so memory does not grow with the number of elements.
"""

from __future__ import annotations

from typing import IO, Union

import msgspec

Number = Union[int, float]
_FLUSH_BYTES = 1 << 20


class TimeFormat:
    """Converts the engine's integer nanoseconds to trace microseconds, once, at the writer.

    Float style keeps nanosecond resolution (3 decimals, exact for the job's clock range);
    integer style truncates both ends to whole microseconds, which keeps every ordering
    (``a <= b`` stays true) because truncation is monotonic.
    """

    __slots__ = ("integer",)

    def __init__(self, integer: bool) -> None:
        self.integer = integer

    def ts(self, ns: int) -> Number:
        return ns // 1000 if self.integer else ns / 1000

    def span(self, start_ns: int, end_ns: int) -> tuple[Number, Number]:
        """``(ts, dur)`` in µs for the interval [start_ns, end_ns]."""
        if self.integer:
            start = start_ns // 1000
            return start, end_ns // 1000 - start
        return start_ns / 1000, (end_ns - start_ns) / 1000


class ArrayWriter:
    """Writes ``[e1,e2,...]`` to a binary stream one element at a time.

    The opening bracket is written by :meth:`open`, the closing one by :meth:`close`; the
    writer adds commas and a newline between elements.
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._encode = msgspec.json.Encoder().encode
        self._buffer: list[bytes] = []
        self._size = 0
        self._first = True
        self.count = 0

    def open(self) -> None:
        self._stream.write(b"[\n")

    def write(self, element: object) -> None:
        """Append one element (anything msgspec can encode)."""
        data = self._encode(element)
        if self._first:
            self._first = False
        else:
            self._buffer.append(b",\n")
        self._buffer.append(data)
        self.count += 1
        self._size += len(data) + 2
        if self._size >= _FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        self._stream.write(b"".join(self._buffer))
        self._buffer.clear()
        self._size = 0

    def close(self) -> None:
        """Flush and write the closing bracket."""
        self.flush()
        self._stream.write(b"\n]")


def encode_members(mapping: dict) -> bytes:
    """``"k": v, ...`` of ``mapping`` without braces, to splice around a streamed array."""
    return msgspec.json.encode(mapping)[1:-1]
