"""Read ET+ written by our linker a line at a time, so the file's bytes are never all in
memory at once.

``chakra.link.et_plus.write_et_plus`` writes the host ET's header keys on the first line,
``"chakra_link": {...},`` on the second, ``"nodes": [`` on the third, then one node per line
(each but the last followed by a comma) and ``]}`` on the last. A file of exactly that layout
is read here line by line; anything else (another producer's ET+, a host ET, a damaged file)
returns None, and the caller decodes the whole document, which also gives the errors.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable, Optional

import msgspec

from chakra.errors import ChakraError, PathLike
from chakra.fileio import open_binary_input

_NODES_LINE = b'"nodes": ['
_LINK_PREFIX = b'"chakra_link": '


def read_by_lines(
    path: PathLike,
    header_decoder: msgspec.json.Decoder,
    decode_node: Callable[[msgspec.Raw], Any],
) -> Optional[tuple[Any, list[Any]]]:
    """The decoded header (``header_decoder`` on the document without its nodes) and every
    node as ``decode_node`` turns it, or None when the file does not have the layout above
    or a line does not decode (the caller's whole-document decode then reports it)."""
    try:
        stream, _ = open_binary_input(path)
    except ChakraError:
        return None
    try:
        lines = iter(stream)
        first, link, nodes_line = next(lines, b""), next(lines, b""), next(lines, b"")
        if nodes_line.rstrip() != _NODES_LINE or not link.startswith(_LINK_PREFIX):
            return None
        header = header_decoder.decode(first + link.rstrip().rstrip(b",") + b',"nodes":[]}')
        nodes = []
        for line in lines:
            body = line.rstrip()
            if body == b"]}":
                if any(rest.strip() for rest in lines):
                    return None
                return header, nodes
            nodes.append(decode_node(msgspec.Raw(body.rstrip(b","))))
        return None  # no closing line: cut short
    except (msgspec.DecodeError, OSError, EOFError, ValueError, zlib.error):
        return None
    finally:
        stream.close()
