"""Names of the temporaries outputs are written under, and removal of those a killed run left.

An output is written as a hidden sibling ``.<name>.<host>-<pid>.<random>.partial`` and renamed
over its name when done (:mod:`chakra.fileio.atomic`). ``<pid>`` is the process that will
commit it and ``<host>`` eight hex digits naming the machine and its process-id namespace
(a hash of the host name and, on Linux, the inode of ``/proc/self/ns/pid``), so that a
process id is only ever checked where it means that process.

:func:`remove_stale_temporaries` deletes the temporaries of a folder whose writer is gone: the
name's ``<host>`` is this machine's and no process ``<pid>`` exists here (``os.kill(pid, 0)``
fails with ``ProcessLookupError``). Everything else is left alone: temporaries of live
processes (even one that reused a dead writer's id: they are removed by a later run), of other
machines sharing the folder, and names of any other form (those of versions before this rule,
whose writer cannot be known). Only POSIX systems are swept; on others nothing is removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import socket
from collections.abc import Iterable
from pathlib import Path

logger = logging.getLogger(__name__)

PARTIAL_SUFFIX = ".partial"
#: Characters of an output's name kept in its temporary's (names stay under NAME_MAX).
NAME_KEPT = 120
_TEMPORARY = re.compile(r"^\..+\.(?P<host>[0-9a-f]{8})-(?P<pid>\d+)\.[A-Za-z0-9_]+\.partial$")


def host_tag() -> str:
    """Eight hex digits naming this machine and its process-id namespace."""
    namespace = ""
    with contextlib.suppress(OSError):
        namespace = str(os.stat("/proc/self/ns/pid").st_ino)
    digest = hashlib.sha256(f"{socket.gethostname()}\0{namespace}".encode()).hexdigest()
    return digest[:8]


def temporary_prefix(name: str, owner: int) -> str:
    """The start of a temporary's name for the output ``name``, committed by process
    ``owner``: ``.<name>.<host>-<owner>.`` (the random part and ``.partial`` follow)."""
    return f".{name[:NAME_KEPT]}.{host_tag()}-{owner}."


def _writer_is_gone(pid: int) -> bool:
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # EPERM: it exists, under another user
        return False
    return _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    """Whether ``pid`` has exited but is not reaped yet (Linux: state ``Z`` in its
    ``/proc/<pid>/stat``): a killed worker whose parent died too may stay so for a while
    where nothing reaps orphans, and writes nothing more."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[:1] == [b"Z"]
    except OSError:  # no /proc (not Linux), or the process is gone meanwhile
        return False


def stale_temporaries(folder: Path) -> list[Path]:
    """The temporaries in ``folder`` whose writer is gone (see the module documentation)."""
    if os.name != "posix":
        return []
    here = host_tag()
    try:
        names = [e.name for e in os.scandir(folder) if e.name.endswith(PARTIAL_SUFFIX)]
    except OSError:
        return []
    stale = []
    for name in names:
        match = _TEMPORARY.match(name)
        if match and match["host"] == here and _writer_is_gone(int(match["pid"])):
            stale.append(folder / name)
    return stale


def remove_stale_temporaries(folder: Path) -> int:
    """Delete the temporaries killed runs left in ``folder``; return how many were removed.
    Failures to delete are ignored (another run may have removed the same file)."""
    removed = 0
    for path in stale_temporaries(folder):
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    if removed:
        logger.info("removed %d temporaries left in %s by runs that were killed", removed, folder)
    return removed


def remove_own_temporaries(folder: Path, names: Iterable[str], owner: int) -> None:
    """Delete the temporaries in ``folder`` of the outputs ``names`` committed by process
    ``owner`` (see :func:`temporary_prefix`): once their writers have stopped and nothing
    will commit them, those a live ``owner`` holds, which :func:`remove_stale_temporaries`
    leaves alone. Failures to delete are ignored."""
    prefixes = tuple(temporary_prefix(name, owner) for name in names)
    try:
        found = [e.name for e in os.scandir(folder) if e.name.endswith(PARTIAL_SUFFIX)]
    except OSError:
        return
    for name in found:
        if name.startswith(prefixes):
            with contextlib.suppress(OSError):
                os.unlink(folder / name)
