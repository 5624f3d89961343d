"""The pipeline's job-wide outputs, after the replay: what-if runs, then ``timeline.json``,
``utilisation.png``, ``report.json`` and ``report.html``, written together (with the
comm-group file: :func:`chakra.pipeline.run.run_pipeline`) or not at all, at a path or a
URL. They name the job's files by name, never by the output folder's path, so the same job
written to two folders gives the same bytes (:mod:`chakra.pipeline.naming`)."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional, Union

import msgspec

from chakra.errors import UsageError
from chakra.fileio import AtomicGroup, atomic_output
from chakra.fileio.location import Location, join
from chakra.ingest.json_input import dump_finite
from chakra.pipeline.rank_report import RankReport
from chakra.progress import activity
from chakra.ranks import Agreement
from chakra.simulate.scenarios import DEFAULT_SCENARIOS, Scenario, WhatIf, run_scenarios
from chakra.simulate.sim_result import SimResult
from chakra.views.busy import busy_series
from chakra.views.html_report import write_report_html
from chakra.views.job import ALL_RANKS_UP_TO, JobSummary, job_summary, rank_shares
from chakra.views.timeline import chrome_trace

logger = logging.getLogger(__name__)
#: The job-wide outputs' names in the output folder.
TIMELINE, PLOT, REPORT, PAGE = "timeline.json", "utilisation.png", "report.json", "report.html"


#: ``timeline_ranks``: every rank up to :data:`ALL_RANKS_UP_TO`, else the slowest, median
#: and fastest (a 64-rank timeline was 349 MB, which Perfetto's UI loads into memory, and
#: took most of the pipeline's views time); or every rank
TIMELINE_AUTO, TIMELINE_ALL = "auto", "all"


class OutputOptions(msgspec.Struct, frozen=True):
    """Which optional outputs to write. ``what_if`` None: :data:`DEFAULT_SCENARIOS` (which
    adapt to the job, see :func:`run_scenarios`); empty: no what-if runs; else those
    scenarios, run as given or skipped with a note. ``timeline_ranks``: the ranks
    ``timeline.json`` shows, :data:`TIMELINE_AUTO`, :data:`TIMELINE_ALL` or rank ids."""

    plot: bool = True
    html: bool = True
    what_if: Optional[tuple[Scenario, ...]] = None
    timeline_ranks: Union[str, tuple[int, ...]] = TIMELINE_AUTO


class OutputFiles(msgspec.Struct, frozen=True):
    """Where the job-wide outputs went (None: not written), the what-if results and the
    job's summary (``report.json``'s ``job``)."""

    timeline: Location
    plot: Optional[Location]
    report: Location
    html: Optional[Location]
    what_if: list[WhatIf]
    job: JobSummary


def agreement_entry(agreement: Agreement, rewritten: list[int]) -> dict[str, Any]:
    """What the cross-rank step filled (rewriting those ranks' ``.et``) and found."""
    return {
        "counts": agreement.counts,
        "notes": agreement.notes,
        "groups_compared": agreement.compared,
        "groups_not_compared": agreement.not_compared,
        "disagreements": [d.message() for d in agreement.disagreements],
        "ranks_rewritten": rewritten,
    }


def write_outputs(
    result: SimResult,
    reports: Sequence[RankReport],
    agreement: dict[str, Any],
    folder: Location,
    options: OutputOptions,
    group: Optional[AtomicGroup] = None,
) -> OutputFiles:
    """Run the what-if scenarios on ``result`` (left as it is), then write
    the timeline, plot, report (``reports``: the ranks'; ``agreement``: from
    :func:`agreement_entry`) and page into ``folder``; with a ``group``, they appear when it
    commits."""
    if options.what_if is None:
        what_if = run_scenarios(result, DEFAULT_SCENARIOS, adapt=True)
    else:
        what_if = run_scenarios(result, options.what_if)
    job = job_summary([r.simulation for r in reports], rank_shares(result), what_if)
    timeline = join(folder, TIMELINE)
    shown = timeline_ranks(options.timeline_ranks, job, len(reports))
    if shown is not None:
        logger.info("timeline.json shows ranks %s of %d (%s; --timeline-ranks all shows every "
                    "rank)", ", ".join(map(str, shown)), len(reports),
                    "the slowest, median and fastest" if options.timeline_ranks == TIMELINE_AUTO
                    else "as asked")  # fmt: skip
    with activity(f"writing {TIMELINE}"), atomic_output(timeline, text=True, group=group) as out:
        dump_finite(chrome_trace(result, compare=True, ranks=shown), out, timeline)
    picture = None
    if options.plot:
        picture = join(folder, PLOT)
        with activity(f"drawing {PLOT}"):
            _plot(result, picture, group, plotted_ranks(job, len(reports)))
    document = {"job": msgspec.to_builtins(job), "agreement": agreement,
                "ranks": [msgspec.to_builtins(r) for r in reports],
                "what_if": [msgspec.to_builtins(w) for w in what_if],
                "timeline_ranks": list(shown) if shown is not None else TIMELINE_ALL}  # fmt: skip
    report = join(folder, REPORT)
    with activity(f"writing {REPORT}"), atomic_output(report, text=True, group=group) as out:
        dump_finite(document, out, report, indent=2, sort_keys=True)
    page = None
    if options.html:
        page = join(folder, PAGE)
        count = len(reports)
        title = f"Chakra pipeline report: {count} rank{'s' if count != 1 else ''}"
        with activity(f"writing {PAGE}"):
            write_report_html(page, document, busy_series(result), title, group)
    return OutputFiles(timeline, picture, report, page, what_if, job)


def checked_timeline_ranks(
    choice: Union[str, Sequence[int]], ranks: Sequence[int]
) -> Union[str, tuple[int, ...]]:
    """``timeline_ranks`` checked before any work: a word it knows, or ids of the job's
    ``ranks``, sorted (UsageError otherwise)."""
    if isinstance(choice, str):
        if choice not in (TIMELINE_AUTO, TIMELINE_ALL):
            raise UsageError(f"--timeline-ranks {choice!r}: 'auto', 'all' or rank ids")
        return choice
    unknown = sorted(set(choice) - set(ranks))
    if unknown or not choice:
        raise UsageError(f"--timeline-ranks: no rank {unknown[0]} in this job" if unknown
                          else "--timeline-ranks: no rank given")  # fmt: skip
    return tuple(sorted(set(choice)))


def timeline_ranks(
    choice: Union[str, tuple[int, ...]], job: JobSummary, rank_count: int
) -> Optional[tuple[int, ...]]:
    """The ranks ``timeline.json`` shows for the option ``choice`` (see
    :class:`OutputOptions`); None: all."""
    if choice == TIMELINE_ALL:
        return None
    if choice == TIMELINE_AUTO:
        return plotted_ranks(job, rank_count)
    return tuple(sorted(set(choice)))


def plotted_ranks(job: JobSummary, rank_count: int) -> Optional[tuple[int, ...]]:
    """The ranks ``utilisation.png`` draws: every rank up to ``ALL_RANKS_UP_TO``, else the
    slowest, median and fastest (a panel per rank: 64 ranks were 23,000 px tall and took
    half of the run to draw); None: all."""
    if rank_count <= ALL_RANKS_UP_TO:
        return None
    return job.featured_ranks()


def _plot(
    result: SimResult, picture: Location, group: Optional[AtomicGroup],
    ranks: Optional[tuple[int, ...]] = None,
) -> None:  # fmt: skip
    """The utilisation plot (``ranks``: those drawn, None: all), drawn into a local file
    first when ``picture`` is a URL."""
    from chakra.views.plot import plot_utilisation

    if isinstance(picture, Path):
        plot_utilisation(result, picture, group, ranks)
        return
    with tempfile.TemporaryDirectory(prefix="chakra-plot-") as scratch:
        local = Path(scratch) / "utilisation.png"
        plot_utilisation(result, local, ranks=ranks)
        with atomic_output(picture, compress=False, group=group) as out:
            out.write(local.read_bytes())
