"""What a run is, as the analyses take it: a ``chakra_pipeline`` output folder (its
``report.json`` names each rank's ``.et`` and ET+), a folder of ``PREFIX.<rank>.et`` files,
or the files themselves (``.et`` or ET+ JSON, one per rank, each file's rank from its
metadata or name: :mod:`chakra.simulate.rank_order`)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional, Union

import msgspec

from chakra.errors import DiffError, FileAccessError, TraceFormatError
from chakra.ingest.detect import TraceKind, sniff_kind
from chakra.simulate.rank_order import files_in_rank_order

REPORT = "report.json"
_RANKED = re.compile(r"^(?P<prefix>.+)\.(?P<rank>\d+)\.et$")

RunPaths = Union[str, Path, Sequence[Union[str, Path]]]


class RunFiles(msgspec.Struct, frozen=True):
    """One run's files: per rank (in rank order) the graph to simulate (``.et`` or ET+) and
    its ET+ (None when the run has none); the pipeline's ``report.json`` document when the
    run is a pipeline output folder (else None); ``where`` names the run in messages."""

    graphs: list[str]
    et_plus: list[Optional[str]]
    report: Optional[dict[str, Any]]
    where: str


def run_files(paths: RunPaths) -> RunFiles:
    """The :class:`RunFiles` of a folder or of files. Raises FileAccessError for a path that
    does not exist, DiffError for a folder that holds no run, TraceFormatError for a
    ``report.json`` that cannot be read."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    given = [Path(p) for p in paths]
    if not given:
        raise DiffError("no run given: name a pipeline output folder or .et/ET+ files")
    for path in given:
        if not path.exists():
            raise FileAccessError(f"{path}: no such file or folder")
    if len(given) == 1 and given[0].is_dir():
        return _folder(given[0])
    folders = [p for p in given if p.is_dir()]
    if folders:
        raise DiffError(f"{folders[0]}: a folder among files: give one folder, or files only")
    ordered = [Path(p) for p in files_in_rank_order(given)]  # each file's own rank
    et_plus = [str(p) if _is_et_plus(p) else None for p in ordered]
    return RunFiles([str(p) for p in ordered], et_plus, None, ", ".join(map(str, given)))


def _is_et_plus(path: Path) -> bool:
    return sniff_kind(path) is TraceKind.ET_PLUS


def _folder(folder: Path) -> RunFiles:
    report = folder / REPORT
    if report.is_file():
        return _pipeline_folder(folder, report)
    ranked = sorted(p for p in folder.iterdir() if _RANKED.match(p.name))
    if not ranked:
        raise DiffError(f"{folder}: neither a pipeline output folder ({REPORT}) nor a folder "
                        "of PREFIX.<rank>.et files")  # fmt: skip
    ordered = files_in_rank_order(ranked)  # numerically; a gap or a repeat raises
    return RunFiles(ordered, [None] * len(ordered), None, str(folder))


def _pipeline_folder(folder: Path, report: Path) -> RunFiles:
    try:
        document = json.loads(report.read_text(encoding="utf-8"))
        ranks = sorted(document["ranks"], key=lambda r: r["rank"])
        graphs = [str(folder / r["et"]) for r in ranks]
        et_plus = [str(folder / r["et_plus"]) for r in ranks]
    except (ValueError, KeyError, TypeError) as exc:
        raise TraceFormatError(report, f"not a chakra_pipeline report ({exc})") from None
    except OSError as exc:
        raise FileAccessError(f"{report}: cannot be read ({exc.strerror})") from None
    kept = [p if Path(p).is_file() else None for p in et_plus]
    return RunFiles(graphs, kept, document, str(folder))
