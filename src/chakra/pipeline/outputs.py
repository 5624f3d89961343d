"""The pipeline's job-wide outputs, after the replay: what-if runs, then ``timeline.json``,
``utilisation.png``, ``report.json`` and ``report.html``, written together (with the
comm-group file: :func:`chakra.pipeline.run.run_pipeline`) or not at all, at a path or a
URL. They name the job's files by name, never by the output folder's path, so the same job
written to two folders gives the same bytes (:mod:`chakra.pipeline.naming`)."""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Optional

import msgspec

from chakra.fileio import AtomicGroup, atomic_output
from chakra.fileio.location import Location, join
from chakra.ingest.json_input import dump_finite, gc_paused
from chakra.pipeline.rank_report import RankReport
from chakra.pipeline.timeline_file import (
    TIMELINE as TIMELINE,
)
from chakra.pipeline.timeline_file import (
    TIMELINE_GZ as TIMELINE_GZ,
)
from chakra.pipeline.timeline_file import (
    TimelineOptions,
    known_without_job,
    timeline_beside,
    timeline_entry,
    write_timeline,
)
from chakra.progress import activity
from chakra.ranks import Agreement
from chakra.simulate.scenarios import DEFAULT_SCENARIOS, Scenario, WhatIf, run_scenarios
from chakra.simulate.sim_result import SimResult
from chakra.views.busy import busy_series
from chakra.views.html_report import write_report_html
from chakra.views.job import JobSummary, job_summary, rank_shares, shown_ranks

logger = logging.getLogger(__name__)
#: The job-wide outputs' names in the output folder (and TIMELINE, TIMELINE_GZ).
PLOT, REPORT, PAGE = "utilisation.png", "report.json", "report.html"


class OutputOptions(msgspec.Struct, frozen=True):
    """Which optional outputs to write. ``what_if`` None: :data:`DEFAULT_SCENARIOS` (which
    adapt to the job, see :func:`run_scenarios`); empty: no what-if runs; else those
    scenarios, run as given or skipped with a note. ``timeline``: whether and what
    ``timeline.json`` shows (:mod:`chakra.pipeline.timeline_file`); ``astra_sim_profile``:
    the ``.et`` family handed to ASTRA-sim (:mod:`chakra.pipeline.astra_profile`)."""

    plot: bool = True
    html: bool = True
    what_if: Optional[tuple[Scenario, ...]] = None
    timeline: TimelineOptions = TimelineOptions()
    astra_sim_profile: str = "full"
    #: write the timeline in a second process while the other views are drawn (jobs > 1)
    beside: bool = False


class OutputFiles(msgspec.Struct, frozen=True):
    """Where the job-wide outputs went (None: not written), the what-if results and the
    job's summary (``report.json``'s ``job``)."""

    timeline: Optional[Location]
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


@contextlib.contextmanager
def early_timeline(
    result: SimResult, folder: Location, options: OutputOptions, group: Optional[AtomicGroup]
) -> Iterator[Optional[Callable[[], Optional[Location]]]]:
    """The timeline begun now in a second process (:func:`timeline_beside`), beside what
    comes before the job's summary (the ranks' views, the what-if runs), when
    ``options.beside`` and the ranks it shows are known without the summary; else None.
    Yields what :func:`write_outputs` takes as ``started``."""
    count = len(result.graphs)
    if not options.beside or not known_without_job(options.timeline, count):
        yield None
        return
    with timeline_beside(result, folder, options.timeline, None, group) as finish:
        yield finish


def write_outputs(
    result: SimResult,
    reports: Sequence[RankReport],
    agreement: dict[str, Any],
    folder: Location,
    options: OutputOptions,
    group: Optional[AtomicGroup] = None,
    started: Optional[Callable[[], Optional[Location]]] = None,
) -> OutputFiles:
    """Run the what-if scenarios on ``result`` (left as it is), then write
    the timeline, plot, report (``reports``: the ranks'; ``agreement``: from
    :func:`agreement_entry`) and page into ``folder``; with a ``group``, they appear when it
    commits. ``started``: the timeline, begun already (:func:`early_timeline`)."""
    if options.what_if is None:
        what_if = run_scenarios(result, DEFAULT_SCENARIOS, adapt=True)
    else:
        what_if = run_scenarios(result, options.what_if)
    job = job_summary([r.simulation for r in reports], rank_shares(result), what_if)
    with contextlib.ExitStack() as stack:
        if started is None and options.beside:  # its ranks needed the summary: begun now
            started = stack.enter_context(
                timeline_beside(result, folder, options.timeline, job, group)
            )
        if started is None:
            with activity("writing the timeline"):
                timeline = write_timeline(result, folder, options.timeline, job, group)
        picture, report, page = _other_views(result, reports, job, folder, options, group,
                                             what_if, agreement)  # fmt: skip
        if started is not None:
            with activity("writing the timeline"):
                timeline = started()
    return OutputFiles(timeline, picture, report, page, what_if, job)


def _other_views(
    result: SimResult, reports: Sequence[RankReport], job: JobSummary, folder: Location,
    options: OutputOptions, group: Optional[AtomicGroup], what_if: list[WhatIf],
    agreement: dict[str, Any],
) -> tuple[Optional[Location], Location, Optional[Location]]:  # fmt: skip
    """The plot, report.json and report.html: where they went (None: not drawn)."""
    with activity(f"drawing {PLOT}"), gc_paused():  # matplotlib's artists: 0.15 of 1.3 s
        picture = _plot(result, folder, options.plot, group, shown_ranks(job, len(reports)))
    document = {"job": msgspec.to_builtins(job), "agreement": agreement,
                "ranks": [msgspec.to_builtins(r) for r in reports],
                "what_if": [msgspec.to_builtins(w) for w in what_if],
                "timeline": timeline_entry(result, options.timeline, job)}  # fmt: skip
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
    return picture, report, page


def _plot(
    result: SimResult, folder: Location, wanted: bool, group: Optional[AtomicGroup],
    ranks: Optional[tuple[int, ...]] = None,
) -> Optional[Location]:  # fmt: skip
    """The utilisation plot (``ranks``: those drawn, None: all), drawn into a local file
    first when ``folder`` is a URL; its path, or None when not ``wanted`` or when matplotlib
    is not installed (a warning says so: report.html has the same busy bands)."""
    from chakra.views.plot import INSTALL_PLOT, plot_utilisation, plotting_available

    if not wanted:
        return None
    if not plotting_available():
        logger.warning("utilisation.png not drawn: matplotlib is not installed (%s); "
                       "report.html shows the same busy fractions", INSTALL_PLOT)  # fmt: skip
        return None
    picture = join(folder, PLOT)
    if isinstance(picture, Path):
        plot_utilisation(result, picture, group, ranks)
        return picture
    with tempfile.TemporaryDirectory(prefix="chakra-plot-") as scratch:
        local = Path(scratch) / "utilisation.png"
        plot_utilisation(result, local, ranks=ranks)
        with atomic_output(picture, compress=False, group=group) as out:
            out.write(local.read_bytes())
    return picture
