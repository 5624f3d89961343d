"""The simulated critical path, typed: each stretch classified by what bound it."""

from __future__ import annotations

import msgspec
import numpy as np

from chakra.simulate.analysis import DELAY, IDLE, critical_chain
from chakra.simulate.sim_graph import NO_RESOURCE, SimGraph
from chakra.simulate.sim_result import SimResult

CPU, GPU, COMMUNICATION, LAUNCH = "cpu", "gpu", "communication", "launch"
#: measured time the graph does not explain: ``[idle]`` gaps, ``[delay]`` nodes other than
#: launch latency (:func:`is_launch_delay`)
UNEXPLAINED = "unexplained"
KINDS = (CPU, GPU, COMMUNICATION, LAUNCH, UNEXPLAINED)


class PathSegment(msgspec.Struct, frozen=True):
    """Consecutive critical-path nodes of one kind: ``kind`` one of :data:`KINDS`, the
    stretch ``start_us``-``end_us``, its node count, and the id and name of its longest
    node."""

    kind: str
    start_us: float
    end_us: float
    nodes: int
    node_id: int
    name: str


class CriticalPath(msgspec.Struct, frozen=True):
    """A rank's critical path (:func:`chakra.simulate.analysis.critical_chain`) in time
    order, as segments, and the time of each kind (µs): ``cpu_us`` real host ops,
    ``gpu_us`` GPU compute, ``communication_us`` communication (with its wait for peers),
    ``launch_us`` ``[delay]`` nodes before a GPU node (launch latency), ``unexplained_us``
    the other ``[delay]`` nodes and the ``[idle]`` gaps on a thread (measured time the
    graph does not explain; ``launch_us + unexplained_us`` is the rank's
    ``RankResult.unexplained_us``). ``unattributed_us``: makespan not on the path (the
    path starts after the rank's first node). The six sum to ``makespan_us``."""

    rank: int
    makespan_us: float
    cpu_us: float
    gpu_us: float
    communication_us: float
    launch_us: float
    unattributed_us: float
    segments: list[PathSegment]
    unexplained_us: float = 0.0


def _on_gpu(graph: SimGraph, node: int) -> bool:
    slot = graph.resource[node]
    if slot == NO_RESOURCE:
        return False
    return graph.resources[slot].is_gpu


def is_launch_delay(graph: SimGraph, node: int) -> bool:
    """Whether the ``[delay]`` node ``node`` is launch latency: a GPU node waits on it and
    the dependency measured to end last before it (where it begins) is the host op that
    launched it. A delay after GPU work (its stream predecessor, another stream's op by an
    event wait or an inferred edge) is time the trace does not explain. Without measured
    times, a delay after host ops alone is launch latency."""
    succs = graph.succs
    rows = range(graph.succ_start[node], graph.succ_start[node + 1])
    if not any(_on_gpu(graph, succs[k]) for k in rows):
        return False
    latest, last_end = -1, float("-inf")
    preds, factors = graph.preds, graph.duration_factor
    rows = range(graph.pred_start[node], graph.pred_start[node + 1])
    for k in rows:
        pred = preds[k]
        begin = graph.measured_start_us[pred]
        if begin < 0:
            continue
        duration = graph.duration_us[pred]
        if factors is not None and factors[pred]:  # a what-if's factor: the measured end
            duration /= factors[pred]
        if begin + duration > last_end:
            latest, last_end = pred, begin + duration
    if latest < 0:
        return not any(_on_gpu(graph, preds[k]) for k in rows)
    return not _on_gpu(graph, latest)


def node_kind(graph: SimGraph, node: int) -> str:
    """The :data:`KINDS` entry of one node: a ``[delay]`` is launch latency when
    :func:`is_launch_delay`, unexplained otherwise; an ``[idle]`` gap is unexplained."""
    if node in graph.comm:
        return COMMUNICATION
    name = graph.names[node]
    if name == DELAY:
        return LAUNCH if is_launch_delay(graph, node) else UNEXPLAINED
    if name == IDLE:
        return UNEXPLAINED
    return GPU if _on_gpu(graph, node) else CPU


def node_kinds(graph: SimGraph) -> np.ndarray:
    """Per node of ``graph``, the index in :data:`KINDS` of :func:`node_kind` (int8): one
    pass over the names and the ``[delay]`` nodes' successors."""
    count = len(graph.ids)
    resource = np.frombuffer(graph.resource, dtype=np.int64)
    gpu_slots = np.array([r.is_gpu for r in graph.resources] + [False], dtype=bool)
    on_gpu = gpu_slots[resource]  # NO_RESOURCE (-1) reads the last, False
    kinds = np.where(on_gpu, KINDS.index(GPU), KINDS.index(CPU)).astype(np.int8)
    names = graph.names
    for node in range(count):
        if names[node] in (DELAY, IDLE):
            kinds[node] = KINDS.index(node_kind(graph, node))
    kinds[list(graph.comm)] = KINDS.index(COMMUNICATION)
    return kinds


def typed_critical_path(result: SimResult, rank: int = 0) -> CriticalPath:
    """The :class:`CriticalPath` of the graph at position ``rank`` in ``result``."""
    graph, start, end = result.graphs[rank], result.start[rank], result.end[rank]
    chain = critical_chain(result, rank)[::-1]
    totals = dict.fromkeys(KINDS, 0.0)
    segments: list[PathSegment] = []
    longest = 0.0
    for node in chain:
        kind, duration = node_kind(graph, node), end[node] - start[node]
        totals[kind] += duration
        last = segments[-1] if segments else None
        if last is not None and last.kind == kind:
            better = duration > longest
            longest = max(longest, duration)
            segments[-1] = PathSegment(
                kind,
                last.start_us,
                end[node],
                last.nodes + 1,
                graph.ids[node] if better else last.node_id,
                graph.names[node] if better else last.name,
            )
        else:
            longest = duration
            segments.append(
                PathSegment(kind, start[node], end[node], 1, graph.ids[node], graph.names[node])
            )
    makespan = (max(end) - min(start)) if len(start) else 0.0
    unattributed = max(makespan - sum(totals.values()), 0.0)
    return CriticalPath(
        graph.rank,
        makespan,
        totals[CPU],
        totals[GPU],
        totals[COMMUNICATION],
        totals[LAUNCH],
        unattributed,
        segments,
        totals[UNEXPLAINED],
    )
