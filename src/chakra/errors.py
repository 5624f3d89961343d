"""The one exception hierarchy of the package.

The library raises these; the command-line tools turn them into one line on stderr and exit
status 1. Every message is one sentence that names the file and, where it helps, the byte
offset or node concerned.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

PathLike = Union[str, Path]


class ChakraError(Exception):
    """Base of every error the package raises on purpose."""


class FileAccessError(ChakraError):
    """A file cannot be opened, read or written (missing, unreadable, no such folder...)."""


class TraceFormatError(ChakraError):
    """A file's content does not follow its format.

    ``path`` is the file, ``offset`` the byte offset where the problem was found, when known;
    ``decompressed`` says the offset counts bytes of the inflated stream of a gzip file.
    """

    def __init__(
        self,
        path: PathLike,
        problem: str,
        offset: Optional[int] = None,
        *,
        decompressed: bool = False,
    ) -> None:
        self.path = str(path)
        self.problem = problem
        self.offset = offset
        kind = "decompressed byte offset" if decompressed else "byte offset"
        where = f" at {kind} {offset}" if offset is not None else ""
        super().__init__(f"{self.path}: {problem}{where}")


class EtFormatError(TraceFormatError):
    """A Chakra ET (.et) file is malformed: bad framing, truncation or undecodable message."""


class AttributeKindError(ChakraError):
    """An attribute holds a value of a kind its reader cannot accept (e.g. a string for an int)."""


class UsageError(ChakraError):
    """The command line asks for something impossible (a missing or conflicting option): the
    tools report it as argparse does, with their usage line and exit status 2."""


class WrongTraceKindError(TraceFormatError):
    """A file holds another kind of trace than the one asked for (e.g. a Kineto trace given
    where a Chakra ET is read)."""


class ArchiveError(ChakraError):
    """An archive cannot be read (truncated, corrupt, not an archive) or holds a member that
    safe extraction refuses (a link, a special file, a path leaving the target, over a size
    limit); the message names the archive and, where one is at fault, the member."""
