"""Analyses of a simulated (and, where it is cheap, the measured) schedule, as typed tables:
the temporal breakdown, communication-computation overlap, top kernels, GPU stream idle
time by cause, the typed critical path, what bounds each rank and how much each kind of work
could give at most (:mod:`chakra.views.bound`), and per training step
(:mod:`chakra.views.steps`). Each is a pure function of an
:class:`~chakra.simulate.sim_result.SimResult`; :func:`rank_views` gathers them
for one rank, as the pipeline writes them to ``report.json``. Unexplained time
(``[idle]``/``[delay]`` nodes) is a kind of its own everywhere: never compute, never host
ops."""

from typing import TYPE_CHECKING

from chakra import lazy_exports

if TYPE_CHECKING:  # imported on first use (a command's --help loads none of them)
    from chakra.views.bound import Bound, KindSlack, bound, free_makespans
    from chakra.views.breakdown import (
        KernelStat,
        Overlap,
        TemporalBreakdown,
        kernel_breakdown,
        overlap,
        temporal_breakdown,
    )
    from chakra.views.critical import CriticalPath, PathSegment, typed_critical_path
    from chakra.views.every_view import RankViews, rank_views
    from chakra.views.idle import StreamIdle, stream_idle
    from chakra.views.schedule import Schedule, measured_schedule, simulated_schedule
    from chakra.views.steps import StepStat, step_breakdown

#: Each public name's module, imported on first use (:func:`chakra.lazy_exports`).
_MODULE_OF = {
    **dict.fromkeys(("Bound", "KindSlack", "bound", "free_makespans"), "bound"),
    **dict.fromkeys(("KernelStat", "Overlap", "TemporalBreakdown", "kernel_breakdown",
                     "overlap", "temporal_breakdown"), "breakdown"),
    **dict.fromkeys(("CriticalPath", "PathSegment", "typed_critical_path"), "critical"),
    **dict.fromkeys(("RankViews", "rank_views"), "every_view"),
    **dict.fromkeys(("StreamIdle", "stream_idle"), "idle"),
    **dict.fromkeys(("Schedule", "measured_schedule", "simulated_schedule"), "schedule"),
    **dict.fromkeys(("StepStat", "step_breakdown"), "steps"),
}  # fmt: skip
__getattr__ = lazy_exports(__name__, _MODULE_OF)

__all__ = [
    "Bound", "CriticalPath", "KernelStat", "KindSlack", "Overlap", "PathSegment", "RankViews",
    "Schedule", "StepStat", "StreamIdle", "TemporalBreakdown", "bound", "free_makespans",
    "kernel_breakdown", "measured_schedule", "overlap", "rank_views", "simulated_schedule",
    "step_breakdown", "stream_idle", "temporal_breakdown", "typed_critical_path",
]  # fmt: skip
