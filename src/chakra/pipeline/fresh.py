"""Whole or nothing for a fresh output folder: a run that fails leaves no folder behind.

A pipeline run writes many files (one family per rank, then the job's report, timeline...).
When ``--output-dir`` does not exist before the run, the run creates it, and a failure
(a bad input, a rank that does not link or convert, an interrupt) removes the whole folder:
no partial output. When the folder already exists, what finished ranks wrote stays, as
the resume manifests (:mod:`chakra.pipeline.resume`) make it reusable by the next run
(the rerun redoes only what failed); nothing else in the folder is touched. Remote (URL)
folders are left as they are in both cases.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

from chakra.fileio.location import Location, make_folder

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def output_folder(folder: Location) -> Iterator[None]:
    """Make ``folder`` (and its missing parents); when the body raises, remove what this
    made: the top-most folder that did not exist before."""
    created = _top_missing(folder) if isinstance(folder, Path) else None
    make_folder(folder)
    try:
        yield
    except BaseException:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
            logger.debug("%s: removed, as the run that created it failed", created)
        raise


def _top_missing(folder: Path) -> Path | None:
    """The top-most of ``folder`` and its parents that does not exist (None: all exist)."""
    top = None
    for candidate in (folder, *folder.absolute().parents):
        if candidate.exists() or candidate.is_symlink():
            break
        top = candidate
    return top
