"""The job as a whole: its makespan (the slowest rank's), how the ranks compare (where each
rank's time went, the spread between them) and each what-if scenario's change of the job's
makespan, as the pipeline's terminal summary and ``report.html`` lead with them.

A rank's time is cut in four (:class:`RankShare`), by the first that applies at each
instant of its simulated schedule: compute (a compute op runs), exposed communication
(communication runs, no compute), unexplained (a ``[delay]`` or ``[idle]`` node runs, the
measured time the graph does not explain; found by
:func:`chakra.simulate.analysis.unexplained_nodes`) and idle (nothing runs). On a rank with
GPU nodes a compute op is a GPU kernel that is neither communication nor unexplained (the
temporal breakdown's compute); on a CPU-only rank it is any such host op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import msgspec
import numpy as np

from chakra.simulate.analysis import unexplained_nodes
from chakra.simulate.resources import gpu_mask
from chakra.simulate.scenarios import WhatIf
from chakra.simulate.sim_result import RankResult, SimResult
from chakra.views.intervals import covered
from chakra.views.rank_counts import ALL_RANKS_UP_TO


class RankShare(msgspec.Struct, frozen=True):
    """Where one rank's simulated makespan went, µs: the four parts sum to
    ``makespan_us`` (see the module doc for what each is)."""

    rank: int
    makespan_us: float
    compute_us: float
    communication_us: float
    unexplained_us: float
    idle_us: float


class ScenarioChange(msgspec.Struct, frozen=True):
    """One what-if scenario for the job: the job's makespan under it (its slowest rank's,
    ``slowest_rank``) and the change in % of the replay's job makespan (negative:
    faster). None for a scenario that was skipped (``note`` says why) or a job whose
    replay makespan is 0."""

    name: str
    makespan_us: Optional[float]
    change_pct: Optional[float]
    slowest_rank: Optional[int]
    note: Optional[str] = None


class JobSummary(msgspec.Struct, frozen=True):
    """The job in one place. ``simulated_makespan_us``: the slowest rank's replay
    makespan (``slowest_rank``); ``measured_makespan_us`` the slowest measured one
    (``measured_slowest_rank``; None without measured times). ``fastest_rank`` and
    ``median_rank`` by replay makespan (the median: the lower middle of the sorted
    makespans). ``spread_us``: slowest minus fastest; ``spread_ratio``: slowest over
    median (None when the median is 0). ``ranks``: each rank's :class:`RankShare`, by
    rank; ``what_if``: each scenario's :class:`ScenarioChange`, in order."""

    rank_count: int
    simulated_makespan_us: float
    slowest_rank: int
    fastest_rank: int
    median_rank: int
    spread_us: float
    spread_ratio: Optional[float]
    measured_makespan_us: Optional[float]
    measured_slowest_rank: Optional[int]
    ranks: list[RankShare]
    what_if: list[ScenarioChange]

    def featured_ranks(self) -> tuple[int, ...]:
        """The slowest, median and fastest rank, ascending (fewer when they coincide)."""
        return tuple(sorted({self.slowest_rank, self.median_rank, self.fastest_rank}))


def shown_ranks(job: JobSummary, rank_count: int) -> Optional[tuple[int, ...]]:
    """The ranks a picture of the whole job shows (``utilisation.png``, the timeline):
    every rank up to :data:`ALL_RANKS_UP_TO` (None: all), else the job's featured ranks."""
    if rank_count <= ALL_RANKS_UP_TO:
        return None
    return job.featured_ranks()


def rank_share(result: SimResult, position: int) -> RankShare:
    """The :class:`RankShare` of the graph at ``position`` in ``result`` (after a run).
    Cost: three interval unions over the nodes with known times."""
    graph = result.graphs[position]
    starts = np.frombuffer(result.start[position], dtype=np.float64)
    ends = np.frombuffer(result.end[position], dtype=np.float64)
    known = starts >= 0
    if not known.any():
        return RankShare(graph.rank, 0.0, 0.0, 0.0, 0.0, 0.0)
    unexplained = unexplained_nodes(graph)
    comm = np.zeros(len(graph.ids), bool)
    comm[list(graph.comm)] = True
    on_gpu = gpu_mask(graph.resources)[np.frombuffer(graph.resource, dtype=np.int64)]
    explained = known & ~comm & ~unexplained
    compute = explained & on_gpu if (on_gpu & known).any() else explained
    span = float(ends[known].max() - starts[known].min())
    computing = covered(starts[compute], ends[compute])
    active = compute | (comm & known)
    communicating = covered(starts[active], ends[active])
    anything = active | (unexplained & known)
    running = covered(starts[anything], ends[anything])
    return RankShare(
        graph.rank,
        span,
        computing,
        communicating - computing,
        running - communicating,
        max(span - running, 0.0),
    )


def rank_shares(result: SimResult) -> list[RankShare]:
    """:func:`rank_share` of every rank of ``result``."""
    return [rank_share(result, position) for position in range(len(result.graphs))]


def scenario_change(what_if: WhatIf) -> ScenarioChange:
    """The job-level :class:`ScenarioChange` of one scenario's per-rank results."""
    if not what_if.ranks:
        return ScenarioChange(what_if.name, None, None, None, what_if.note)
    slowest = max(what_if.ranks, key=lambda r: (r.makespan_us, -r.rank))
    before = max(r.replay_makespan_us for r in what_if.ranks)
    change = 100.0 * (slowest.makespan_us - before) / before if before > 0 else None
    return ScenarioChange(what_if.name, slowest.makespan_us, change, slowest.rank, what_if.note)


def job_summary(
    simulations: Sequence[RankResult], shares: Sequence[RankShare], what_if: Sequence[WhatIf]
) -> JobSummary:
    """The :class:`JobSummary` of the ranks' replay results (``simulations``, one per rank,
    at least one), their shares and the what-if results. Ties go to the lower rank."""
    by_time = sorted(simulations, key=lambda s: (s.simulated_makespan_us, s.rank))
    fastest, median = by_time[0], by_time[(len(by_time) - 1) // 2]
    slowest = max(simulations, key=lambda s: (s.simulated_makespan_us, -s.rank))
    measured = [s for s in simulations if s.measured_makespan_us is not None]
    measured_slowest = (
        max(measured, key=lambda s: (s.measured_makespan_us or 0.0, -s.rank)) if measured else None
    )
    top = slowest.simulated_makespan_us
    middle = median.simulated_makespan_us
    return JobSummary(
        len(simulations),
        top,
        slowest.rank,
        fastest.rank,
        median.rank,
        top - fastest.simulated_makespan_us,
        top / middle if middle > 0 else None,
        measured_slowest.measured_makespan_us if measured_slowest is not None else None,
        measured_slowest.rank if measured_slowest is not None else None,
        list(shares),
        [scenario_change(w) for w in what_if],
    )
