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
from typing import Any, Union

import msgspec

from chakra.errors import PathLike
from chakra.et.attributes import get_str_attr, set_attr

logger = logging.getLogger(__name__)

#: The GlobalMetadata attribute's name.
THREADS_ATTR = "threads"


class RecordedThread(msgspec.Struct, frozen=True, gc=False):
    """A replay thread (``tid``, as its nodes' ``tid`` attribute says) and the Kineto thread
    it was recorded on: process and thread id (the operating system's) and the name Kineto
    gave it ("" when none)."""

    tid: int
    kineto_pid: Union[int, str]
    kineto_tid: Union[int, str]
    name: str = ""

    def track_name(self) -> str:
        """The replay thread, then the profile's: ``thread 2 · thread 9001
        (pt_gloo_runloop)`` (Kineto's name), ``thread 2 · tid 9001`` (no name)."""
        return f"thread {self.tid} · {self.name or f'tid {self.kineto_tid}'}"


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
