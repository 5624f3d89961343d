"""Tell what kind of trace a file holds, by content (never by name)."""

from __future__ import annotations

import enum
from typing import Union

from chakra.errors import PathLike, TraceFormatError
from chakra.fileio import read_input
from chakra.ingest.device_loader import load_device_trace
from chakra.ingest.device_model import DeviceTrace
from chakra.ingest.host_loader import load_host_trace
from chakra.ingest.host_model import HostTrace
from chakra.ingest.json_input import object_keys, read_json_bytes


class TraceKind(enum.Enum):
    HOST_ET = "host execution trace"
    KINETO = "Kineto trace"
    CHAKRA_ET = "Chakra ET"


def looks_like_json(data: bytes) -> bool:
    """Whether the first non-blank byte opens a JSON object or list (looked for a page at a
    time: ``data`` may be a whole multi-GB trace, which ``lstrip`` would copy)."""
    for start in range(0, len(data), 4096):
        head = data[start : start + 4096].lstrip()
        if head:
            return head[:1] in (b"{", b"[")
    return False


def sniff_kind(path: PathLike) -> TraceKind:
    """JSON traces are told apart later by their keys; anything else is taken as a Chakra ET."""
    head = read_input(path, 256)
    if not head:
        raise TraceFormatError(path, "empty file")
    return TraceKind.HOST_ET if looks_like_json(head) else TraceKind.CHAKRA_ET


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
