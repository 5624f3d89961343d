"""Inputs that may or may not be gzip-compressed, told apart by content, not by name."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import BinaryIO

from chakra.errors import FileAccessError, PathLike, TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"


def open_binary_input(path: PathLike) -> tuple[BinaryIO, bool]:
    """Open ``path`` for binary reading, inflating it when it starts with the gzip magic.

    Returns the stream and whether it is gzip. Whatever the file's name, its first two bytes
    decide. A missing or unreadable file raises :class:`FileAccessError`; corrupt gzip data
    only shows up while reading (as ``OSError``, ``EOFError`` or ``zlib.error``), and callers
    report it with the offset they reached.
    """
    source = Path(path)
    try:
        raw = open(source, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    except OSError as exc:
        raise FileAccessError(f"cannot open {source}: {exc.strerror or exc}") from exc
    try:
        head = raw.peek(2)[:2]
    except OSError as exc:
        raw.close()
        raise FileAccessError(f"cannot read {source}: {exc.strerror or exc}") from exc
    if head != GZIP_MAGIC:
        return raw, False
    raw.close()
    try:
        return gzip.open(source, "rb"), True  # type: ignore[return-value]
    except OSError as exc:
        raise FileAccessError(f"cannot open {source}: {exc.strerror or exc}") from exc


def read_input(path: PathLike, size: int = -1) -> bytes:
    """The (decompressed) content of ``path``: all of it, or its first ``size`` bytes.

    Corrupt or truncated gzip data raises :class:`TraceFormatError` naming the file.
    """
    stream, is_gzip = open_binary_input(path)
    with stream:
        try:
            return stream.read(size)
        except (OSError, EOFError, zlib.error) as exc:
            if not is_gzip:
                raise FileAccessError(f"cannot read {path}: {exc}") from exc
            raise TraceFormatError(path, f"corrupt or truncated gzip data ({exc})") from exc
