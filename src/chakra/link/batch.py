"""Link many ranks: pair host and device files by rank, run ranks in worker processes."""

from __future__ import annotations

import logging
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Optional

import msgspec

from chakra.errors import ChakraError, PathLike
from chakra.fileio.location import Location, list_folder, name_of
from chakra.ingest import load_device_trace, load_host_trace
from chakra.link.et_plus import write_et_plus
from chakra.link.linker import link_traces
from chakra.link.model import LinkOptions, LinkReport
from chakra.link.report import check_coverage, missing_parts

logger = logging.getLogger(__name__)
_LAST_NUMBER = re.compile(r"(\d+)(?!.*\d)")
TRACE_SUFFIXES = (".json", ".json.gz")


class Coverage(msgspec.Struct, frozen=True):
    """``--strict`` thresholds (None: no check)."""

    min_host: Optional[float] = None
    min_gpu: Optional[float] = None


def link_files(
    host_path: PathLike,
    device_path: PathLike,
    output_path: PathLike,
    options: LinkOptions,
    coverage: Optional[Coverage] = None,
    rank: Optional[int] = None,
) -> LinkReport:
    """Load, link and write one rank; returns its report. With coverage thresholds, a link
    below them raises before anything is written; a partial link otherwise is written with
    a warning naming what is missing. ``rank``, when given, is checked against the Kineto
    trace's ``distributedInfo``."""
    device = load_device_trace(device_path)
    if rank is not None and device.rank is not None and rank != device.rank:
        logger.warning("%s: --rank %d but the trace says rank %d", device_path, rank, device.rank)
    linked = link_traces(load_host_trace(host_path), device, options)
    coverage = coverage or Coverage()
    if coverage.min_host is not None or coverage.min_gpu is not None:
        check_coverage(linked.report, coverage.min_host or 0.0, coverage.min_gpu or 0.0)
    missing = missing_parts(linked.report)
    if missing:
        logger.warning("%s: partial link: %s", output_path, "; ".join(missing))
    write_et_plus(linked, output_path)
    return linked.report


def rank_of(path: Path) -> Optional[int]:
    """The rank a file name carries: its last number (``rank3.kineto.json`` -> 3)."""
    name = path.name
    for suffix in TRACE_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    match = _LAST_NUMBER.search(name)
    return int(match.group(1)) if match else None


def pair_by_rank(host_dir: Location, device_dir: Location) -> list[tuple[int, Any, Any]]:
    """(rank, host file, device file) for every rank present in both folders (local paths or
    URLs), paired by the last number in their names."""

    def by_rank(folder: Location) -> dict[int, Location]:
        files: dict[int, Location] = {}
        for path in list_folder(folder):
            name = name_of(path)
            rank = rank_of(Path(name)) if name.endswith(TRACE_SUFFIXES) else None
            if rank is not None:
                if rank in files:
                    raise ChakraError(f"{folder}: two files for rank {rank}: "
                                      f"{name_of(files[rank])}, {name}")  # fmt: skip
                files[rank] = path
        return files

    hosts, devices = by_rank(host_dir), by_rank(device_dir)
    if not hosts or not devices:
        raise ChakraError(f"no rank-numbered .json/.json.gz traces in {host_dir} and {device_dir}")
    unpaired = sorted(set(hosts) ^ set(devices))
    if unpaired:
        raise ChakraError(f"ranks {unpaired} have a host trace or a device trace but not both")
    return [(rank, hosts[rank], devices[rank]) for rank in sorted(hosts)]


def _run_one(job: tuple) -> tuple[int, Optional[dict[str, Any]], Optional[str]]:
    rank, host, device, output, options, coverage = job
    try:
        report = link_files(host, device, output, options, coverage)
        return rank, msgspec.to_builtins(report), None
    except ChakraError as exc:
        return rank, None, str(exc)


def link_ranks(
    pairs: list[tuple[int, Path, Path]],
    output_dir: Path,
    options: LinkOptions,
    coverage: Coverage,
    workers: int,
    suffix: str = ".json",
) -> list[tuple[int, Optional[dict[str, Any]], Optional[str]]]:
    """Link every pair into ``output_dir/rank<r>.et_plus<suffix>``; one result per rank
    (report or error), in rank order. Ranks run in ``workers`` processes."""
    jobs = [
        (rank, host, device, output_dir / f"rank{rank}.et_plus{suffix}", options, coverage)
        for rank, host, device in pairs
    ]
    if workers <= 1:
        return [_run_one(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_run_one, jobs))
