"""What a simulation reports, per rank: simulated and measured makespans, resource use."""

from __future__ import annotations

from typing import Optional

import msgspec

from chakra.simulate.engine import Engine
from chakra.simulate.model import NO_RESOURCE, SimGraph


class ResourceUse(msgspec.Struct, frozen=True):
    resource: str
    busy_us: float
    utilisation: float


class RankResult(msgspec.Struct, frozen=True):
    """``simulated_makespan_us``: first start to last end. ``measured_makespan_us`` and
    ``error_pct`` when the graph carries measured starts (``start_time_micros``)."""

    rank: int
    nodes: int
    simulated_makespan_us: float
    measured_makespan_us: Optional[float]
    error_pct: Optional[float]
    resources: list[ResourceUse]


def _label(key: tuple) -> str:
    if key[0] == "thread":
        return f"thread {key[1]}"
    return f"device {key[1]} stream {key[2]}"


def _measured(graph: SimGraph) -> Optional[float]:
    starts = [(s, graph.duration_us[i]) for i, s in enumerate(graph.measured_start_us) if s >= 0]
    if not starts:
        return None
    return max(s + d for s, d in starts) - min(s for s, _ in starts)


def rank_results(engine: Engine) -> list[RankResult]:
    results = []
    for r, graph in enumerate(engine.graphs):
        starts, ends = engine.start[r], engine.end[r]
        makespan = (max(ends) - min(starts)) if len(graph.ids) else 0.0
        busy = [0.0] * len(graph.resources)
        for i, resource in enumerate(graph.resource):
            if resource != NO_RESOURCE:
                busy[resource] += ends[i] - starts[i]
        uses = [
            ResourceUse(_label(key), busy[k], busy[k] / makespan if makespan else 0.0)
            for k, key in enumerate(graph.resources)
        ]
        measured = _measured(graph)
        error = 100.0 * (makespan - measured) / measured if measured else None
        results.append(RankResult(graph.rank, len(graph.ids), makespan, measured, error, uses))
    return results
