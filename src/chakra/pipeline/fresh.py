"""A fresh output folder after a failed or interrupted run: finished work stays, the rest goes.

A pipeline run writes many files (one family per rank, then the job's report, timeline...).
When ``--output-dir`` does not exist before the run, the run creates it. When the run then
fails (a bad input, a rank that does not link or convert, a simulation that deadlocks) or is
interrupted (Ctrl-C, SIGTERM), the folder keeps the work the run *finished*, which the next
run into the folder reuses: the files that ``finished`` names (the pipeline's
:func:`chakra.pipeline.resume.finished_work`: every rank whose outputs and manifest were
committed, and the comm-group file, committed with the ``.et`` family). Everything else this
run put there goes: a rank's output committed before its manifest, the job's report,
timeline, plot and page (they appear together or not at all), temporaries. When nothing was
finished, the folder is removed with the parents this run created. When the folder already
existed, nothing in it is touched (what finished ranks wrote stays, as above; resuming
checks every file by content).
Remote (URL) folders are left as they are in both cases.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Callable, Optional

import msgspec

from chakra.errors import ChakraError, UsageError
from chakra.fileio.location import Location, make_folder

logger = logging.getLogger(__name__)


class FinishedWork(msgspec.Struct, frozen=True):
    """The files of an output folder that a failed run keeps (names in the folder), and
    what they are, for the line that says so (e.g. ``ranks 0, 1 (ET+, .et, manifest)``)."""

    names: frozenset[str] = frozenset()
    description: str = ""


#: How a run tells which files of its output folder hold finished work.
FindFinished = Callable[[Path], FinishedWork]


def _nothing_finished(_: Path) -> FinishedWork:
    return FinishedWork()


@contextlib.contextmanager
def output_folder(folder: Location, finished: FindFinished = _nothing_finished) -> Iterator[None]:
    """Make ``folder`` (and its missing parents); when the body raises and this made
    ``folder``, keep there the files ``finished`` names and remove everything else, or,
    when it names none, remove what this made: the top-most folder that did not exist."""
    created = _top_missing(folder) if isinstance(folder, Path) else None
    make_folder(folder)
    try:
        yield
    except BaseException:
        if created is not None and isinstance(folder, Path):
            _keep_finished(created, folder, finished)
        raise


def _keep_finished(created: Path, folder: Path, finished: FindFinished) -> None:
    """After a failure: keep the finished work in ``folder``, remove the rest (see
    :func:`output_folder`)."""
    work = _finished_or_none(folder, finished)
    if work is None or not work.names:
        shutil.rmtree(created, ignore_errors=True)
        logger.debug("%s: removed, as the run that created it failed", created)
        return
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if entry.name not in work.names:
            _remove(Path(entry.path))
    logger.info("%s: kept %s, finished before the run stopped: a rerun into this folder "
                "reuses them", folder, work.description)  # fmt: skip


def _finished_or_none(folder: Path, finished: FindFinished) -> Optional[FinishedWork]:
    """``finished(folder)``; None when that fails (the folder is then removed, as before)."""
    try:
        return finished(folder)
    except Exception as exc:  # the clean-up must not hide the run's own error
        logger.debug("%s: cannot tell the finished work (%s): removing all", folder, exc)
        return None


def _remove(path: Path) -> None:
    """Remove a file, link or folder; failures are ignored (a clean-up)."""
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


@contextlib.contextmanager
def job_step(step: str, output_dir: Location) -> Iterator[None]:
    """A step after the ``.et`` family is committed: an error of the block (a deadlock, a
    bad what-if rule, a full disk) is raised again as one line naming the ``step`` and where
    the kept files are, ``<step>: <error> (the ET+ and .et files are in OUT)``, of the same
    class where its message is its only argument (else a :class:`ChakraError`). Usage
    errors pass as they are (status 2)."""
    try:
        yield
    except UsageError:
        raise
    except ChakraError as exc:
        said = f"{step}: {exc} (the ET+ and .et files are in {output_dir})"
        raise _reworded(exc, said) from exc


def _reworded(error: ChakraError, message: str) -> ChakraError:
    """``error`` saying ``message``: a copy of the same class with that message where the
    class prints its one argument, else a plain :class:`ChakraError`."""
    reworded = copy.copy(error)
    reworded.args = (message,)
    if str(reworded) != message:
        reworded = ChakraError(message)
    return reworded


def _top_missing(folder: Path) -> Path | None:
    """The top-most of ``folder`` and its parents that does not exist (None: all exist)."""
    top = None
    for candidate in (folder, *folder.absolute().parents):
        if candidate.exists() or candidate.is_symlink():
            break
        top = candidate
    return top
