"""What a simulation reports, per rank: simulated and measured makespans, resource use, and
(when asked) how much of the makespan the graph's own ops explain."""

from __future__ import annotations

from typing import Optional

import msgspec

from chakra.simulate.analysis import model_only, unexplained_by_kind, unexplained_nodes
from chakra.simulate.sim_graph import NO_RESOURCE, SimGraph
from chakra.simulate.sim_result import RankResult, ResourceUse, SimResult

__all__ = ["RankResult", "ResourceUse", "rank_results"]


def _measured(graph: SimGraph) -> Optional[float]:
    starts = [(s, graph.duration_us[i]) for i, s in enumerate(graph.measured_start_us) if s >= 0]
    if not starts:
        return None
    return max(s + d for s, d in starts) - min(s for s, _ in starts)


def _makespan(result: SimResult, rank: int) -> float:
    starts, ends = result.start[rank], result.end[rank]
    return (max(ends) - min(starts)) if len(starts) else 0.0


def _error(makespan: float, measured: Optional[float]) -> Optional[float]:
    return 100.0 * (makespan - measured) / measured if measured else None


def rank_results(result: SimResult, explain: bool = False) -> list[RankResult]:
    """Per rank of ``result``. ``explain`` adds the model-only fields: a second
    run (:func:`chakra.simulate.analysis.model_only`, as long as the first) and a walk of
    each rank's critical path."""
    model = model_only(result) if explain else None
    results = []
    for r, graph in enumerate(result.graphs):
        starts, ends = result.start[r], result.end[r]
        makespan = _makespan(result, r)
        busy = [0.0] * len(graph.resources)
        unexplained = [0.0] * len(graph.resources)
        idle = unexplained_nodes(graph).tolist()
        for i, resource in enumerate(graph.resource):
            if resource != NO_RESOURCE:
                (unexplained if idle[i] else busy)[resource] += ends[i] - starts[i]
        uses = [
            ResourceUse(res.label, busy[k], busy[k] / makespan if makespan else 0.0, unexplained[k])
            for k, res in enumerate(graph.resources)
        ]
        measured = _measured(graph)
        rank = RankResult(
            graph.rank, len(graph.ids), makespan, measured, _error(makespan, measured), uses
        )
        if model is not None:
            alone = _makespan(model, r)
            delay, idle = unexplained_by_kind(result, r)
            rank = msgspec.structs.replace(
                rank,
                model_only_makespan_us=alone,
                model_only_error_pct=_error(alone, measured),
                unexplained_us=delay + idle,
                delay_us=delay,
            )
        results.append(rank)
    return results
