"""Writer of Chakra ET files: GlobalMetadata, then size-prefixed Nodes; atomic, optional gzip."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from typing import Any, BinaryIO, Optional

from chakra.errors import EtFormatError, FileAccessError, PathLike
from chakra.et.framing import encode_varint
from chakra.et.reader import NAMELESS_NODE
from chakra.fileio import AtomicFile, AtomicGroup, location
from chakra.fileio.scoped import Scoped


class EtWriter(Scoped):
    """Write a ``.et`` file that appears under its name only when :meth:`close` succeeds.

    The GlobalMetadata is written on creation; :meth:`write` appends one node. A name ending
    in ``.gz`` is written as gzip (reproducibly: no timestamp). Used as a context manager, an
    exception inside the block discards the file; without one, call :meth:`close` to commit
    or :meth:`abort` to discard. With a ``group`` (:class:`~chakra.fileio.AtomicGroup`),
    :meth:`close` finishes the file and the group moves it into place with its others.
    """

    def __init__(self, path: PathLike, metadata: Any, group: Optional[AtomicGroup] = None) -> None:
        self.path = location(path)
        self.nodes_written = 0
        self._output = AtomicFile(self.path) if group is None else group.add(self.path)
        self._stream = self._output.stream
        try:
            self._write_message(metadata)
        except BaseException:
            self._output.discard()
            raise

    def _write_message(self, message: Any) -> None:
        body = message if isinstance(message, bytes) else message.SerializeToString()
        try:
            self._stream.write(encode_varint(len(body)) + body)
        except OSError as exc:
            raise FileAccessError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def write(self, node: Any) -> None:
        """Append one ``Node`` message (or its serialized bytes). A node that
        :class:`~chakra.et.reader.EtReader` would refuse (no name and no type; empty bytes)
        raises :class:`~chakra.errors.EtFormatError`: what we write, we can read back."""
        self._check(node)
        self._write_message(node)
        self.nodes_written += 1

    def append_framed(self, framed: BinaryIO, count: int) -> None:
        """Append ``count`` nodes already framed as a ``.et`` frames them (each size-prefixed,
        each checked by :func:`check_serialized`), read from ``framed``."""
        try:
            shutil.copyfileobj(framed, self._stream)
        except OSError as exc:
            raise FileAccessError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
        self.nodes_written += count

    def write_all(self, nodes: Iterable[Any]) -> None:
        """Append every node of ``nodes`` in order (messages or their serialized bytes)."""
        for node in nodes:
            self.write(node)

    def _check(self, node: Any) -> None:
        if isinstance(node, bytes):
            check_serialized(self.path, node, self.nodes_written + 1)
        elif not node.name and not node.type:
            raise EtFormatError(
                self.path, f"cannot write node #{self.nodes_written + 1}: it {NAMELESS_NODE}"
            )

    def close(self) -> None:
        """Finish the file and move it into place."""
        self._output.commit()

    def abort(self) -> None:
        """Discard everything written; an existing file at ``path`` stays as it was."""
        self._output.discard()

    def finish(self, succeeded: bool) -> None:
        """At the end of a ``with`` block: :meth:`close` if it succeeded, else :meth:`abort`."""
        if succeeded:
            self.close()
        else:
            self.abort()


def check_serialized(path: PathLike, body: bytes, number: int) -> None:
    """Raise :class:`~chakra.errors.EtFormatError` for the ``number``-th node of ``path``
    when its serialized ``body`` is one :class:`~chakra.et.reader.EtReader` would refuse
    (empty: no name and no type)."""
    if not body:
        raise EtFormatError(path, f"cannot write node #{number}: it {NAMELESS_NODE}")


def write_et(
    path: PathLike, metadata: Any, nodes: Iterable[Any], group: Optional[AtomicGroup] = None
) -> int:
    """Write ``metadata`` and ``nodes`` to ``path`` atomically (with a ``group``: when the
    group commits); return the node count."""
    with EtWriter(path, metadata, group) as writer:
        writer.write_all(nodes)
        return writer.nodes_written
