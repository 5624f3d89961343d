"""Where a file lives: a local path, or a URL (``s3://bucket/job/``, ``memory://x``,
``file:///data``) reached through fsspec.

A *location* is a :class:`~pathlib.Path` for a local file and a ``str`` for a URL: anything
that starts with ``scheme://`` (chained URLs such as ``simplecache::s3://...`` too). Local
paths never import fsspec; URLs import it on first use, so it is only needed by those who
use them (``pip install 'chakra[dask]'`` or ``pip install fsspec``, plus the file system's
own package, e.g. s3fs for ``s3://``).

Every failure is a :class:`~chakra.errors.FileAccessError` of one line naming the location.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import uuid
from pathlib import Path
from typing import IO, Any, Optional, Union

from chakra.errors import ChakraError, FileAccessError, PathLike
from chakra.fileio.stale import temporary_prefix

#: A local path, or a URL string (``scheme://...``).
Location = Union[Path, str]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*(::[A-Za-z][A-Za-z0-9+.\-]*)*://")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
NO_SUCH_FILE = "No such file or directory"


def is_url(path: PathLike) -> bool:
    """Whether ``path`` is a URL (``scheme://...``) rather than a local path."""
    return isinstance(path, str) and _URL.match(path) is not None


def location(path: PathLike) -> Location:
    """``path`` as a location: the string itself for a URL, else a :class:`Path`."""
    return path if is_url(path) else Path(path)  # type: ignore[return-value]


def join(folder: Location, name: str) -> Location:
    """The file ``name`` in ``folder`` (a URL gets ``/name`` after its trailing slashes)."""
    if isinstance(folder, str):
        return f"{folder.rstrip('/')}/{name}"
    return folder / name


def name_of(path: Location) -> str:
    """The last part of a location's path (``rank0.et`` of ``s3://b/job/rank0.et``)."""
    if isinstance(path, str):
        return path.rstrip("/").rsplit("/", 1)[-1]
    return path.name


def parent_of(path: Location) -> Location:
    """The folder holding ``path``."""
    if isinstance(path, str):
        return path.rstrip("/").rsplit("/", 1)[0]
    return path.parent


def _why(exc: OSError) -> str:
    """What went wrong, in the words the local file system would use."""
    if isinstance(exc, FileNotFoundError):
        return exc.strerror or NO_SUCH_FILE
    return exc.strerror or str(exc) or type(exc).__name__


def url_filesystem(url: str) -> tuple[Any, str]:
    """The fsspec file system serving ``url`` and the path within it.

    Raises :class:`ChakraError` when fsspec, or the package of the URL's protocol, is not
    installed, or the URL is malformed.
    """
    try:
        import fsspec.core
    except ImportError:
        raise ChakraError(
            f"{url}: URLs need fsspec: pip install 'chakra[dask]' (or pip install fsspec)"
        ) from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as exc:
        raise ChakraError(f"{url}: cannot use this protocol: {exc}") from None
    except (ValueError, OSError) as exc:
        raise ChakraError(f"{url}: not a usable URL: {exc}") from None


def open_url(url: str, mode: str, *, shown: Optional[str] = None) -> IO:
    """``url`` opened in binary ``mode`` (``"rb"`` or ``"wb"``); an error names ``shown``
    (default: ``url``), e.g. the final name of a file written under a temporary one."""
    fs, path = url_filesystem(url)
    verb = "open" if "r" in mode else "write"
    try:
        return fs.open(path, mode)
    except OSError as exc:
        raise FileAccessError(f"cannot {verb} {shown or url}: {_why(exc)}") from exc


def list_folder(folder: Location) -> list[Location]:
    """Everything in ``folder`` (files and sub-folders), sorted by name."""
    if isinstance(folder, Path):
        try:
            return sorted(folder.iterdir())
        except OSError as exc:
            raise FileAccessError(f"cannot list {folder}: {_why(exc)}") from exc
    fs, path = url_filesystem(folder)
    try:
        if not fs.isdir(path):
            raise FileNotFoundError(path)
        names = [entry.rstrip("/").rsplit("/", 1)[-1] for entry in fs.ls(path, detail=False)]
    except OSError as exc:
        raise FileAccessError(f"cannot list {folder}: {_why(exc)}") from exc
    return [join(folder, name) for name in sorted(names)]


def make_folder(folder: Location) -> None:
    """Create ``folder`` and its parents if missing (on object stores, nothing to do)."""
    try:
        if isinstance(folder, Path):
            folder.mkdir(parents=True, exist_ok=True)
        else:
            fs, path = url_filesystem(folder)
            fs.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise FileAccessError(f"cannot create folder {folder}: {_why(exc)}") from exc


def missing(paths: list[PathLike]) -> list[PathLike]:
    """The ``paths`` that do not exist; URLs are checked with one listing per folder (one
    request per folder on object stores, not one per file). A path that exists but is no
    regular file (a folder, a FIFO) is not missing: opening it says what it is."""
    absent: list[PathLike] = []
    listings: dict[str, set[str]] = {}
    for given in paths:
        path = location(given)
        if isinstance(path, Path):
            if not path.exists():
                absent.append(given)
            continue
        folder = str(parent_of(path))
        if folder not in listings:
            try:
                listings[folder] = {name_of(str(p)) for p in list_folder(folder)}
            except FileAccessError:
                listings[folder] = set()
        if name_of(path) not in listings[folder]:
            absent.append(given)
    return absent


def modified_ns(given: PathLike) -> Optional[int]:
    """When ``given`` was last modified, in nanoseconds since the epoch; None when its file
    system does not say. A missing file raises ``OSError`` (``FileNotFoundError``)."""
    path = location(given)
    if isinstance(path, Path):
        return path.stat().st_mtime_ns
    fs, inner = url_filesystem(path)
    try:
        when = fs.modified(inner)
    except NotImplementedError:
        if not fs.exists(inner):
            raise FileNotFoundError(path) from None
        return None
    if not isinstance(when, datetime.datetime):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return (when - _EPOCH) // datetime.timedelta(microseconds=1) * 1000


def temporary_sibling(path: str, owner: Optional[int] = None) -> str:
    """A fresh hidden name next to ``path`` for writing it before it is moved into place
    (``.<name>.<host>-<pid>.<random>.partial``: never taken for a trace by the folder
    listings; ``owner``: the process that will move it, default this one; see
    :mod:`chakra.fileio.stale`)."""
    prefix = temporary_prefix(name_of(path), os.getpid() if owner is None else owner)
    return join(parent_of(path), f"{prefix}{uuid.uuid4().hex[:12]}.partial")  # type: ignore[return-value]


def move_url(source: str, target: str) -> None:
    """Move ``source`` over ``target`` on the same file system (a rename where the file
    system has one, e.g. local or HDFS; a server-side copy then delete on object stores)."""
    fs, source_path = url_filesystem(source)
    _, target_path = url_filesystem(target)
    try:
        fs.mv(source_path, target_path)
    except OSError as exc:
        raise FileAccessError(f"cannot write {target}: {_why(exc)}") from exc


def remove_url(url: str) -> None:
    """Delete ``url`` if it exists; failures are ignored (used to clean up)."""
    with contextlib.suppress(Exception):
        fs, path = url_filesystem(url)
        fs.rm(path)
