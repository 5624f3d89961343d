"""Checks of a host ET at reading, beyond what msgspec's typed decode does.

* The file must be valid UTF-8 throughout: op arguments are kept as raw JSON text
  (:class:`~chakra.ingest.host_model.OpArgs`), which msgspec does not validate when it skips
  them, so a bad byte would otherwise surface later (or reach the ET+ written by
  chakra_trace_link). :func:`check_utf8` scans the bytes once, in chunks, and names the
  byte offset of the first bad sequence.
* No number may have :data:`MAX_DIGITS` digits or more (Python's ``int`` refuses to parse
  them, so an ET+ passing one through could not be read back): :func:`check_digits`.
* The ``values``, ``shapes`` and ``strides`` of an op's inputs/outputs must be JSON lists
  (``strides`` may be null) and ``types`` a list of strings: :func:`check_new_args` decodes
  each distinct argument text once, when first met, with a struct that skips the values.
"""

from __future__ import annotations

import codecs

import msgspec

from chakra.errors import PathLike, TraceFormatError
from chakra.ingest.host_model import HostOp, OpArgs
from chakra.ingest.json_input import describe_decode_error

#: Bytes :func:`check_utf8` decodes at a time.
_CHUNK = 1 << 24
#: Bytes :func:`check_digits` scans at a time: each scan copies and translates its chunk, so
#: a small one keeps those two transient copies in the CPU cache (64 KiB: fastest measured,
#: 0.03 s on a 30 MB host ET) and out of the peak memory (16 MiB chunks cost 25 MiB of peak RSS
#: to chakra_trace_link on that input, glibc keeping the freed copies' pages).
_DIGITS_CHUNK = 1 << 16
#: Python's default limit of digits in an int parsed from text (sys.get_int_max_str_digits).
MAX_DIGITS = 4300
_DIGITS_AS_ZERO = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))  # digits -> "0"


def check_digits(path: PathLike, data: bytes) -> None:
    """Raise TraceFormatError (with the byte offset) at a run of :data:`MAX_DIGITS` digits
    or more: a number no Python reader of the ET+ could parse. ~1 GB/s, in small chunks
    (each window overlaps the next by MAX_DIGITS bytes, so a run across a boundary is found)."""
    needle = b"0" * MAX_DIGITS
    view = memoryview(data)
    for start in range(0, len(data), _DIGITS_CHUNK):
        window = bytes(view[start : start + _DIGITS_CHUNK + MAX_DIGITS])
        at = window.translate(_DIGITS_AS_ZERO).find(needle)
        if at >= 0:
            raise TraceFormatError(path, f"a number of {MAX_DIGITS} digits or more", start + at)


def check_utf8(path: PathLike, data: bytes) -> None:
    """Raise TraceFormatError (with the byte offset) when ``data`` is not valid UTF-8."""
    if data.isascii():
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    for start in range(0, len(data), _CHUNK):
        pending = len(decoder.getstate()[0])  # bytes of a sequence the last chunk split
        try:
            decoder.decode(view[start : start + _CHUNK], final=start + _CHUNK >= len(data))
        except UnicodeDecodeError as exc:
            offset = start - pending + exc.start
            raise TraceFormatError(path, "invalid UTF-8 in the text", offset) from None


class _ArgShapes(msgspec.Struct, gc=False):
    values: msgspec.Raw = msgspec.Raw(b"[]")
    shapes: msgspec.Raw = msgspec.Raw(b"[]")
    types: list[str] = []
    strides: msgspec.Raw = msgspec.Raw(b"null")


_SHAPES = msgspec.json.Decoder(_ArgShapes)


def check_new_args(path: PathLike, op: HostOp, new: list[OpArgs]) -> None:
    """Raise TraceFormatError naming the node when its inputs/outputs lists are of the
    wrong JSON types. ``new`` lists the OpArgs made while reading ``op`` (the loader shares
    one per distinct text, so each text is decoded once); it is emptied."""
    if not new:
        return
    made = set(map(id, new))
    if id(op.inputs) in made:
        _check_args(path, op, "inputs", op.inputs)
    if id(op.outputs) in made and op.outputs is not op.inputs:
        _check_args(path, op, "outputs", op.outputs)
    new.clear()


def _check_args(path: PathLike, op: HostOp, which: str, args: OpArgs) -> None:
    try:
        parts = _SHAPES.decode(args.json)
    except msgspec.DecodeError as exc:
        problem = describe_decode_error(exc)
        raise TraceFormatError(path, f"node {op.id} ({op.name}): {which}: {problem}") from None
    for key in ("values", "shapes", "strides"):
        first = bytes(memoryview(getattr(parts, key))[:1])
        if first != b"[" and not (key == "strides" and first == b"n"):
            raise TraceFormatError(path, f"node {op.id} ({op.name}): {which}.{key} is not a list")
