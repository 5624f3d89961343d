"""Outputs that appear whole or not at all, at a local path or at a URL.

A local file is written under a temporary name in its folder and renamed into place, which is
atomic. A URL (see :mod:`chakra.fileio.location`) is written the same way through fsspec: to
a temporary sibling ``.<name>.<host>-<pid>.<random>.partial`` (the same name as a local
file's temporary; the next run in the folder removes those whose writer was killed:
:mod:`chakra.fileio.stale`), then moved over the name. Where the file
system renames atomically (local, ``file://``, ``memory://``, HDFS) readers never see a
partial file. On object stores (``s3://``, ``gs://``, ``az://``) a move is a server-side copy
then a delete: the final object still appears whole, since an object is only visible once
its upload or copy completes, but an interrupted run may leave a ``.partial`` object behind
(URL folders are not swept).

A rename replaces whatever entry has the name: a symbolic link at an output's path is
replaced by the new file, never followed, so the file it pointed to is left as it was.
:class:`AtomicGroup` commits several files together: all appear, or none.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Optional

from chakra.errors import FileAccessError, PathLike
from chakra.fileio.location import (
    Location,
    is_url,
    move_url,
    open_url,
    remove_url,
    temporary_sibling,
)
from chakra.fileio.scoped import Scoped
from chakra.fileio.stale import temporary_prefix

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
    ``owner`` is the process that will commit the file (default: this one), named in the
    temporary so that a later run knows whether it is stale (:mod:`chakra.fileio.stale`).
    """

    def __init__(
        self,
        path: PathLike,
        *,
        text: bool = False,
        compress: Optional[bool] = None,
        owner: Optional[int] = None,
    ) -> None:
        self.path: Location = path if is_url(path) else Path(path)  # type: ignore[assignment]
        if compress is None:
            compress = str(path).endswith(GZIP_SUFFIX)
        owner = os.getpid() if owner is None else owner
        self._raw: IO
        if isinstance(self.path, str):
            self.temporary = temporary_sibling(self.path, owner)
            self._raw = open_url(self.temporary, "wb", shown=self.path)
        else:
            try:
                fd, self.temporary = tempfile.mkstemp(
                    dir=self.path.parent,
                    prefix=temporary_prefix(self.path.name, owner),
                    suffix=".partial",
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
        self._finished = False
        self._done = False

    def finish(self) -> None:
        """Flush and close the temporary without moving it (then :meth:`commit` moves it,
        :meth:`discard` deletes it); a failure deletes it and raises ``FileAccessError``."""
        if self._finished:
            return
        self._finished = True
        try:
            self.stream.close()
            self._raw.close()
            if isinstance(self.path, Path):
                os.chmod(self.temporary, 0o666 & ~_umask())
        except OSError as exc:
            self._done = True
            remove_temporary(self.temporary, self.path)
            raise FileAccessError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def commit(self) -> None:
        """Flush, close and move the file into place."""
        if self._done:
            return
        self.finish()
        self._done = True
        move_into_place(self.temporary, self.path)

    def discard(self) -> None:
        """Close and delete the temporary file; ``path`` is left as it was."""
        if self._done:
            return
        self._done = True
        for closable in (self.stream, self._raw):
            with contextlib.suppress(Exception):
                closable.close()
        remove_temporary(self.temporary, self.path)


def move_into_place(temporary: str, path: Location) -> None:
    """Rename (local) or move (URL) the finished ``temporary`` over ``path``; a failure
    deletes the temporary and raises ``FileAccessError``."""
    try:
        if isinstance(path, str):
            move_url(temporary, path)
        else:
            os.replace(temporary, path)
    except FileAccessError:
        remove_temporary(temporary, path)
        raise
    except OSError as exc:
        remove_temporary(temporary, path)
        raise FileAccessError(f"cannot write {path}: {exc.strerror or exc}") from exc


def remove_temporary(name: str, path: Location) -> None:
    """Delete ``name`` (a temporary of ``path``, or ``path`` itself) if it exists; failures
    are ignored (it is cleaning up)."""
    if isinstance(path, str):
        remove_url(name)
        return
    with contextlib.suppress(OSError):
        os.unlink(name)


@contextlib.contextmanager
def atomic_output(
    path: PathLike,
    *,
    text: bool = False,
    compress: Optional[bool] = None,
    group: Optional[AtomicGroup] = None,
) -> Iterator[IO]:
    """Yield a stream for ``path`` that is committed if the block succeeds, else discarded;
    with a ``group``, committed only with the group (:class:`AtomicGroup`).

    An ``OSError`` raised while writing (e.g. disk full) becomes ``FileAccessError``.
    """
    if group is None:
        output = AtomicFile(path, text=text, compress=compress)
    else:
        output = group.add(path, text=text, compress=compress)
    try:
        yield output.stream
    except OSError as exc:
        output.discard()
        raise FileAccessError(f"cannot write {output.path}: {exc.strerror or exc}") from exc
    except BaseException:
        output.discard()
        raise
    output.commit()


class _Member(AtomicFile):
    """A file of an :class:`AtomicGroup`: its :meth:`commit` only finishes it and hands it to
    the group, which moves it into place with the others."""

    def __init__(self, group: AtomicGroup, path: PathLike, **options: Any) -> None:
        super().__init__(path, **options)
        self._group = group

    def commit(self) -> None:
        if self._done:
            return
        self.finish()
        self._done = True
        self._group._ready(self)


#: A finished temporary and the path it is to be moved to.
Pending = tuple[str, Location]


class AtomicGroup(Scoped):
    """Files that appear together or not at all.

    :meth:`add` gives an :class:`AtomicFile` whose ``commit`` only closes it and hands it to
    the group (so that a group of many files holds none open, and only their names);
    :meth:`commit` moves every file into place, :meth:`discard` deletes them all. Used as a
    context manager, the group commits when the block succeeds and discards on an exception.
    Files finished in another process (under this process as ``owner``) join with
    :meth:`adopt`; :meth:`hand_over` is that process's side. Renaming finished files in their
    own folder needs no space and almost never fails; if one move does fail, the files of the
    group already moved are deleted, the rest discarded, and the error raised: none of the
    group remains (the files they replaced are gone, as with any overwrite).
    """

    def __init__(self, owner: Optional[int] = None) -> None:
        self.owner = os.getpid() if owner is None else owner
        self._open: dict[int, AtomicFile] = {}
        self._pending: list[Pending] = []
        self._obsolete: list[Path] = []

    def add(
        self, path: PathLike, *, text: bool = False, compress: Optional[bool] = None
    ) -> AtomicFile:
        """A new file of the group at ``path`` (see :class:`AtomicFile` for the options)."""
        member = _Member(self, path, text=text, compress=compress, owner=self.owner)
        self._open[id(member)] = member
        return member

    def obsolete(self, path: Location) -> None:
        """Remove the local file ``path`` when the group commits (an output of an earlier run
        that one of the group replaces under another name); kept when it discards."""
        if isinstance(path, Path):
            self._obsolete.append(path)

    def _ready(self, member: AtomicFile) -> None:
        """``member`` is finished: keep its names only."""
        self._open.pop(id(member), None)
        self._pending.append((member.temporary, member.path))

    def adopt(self, pending: Sequence[Pending]) -> None:
        """Take over finished temporaries (from :meth:`hand_over` in another process)."""
        self._pending.extend(pending)

    def hand_over(self) -> list[Pending]:
        """Finish every file and give them up (for :meth:`adopt` in the owner process):
        this group then holds nothing."""
        self._finish_all()
        pending, self._pending = self._pending, []
        return pending

    def _finish_all(self) -> None:
        try:
            for member in list(self._open.values()):
                member.commit()  # a member's commit finishes it
        except BaseException:
            self.discard()
            raise

    def commit(self) -> None:
        """Move every file into place (all of them, or none: see the class documentation)."""
        pending = self.hand_over()
        for index, (temporary, path) in enumerate(pending):
            try:
                move_into_place(temporary, path)
            except BaseException:
                for _, moved in pending[:index]:
                    remove_temporary(str(moved), moved)
                for later_temporary, later in pending[index + 1 :]:
                    remove_temporary(later_temporary, later)
                raise
        for path in self._obsolete:
            path.unlink(missing_ok=True)

    def discard(self) -> None:
        """Delete every file of the group; the paths are left as they were."""
        for member in list(self._open.values()):
            member.discard()
        for temporary, path in self._pending:
            remove_temporary(temporary, path)
        self._open, self._pending, self._obsolete = {}, [], []

    def finish(self, succeeded: bool) -> None:
        """At the end of a ``with`` block: :meth:`commit` if it succeeded, else
        :meth:`discard`."""
        if succeeded:
            self.commit()
        else:
            self.discard()


def copy_local_to(local: Path, target: Location) -> None:
    """Copy the local file ``local`` to ``target`` atomically (via a temporary sibling)."""
    with atomic_output(target, compress=False) as out, local.open("rb") as source:
        while chunk := source.read(1 << 20):
            out.write(chunk)
