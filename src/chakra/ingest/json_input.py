"""Read a JSON trace file (plain or gzip, told apart by content) and decode it with msgspec.

Decoding goes straight into typed structs, skipping every key the model does not name, which
is both the fastest way to parse a trace in Python and the leanest in memory. Every failure
becomes one :class:`~chakra.errors.TraceFormatError` naming the file and what is wrong.
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Iterator
from typing import IO, Any, Optional

import msgspec

from chakra.errors import ChakraError, PathLike, TraceFormatError
from chakra.fileio import read_input

_JSON_PATH = re.compile(r"at `\$(.*)`$")
#: A JSON string or a bracket: what :func:`nesting_offset` scans for.
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
#: The depth :func:`nesting_offset` reports (Python's decoders give up near 1,000 levels).
DEEP_NESTING = 500


def nesting_offset(data: bytes, limit: int = DEEP_NESTING) -> Optional[int]:
    """The byte offset of the bracket that opens nesting level ``limit`` (None: none does).

    Only for the error path of a document too deep to decode: a scan of the whole text."""
    depth = 0
    for match in _TOKENS.finditer(data):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth >= limit:
                return match.start()
        elif token in (b"]", b"}"):
            depth -= 1
    return None


def too_deep(path: PathLike, data: Any = None, what: str = "JSON") -> TraceFormatError:
    """The error for a document nested deeper than Python can decode (RecursionError);
    ``data``, the whole document (bytes or str), locates the error."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    offset = nesting_offset(bytes(data)) if isinstance(data, (bytes, bytearray)) else None
    return TraceFormatError(
        path, f"not a valid {what}: JSON nested deeper than Python can decode", offset
    )


def decode_or_raise(
    path: PathLike, data: Any, decoder: Any, what: str = "JSON", *, locate: bool = True
) -> Any:
    """``decoder.decode(data)`` (a msgspec decoder, or any object with ``decode``), with a
    document nested too deep for Python (RecursionError) reported as one
    :class:`~chakra.errors.TraceFormatError` naming ``path``; other errors pass through.
    ``locate``: ``data`` is the whole file, so the error can give the byte offset."""
    try:
        return decoder.decode(data)
    except RecursionError:
        raise too_deep(path, data if locate else None, what) from None


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building millions of acyclic objects.

    Decoded JSON holds no reference cycles, but each allocation batch would otherwise
    trigger collections that traverse everything built so far (quadratic-looking slowdowns).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def read_json_bytes(path: PathLike) -> bytes:
    """The whole (decompressed) content of ``path``."""
    return read_input(path)


def describe_decode_error(exc: msgspec.MsgspecError) -> str:
    """msgspec's message, with its JSON path made readable (``$.nodes[3].id`` → ``nodes[3].id``)."""
    message = str(exc)
    match = _JSON_PATH.search(message)
    if match:
        where = match.group(1).lstrip(".") or "top level"
        message = f"{message[: match.start()].rstrip(' -')} (at {where})"
    return message


def decode_json(path: PathLike, data: bytes, decoder: msgspec.json.Decoder, what: str) -> Any:
    """Decode ``data`` with ``decoder``; a malformed or mistyped document is one error line."""
    if not data or data.isspace():  # not strip(): that copies a document with end spaces
        raise TraceFormatError(path, f"empty file; expected a {what} JSON document")
    try:
        return decode_or_raise(path, data, decoder, what)
    except msgspec.DecodeError as exc:
        raise TraceFormatError(path, f"not a valid {what}: {describe_decode_error(exc)}") from exc


def decode_element(
    path: PathLike,
    elements: list[msgspec.Raw],
    index: int,
    decoder: msgspec.json.Decoder,
    what: str,
    key: str = "nodes",
) -> Any:
    """Element ``index`` of a document's ``key`` list, which was decoded as raw JSON views so
    that elements can be decoded one at a time; an error names it (``nodes[3].id``) as
    :func:`decode_json` would have for the whole document."""
    try:
        return decode_or_raise(path, elements[index], decoder, what, locate=False)
    except msgspec.DecodeError as exc:
        message = str(exc)
        match = _JSON_PATH.search(message)
        inner = match.group(1) if match else ""
        message = message[: match.start()].rstrip(" -") if match else message
        located = msgspec.DecodeError(f"{message} - at `$.{key}[{index}]{inner}`")
        raise TraceFormatError(
            path, f"not a valid {what}: {describe_decode_error(located)}"
        ) from exc


def decode_trace(
    path: PathLike, data: bytes, decoder: msgspec.json.Decoder, what: str, *, other: tuple
) -> Any:
    """:func:`decode_json`, saying so when the file is the ``other`` kind of trace.

    ``other`` is ``(key, kind)``: a top-level key that only the other kind has, and its name.
    """
    try:
        return decode_json(path, data, decoder, what)
    except TraceFormatError as exc:
        key, kind = other
        if key in top_level_keys(data):
            raise TraceFormatError(path, f"this is a {kind} (it has {key}), not a {what}") from exc
        raise


def top_level_keys(data: bytes) -> list[str]:
    """The keys of a JSON object document (empty if it is not one), to tell kinds apart."""
    try:
        return object_keys("", data)
    except TraceFormatError:
        return []


def object_keys(path: PathLike, data: bytes) -> list[str]:
    """The top-level keys of a JSON object document; invalid JSON raises TraceFormatError."""
    try:
        decoded = decode_or_raise(path, data, _OBJECT_DECODER)
    except msgspec.DecodeError as exc:
        raise TraceFormatError(
            path, f"not a valid JSON object: {describe_decode_error(exc)}"
        ) from exc
    return list(decoded)


_OBJECT_DECODER = msgspec.json.Decoder(dict[str, msgspec.Raw])


#: Items of a top-level list encoded at once by :func:`dump_finite`'s fast path.
_CHUNK_ITEMS = 10_000


def dump_finite(data: Any, out: IO[str], path: PathLike, **options: Any) -> None:
    """``json.dump(data, out, **options)``, the same bytes, refusing NaN and ±Infinity (not
    JSON) with one ChakraError naming ``path`` instead of writing a file no JSON reader
    accepts. Without options, a dict's values and a list's items are encoded in chunks by
    the C encoder (``json.dump`` streams through the pure-Python one: 14 of 23 s writing a
    64-rank pipeline's views), holding one chunk's text at a time."""
    try:
        if options:
            json.dump(data, out, allow_nan=False, **options)
        else:
            _dump_chunked(data, out)
    except ValueError as exc:
        raise ChakraError(f"{path}: cannot write it as JSON: {exc}") from None


def _dump_chunked(data: Any, out: IO[str]) -> None:
    """``json.dump(data, out, allow_nan=False)`` a dict key and a list chunk at a time."""
    if isinstance(data, dict) and all(isinstance(key, str) for key in data):
        out.write("{")
        for k, (key, value) in enumerate(data.items()):
            out.write(f"{', ' if k else ''}{json.dumps(key)}: ")
            _dump_chunked(value, out)
        out.write("}")
    elif isinstance(data, list) and len(data) > _CHUNK_ITEMS:
        out.write("[")
        for k in range(0, len(data), _CHUNK_ITEMS):
            text = json.dumps(data[k : k + _CHUNK_ITEMS], allow_nan=False)
            out.write(f"{', ' if k else ''}{text[1:-1]}")
        out.write("]")
    else:
        out.write(json.dumps(data, allow_nan=False))
