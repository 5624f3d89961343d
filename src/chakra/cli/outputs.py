"""What the tools check before writing anything, and their log files.

Every tool that writes calls :func:`prepare_outputs` with the files it will write and the
files it reads before any work: each output's folder must exist, no output may be a folder or
one of the inputs (:func:`chakra.fileio.guard.refuse_overwriting_inputs`), and the
temporaries of killed runs are removed from the output folders (:mod:`chakra.fileio.stale`).
``chakra_pipeline``, whose outputs are named by the ranks it finds, does the same in
:func:`chakra.pipeline.run_pipeline`; ``chakra_validate`` and ``chakra_trace_info`` write
nothing.

A log file (``--log-filename``, ``--log_filename``) is an output like the others: written to a
temporary sibling while the tool runs and renamed over its name when it ends, whether it
succeeded or failed (the failure's one line is its last record). So a symbolic link at the log
path is replaced, never followed; the log replaces an earlier one rather than appending to
it; and it appears when the tool ends (follow a run on stderr).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Optional

from chakra.errors import ChakraError, FileAccessError, PathLike

LOG_FORMAT = "%(asctime)s %(levelname)s: %(message)s"


def check_folder(folder: Path, what: str) -> None:
    """Raise ``FileAccessError`` unless ``folder`` is an existing folder (``what`` names the
    output it is for, e.g. ``cannot write x/a.json``)."""
    if not folder.is_dir():
        why = "not a folder" if folder.exists() else "no folder"
        raise FileAccessError(f"{what}: {why} {folder}")


def prepare_outputs(
    outputs: Iterable[Optional[PathLike]],
    inputs: Iterable[Optional[PathLike]] = (),
    folders: Iterable[Optional[PathLike]] = (),
) -> None:
    """Check, before any work, that the ``outputs`` (files; None: not asked for) can be
    written and overwrite no input, and that the output ``folders`` exist; then remove the
    temporaries killed runs left in all those folders. URLs are only compared with the
    inputs. One line ``FileAccessError`` or ``OutputOverwritesInputError`` otherwise."""
    from chakra.fileio.guard import refuse_overwriting_inputs  # after --help: start-up
    from chakra.fileio.location import is_url
    from chakra.fileio.stale import remove_stale_temporaries

    given = [location for location in outputs if location is not None]
    swept: set[Path] = set()
    for folder in folders:
        if folder is None or is_url(folder):
            continue
        if not Path(folder).is_dir():
            why = "is not a folder" if Path(folder).exists() else "does not exist"
            raise FileAccessError(f"output folder {folder} {why}")
        swept.add(Path(folder))
    local_folders: dict[Path, PathLike] = {}
    for output in given:
        if is_url(output):
            continue
        local_folders.setdefault(Path(output).parent, output)
        if Path(output).is_dir():
            raise FileAccessError(f"cannot write {output}: it is a folder")
    for folder, output in local_folders.items():
        check_folder(folder, f"cannot write {output}")
    refuse_overwriting_inputs(given, inputs)
    for folder in swept | set(local_folders):
        remove_stale_temporaries(folder)


@contextlib.contextmanager
def new_folder(folder: Path) -> Iterator[None]:
    """Create ``folder`` (and its missing parents) for the block; when the block fails, the
    folders it created are removed again if empty, so that a failed run leaves nothing."""
    created = []
    missing = folder
    while not missing.exists() and not missing.is_symlink() and missing != missing.parent:
        created.append(missing)
        missing = missing.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileAccessError(f"cannot create folder {folder}: {exc.strerror or exc}") from exc
    try:
        yield
    except BaseException:
        for path in created:  # deepest first
            with contextlib.suppress(OSError):
                path.rmdir()
        raise


@contextlib.contextmanager
def log_file(path: Optional[PathLike], fmt: str = LOG_FORMAT) -> Iterator[None]:
    """While the block runs, copy the root logger's records to ``path`` (nothing when None),
    written atomically when the block ends (see the module documentation). A
    :class:`ChakraError` ending the block is recorded as the log's last line."""
    if path is None:
        yield
        return
    from chakra.fileio import AtomicFile  # after --help: start-up

    output = AtomicFile(path, text=True)
    handler = logging.StreamHandler(output.stream)
    handler.setFormatter(logging.Formatter(fmt))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    except ChakraError as exc:
        record = logging.makeLogRecord({"levelno": logging.ERROR, "levelname": "ERROR",
                                        "msg": "%s", "args": (str(exc),)})  # fmt: skip
        handler.handle(record)
        raise
    finally:
        root.removeHandler(handler)
        handler.close()
        output.commit()
