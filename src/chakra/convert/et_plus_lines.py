"""Read ET+ written by our linker a line at a time, so the file's bytes are never all in
memory at once.

``chakra.link.et_plus.write_et_plus`` writes the host ET's header keys on the first line,
``"chakra_link": {...},`` on the second, ``"nodes": [`` on the third, then one node per line
(each but the last followed by a comma) and ``]}`` on the last. A file of exactly that layout
is read here line by line; anything else (another producer's ET+, a host ET, a damaged file)
returns None, and the caller decodes the whole document, which also gives the errors.

The converter reads such a file twice (see :func:`reread_nodes`): once for the graph, keeping
only what it needs of each node, and once more to write every node with all its fields.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO, Callable, Optional

import msgspec

from chakra.errors import ChakraError, PathLike, TraceFormatError
from chakra.fileio import open_binary_input
from chakra.progress import reading

_NODES_LINE = b'"nodes": ['
_LINK_PREFIX = b'"chakra_link": '
#: RecursionError: JSON nested too deep; the whole-document decode reports it naming the file
_READ_ERRORS = (msgspec.DecodeError, OSError, EOFError, ValueError, zlib.error, RecursionError)


def read_by_lines(
    path: PathLike,
    header_decoder: msgspec.json.Decoder,
    decode_node: Callable[[msgspec.Raw], Any],
) -> Optional[tuple[Any, list[Any]]]:
    """The decoded header (``header_decoder`` on the document without its nodes) and every
    node as ``decode_node`` turns it, or None when the file does not have the layout above
    or a line does not decode (the caller's whole-document decode then reports it)."""
    try:
        stream = open_binary_input(path).stream
    except ChakraError:
        return None
    try:
        header_lines = _header_lines(stream)
        if header_lines is None:
            return None
        first, link = header_lines
        header = header_decoder.decode(first + link.rstrip().rstrip(b",") + b',"nodes":[]}')
        lines = reading(_node_lines(stream), stream, f"loading ET+ {path}")
        nodes = [decode_node(raw) for raw in lines]
        return header, nodes
    except (_LayoutError, *_READ_ERRORS):
        return None
    finally:
        stream.close()


def reread_nodes(
    path: PathLike, decode_node: Callable[[msgspec.Raw], Any], skip: int = 0
) -> Iterator[Any]:
    """Every node of a file :func:`read_by_lines` has read, decoded again one at a time, in
    file order, but the first ``skip`` (passed over undecoded). Raises TraceFormatError
    when the file no longer has that layout (it changed since it was first read)."""
    stream = open_binary_input(path).stream
    try:
        if _header_lines(stream) is None:
            raise _LayoutError
        for index, raw in enumerate(_node_lines(stream)):
            if index < skip:
                continue
            try:
                yield decode_node(raw)
            except msgspec.DecodeError as exc:
                raise TraceFormatError(path, f"nodes[{index}]: {exc}") from exc
    except (_LayoutError, OSError, EOFError, ValueError, zlib.error) as exc:
        raise TraceFormatError(
            path, f"the file changed while it was converted ({exc or 'cut short'})"
        ) from exc
    finally:
        stream.close()


class _LayoutError(Exception):
    """The lines do not have the layout (no closing line, or lines after it)."""


def _header_lines(stream: BinaryIO) -> Optional[tuple[bytes, bytes]]:
    first, link, nodes_line = stream.readline(), stream.readline(), stream.readline()
    if nodes_line.rstrip() != _NODES_LINE or not link.startswith(_LINK_PREFIX):
        return None
    return first, link


def _node_lines(stream: BinaryIO) -> Iterator[msgspec.Raw]:
    """Each node line's JSON, up to the closing line (raises _LayoutError when there is none,
    when anything follows it, or when a node line but the last lacks its comma, or the last
    has one: the whole-document decode then reports where)."""
    pending = None  # the previous node line: its comma tells whether another node follows
    for line in stream:
        body = line.rstrip()
        if body == b"]}":
            if pending is not None and pending.endswith(b","):
                raise _LayoutError
            if any(rest.strip() for rest in stream):
                raise _LayoutError
            if pending is not None:
                yield msgspec.Raw(pending)
            return
        if pending is not None:
            if not pending.endswith(b","):
                raise _LayoutError
            yield msgspec.Raw(pending[:-1])
        pending = body
    raise _LayoutError
