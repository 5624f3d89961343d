"""Link many ranks: pair host and device files by rank, run ranks in worker processes.

A Kineto trace's rank is the one it records (``distributedInfo.rank``), else the one its
name carries; a host ET records none, so its name's serves (rules: :func:`rank_in_name`)."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from concurrent.futures import Future, as_completed
from pathlib import Path
from typing import Any, Callable, Optional

import msgspec

from chakra.errors import ChakraError, PathLike
from chakra.fileio import AtomicGroup
from chakra.fileio.atomic import Pending
from chakra.fileio.location import Location, list_folder, name_of
from chakra.fileio.stale import remove_own_temporaries
from chakra.ingest import load_device_trace
from chakra.ingest.detect import peek_rank
from chakra.ingest.device_model import DeviceTrace
from chakra.ingest.host_model import HostTrace
from chakra.ingest.kineto_host import LAST_STEP, choose_step, host_trace_from_kineto
from chakra.link.et_plus import write_et_plus
from chakra.link.linked_trace import LinkOptions, LinkReport, RankResult
from chakra.link.linker import link_traces
from chakra.link.rank_load import load_rank_traces
from chakra.link.report import check_coverage, missing_parts
from chakra.link.reuse import (
    digest_inputs,
    manifest_path,
    reusable_result,
    say_reused,
    write_manifest,
)
from chakra.workers import process_pool

logger = logging.getLogger(__name__)
_NAMED_RANK = re.compile(r"(?<![a-z])(?:rank|worker)[-_]?(\d+)", re.IGNORECASE)
_NUMBER = re.compile(r"\d+")
TRACE_SUFFIXES = (".json", ".json.gz")
#: A number in a file name with more digits than this is a timestamp or pid, not a rank.
MAX_RANK_DIGITS = 6


class Coverage(msgspec.Struct, frozen=True):
    """``--strict`` thresholds (None: no check)."""

    min_host: Optional[float] = None
    min_gpu: Optional[float] = None


def link_files(
    host_path: Optional[PathLike],
    device_path: PathLike,
    output_path: PathLike,
    options: LinkOptions,
    coverage: Optional[Coverage] = None,
    rank: Optional[int] = None,
    group: Optional[AtomicGroup] = None,
    processes: int = 1,
) -> LinkReport:
    """Load, link and write one rank; returns its report. With coverage thresholds, a link
    below them raises before anything is written; a partial link otherwise is written with
    a warning naming what is missing. ``rank``, when given, is checked against the Kineto
    trace's ``distributedInfo``. With a ``group``, the output is moved into place when the
    group commits. Without ``host_path``, the host side is made from the Kineto trace alone
    (:func:`chakra.ingest.kineto_host.host_trace_from_kineto`). ``processes`` 2: the two
    traces are loaded side by side (:mod:`chakra.link.rank_load`) and the ET+ written by
    two processes, the same file either way."""
    if host_path is None:
        device = load_device_trace(device_path)
        host, options = _host_from_kineto(device, options)
    else:
        loaded = load_rank_traces(host_path, device_path, processes)
        host, device = loaded.host, loaded.device
    if rank is not None and device.rank is not None and rank != device.rank:
        logger.warning("%s: --rank %d but the trace says rank %d", device_path, rank, device.rank)
    linked = link_traces(host, device, options)
    coverage = coverage or Coverage()
    if coverage.min_host is not None or coverage.min_gpu is not None:
        check_coverage(linked.report, coverage.min_host or 0.0, coverage.min_gpu or 0.0)
    missing = missing_parts(linked.report)
    if missing:
        logger.warning("%s: partial link: %s", output_path, "; ".join(missing))
    write_et_plus(linked, output_path, group, processes)
    return linked.report


def _host_from_kineto(device: DeviceTrace, options: LinkOptions) -> tuple[HostTrace, LinkOptions]:
    """The host side made from ``device`` alone, of the step ``options`` choose (by default
    the last: the steady state), and the options that link that step."""
    choice = LAST_STEP if options.profiler_step is None else options.profiler_step
    step = choose_step(device.steps, choice)
    host = host_trace_from_kineto(device, step)
    if step is not None:
        shown = ", ".join(str(s.number) for s in device.steps)
        how = "the last complete one" if choice == LAST_STEP else "as asked"
        logger.info("%s: ProfilerStep#%d of steps %s (%s)", device.path, step.number, shown, how)
    logger.info("%s: no host execution trace: %s", device.path, "; ".join(host.notes))
    return host, msgspec.structs.replace(
        options, profiler_step=None if step is None else step.number
    )


def _stem(name: str) -> str:
    for suffix in TRACE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def named_rank(name: str) -> Optional[int]:
    """The rank a file name states: ``rankN``, ``workerN``, ``rank-N`` or ``rank_N`` (any
    case; the last such mention); None when it states none."""
    found = _NAMED_RANK.findall(_stem(name))
    return int(found[-1]) if found else None


def rank_in_name(name: str) -> Optional[int]:
    """The rank a file name carries: :func:`named_rank`, else its last number of at most
    :data:`MAX_RANK_DIGITS` digits (a longer one is a timestamp or a process id, as in
    PyTorch's ``worker3_step_12.1694128201553.pt.trace.json``); None when neither."""
    named = named_rank(name)
    if named is not None:
        return named
    short = [n for n in _NUMBER.findall(_stem(name)) if len(n) <= MAX_RANK_DIGITS]
    return int(short[-1]) if short else None


def host_rank(path: Location) -> int:
    """The rank of a host ET, which records none: from its name (:func:`rank_in_name`)."""
    rank = rank_in_name(name_of(path))
    if rank is None:
        raise ChakraError(
            f"{path}: no rank in the name of this host trace (expected rankN, "
            f"workerN or a number of at most {MAX_RANK_DIGITS} digits)"
        )
    return rank


def device_rank(path: Location) -> int:
    """The rank of a Kineto trace: the ``distributedInfo.rank`` it records, read without
    loading it (:func:`~chakra.ingest.detect.peek_rank`), else its name's
    (:func:`rank_in_name`). A gzip file is inflated to its end only when its head lacks the
    key and its name states no rank. A name that disagrees with the trace is warned about."""
    named = named_rank(name_of(path))
    recorded = peek_rank(path, whole_gzip=named is None)
    if recorded is not None:
        if named is not None and named != recorded:
            logger.warning(
                "%s: the name says rank %d, the trace's distributedInfo %d: using %d",
                path,
                named,
                recorded,
                recorded,
            )
        return recorded
    rank = rank_in_name(name_of(path))
    if rank is None:
        raise ChakraError(
            f"{path}: no rank: no distributedInfo.rank in the trace, and no "
            f"rankN, workerN or number of at most {MAX_RANK_DIGITS} digits in "
            "its name"
        )
    return rank


def files_by_rank(
    folder: Location, files: list[Location], rank_of: Callable[[Location], int]
) -> dict[int, Location]:
    """``files`` by their rank (``rank_of``); two files of one rank are an error naming both."""
    by_rank: dict[int, Location] = {}
    for path in files:
        rank = rank_of(path)
        if rank in by_rank:
            raise ChakraError(
                f"{folder}: two files for rank {rank}: {name_of(by_rank[rank])}, {name_of(path)}"
            )
        by_rank[rank] = path
    return by_rank


class RankPair(msgspec.Struct, frozen=True):
    """The host and device traces of one rank (local paths or URLs); ``host`` None: the
    host side is made from the device trace alone."""

    rank: int
    host: Optional[Location]
    device: Location

    @property
    def inputs(self) -> tuple[Location, ...]:
        """The files read: host and device traces, or the device trace alone."""
        return (self.device,) if self.host is None else (self.host, self.device)


def pair_by_rank(host_dir: Optional[Location], device_dir: Location) -> list[RankPair]:
    """Every rank of a folder of host traces and a folder of Kineto traces (local paths or
    URLs), paired by :func:`pair_ranks`; host files without a rank in their name are left
    out (a Kineto file without any rank is an error). Without ``host_dir``, every rank's
    host side is made from its Kineto trace."""

    def traces(folder: Location) -> list[Location]:
        return [p for p in list_folder(folder) if name_of(p).endswith(TRACE_SUFFIXES)]

    devices = traces(device_dir)
    if host_dir is None:
        if not devices:
            raise ChakraError(f"no .json/.json.gz traces in {device_dir}")
        return pair_ranks([], devices, device_dir, device_dir)
    named_hosts = [p for p in traces(host_dir) if rank_in_name(name_of(p)) is not None]
    if not named_hosts or not devices:
        raise ChakraError(f"no rank-numbered .json/.json.gz traces in {host_dir} and {device_dir}")
    return pair_ranks(named_hosts, devices, host_dir, device_dir)


def pair_ranks(
    hosts: Sequence[Location],
    devices: Sequence[Location],
    host_folder: Location,
    device_folder: Location,
) -> list[RankPair]:
    """The one rule pairing host ETs with Kineto traces, in rank order: host ETs by the rank
    in their names (:func:`host_rank`), Kineto traces by the rank they record
    (:func:`device_rank`). No host ET at all: every rank is its Kineto trace alone (the
    host side is made from it). Two files of one rank, a rank with only one of the two
    (when there are host ETs), or no pair at all are errors naming the folder (and the
    file)."""
    by_rank = files_by_rank(device_folder, devices, device_rank)
    if not hosts:
        if not by_rank:
            raise ChakraError(f"{device_folder}: no Kineto traces found")
        return [RankPair(rank, None, device) for rank, device in sorted(by_rank.items())]
    pairs = []
    for rank, host in sorted(files_by_rank(host_folder, hosts, host_rank).items()):
        if rank not in by_rank:
            raise ChakraError(
                f"{device_folder}: rank {rank} has {name_of(host)} but no Kineto trace"
            )
        pairs.append(RankPair(rank, host, by_rank.pop(rank)))
    if by_rank:
        unpaired = sorted(by_rank)
        raise ChakraError(
            f"{host_folder}: ranks {unpaired} have a Kineto trace but no host trace (give "
            "every rank its host trace, or none: then each rank's host side is made from "
            "its Kineto trace)"
        )
    if not pairs:
        raise ChakraError(f"{host_folder}: no host/Kineto trace pairs found")
    return pairs


class _RankJob(msgspec.Struct, frozen=True):
    """What a worker needs to link one rank of a batch; ``owner`` is the process that
    commits every rank's file; ``settings``: the options that change the output, as
    recorded in its manifest (:mod:`chakra.link.reuse`)."""

    pair: RankPair
    output: Path
    options: LinkOptions
    coverage: Coverage
    owner: int
    settings: Any


class _RankOutcome(msgspec.Struct, frozen=True):
    """What linking one rank of a batch gives: its result, and its output finished under a
    temporary name (to be moved into place with the others)."""

    result: RankResult
    pending: tuple[Pending, ...] = ()


def _run_one(job: _RankJob) -> _RankOutcome:
    group = AtomicGroup(job.owner)
    pair = job.pair
    try:
        inputs = digest_inputs(pair.inputs)  # before reading them
        report = link_files(
            pair.host, pair.device, job.output, job.options, job.coverage, group=group
        )
        finished = group.hand_over()
        group.adopt(finished)  # still the group's: discarded with it if stopped now
        write_manifest(group, finished, job.output, pair.rank, job.settings, inputs, report)
        pending = tuple(group.hand_over())  # the manifest last: moved into place after
        return _RankOutcome(RankResult(pair.rank, report=report), pending)
    except ChakraError as exc:
        group.discard()
        return _RankOutcome(RankResult(pair.rank, error=str(exc)))
    except BaseException:
        group.discard()
        raise


def link_ranks(
    pairs: Sequence[RankPair],
    output_dir: Path,
    options: LinkOptions,
    coverage: Coverage,
    workers: int,
    suffix: str = ".json",
    group: Optional[AtomicGroup] = None,
) -> list[RankResult]:
    """Link every pair into ``output_dir/rank<r>.et_plus<suffix>``; one result per rank
    (report or error), in rank order. Ranks run in ``workers`` processes. The files appear
    together, when every rank succeeded, or not at all (a failed rank leaves none). With a
    ``group`` the files join it, for its owner to commit with others (a failed rank
    discards the whole group). Interrupted (Ctrl-C, SIGTERM), the ranks linked before stay,
    each file whole (:func:`_keep_linked`); the group's other files do not. Each ET+ has a
    manifest beside it; a rank whose ET+ it proves is reused, not linked again
    (:mod:`chakra.link.reuse`)."""
    owner = os.getpid()
    settings = msgspec.to_builtins({"link": options, "strict": coverage, "suffix": suffix})
    jobs = [
        _RankJob(
            pair,
            output_dir / f"rank{pair.rank}.et_plus{suffix}",
            options,
            coverage,
            owner,
            settings,
        )
        for pair in pairs
    ]
    own = group is None
    group = AtomicGroup() if group is None else group
    outcomes = _reused(jobs, output_dir)
    proven = {outcome.result.rank for outcome in outcomes}
    try:
        _link_all([job for job in jobs if job.pair.rank not in proven], workers, outcomes)
        for outcome in outcomes:
            group.adopt(outcome.pending)
    except BaseException as exc:
        group.discard()
        if isinstance(exc, KeyboardInterrupt):
            _keep_linked(outcomes, output_dir)
        # a worker stopped after it handed its files over, before its result came back
        targets = [(j.output, manifest_path(j.output, j.pair.rank)) for j in jobs]
        remove_own_temporaries(output_dir, [t.name for pair in targets for t in pair], owner)
        raise
    if any(outcome.result.error for outcome in outcomes):
        group.discard()
    elif own:
        group.commit()
    return sorted((outcome.result for outcome in outcomes), key=lambda result: result.rank)


def _reused(jobs: list[_RankJob], output_dir: Path) -> list[_RankOutcome]:
    """The ranks whose ET+ an earlier batch into ``output_dir`` proved (their results as
    stored, nothing to move); one INFO line says how many."""
    proofs = [
        reusable_result(job.output, job.pair.rank, job.pair.inputs, job.settings) for job in jobs
    ]
    reused = [_RankOutcome(proof.result) for proof in proofs if proof.result is not None]
    say_reused([outcome.result.rank for outcome in reused], proofs, output_dir)
    return reused


def _link_all(jobs: list[_RankJob], workers: int, outcomes: list[_RankOutcome]) -> None:
    """Link every job into ``outcomes`` (in the order of ``jobs``); when interrupted,
    ``outcomes`` holds those finished by then."""
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            outcomes.append(_run_one(job))
        return
    futures: list[Future] = []
    try:
        with process_pool(workers) as pool:
            futures = [pool.submit(_run_one, job) for job in jobs]
            for future in as_completed(futures):
                future.result()  # a worker's own error (a bug, a dead worker) raises here
    finally:  # after the pool's end, every result sent back is in: also those interrupted
        outcomes.extend(
            future.result()
            for future in futures
            if future.done() and not future.cancelled() and future.exception() is None
        )


def _keep_linked(outcomes: list[_RankOutcome], output_dir: Path) -> None:
    """After an interrupt: move the files of the ranks linked whole into place (the rerun
    need not link them again), and say which."""
    linked = [outcome for outcome in outcomes if outcome.pending]
    if not linked:
        return
    kept = AtomicGroup()
    for outcome in linked:
        kept.adopt(outcome.pending)
    kept.commit()
    ranks = ", ".join(str(outcome.result.rank) for outcome in linked)
    logger.info("interrupted: kept the ranks linked before, in %s: %s", output_dir, ranks)
