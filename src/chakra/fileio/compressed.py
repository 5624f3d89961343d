"""Inputs that may or may not be gzip-compressed, told apart by content, not by name; at a
local path or at a URL (see :mod:`chakra.fileio.location`)."""

from __future__ import annotations

import gzip
import logging
import os
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO, Optional

from chakra.errors import FileAccessError, PathLike, TraceFormatError
from chakra.fileio.location import is_url, open_url
from chakra.fileio.regular import open_regular

logger = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b"
#: Deflate never inflates by more than this factor (1032:1), so an ISIZE trailer claiming
#: more than that for the file's size is not believed.
MAX_DEFLATE_RATIO = 1032
_GZIP_MIN_SIZE = 18  # a 10-byte header and an 8-byte trailer

#: The inflation budget (docs/formats.md, "Input limits"): a gzip input may inflate to
#: ``MAX_INFLATE_RATIO`` times its compressed size, and always to ``MIN_INFLATE_BUDGET_BYTES``.
#: Real traces inflate 10-40x; a gzip bomb (1000x) is refused after reading its budget.
#: ``CHAKRA_MAX_INFLATED_BYTES`` (an environment variable, bytes) replaces the budget.
MAX_INFLATE_RATIO = 200
MIN_INFLATE_BUDGET_BYTES = 64 * 2**20
BUDGET_VARIABLE = "CHAKRA_MAX_INFLATED_BYTES"
_CHUNK_BYTES = 4 * 2**20


def inflate_budget(compressed_bytes: Optional[int]) -> int:
    """How many bytes a gzip input of ``compressed_bytes`` (None: unknown) may inflate to."""
    override = os.environ.get(BUDGET_VARIABLE, "").strip()
    if override:
        try:
            value = int(override)
        except ValueError:
            value = -1
        if value <= 0:
            raise FileAccessError(
                f"{BUDGET_VARIABLE}={override!r}: expected a positive number of bytes"
            )
        return value
    if compressed_bytes is None:
        return MIN_INFLATE_BUDGET_BYTES
    return max(MIN_INFLATE_BUDGET_BYTES, MAX_INFLATE_RATIO * compressed_bytes)


def _open_raw(path: PathLike, *, buffered: bool = True) -> BinaryIO:
    """``path`` opened for binary reading (a local file, or a URL through fsspec).

    Unbuffered, a local file's ``read()`` allocates its result once, at the file's size; a
    buffered reader that has peeked would join its buffer with the rest (a transient 2x).
    """
    if is_url(path):
        return open_url(str(path), "rb")  # type: ignore[return-value]
    try:
        # returned to the caller, who closes it
        return open_regular(path, buffered=buffered)
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


def _compressed_size(raw: BinaryIO) -> Optional[int]:
    """The size of the seekable stream ``raw`` (left at its start), else None."""
    try:
        if not raw.seekable():
            return None
        size = raw.seek(0, 2)
        raw.seek(0)
        return size
    except (OSError, ValueError):
        return None


class BudgetedGzipFile(gzip.GzipFile):
    """A reading ``GzipFile`` that raises :class:`TraceFormatError` once it has inflated
    more than ``budget`` bytes (see :func:`inflate_budget`), before holding them all."""

    def __init__(self, source: BinaryIO, path: PathLike, budget: int) -> None:
        super().__init__(fileobj=source, mode="rb")
        self._path, self.budget, self._inflated = path, budget, 0  # budget: bytes

    def _count(self, size: int) -> None:
        self._inflated += size
        if self._inflated > self.budget:
            raise TraceFormatError(
                self._path,
                f"inflates to more than {self.budget:,} bytes (the input limit for a gzip"
                f" file of this size; set {BUDGET_VARIABLE} to allow more)",
            )

    def read(self, size: Optional[int] = -1) -> bytes:
        if size is None or size < 0:
            parts = []
            while True:
                part = super().read(min(_CHUNK_BYTES, self.budget + 1))
                self._count(len(part))
                if not part:
                    return b"".join(parts)
                parts.append(part)
        data = super().read(size)
        self._count(len(data))
        return data

    def read1(self, size: int = -1) -> bytes:
        data = super().read1(size)
        self._count(len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        count = super().readinto(buffer)
        self._count(count)
        return count

    def readline(self, size: Optional[int] = -1) -> bytes:
        room = self.budget - self._inflated + 1  # a line longer than the budget stops there
        line = super().readline(room if size is None or size < 0 else min(size, room))
        self._count(len(line))
        return line


def budgeted_gzip(source: BinaryIO, path: PathLike) -> BudgetedGzipFile:
    """``source`` (positioned at its start) inflated within the budget of its size."""
    return BudgetedGzipFile(source, path, inflate_budget(_compressed_size(source)))


class _ClosingGzipFile(BudgetedGzipFile):
    """A reading budgeted gzip file over an open stream that closes that stream with itself."""

    def __init__(self, source: BinaryIO, path: PathLike) -> None:
        super().__init__(source, path, inflate_budget(_compressed_size(source)))
        self._source = source

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._source.close()


@dataclass(frozen=True)
class BinaryInput:
    """An input opened for binary reading: ``stream`` gives its (inflated) bytes;
    ``is_gzip``: the file is gzip (offsets then count inflated bytes). Close the stream."""

    stream: BinaryIO
    is_gzip: bool


def open_binary_input(path: PathLike) -> BinaryInput:
    """Open ``path`` for binary reading, inflating it when it starts with the gzip magic.

    Whatever the file's name, its first two bytes decide. A missing or unreadable file
    raises :class:`FileAccessError`; corrupt gzip data only shows up while reading (as
    ``OSError``, ``EOFError`` or ``zlib.error``), and callers report it with the offset they
    reached. ``path`` may be a URL (``scheme://...``).
    """
    raw = _open_raw(path)
    if not _starts_with_gzip_magic(raw, path):
        return BinaryInput(raw, False)
    return BinaryInput(_ClosingGzipFile(raw, path), True)  # type: ignore[arg-type]


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


def _inflate_all(stream: BudgetedGzipFile, hint: Optional[int]) -> bytes:
    """The whole inflated content of ``stream``, in one ``bytes`` object of peak ~1x size.

    ``GzipFile.read(n)`` allocates its ``n``-byte result once and inflates into it, where
    ``read()`` would collect chunks and join them (a transient 2x). With ``n`` the ISIZE
    trailer, a single-member file under 4 GiB is read whole by the first call; the second
    only checks the end (CRC, length, trailing data) and returns nothing. A multi-member or
    larger file leaves more: then the two parts are joined, which costs a copy.
    """
    if hint is None or hint > stream.budget:
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
            with budgeted_gzip(raw, path) as stream:
                return _inflate_all(stream, hint) if size < 0 else stream.read(size)
        except (OSError, EOFError, zlib.error) as exc:
            if not is_gzip:
                raise FileAccessError(f"cannot read {path}: {exc}") from exc
            raise TraceFormatError(path, f"corrupt or truncated gzip data ({exc})") from exc
