"""Idle time of each GPU stream in the simulated schedule, and what each gap waited for.

A gap on a stream ends when its next node starts; that node's *binding* dependency (the
one that ended exactly then) names the cause: a host thread (the CPU had not launched it
yet), a ``[delay]`` node (launch latency measured between the launch and the kernel, or,
after GPU work, a wait the trace does not explain; the part of the gap before the delay
began goes to what the delay waited for), a node on another stream. Time a collective
spends on its stream waiting for the last rank to arrive counts as idle too, waiting on a
peer rank."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from chakra.simulate.analysis import DELAY
from chakra.simulate.sim_graph import NO_RESOURCE, SimGraph
from chakra.simulate.sim_result import SimResult
from chakra.views.critical import is_launch_delay

TOLERANCE_US = 1e-9


class StreamIdle(msgspec.Struct, frozen=True):
    """One GPU stream of one rank over the rank's step (µs): ``busy_us`` running work
    (a collective's wait for peers excluded) and ``idle_us`` the rest, which sum to the
    makespan. ``idle_us`` is the sum of its causes: ``cpu_launch_us`` (waiting on a host
    op), ``launch_delay_us`` (on a ``[delay]`` after the launch), ``unexplained_us`` (on a
    ``[delay]`` after GPU work: :func:`~chakra.views.critical.is_launch_delay`),
    ``other_stream_us`` (on a node of another stream), ``peer_rank_us`` (inside a
    collective, for the other ranks), ``tail_us`` (after the stream's last node) and
    ``unattributed_us`` (no dependency ended when the gap did, e.g. before the rank's first
    node)."""

    rank: int
    stream: str
    busy_us: float
    idle_us: float
    cpu_launch_us: float
    launch_delay_us: float
    other_stream_us: float
    peer_rank_us: float
    tail_us: float
    unattributed_us: float
    unexplained_us: float = 0.0


def meeting_begins(result: SimResult) -> dict[tuple[str, int], float]:
    """Per communication (group, index): when its last member arrived (the latest start)."""
    begins: dict[tuple[str, int], float] = {}
    for r, graph in enumerate(result.graphs):
        start = result.start[r]
        for node, key in graph.comm.items():
            slot = (key.pg_name, key.index)
            begins[slot] = max(begins.get(slot, start[node]), start[node])
    return begins


def peer_waits(
    result: SimResult, rank: int, begins: dict[tuple[str, int], float]
) -> dict[int, float]:
    """Per communication node of ``rank``: its time waiting for the last member (µs)."""
    graph, start, end = result.graphs[rank], result.start[rank], result.end[rank]
    waits = {}
    for node, key in graph.comm.items():
        wait = begins[(key.pg_name, key.index)] - start[node]
        waits[node] = min(max(wait, 0.0), end[node] - start[node])
    return waits


def _binding(graph: SimGraph, start: Any, end: Any, node: int) -> int:
    """The first dependency of ``node`` that ended when it started (-1: none did)."""
    begins, preds = start[node], graph.preds
    for k in range(graph.pred_start[node], graph.pred_start[node + 1]):
        if abs(end[preds[k]] - begins) < TOLERANCE_US:
            return preds[k]
    return -1


def _attribute(graph: SimGraph, start: Any, end: Any, node: int, cursor: float,
               causes: dict[str, float]) -> None:  # fmt: skip
    """Add the gap from ``cursor`` to the start of ``node`` to ``causes``. Through a chain of
    ``[delay]`` nodes, the part a delay covers is launch delay (or unexplained) and the part
    before it goes to what the delay waited for."""
    until = start[node]
    while until - cursor > TOLERANCE_US:
        pred = _binding(graph, start, end, node)
        if pred < 0:
            causes["unattributed_us"] += until - cursor
            return
        slot = graph.resource[pred]
        if graph.names[pred] == DELAY and slot == NO_RESOURCE:
            since = max(start[pred], cursor)
            cause = "launch_delay_us" if is_launch_delay(graph, pred) else "unexplained_us"
            causes[cause] += until - since
            until, node = since, pred
            continue
        thread = slot == NO_RESOURCE or graph.resources[slot].is_thread
        causes["cpu_launch_us" if thread else "other_stream_us"] += until - cursor
        return


def stream_idle(
    result: SimResult, rank: int, begins: dict[tuple[str, int], float]
) -> list[StreamIdle]:
    """:class:`StreamIdle` of every GPU stream of ``rank`` (``begins``: from
    :func:`meeting_begins`). One pass over each stream's nodes in start order."""
    graph, start, end = result.graphs[rank], result.start[rank], result.end[rank]
    if not len(graph.ids):
        return []
    starts, ends = np.frombuffer(start, np.float64), np.frombuffer(end, np.float64)
    origin, finish = float(starts.min()), float(ends.max())
    resource = np.frombuffer(graph.resource, dtype=np.int64)
    waits = peer_waits(result, rank, begins)
    out = []
    for slot, held in enumerate(graph.resources):
        if not held.is_gpu:
            continue
        nodes = np.flatnonzero(resource == slot)
        nodes = nodes[np.lexsort((ends[nodes], starts[nodes]))]
        causes = dict.fromkeys(("cpu_launch_us", "launch_delay_us", "other_stream_us",
                                "peer_rank_us", "unattributed_us", "unexplained_us"),
                               0.0)  # fmt: skip
        cursor, busy = origin, 0.0
        for node in nodes.tolist():
            _attribute(graph, start, end, node, cursor, causes)
            wait = waits.get(node, 0.0)
            causes["peer_rank_us"] += wait
            busy += max(end[node] - max(start[node], cursor), 0.0) - wait
            cursor = max(cursor, end[node])
        tail = finish - cursor
        idle = sum(causes.values()) + tail
        out.append(StreamIdle(graph.rank, held.label, busy, idle, tail_us=tail, **causes))
    return out
