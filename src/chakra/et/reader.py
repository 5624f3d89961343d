"""Streaming reader of Chakra ET files (plain or gzip)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Optional

from google.protobuf.message import DecodeError

from chakra.errors import EtFormatError, PathLike
from chakra.et.framing import iter_framed_messages
from chakra.et.schema import GlobalMetadata, Node
from chakra.fileio import location, open_binary_input
from chakra.fileio.scoped import Scoped
from chakra.progress import reading

#: Why a node message without a name and a type (NodeType 0, ``INVALID_NODE``) is refused,
#: by the reader and the writer alike.
NAMELESS_NODE = "has neither a name nor a type: not a Chakra ET node"
EMPTY_NODE = "is an empty message (a node has at least a name or a type)"


def _decode_error(reader: EtReader, what: str, exc: Exception, offset: int) -> EtFormatError:
    return EtFormatError(
        reader.path, f"cannot decode {what} ({exc})", offset, decompressed=reader.is_gzip
    )


class EtReader(Scoped):
    """Read a ``.et`` file: its :attr:`metadata` first, then iterate over its nodes.

    Gzip input is recognised by its magic bytes, whatever the file name. Iteration holds one
    node at a time, so memory does not grow with the file. The GlobalMetadata is read when
    the reader is created, so an empty or non-ET file fails at once. Every problem raises
    :class:`~chakra.errors.EtFormatError` (or ``FileAccessError``) naming the file and offset.
    A file can be iterated once; use it as a context manager or call :meth:`close`.
    """

    def __init__(self, path: PathLike, what: Optional[str] = None) -> None:
        self.path = location(path)
        #: how the progress of reading a big file is headed (default ``"reading <path>"``)
        self.what = what or f"reading {self.path}"
        opened = open_binary_input(self.path)
        self._stream, self.is_gzip = opened.stream, opened.is_gzip
        self._messages = iter_framed_messages(self._stream, self.path, decompressed=self.is_gzip)
        try:
            first = next(self._messages, None)
            if first is None:
                raise EtFormatError(
                    self.path,
                    "empty file; a Chakra ET starts with a GlobalMetadata message",
                    0,
                    decompressed=self.is_gzip,
                )
            try:
                self.metadata: Any = GlobalMetadata.FromString(first[1])
            except (DecodeError, RuntimeError, ValueError) as exc:
                raise _decode_error(self, "GlobalMetadata", exc, 0) from exc
        except BaseException:
            self.close()
            raise
        self.nodes_read = 0

    def __iter__(self) -> Iterator[Any]:
        """Each ``Node`` message in file order. A file of :data:`~chakra.progress.MIN_BYTES`
        or more on disk reports its progress by the bytes read (of the file as stored:
        compressed when gzip), as a phase :attr:`what` (:mod:`chakra.progress`)."""
        return reading(self._nodes(), self._stream, self.what)

    def _nodes(self) -> Iterator[Any]:
        from_string = Node.FromString
        try:
            for offset, body in self._messages:
                try:
                    node = from_string(body)
                except (DecodeError, RuntimeError, ValueError) as exc:
                    what = f"node #{self.nodes_read + 1}"
                    raise _decode_error(self, what, exc, offset) from exc
                if not node.name and not node.type:
                    # a gzip of zeros or spaces would read as endless such "nodes"
                    why = EMPTY_NODE if not body else NAMELESS_NODE
                    raise EtFormatError(
                        self.path,
                        f"node #{self.nodes_read + 1} {why}",
                        offset,
                        decompressed=self.is_gzip,
                    )
                self.nodes_read += 1
                yield node
        finally:
            self.close()

    def close(self) -> None:
        self._stream.close()

    def finish(self, succeeded: bool) -> None:
        self.close()


def read_et(path: PathLike) -> tuple[Any, list[Any]]:
    """Read a whole ``.et`` file into memory: ``(GlobalMetadata, [Node, ...])``."""
    with EtReader(path) as reader:
        return reader.metadata, list(reader)
