"""What a simulation reports, per rank: simulated and measured makespans, resource use, and
(when asked) how much of the makespan the graph's own ops explain."""

from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from chakra.simulate.analysis import model_only, unexplained_by_kind, unexplained_nodes
from chakra.simulate.sim_graph import NO_RESOURCE, SimGraph
from chakra.simulate.sim_result import RankResult, ResourceUse, SimResult

__all__ = ["RankResult", "ResourceUse", "rank_results"]


def _measured(graph: SimGraph) -> Optional[float]:
    """The span of the measured times: the latest measured start plus its node's duration,
    less the earliest measured start (None when no node has one)."""
    measured = np.frombuffer(graph.measured_start_us, dtype=np.float64)
    known = measured >= 0
    if not known.any():
        return None
    starts = measured[known]
    ends = starts + np.frombuffer(graph.duration_us, dtype=np.float64)[known]
    return float(ends.max()) - float(starts.min())


def _makespan(result: SimResult, rank: int) -> float:
    starts, ends = result.start[rank], result.end[rank]
    return (max(ends) - min(starts)) if len(starts) else 0.0


def _error(makespan: float, measured: Optional[float]) -> Optional[float]:
    return 100.0 * (makespan - measured) / measured if measured else None


def _busy(result: SimResult, rank: int, idle: np.ndarray) -> tuple[list[float], list[float]]:
    """Per resource of ``rank``'s graph: the time its nodes ran, apart from its
    ``[delay]`` and ``[idle]`` nodes' (``idle``, a mask), and theirs (µs). Summed in node
    order, as a loop over the nodes would (``np.bincount`` adds its weights in order)."""
    graph = result.graphs[rank]
    resource = np.frombuffer(graph.resource, dtype=np.int64)
    spans = np.frombuffer(result.end[rank], dtype=np.float64) - np.frombuffer(
        result.start[rank], dtype=np.float64
    )
    held = resource != NO_RESOURCE
    count = len(graph.resources)
    sums = []
    for chosen in (held & ~idle, held & idle):
        total = np.bincount(resource[chosen], spans[chosen], minlength=count)
        sums.append(total.astype(np.float64).tolist())  # no node: bincount's zeros are ints
    return sums[0], sums[1]


def rank_results(result: SimResult, explain: bool = False) -> list[RankResult]:
    """Per rank of ``result``. ``explain`` adds the model-only fields: a second
    run (:func:`chakra.simulate.analysis.model_only`, as long as the first) and a walk of
    each rank's critical path."""
    masks = [unexplained_nodes(graph) for graph in result.graphs]
    model = model_only(result, masks) if explain else None
    results = []
    for r, graph in enumerate(result.graphs):
        makespan = _makespan(result, r)
        busy, unexplained = _busy(result, r, masks[r])
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
            # no [delay] or [idle] node: none on the critical path either (no walk)
            delay, idle = unexplained_by_kind(result, r) if masks[r].any() else (0.0, 0.0)
            rank = msgspec.structs.replace(
                rank,
                model_only_makespan_us=alone,
                model_only_error_pct=_error(alone, measured),
                unexplained_us=delay + idle,
                delay_us=delay,
            )
        results.append(rank)
    return results
