"""Inputs that may or may not be gzip-compressed, told apart by content, not by name; at a
local path or at a URL (see :mod:`chakra.fileio.location`)."""

from __future__ import annotations

import gzip
import logging
import zlib
from pathlib import Path
from typing import BinaryIO, Optional

from chakra.errors import FileAccessError, PathLike, TraceFormatError
from chakra.fileio.location import is_url, open_url

logger = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b"
#: Deflate never inflates by more than this factor (1032:1), so an ISIZE trailer claiming
#: more than that for the file's size is not believed.
MAX_DEFLATE_RATIO = 1032
_GZIP_MIN_SIZE = 18  # a 10-byte header and an 8-byte trailer


def _open_raw(path: PathLike, *, buffered: bool = True) -> BinaryIO:
    """``path`` opened for binary reading (a local file, or a URL through fsspec).

    Unbuffered, a local file's ``read()`` allocates its result once, at the file's size; a
    buffered reader that has peeked would join its buffer with the rest (a transient 2x).
    """
    if is_url(path):
        return open_url(str(path), "rb")  # type: ignore[return-value]
    try:
        # returned to the caller, who closes it
        return open(path, "rb", buffering=-1 if buffered else 0)
    except OSError as exc:
        raise FileAccessError(f"cannot open {path}: {exc.strerror or exc}") from exc


def _starts_with_gzip_magic(raw: BinaryIO, path: PathLike) -> bool:
    """Whether ``raw`` (positioned at its start, and left there) begins with the gzip magic."""
    try:
        if hasattr(raw, "peek"):
            return raw.peek(2)[:2] == GZIP_MAGIC
        head = raw.read(2)
        raw.seek(0)
        return head == GZIP_MAGIC
    except OSError as exc:
        raw.close()
        raise FileAccessError(f"cannot read {path}: {exc.strerror or exc}") from exc


class _ClosingGzipFile(gzip.GzipFile):
    """A reading ``GzipFile`` over an open stream that closes that stream with itself."""

    def __init__(self, source: BinaryIO) -> None:
        super().__init__(fileobj=source, mode="rb")
        self._source = source

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._source.close()


def open_binary_input(path: PathLike) -> tuple[BinaryIO, bool]:
    """Open ``path`` for binary reading, inflating it when it starts with the gzip magic.

    Returns the stream and whether it is gzip. Whatever the file's name, its first two bytes
    decide. A missing or unreadable file raises :class:`FileAccessError`; corrupt gzip data
    only shows up while reading (as ``OSError``, ``EOFError`` or ``zlib.error``), and callers
    report it with the offset they reached. ``path`` may be a URL (``scheme://...``).
    """
    raw = _open_raw(path)
    if not _starts_with_gzip_magic(raw, path):
        return raw, False
    if is_url(path):
        return _ClosingGzipFile(raw), True  # type: ignore[return-value]
    raw.close()
    source = Path(path)
    try:
        return gzip.open(source, "rb"), True  # type: ignore[return-value]
    except OSError as exc:
        raise FileAccessError(f"cannot open {source}: {exc.strerror or exc}") from exc


def gzip_size_hint(raw: BinaryIO) -> Optional[int]:
    """The ISIZE trailer of the gzip stream ``raw`` (its last 4 bytes: the size modulo 2**32
    of its last member once inflated), when believable for the file's size; else None.
    ``raw`` must be seekable; it is left at its start."""
    try:
        if not raw.seekable():
            return None
        size = raw.seek(0, 2)
        raw.seek(max(size - 4, 0))
        isize = int.from_bytes(raw.read(4), "little")
        raw.seek(0)
    except (OSError, ValueError):
        return None
    if size < _GZIP_MIN_SIZE or isize > size * MAX_DEFLATE_RATIO:
        return None
    return isize


def _inflate_all(stream: gzip.GzipFile, hint: Optional[int]) -> bytes:
    """The whole inflated content of ``stream``, in one ``bytes`` object of peak ~1x size.

    ``GzipFile.read(n)`` allocates its ``n``-byte result once and inflates into it, where
    ``read()`` would collect chunks and join them (a transient 2x). With ``n`` the ISIZE
    trailer, a single-member file under 4 GiB is read whole by the first call; the second
    only checks the end (CRC, length, trailing data) and returns nothing. A multi-member or
    larger file leaves more: then the two parts are joined, which costs a copy.
    """
    if hint is None:
        return stream.read()
    data = stream.read(hint)
    rest = stream.read()
    if not rest:
        return data
    logger.debug("gzip size trailer %d short of the content; joining the rest", hint)
    return data + rest


def read_input(path: PathLike, size: int = -1) -> bytes:
    """The (decompressed) content of ``path``: all of it, or its first ``size`` bytes.

    Reading all of a gzip file peaks at about the decompressed size (plus small buffers),
    not twice that, for files of one gzip member under 4 GiB (see :func:`_inflate_all`).
    Corrupt or truncated gzip data raises :class:`TraceFormatError` naming the file.
    ``path`` may be a URL (``scheme://...``).
    """
    raw = _open_raw(path, buffered=False)
    with raw:
        is_gzip = _starts_with_gzip_magic(raw, path)
        try:
            if not is_gzip:
                return raw.read(size)
            hint = gzip_size_hint(raw) if size < 0 else None
            with gzip.GzipFile(fileobj=raw, mode="rb") as stream:
                return _inflate_all(stream, hint) if size < 0 else stream.read(size)
        except (OSError, EOFError, zlib.error) as exc:
            if not is_gzip:
                raise FileAccessError(f"cannot read {path}: {exc}") from exc
            raise TraceFormatError(path, f"corrupt or truncated gzip data ({exc})") from exc
