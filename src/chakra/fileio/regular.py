"""Opening an input that must be a regular file: a FIFO would block the tool forever (no
writer, or one that never ends), a device like ``/dev/zero`` would never end. Checked on
the open file itself (no race between a check and the open): opened without blocking,
refused unless regular, then switched back to blocking reads."""

from __future__ import annotations

import errno
import io
import os
import stat
from typing import BinaryIO, TextIO

from chakra.errors import FileAccessError, PathLike

_NON_BLOCKING = getattr(os, "O_NONBLOCK", 0)
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


def open_regular(path: PathLike, *, buffered: bool = True) -> BinaryIO:
    """``path`` opened for binary reading. Raises ``OSError`` where ``open`` would (missing,
    no permission, a folder: ``IsADirectoryError``), and
    :class:`~chakra.errors.FileAccessError` naming ``path`` for a FIFO, a device or a
    socket."""
    fd = os.open(path, os.O_RDONLY | _NON_BLOCKING | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise FileAccessError(f"{path}: {kind}, not a regular file: give a file's path")
        if _NON_BLOCKING:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=-1 if buffered else 0)
    except BaseException:
        os.close(fd)
        raise


def open_regular_text(path: PathLike, errors: str = "strict") -> TextIO:
    """:func:`open_regular` as UTF-8 text (newlines translated, as ``open`` does)."""
    return io.TextIOWrapper(open_regular(path), encoding="utf-8", errors=errors)
