"""The reference's ``chakra.src.third_party.utils.protolib`` (gem5's protobuf helpers), for
scripts written against it: ``openFileRd``, ``encodeMessage`` and ``decodeMessage``.

Same framing (:mod:`chakra.et.framing`: a varint size before every message) and the same
signatures, without the reference's defects: a message of size 0 is an empty message, not the
end of the file; a file that cannot be opened raises :class:`~chakra.errors.FileAccessError`
instead of exiting the interpreter; a cut-off or undecodable message raises
:class:`~chakra.errors.EtFormatError`. New code should use :mod:`chakra.et` (``EtReader``,
``EtWriter``: streaming, atomic, gzip).
"""

from __future__ import annotations

from typing import Any, BinaryIO

from google.protobuf.message import DecodeError

from chakra.errors import EtFormatError, PathLike
from chakra.et.framing import MAX_VARINT_BYTES, encode_varint
from chakra.fileio import open_binary_input

__all__ = ["decodeMessage", "encodeMessage", "openFileRd"]


def openFileRd(in_file: PathLike) -> BinaryIO:  # noqa: N802 (the reference's name)
    """Open a ``.et`` file for reading, inflating it when its content is gzip."""
    return open_binary_input(in_file).stream


def encodeMessage(out_file: BinaryIO, message: Any) -> None:  # noqa: N802
    """Write ``message`` to the binary stream ``out_file``, preceded by its size (varint)."""
    body = message.SerializeToString()
    out_file.write(encode_varint(len(body)) + body)


def _read_size(in_file: BinaryIO) -> int | None:
    """The varint at the stream's position; None at the end of the file."""
    value = 0
    for index in range(MAX_VARINT_BYTES):
        byte = in_file.read(1)
        if not byte:
            if index == 0:
                return None
            raise EtFormatError(_name(in_file), "file ends inside a message size")
        value |= (byte[0] & 0x7F) << (7 * index)
        if byte[0] < 0x80:
            return value
    raise EtFormatError(_name(in_file), f"message size longer than {MAX_VARINT_BYTES} bytes")


def decodeMessage(in_file: BinaryIO, message: Any) -> bool:  # noqa: N802
    """Read the next message of ``in_file`` into ``message`` (cleared first); False at the
    end of the file, True otherwise."""
    size = _read_size(in_file)
    if size is None:
        return False
    body = in_file.read(size)
    if len(body) != size:
        raise EtFormatError(_name(in_file), f"file ends inside a message of {size} bytes")
    try:
        message.ParseFromString(body)
    except DecodeError as exc:
        what = type(message).__name__
        raise EtFormatError(_name(in_file), f"cannot decode {what} ({exc})") from exc
    return True


def _name(in_file: BinaryIO) -> str:
    return str(getattr(in_file, "name", "<stream>"))
