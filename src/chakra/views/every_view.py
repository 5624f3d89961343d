"""Every view of one rank (:class:`RankViews`), as the pipeline writes them to
``report.json`` (:mod:`chakra.views` lists the views)."""

from __future__ import annotations

from typing import Optional

import msgspec

from chakra.simulate.sim_result import SimResult
from chakra.views.bound import Bound, bound, free_makespans
from chakra.views.breakdown import (
    KernelStat,
    Overlap,
    TemporalBreakdown,
    kernel_breakdown,
    overlap,
    temporal_breakdown,
)
from chakra.views.critical import CriticalPath, typed_critical_path
from chakra.views.idle import StreamIdle, meeting_begins, stream_idle
from chakra.views.schedule import measured_schedule, simulated_schedule
from chakra.views.steps import StepStat, step_breakdown


class RankViews(msgspec.Struct, frozen=True):
    """Every view of one rank. The ``measured_*`` fields: the same views of the measured
    schedule (None when the graph has no measured starts). ``critical_path`` keeps its
    ``top`` longest segments (in time order); ``critical_path_segments`` says how many
    there were. ``bound``: the kind that bounds the critical path, the headline, and each
    kind's slack (None when not computed); ``steps``: one entry per ``ProfilerStep#N``
    (empty without step annotations)."""

    rank: int
    breakdown: TemporalBreakdown
    overlap: Overlap
    kernels: list[KernelStat]
    stream_idle: list[StreamIdle]
    critical_path: CriticalPath
    critical_path_segments: int
    measured_breakdown: Optional[TemporalBreakdown] = None
    measured_overlap: Optional[Overlap] = None
    bound: Optional[Bound] = None
    steps: list[StepStat] = []


def _longest(path: CriticalPath, top: int) -> CriticalPath:
    kept = sorted(path.segments, key=lambda s: s.end_us - s.start_us, reverse=True)[:top]
    return msgspec.structs.replace(path, segments=sorted(kept, key=lambda s: s.start_us))


def rank_views(result: SimResult, top: int = 10, slack: bool = True) -> list[RankViews]:
    """:class:`RankViews` of every rank of ``result`` (after ``run()``), ``top`` kernels and
    critical-path segments each. Cost: a few array passes and sorts per rank, plus a walk
    of each critical path; ``slack`` adds one more run of the job per kind of work
    (:func:`chakra.views.bound.free_makespans`)."""
    begins = meeting_begins(result)
    free = free_makespans(result) if slack else None
    out = []
    for r, graph in enumerate(result.graphs):
        simulated = simulated_schedule(result, r)
        measured = measured_schedule(graph)
        path = typed_critical_path(result, r)
        out.append(
            RankViews(
                graph.rank,
                temporal_breakdown(simulated),
                overlap(simulated),
                kernel_breakdown(simulated, graph, top),
                stream_idle(result, r, begins),
                _longest(path, top),
                len(path.segments),
                temporal_breakdown(measured) if measured is not None else None,
                overlap(measured) if measured is not None else None,
                bound(path, free, r),
                step_breakdown(result, r),
            )
        )
    return out
