"""The record, in a ``.et``'s GlobalMetadata, of the thread each replay thread was recorded
on: the host ET numbers its threads (``tid`` 1, 2, ...), Kineto records the operating
system's thread id and often a name (``pt_autograd_0``). ``chakra_trace_link`` pairs them
(ET+ ``chakra_link.threads``), ``chakra_converter`` writes them here, and timelines name
their tracks by them.

The attribute ``threads`` holds a JSON list of objects as a ``string_val``
(``[{"tid":1,"kineto_pid":4711,"kineto_tid":4711,"name":"pt_main_thread"}]``), an extra
attribute the reference tools and ASTRA-sim read past. A file without it names no thread.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import msgspec

from chakra.errors import PathLike
from chakra.et.attributes import get_str_attr, set_attr
from chakra.ingest.et_plus_model import RecordedThread

logger = logging.getLogger(__name__)

#: The GlobalMetadata attribute's name.
THREADS_ATTR = "threads"


_DECODER = msgspec.json.Decoder(list[RecordedThread])


def set_threads(metadata: Any, threads: Sequence[RecordedThread]) -> None:
    """Record ``threads`` in ``metadata`` (nothing when there are none)."""
    if threads:
        set_attr(metadata, THREADS_ATTR, msgspec.json.encode(list(threads)).decode(), "string_val")


def get_threads(metadata: Any, path: PathLike) -> list[RecordedThread]:
    """The threads recorded in ``metadata`` (of the file ``path``); none when it records
    none, or (with a warning: they only name tracks) when the record cannot be read."""
    text = get_str_attr(metadata, THREADS_ATTR)
    if text is None:
        return []
    try:
        return _DECODER.decode(text)
    except (msgspec.DecodeError, RecursionError):
        logger.warning("%s: the GlobalMetadata's %r attribute is not a list of threads; "
                       "tracks are named by replay thread only", path, THREADS_ATTR)  # fmt: skip
        return []
