"""Tell what kind of trace a file holds, by content (never by name); peek at a Kineto
trace's rank without loading it."""

from __future__ import annotations

import enum
import json
import zlib
from collections.abc import Collection
from typing import Optional, Union

from chakra.errors import ChakraError, PathLike, TraceFormatError, WrongTraceKindError
from chakra.fileio import open_binary_input, read_input
from chakra.ingest.device_loader import load_device_trace
from chakra.ingest.device_model import DeviceTrace
from chakra.ingest.host_loader import load_host_trace
from chakra.ingest.host_model import HostTrace
from chakra.ingest.json_input import object_keys, read_json_bytes


class TraceKind(enum.Enum):
    HOST_ET = "host execution trace"
    KINETO = "Kineto trace"
    CHAKRA_ET = "Chakra ET"
    ET_PLUS = "ET+ (linked trace)"


#: How much of a file the peeks read: its first (and for a rank, last) this many bytes.
PEEK_BYTES = 1 << 20
# Top-level keys that only one kind of JSON trace has, as they appear in the file: the
# first found decides, except that an ET+ is a host ET with chakra_link before its nodes.
_LINK_KEY, _NODES_KEY = b'"chakra_link"', b'"nodes"'
_KEYS_OF = (
    (b'"traceEvents"', TraceKind.KINETO), (b'"schemaVersion"', TraceKind.KINETO),
    (b'"distributedInfo"', TraceKind.KINETO), (b'"deviceProperties"', TraceKind.KINETO),
    (_NODES_KEY, TraceKind.HOST_ET), (b'"schema"', TraceKind.HOST_ET),
)  # fmt: skip
_DISTRIBUTED = b'"distributedInfo"'
_EVENTS = b'"traceEvents"'


def looks_like_json(data: bytes) -> bool:
    """Whether the first non-blank byte opens a JSON object or list (looked for a page at a
    time: ``data`` may be a whole multi-GB trace, which ``lstrip`` would copy)."""
    for start in range(0, len(data), 4096):
        head = data[start : start + 4096].lstrip()
        if head:
            return head[:1] in (b"{", b"[")
    return False


def sniff_kind(path: PathLike) -> TraceKind:
    """JSON traces are told apart later by their keys; anything else is taken as a Chakra ET.
    A file that starts with nothing but blanks is taken as JSON (its reader says what it is)."""
    head = read_input(path, 256)
    if not head:
        raise TraceFormatError(path, "empty file")
    if head.isspace():  # JSON's blanks: no .et starts with 256 of them (nor a short one)
        return TraceKind.HOST_ET
    return TraceKind.HOST_ET if looks_like_json(head) else TraceKind.CHAKRA_ET


def trace_kind(path: PathLike) -> Optional[TraceKind]:
    """The kind of trace ``path`` holds, by content: Chakra ET when it is not JSON, else what
    :func:`peek_kind` sees (None when its first part names no kind-specific key)."""
    kind = sniff_kind(path)
    return kind if kind is TraceKind.CHAKRA_ET else peek_kind(path)


def require_kind(path: PathLike, accepted: Collection[TraceKind], tool: str, wants: str) -> None:
    """Raise :class:`WrongTraceKindError` ("PATH: this is a Kineto trace; chakra_x wants
    ...") when ``path`` holds a kind of trace not in ``accepted``; a JSON file whose kind
    cannot be told from its first part passes, and so does one that cannot be read (empty,
    missing, corrupt gzip): its reader reports what is wrong with it, in its own words.
    Reads at most :data:`PEEK_BYTES` of the file."""
    try:
        kind = trace_kind(path)
    except ChakraError:
        return
    if kind is not None and kind not in accepted:
        article = "an" if kind.value[0] in "AEIOU" else "a"
        raise WrongTraceKindError(path, f"this is {article} {kind.value}; {tool} wants {wants}")


def load_json_trace(path: PathLike) -> Union[HostTrace, DeviceTrace]:
    """Load a host ET or a Kineto trace, whichever ``path`` holds (read once)."""
    data = read_json_bytes(path)
    if not looks_like_json(data):
        raise TraceFormatError(path, "not a JSON trace (host execution trace or Kineto trace)")
    keys = object_keys(path, data)
    if "nodes" in keys:
        return load_host_trace(path, data)
    if "traceEvents" in keys:
        return load_device_trace(path, data)
    shown = ", ".join(keys[:6]) or "none readable"
    raise TraceFormatError(
        path, f"neither a host execution trace nor a Kineto trace (top-level keys: {shown})"
    )


def peek_kind(path: PathLike) -> Optional[TraceKind]:
    """The kind of JSON trace ``path`` holds, from the first of its kind-specific top-level
    keys in its first :data:`PEEK_BYTES` (an ET+ names ``chakra_link`` before its
    ``nodes``); None when that part shows none. Costs one read of that part, decompressed."""
    head = read_input(path, PEEK_BYTES)
    found = sorted(
        (at, index)
        for index, (key, _) in enumerate(_KEYS_OF)
        for at in (head.find(key),)
        if at >= 0
    )
    if not found:
        return None
    kind = _KEYS_OF[found[0][1]][1]
    link, nodes = head.find(_LINK_KEY), head.find(_NODES_KEY)
    if kind is TraceKind.HOST_ET and link >= 0 and (nodes < 0 or link < nodes):
        return TraceKind.ET_PLUS
    return kind


def peek_rank(path: PathLike, *, whole_gzip: bool = True) -> Optional[int]:
    """``distributedInfo.rank`` of a Kineto trace, read without loading the trace; None when
    the trace has no such key (or it holds no rank).

    Kineto writes ``distributedInfo`` before ``traceEvents`` (PyTorch 2) or after them (some
    older writers): the first :data:`PEEK_BYTES` are read, then, when the key is not there,
    the last ones. A plain file's end is a seek away; a gzip file's end is only reached by
    inflating all of it (~2 s for a 100 MB file holding 1.2 GB of JSON, with no more memory
    than the window), which ``whole_gzip=False`` skips (None)."""
    opened = open_binary_input(path)
    stream, is_gzip = opened.stream, opened.is_gzip
    with stream:
        try:
            head = stream.read(PEEK_BYTES)
            events = head.find(_EVENTS)
            at = head.find(_DISTRIBUTED)
            if at >= 0 and (events < 0 or at < events):
                return _rank_at(head, at)
            if len(head) < PEEK_BYTES:  # that was the whole file
                at = head.rfind(_DISTRIBUTED)
                return _rank_at(head, at) if at > events else None
            if is_gzip and not whole_gzip:
                return None
            tail = _gzip_tail(stream) if is_gzip else _plain_tail(stream)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceFormatError(path, f"cannot read: {exc}") from exc
    at = tail.rfind(_DISTRIBUTED)
    return _rank_at(tail, at) if at >= 0 else None


def _plain_tail(stream: object) -> bytes:
    size = stream.seek(0, 2)  # type: ignore[attr-defined]
    stream.seek(max(size - PEEK_BYTES, 0))  # type: ignore[attr-defined]
    return stream.read()  # type: ignore[attr-defined,no-any-return]


def _gzip_tail(stream: object) -> bytes:
    tail = b""
    read = stream.read  # type: ignore[attr-defined]
    for chunk in iter(lambda: read(PEEK_BYTES), b""):
        tail = (tail + chunk)[-PEEK_BYTES:]
    return tail


def _rank_at(window: bytes, at: int) -> Optional[int]:
    """The ``rank`` of the ``distributedInfo`` object whose key starts at ``at``; None when
    the object is cut off by the window's edge or holds no integer rank."""
    text = window[at + len(_DISTRIBUTED) :].decode("utf-8", errors="replace")
    colon = text.find(":")
    if colon < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text, colon + 1 + _blanks(text, colon + 1))
    except (json.JSONDecodeError, ValueError):
        return None
    rank = value.get("rank") if isinstance(value, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else None


def _blanks(text: str, start: int) -> int:
    return len(text[start : start + 64]) - len(text[start : start + 64].lstrip())
