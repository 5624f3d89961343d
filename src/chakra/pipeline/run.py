"""``run_pipeline``: link and convert every rank (in worker processes), then simulate them
together, run the what-if scenarios and write the report, page, timeline and plot
(:mod:`chakra.pipeline.outputs`).

Output folder layout::

    rank<r>.et_plus.json   linked host + device trace
    PREFIX.<r>.et          Chakra ET graph (PREFIX: ``workload`` unless told), the family
                           ASTRA-sim loads with --workload-configuration=PREFIX
    PREFIX.comm_groups.json  ASTRA-sim's communicator groups ({"<pg_name>": [ranks]}), when
                           the job has process groups (--comm-group-configuration)
    rank<r>.report.json    that rank's link and convert reports, and the manifest resuming
                           trusts (digests of its inputs and outputs; :mod:`.resume`)
    report.json            per rank: link coverage, conversion counts, simulated vs measured,
                           model-only makespan and error, unexplained time on the critical path,
                           and the views (:mod:`chakra.views`): temporal breakdown, overlap,
                           top kernels, stream idle time by cause, typed critical path; the
                           cross-rank agreement; "what_if": each scenario's rules, node counts,
                           per-rank makespan and change vs the replay in % (or why skipped);
                           "job": the job's makespan (slowest rank), spread, per rank compute /
                           exposed communication / unexplained / idle time, and each what-if's
                           change of the job's makespan (:mod:`chakra.views.job`)
    report.html            report.json as one self-contained page (inline CSS and SVG, no
                           scripts, nothing fetched): the job and its what-if changes, the
                           ranks compared, then per rank (collapsed, the slowest open) busy
                           fraction over time, breakdowns and critical path
                           (:mod:`chakra.views.html_report`); unless turned off
    timeline.json          simulated (and measured) schedule, Chrome/Perfetto JSON
    utilisation.png        busy fraction of each host thread and GPU stream over time,
                           simulated beside measured, one µs axis for every rank

Finished work stays: a run that fails (a bad input, a rank that does not link or convert, a
simulation that deadlocks) or is interrupted keeps every rank whose outputs and manifest
were committed, for the next run to reuse, and the comm-group file (committed with the
``.et`` family before the simulation); in a local folder it created, nothing else stays
(no folder when no rank finished: :mod:`chakra.pipeline.fresh`). The job's files appear
together or not at all. An error after the ``.et`` family names its step (``simulating the
job: ...``).

Inputs and the output folder may be URLs (``s3://bucket/job/``, ``file:///shared/job``, any
fsspec protocol; see :mod:`chakra.fileio.location`), read and written by whichever process
runs the stage, so Dask workers need the same file system packages and credentials.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Sequence
from concurrent.futures import wait
from pathlib import Path
from typing import Any, Optional, Union

import msgspec

from chakra.convert import ConvertOptions
from chakra.convert.group_file import write_comm_groups
from chakra.errors import ChakraError
from chakra.fileio import AtomicGroup
from chakra.fileio.location import Location, join, location
from chakra.fileio.stale import remove_stale_temporaries
from chakra.link import LinkOptions
from chakra.pipeline.astra_profile import AstraSimFamily, write_profile
from chakra.pipeline.fresh import job_step, output_folder
from chakra.pipeline.naming import input_labels
from chakra.pipeline.outputs import (
    OutputFiles,
    OutputOptions,
    agreement_entry,
    early_timeline,
    write_outputs,
)
from chakra.pipeline.preflight import check_inputs, refuse_overwriting
from chakra.pipeline.rank_report import RankReport, rank_reports
from chakra.pipeline.rank_work import (
    RankFiles,
    RankOptions,
    RankWork,
    link_and_convert,
)
from chakra.pipeline.resume import (
    ET_PREFIX,
    comm_groups_name,
    finished_work,
    note_rewritten,
    reusable_entry,
)
from chakra.pipeline.schedule import dask_client, dask_wait, estimate_peak_bytes, run_bounded
from chakra.pipeline.summary import bound_line, host_source_line, job_lines, rank_table
from chakra.pipeline.timeline_file import TimelineOptions, checked_options, ranks_known_shown
from chakra.progress import Progress, bars_on
from chakra.ranks import require_ends, rewrite_files
from chakra.ranks.rank_read import agree_reads, graphs_of
from chakra.simulate.rank_order import files_in_rank_order
from chakra.simulate.replay import SimOptions, simulate
from chakra.simulate.scenarios import Scenario, WhatIf
from chakra.simulate.sim_result import SimResult
from chakra.views.job import JobSummary
from chakra.workers import process_pool

logger = logging.getLogger(__name__)


class PipelineResult(msgspec.Struct, frozen=True):
    """Per-rank results, where the outputs are (paths, or URLs for a URL output folder), and
    the ranks reused from an earlier run."""

    output_dir: Location
    ranks: list[RankReport]
    timeline: Optional[Location]
    plot: Optional[Location]
    report: Location
    reused: list[int] = []
    et_prefix: Optional[Location] = None  # the .et files are ET_PREFIX.<rank>.et
    comm_groups: Optional[Location] = None  # ASTRA-sim's group file, if the job has groups
    html: Optional[Location] = None  # report.html, unless turned off
    what_if: list[WhatIf] = []  # the what-if scenarios, run or skipped (with a note)
    job: Optional[JobSummary] = None  # the job's makespan, rank comparison, what-if changes
    astra_sim: Optional[AstraSimFamily] = None  # the .et family handed to ASTRA-sim


class Execution(msgspec.Struct, frozen=True):
    """How the per-rank stages run; ``max_memory_bytes`` None means no memory budget."""

    jobs: int = 1
    resume: bool = True
    max_memory_bytes: Optional[int] = None
    executor: str = "process"
    scheduler: Optional[str] = None


def _execute(work: list, execution: Execution, on_done: Any) -> list:
    """Run ``link_and_convert`` over ``work`` serially, in a process pool or on Dask."""
    budget = execution.max_memory_bytes
    estimates = [0] * len(work)  # only a memory budget needs them (a request each on a URL)
    if budget is not None:
        estimates = [estimate_peak_bytes(job[0].inputs) for job in work]
    if execution.executor == "dask":
        with dask_client(execution.scheduler or "") as client:

            def submit(job: Any) -> Any:
                return client.submit(link_and_convert, job, pure=False)

            return run_bounded(
                work,
                estimates,
                submit,
                dask_wait(),
                max_in_flight=len(work),
                budget_bytes=budget,
                on_done=on_done,
            )
    if execution.jobs <= 1:
        results = []
        for job in work:
            results.append(link_and_convert(job))
            on_done(results[-1])
        return results
    with process_pool(execution.jobs) as pool:

        def submit_local(job: Any) -> Any:
            return pool.submit(link_and_convert, job)

        return run_bounded(
            work,
            estimates,
            submit_local,
            wait,
            max_in_flight=execution.jobs,
            budget_bytes=budget,
            on_done=on_done,
        )


def _prepare(
    ranks: list[RankFiles], folder: Location, options: RankOptions, execution: Execution,
    shown: frozenset[int] = frozenset(),
) -> tuple[list, list[int]]:  # fmt: skip
    """Every rank's work (sorted by rank) and the ranks reused from an earlier run;
    ``shown``: the ranks the timeline will show."""
    reused: list[RankWork] = []
    work = []
    labels = iter(input_labels([path for files in ranks for path in files.inputs]))
    position = {rank: i for i, rank in enumerate(sorted(files.rank for files in ranks))}
    for files in ranks:
        rank_labels = tuple(next(labels) for _ in files.inputs)
        entry = None
        if execution.resume:
            entry = reusable_entry(folder, files.rank, files.inputs, options, options.et_prefix)
        if entry is not None:
            reused.append(RankWork(entry))
        else:
            job = (files, folder, options, rank_labels, position[files.rank], files.rank in shown)
            work.append(job)
    if reused:
        logger.info(
            "reusing %d of %d ranks from an earlier run (same inputs, options and "
            "outputs, by content)",
            len(reused),
            len(ranks),
        )
    bar = Progress("linking and converting", bars_on() and bool(work), total=len(work),
                   unit="ranks").start(f"{len(work)} ranks")  # fmt: skip

    def on_done(_: Any) -> None:
        bar.update(bar.done + 1)

    try:
        results = _execute(work, execution, on_done) if work else []
    except BaseException:
        bar.close()
        raise
    bar.finish()
    prepared = sorted(reused + results, key=lambda r: r.entry["rank"])
    return prepared, sorted(work.entry["rank"] for work in reused)


def run_pipeline(
    ranks: list[RankFiles],
    output_dir: Location,
    *,
    jobs: int = 1,
    options: Optional[LinkOptions] = None,
    et_prefix: str = ET_PREFIX,
    process_group_metadata: bool = False,
    plot: bool = True,
    resume: bool = True,
    max_memory_gb: Optional[float] = None,
    executor: str = "process",
    scheduler: Optional[str] = None,
    what_if: Optional[Sequence[Scenario]] = None,
    html: bool = True,
    timeline: Union[bool, TimelineOptions] = True,
    astra_sim_profile: str = "full",
) -> PipelineResult:
    """Run every stage for ``ranks`` (simulated together, so collectives meet) and write
    the outputs; raises ChakraError naming the rank and file at the first failure.

    Linking and converting run per rank: serially (``jobs`` 1), in ``jobs`` worker
    processes, or with ``executor="dask"`` as tasks on the Dask distributed cluster at
    ``scheduler`` (an address, or ``local:N`` for N local worker processes). Dask workers
    read the inputs and write the outputs at the same locations, so these must be on a
    file system the workers share, or URLs they can reach (``s3://...``; fsspec needed).
    A missing input, or an input that an output would overwrite (same path, hard or
    symbolic link), is reported before anything is written; temporaries that killed runs
    left in a local output folder are removed (:mod:`chakra.fileio.stale`). Failing, a
    folder it creates keeps only finished ranks (:mod:`chakra.pipeline.fresh`).

    ``resume``: ranks whose outputs this package wrote from the same inputs and options
    (by content: see :mod:`chakra.pipeline.resume`) are reused, so an interrupted run redoes
    only the rest.
    ``max_memory_gb``: a budget in GiB for the ranks in flight at once, each estimated at
    ``PEAK_PER_INPUT_BYTE`` (2) times its uncompressed input size; one rank always runs.
    ``et_prefix``, ``process_group_metadata``: see the module doc and ``ConvertOptions``.
    ``what_if``: scenarios run after the replay (one more simulation each); None runs
    :data:`~chakra.simulate.scenarios.DEFAULT_SCENARIOS`, an empty list none. ``plot`` and
    ``html``: write ``utilisation.png`` and ``report.html``. ``timeline``: whether and what
    ``timeline.json`` shows (:class:`~chakra.pipeline.timeline_file.TimelineOptions`);
    ``astra_sim_profile`` the family handed to ASTRA-sim (:mod:`chakra.pipeline.astra_profile`)."""
    _check_call(et_prefix, ranks)
    execution = _execution(jobs, resume, max_memory_gb, executor, scheduler)
    shown = checked_options(timeline, [files.rank for files in ranks])
    scenarios = None if what_if is None else tuple(what_if)
    beside = jobs > 1 and executor == "process"  # no fork beside a Dask client's threads
    outputs = OutputOptions(plot, html, scenarios, shown, astra_sim_profile, beside=beside)
    output_dir = location(output_dir)
    check_inputs(ranks)
    refuse_overwriting(ranks, output_dir, et_prefix)
    rank_options = RankOptions(
        options or LinkOptions(),
        ConvertOptions(process_group_metadata=process_group_metadata),
        et_prefix,
    )
    with output_folder(output_dir, functools.partial(finished_work, et_prefix=et_prefix)):
        if isinstance(output_dir, Path):  # failing, a fresh folder keeps only finished work
            remove_stale_temporaries(output_dir)
        return _stages(ranks, output_dir, rank_options, execution, outputs)


def _stages(
    ranks: list[RankFiles], output_dir: Location, rank_options: RankOptions,
    execution: Execution, outputs: OutputOptions,
) -> PipelineResult:  # fmt: skip
    """Every stage of :func:`run_pipeline`, into the existing ``output_dir``."""
    et_prefix = rank_options.et_prefix
    shown = ranks_known_shown(outputs.timeline, [files.rank for files in ranks])
    prepared, reused = _prepare(ranks, output_dir, rank_options, execution, shown)
    ets = [join(output_dir, work.entry["et"]) for work in prepared]
    reads = [work.read for work in prepared]
    agreement = agree_reads(ets, reads)  # the i-th collective of a group: one operation
    require_ends(ets, agreement)
    rewritten = rewrite_files(ets, agreement)
    note_rewritten(output_dir, rewritten, et_prefix)
    groups = join(output_dir, comm_groups_name(et_prefix)) if agreement.groups else None
    if groups is not None:  # with the .et family, which ASTRA-sim runs whatever fails next
        write_comm_groups(groups, agreement.groups)
    with job_step("simulating the job", output_dir):
        again = {str(ets[position]) for position in rewritten}
        graphs = graphs_of(files_in_rank_order(ets), reads, again)
        replay = simulate(graphs, SimOptions(explain=True))
    # the job's files appear together, or none
    with job_step("the what-if runs and the job's outputs", output_dir), AtomicGroup() as job:
        entry = agreement_entry(agreement, rewritten)
        reports, files = _job_outputs(replay, prepared, entry, output_dir, outputs, job)
        family = write_profile(outputs.astra_sim_profile, ets, replay, output_dir, et_prefix, job)
    return PipelineResult(
        output_dir,
        reports,
        files.timeline,
        files.plot,
        files.report,
        reused,
        join(output_dir, et_prefix),
        groups,
        files.html,
        files.what_if,
        files.job,
        family,
    )


def _job_outputs(
    replay: SimResult, prepared: list[RankWork], agreement: dict[str, Any], folder: Location,
    outputs: OutputOptions, group: AtomicGroup,
) -> tuple[list[RankReport], OutputFiles]:  # fmt: skip
    """The ranks' reports and the job's outputs (:func:`write_outputs`), the timeline begun
    first where it can be (:func:`early_timeline`)."""
    with early_timeline(replay, folder, outputs, group) as started:
        reports = rank_reports([work.entry for work in prepared], replay)
        files = write_outputs(replay, reports, agreement, folder, outputs, group, started)
    return reports, files


def _check_call(et_prefix: str, ranks: list[RankFiles]) -> None:
    if not et_prefix or "/" in et_prefix:
        raise ChakraError(f"--et-prefix {et_prefix!r}: a file name prefix, without '/'")
    if not ranks:
        raise ChakraError("no ranks to process")


def _execution(
    jobs: int, resume: bool, max_memory_gb: Optional[float], executor: str,
    scheduler: Optional[str],
) -> Execution:  # fmt: skip
    if executor not in ("process", "dask"):
        raise ChakraError(f"unknown executor {executor!r}: expected 'process' or 'dask'")
    if executor == "dask" and not scheduler:
        raise ChakraError("the dask executor needs a scheduler address or local:N")
    if max_memory_gb is not None and not (math.isfinite(max_memory_gb) and max_memory_gb > 0):
        raise ChakraError(f"memory budget must be a finite number above 0, not {max_memory_gb}")
    budget = None if max_memory_gb is None else int(max_memory_gb * 2**30)
    return Execution(jobs, resume, budget, executor, scheduler)


def summary_table(result: PipelineResult) -> str:
    """The per-rank table of the terminal summary (:func:`chakra.pipeline.summary.rank_table`:
    every rank of a small job, else the slowest, median and fastest)."""
    return rank_table(result.ranks, result.job)


def summary_text(result: PipelineResult) -> str:
    """The terminal summary: the job's lines (makespan, spread, one line per what-if
    scenario: :func:`chakra.pipeline.summary.job_lines`), then the per-rank table."""
    lines = job_lines(result.job) if result.job is not None else []
    bound = bound_line(result.ranks, result.job)
    if bound is not None:
        lines.insert(1, bound)
    source = host_source_line(result.ranks)
    if source is not None:
        lines.insert(0, source)
    return "\n".join([*lines, summary_table(result)])
