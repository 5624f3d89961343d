"""The notebook API: :class:`Analysis`, one run's tables as pandas DataFrames.

``chakra.analysis.Analysis(path)`` takes a ``chakra_pipeline`` output folder (its
``report.json`` and each rank's ``.et`` and ET+), a folder of ``PREFIX.<rank>.et`` files,
or ``.et``/ET+ files, one per rank in rank order. Every table of ``report.html`` has a
method (:data:`chakra.analysis.tables.REPORT_TABLES` names them), plus the HTA-style views: launch
statistics, stream queue length, memory-copy bandwidth and the diff with another run or a
what-if. The replay runs once, at the first method that needs it; for bare ``.et`` files
the report document is built as the pipeline builds it (without link and convert
columns). pandas is the optional extra ``chakra[notebook]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional, Union

import msgspec

from chakra.analysis import tables
from chakra.analysis.runs import RunPaths, run_files
from chakra.convert import load_et_plus
from chakra.errors import DiffError, MissingExtraError
from chakra.pipeline.rank_report import RankReport
from chakra.simulate import ScaleRule, SimOptions, SimResult, simulate_files
from chakra.simulate.replay import what_if_of
from chakra.simulate.scenarios import DEFAULT_SCENARIOS, run_scenarios
from chakra.views import rank_views
from chakra.views.copy_bandwidth import CopyBandwidth, copy_bandwidth, read_copy_sizes
from chakra.views.job import job_summary, rank_shares
from chakra.views.launch_stats import (
    LaunchStat,
    MeasuredLaunches,
    job_launch_stats,
    measured_launches,
)
from chakra.views.run_diff import NameChange, PathChange, diff_runs
from chakra.views.stream_queue import StreamQueue, queue_lengths


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise MissingExtraError(
            "chakra.analysis.Analysis returns pandas DataFrames: pandas is not installed "
            "(pip install 'chakra[notebook]')"
        ) from None
    return pandas


def frame(rows: Iterable[Any], columns: Sequence[str] = (), leave_out: Sequence[str] = ()) -> Any:
    """A DataFrame of ``rows`` (mappings, or msgspec structs: one column per field), the
    ``rank`` and ``source`` columns first, ``leave_out`` columns dropped; ``columns``: those
    of a table with no rows."""
    pandas = _pandas()
    listed = [r if isinstance(r, dict) else msgspec.to_builtins(r) for r in rows]
    if not listed:
        return pandas.DataFrame(columns=[c for c in columns if c not in leave_out])
    table = pandas.DataFrame.from_records(listed).drop(columns=list(leave_out))
    first = [c for c in ("rank", "source") if c in table.columns]
    return table[first + [c for c in table.columns if c not in first]]


def _fields(struct: type) -> tuple[str, ...]:
    return tuple(field.name for field in msgspec.structs.fields(struct))


class Analysis:
    """One run's tables, each a pandas DataFrame (one row per rank and item)."""

    def __init__(self, paths: RunPaths) -> None:
        _pandas()  # fail at once, not at the first table
        self.files = run_files(paths)
        self._result: Optional[SimResult] = None
        self._document = self.files.report

    @property
    def result(self) -> SimResult:
        """The replay of every rank together (with its summaries), run once."""
        if self._result is None:
            self._result = simulate_files(self.files.graphs, options=SimOptions(explain=True))
        return self._result

    @property
    def document(self) -> Mapping[str, Any]:
        """The ``report.json`` document: the pipeline's, or one built like it."""
        if self._document is None:
            result = self.result
            reports = [
                RankReport(r, et_plus or "", graph, {}, {}, summary, path, views)
                for r, (graph, et_plus, summary, path, views) in enumerate(
                    zip(self.files.graphs, self.files.et_plus, result.ranks,
                        result.critical_paths, rank_views(result))
                )
            ]  # fmt: skip
            what_if = run_scenarios(self.result, DEFAULT_SCENARIOS, adapt=True)
            job = job_summary([r.simulation for r in reports], rank_shares(result), what_if)
            self._document = msgspec.to_builtins(
                {"ranks": reports, "agreement": {}, "what_if": what_if, "job": job}
            )
        return self._document

    # --- the tables of report.html ---------------------------------------------------------
    def job(self) -> Any:
        """One row: the job's makespan (its slowest rank's), fastest and median rank, spread."""
        return frame(tables.job_rows(self.document))

    def job_what_if(self) -> Any:
        """Per what-if scenario: the job's makespan under it and its change in %."""
        return frame(tables.job_what_if_rows(self.document))

    def summary(self) -> Any:
        """Per rank: link coverage, nodes, makespans, errors and unexplained time."""
        return frame(tables.summary_rows(self.document))

    def what_if(self) -> Any:
        """Per what-if scenario and rank: makespan and change in % of the replay's."""
        return frame(tables.what_if_rows(self.document))

    def agreement(self) -> Any:
        """What the cross-rank step filled in (by kind) and how often."""
        return frame(tables.agreement_rows(self.document), ("filled_in", "count"))

    def makespans(self) -> Any:
        """Per rank: replay, measured and model-only makespans, errors, unexplained time."""
        return frame(tables.makespan_rows(self.document))

    def breakdown(self) -> Any:
        """Per rank and schedule: compute, exposed communication and idle time."""
        return frame(tables.breakdown_rows(self.document))

    def overlap(self) -> Any:
        """Per rank and schedule: communication hidden by compute."""
        return frame(tables.overlap_rows(self.document))

    def kernels(self) -> Any:
        """Per rank: the top kernels by total GPU time."""
        return frame(tables.kernel_rows(self.document))

    def steps(self) -> Any:
        """Per rank and training step: simulated and measured duration, time per kind."""
        return frame(tables.step_rows(self.document))

    def stream_idle(self) -> Any:
        """Per rank and GPU stream: idle time by cause."""
        return frame(tables.stream_idle_rows(self.document))

    def critical_path(self) -> Any:
        """Per rank: the typed critical path's time by kind."""
        return frame(tables.critical_path_rows(self.document))

    def critical_path_segments(self) -> Any:
        """Per rank: the critical path's longest segments."""
        return frame(tables.segment_rows(self.document))

    def critical_path_names(self) -> Any:
        """Per rank: the names with the most time on the critical path."""
        return frame(tables.path_name_rows(self.document))

    def resources(self) -> Any:
        """Per rank and resource: simulated busy time and utilisation."""
        return frame(tables.resource_rows(self.document))

    def rank_comparison(self) -> Any:
        """Per rank: makespan, compute, communication, idle, unexplained; the slowest."""
        return frame(tables.rank_comparison_rows(self.document))

    # --- HTA-style views, simulated beside measured ----------------------------------------
    def measured_launches(self) -> list[Optional[MeasuredLaunches]]:
        """Per rank, the launch calls its ET+ records (None: the run has no ET+)."""
        return [
            measured_launches(load_et_plus(p)) if p is not None else None
            for p in self.files.et_plus
        ]

    def launch_stats(self) -> Any:
        """Per rank and kernel name: launches, GPU time, launch call and launch delay."""
        found = job_launch_stats(self.result, self.measured_launches())
        return frame(found, _fields(LaunchStat))

    def queue_length(self) -> Any:
        """Per rank, GPU stream and schedule: the queue length's max, mean, time-weighted
        mean (the series: :func:`chakra.views.stream_queue.queue_lengths`)."""
        series = ("times_us", "lengths")
        return frame(queue_lengths(self.result), _fields(StreamQueue), leave_out=series)

    def queue_series(self) -> Any:
        """Per rank, GPU stream and schedule: the queue length after each change."""
        rows = [
            {"rank": q.rank, "stream": q.stream, "source": q.source, "time_us": t, "length": n}
            for q in queue_lengths(self.result)
            for t, n in zip(q.times_us, q.lengths)
        ]
        return frame(rows, ("rank", "source", "stream", "time_us", "length"))

    def copy_bandwidth(self) -> Any:
        """Per rank and copy kind (HtoD, DtoH, DtoD...): bytes over time, GB/s."""
        sizes = [read_copy_sizes(p) for p in self.files.graphs]
        return frame(copy_bandwidth(self.result, sizes), _fields(CopyBandwidth))

    def diff(self, other: Union[Analysis, RunPaths, None] = None, scale: Sequence[str] = ()) -> Any:
        """The changed ops and kernels against ``other`` (a run), or against this run's
        what-if under ``scale`` rules (as ``chakra_sim --scale`` takes them), largest
        change first. :meth:`path_diff` has the makespan and critical path."""
        return frame(self._diff(other, scale).names, _fields(NameChange))

    def path_diff(
        self, other: Union[Analysis, RunPaths, None] = None, scale: Sequence[str] = ()
    ) -> Any:
        """Per rank: makespan and critical-path time by kind, this run -> the other."""
        return frame(self._diff(other, scale).path, _fields(PathChange))

    def _diff(self, other: Union[Analysis, RunPaths, None], scale: Sequence[str]) -> Any:
        if (other is None) == (not scale):
            raise DiffError("give another run or scale rules, one of the two")
        if other is None:
            rules = [ScaleRule.parse(text) for text in scale]
            return diff_runs(self.result, what_if_of(self.result, rules))
        theirs = other if isinstance(other, Analysis) else Analysis(other)
        return diff_runs(self.result, theirs.result)
