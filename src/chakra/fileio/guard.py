"""Checks made before a tool writes anything: no output is one of its inputs.

An output "is" an input when writing it would replace or change the input's bytes, or
could be mistaken for that: the same path, another name for the same file (a hard link),
or a symbolic link to it (or an input that is a link to the output). Local paths are
compared by the file they name (``os.stat``: device and inode, links followed) and by
their resolved path; URLs, which cannot be compared that way, by their text.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Optional

from chakra.errors import OutputOverwritesInputError, PathLike
from chakra.fileio.location import is_url

#: What names a file: its resolved path (or URL), and (device, inode) when it exists.
Identity = tuple[str, Optional[tuple[int, int]]]


def _identity(path: PathLike) -> Identity:
    """What names the file ``path``: its resolved path, and (device, inode) when it exists."""
    if is_url(path):
        return str(path).rstrip("/"), None
    local = Path(path)
    try:
        info = os.stat(local)
        inode: Optional[tuple[int, int]] = (info.st_dev, info.st_ino)
    except OSError:
        inode = None
    try:
        resolved = str(local.resolve())
    except (OSError, RuntimeError):  # a link loop
        resolved = os.path.abspath(local)
    return resolved, inode


class _Known:
    """Paths by what they name, to find another name of one file in O(1)."""

    def __init__(self) -> None:
        self._by_path: dict[str, PathLike] = {}
        self._by_inode: dict[tuple[int, int], PathLike] = {}

    def find(self, identity: Identity) -> Optional[PathLike]:
        path, inode = identity
        if path in self._by_path:
            return self._by_path[path]
        return self._by_inode.get(inode) if inode is not None else None

    def add(self, given: PathLike, identity: Identity) -> None:
        path, inode = identity
        self._by_path.setdefault(path, given)
        if inode is not None:
            self._by_inode.setdefault(inode, given)


def _entry(path: PathLike) -> str:
    """The folder entry ``path`` names (its folder resolved, its own name kept: an output
    replaces a link there rather than following it)."""
    if is_url(path):
        return str(path).rstrip("/")
    local = Path(path)
    try:
        folder = local.parent.resolve()
    except (OSError, RuntimeError):
        folder = Path(os.path.abspath(local.parent))
    return str(folder / local.name)


def refuse_overwriting_inputs(
    outputs: Iterable[Optional[PathLike]], inputs: Iterable[Optional[PathLike]]
) -> None:
    """Raise :class:`OutputOverwritesInputError` when an output is one of the ``inputs`` (same
    path, hard link, or a symbolic link either way) or two outputs name one folder entry
    (two links to one file are two outputs: each is replaced); ``None`` entries (options not
    given) are skipped. One ``stat`` per path, O(outputs + inputs)."""
    sources = _Known()
    for given in inputs:
        if given is not None:
            sources.add(given, _identity(given))
    seen: dict[str, PathLike] = {}
    for output in outputs:
        if output is None:
            continue
        source = sources.find(_identity(output))
        if source is not None:
            raise OutputOverwritesInputError(f"{output}: output would overwrite input {source}")
        earlier = seen.setdefault(_entry(output), output)
        if earlier is not output:
            raise OutputOverwritesInputError(f"{output}: given for two outputs (also as {earlier})")
