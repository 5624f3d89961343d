"""Outputs that appear whole or not at all, at a local path or at a URL.

A local file is written under a temporary name in its folder and renamed into place, which is
atomic. A URL (see :mod:`chakra.fileio.location`) is written the same way through fsspec: to
a temporary sibling ``.<name>.<random>.partial``, then moved over the name. Where the file
system renames atomically (local, ``file://``, ``memory://``, HDFS) readers never see a
partial file. On object stores (``s3://``, ``gs://``, ``az://``) a move is a server-side copy
then a delete: the final object still appears whole, since an object is only visible once
its upload or copy completes, but an interrupted run may leave a ``.partial`` object behind.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Optional

from chakra.errors import FileAccessError, PathLike
from chakra.fileio.location import (
    Location,
    is_url,
    move_url,
    open_url,
    remove_url,
    temporary_sibling,
)

GZIP_SUFFIX = ".gz"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class AtomicFile:
    """A file written under a temporary name in the target's folder, then renamed into place
    (moved, for a URL ``path``: see the module's documentation for what that guarantees).

    :meth:`commit` closes the stream and renames it over ``path``; :meth:`discard` deletes
    it. Readers never see a partial file, and an existing ``path`` is untouched until commit.
    ``compress`` (default: ``path`` ends in ``.gz``) writes gzip with a zero timestamp and no
    stored name, so equal content gives equal bytes. ``text`` gives a UTF-8 text stream.
    """

    def __init__(
        self, path: PathLike, *, text: bool = False, compress: Optional[bool] = None
    ) -> None:
        self.path: Location = path if is_url(path) else Path(path)  # type: ignore[assignment]
        if compress is None:
            compress = str(path).endswith(GZIP_SUFFIX)
        self._raw: IO
        if isinstance(self.path, str):
            self._tmp_name = temporary_sibling(self.path)
            self._raw = open_url(self._tmp_name, "wb", shown=self.path)
        else:
            try:
                fd, self._tmp_name = tempfile.mkstemp(
                    dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".partial"
                )
            except OSError as exc:
                raise FileAccessError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
            self._raw = os.fdopen(fd, "wb", buffering=1 << 20)
        stream: IO = self._raw
        if compress:
            stream = gzip.GzipFile(
                filename="", mode="wb", fileobj=self._raw, mtime=0, compresslevel=6
            )
        if text:
            stream = io.TextIOWrapper(stream, encoding="utf-8", newline="\n")
        self.stream: IO = stream
        self._done = False

    def commit(self) -> None:
        """Flush, close and move the file into place."""
        if self._done:
            return
        self._done = True
        try:
            self.stream.close()
            self._raw.close()
            if isinstance(self.path, str):
                move_url(self._tmp_name, self.path)
                return
            os.chmod(self._tmp_name, 0o666 & ~_umask())
            os.replace(self._tmp_name, self.path)
        except FileAccessError:
            self._remove_temporary()
            raise
        except OSError as exc:
            self._remove_temporary()
            raise FileAccessError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def discard(self) -> None:
        """Close and delete the temporary file; ``path`` is left as it was."""
        if self._done:
            return
        self._done = True
        for closable in (self.stream, self._raw):
            with contextlib.suppress(Exception):
                closable.close()
        self._remove_temporary()

    def _remove_temporary(self) -> None:
        if isinstance(self.path, str):
            remove_url(self._tmp_name)
            return
        with contextlib.suppress(OSError):
            os.unlink(self._tmp_name)


@contextlib.contextmanager
def atomic_output(
    path: PathLike, *, text: bool = False, compress: Optional[bool] = None
) -> Iterator[IO]:
    """Yield a stream for ``path`` that is committed if the block succeeds, else discarded.

    An ``OSError`` raised while writing (e.g. disk full) becomes ``FileAccessError``.
    """
    output = AtomicFile(path, text=text, compress=compress)
    try:
        yield output.stream
    except OSError as exc:
        output.discard()
        raise FileAccessError(f"cannot write {output.path}: {exc.strerror or exc}") from exc
    except BaseException:
        output.discard()
        raise
    output.commit()
