"""The sweep: simulated times as a longest path, one pass over the nodes in take order.

Every resource runs its nodes in a fixed order, so a node starts at the latest end among its
dependencies, its resource's previous node and its rank's start; it ends its duration later.
Taking nodes in the priority sort's order (:mod:`chakra.simulate.order`, topological for both
kinds of edge) computes every time from times already known: no heap, no events. The times
are those of the event-driven simulation, to the bit: the same maxima and the same sums.

A communication node arrives at its start; the rank's pass pauses there until every member
of the meeting has arrived, then all members end at the latest arrival plus the meeting's
length and the paused passes resume. When no pass can resume (a deadlock, or an order in
which ranks meet that the passes cannot follow) the sweep gives up and the caller runs the
event-driven simulation, which handles (and reports) everything.

Per node the pass reads three columns: the resource's previous node and two dependencies
(-1, read as the rank's start, where there is none). Nodes with more dependencies, and
communication nodes, are stops the pass handles one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import numpy as np

from chakra.simulate.meeting import meetings, member_ends
from chakra.simulate.network import NetworkModel
from chakra.simulate.sim_graph import NO_RESOURCE, SimGraph


class _RankPass:
    """One rank's arrays in take order (position ``t`` is node ``order[t]``)."""

    def __init__(self, graph: SimGraph, order: np.ndarray, offset: float) -> None:
        count = len(graph.ids)
        self.graph, self.order, self.count = graph, order, count
        # in node order already (no measured starts, ids ascending): no reordering
        self.identity = bool((order == np.arange(count)).all())
        position = order if self.identity else np.empty(count, dtype=np.int64)
        if not self.identity:
            position[order] = np.arange(count)
        self.position = position
        chain = _previous_on_resource(graph, order)
        first, second, wide = _first_two_deps(graph, chain)
        # columns in position space; -1 (no such node) reads the sentinel: the rank's start
        self.columns = [self._reorder(column, mapped=True) for column in (chain, first, second)]
        duration = np.asarray(graph.duration_us, dtype=np.float64)
        self.duration = self._reorder(duration, mapped=False)
        comm_positions = position[np.fromiter(graph.comm, dtype=np.int64, count=len(graph.comm))]
        self.comm = {int(t): graph.comm[int(order[t])] for t in comm_positions}
        stops = np.union1d(comm_positions, position[np.flatnonzero(wide)])
        self.stops = stops.tolist()
        self.stops.append(count)
        self.ends = [0.0] * count + [offset]
        self.starts = [0.0] * count
        self.cursor = 0  # next position to compute
        self.stop = 0  # index in stops of the next stop

    def _reorder(self, values: np.ndarray, mapped: bool) -> list:
        """``values`` (by node) by position, as a list; ``mapped``: node indices (or -1) that
        become positions (or -1)."""
        if self.identity:
            return values.tolist()
        values = values[self.order]
        if mapped:
            values = np.where(values >= 0, self.position[values], -1)
        return values.tolist()

    def stop_start(self, t: int) -> float:
        """Start of the node at position ``t`` from all its dependencies."""
        ends, position, graph = self.ends, self.position, self.graph
        node = int(self.order[t])
        time = ends[self.columns[0][t]]
        preds = graph.preds
        for k in range(graph.pred_start[node], graph.pred_start[node + 1]):
            end = ends[position[preds[k]]]
            if end > time:
                time = end
        return time

    def results(self) -> tuple[np.ndarray, np.ndarray]:
        """Starts and ends by node index."""
        starts = np.array(self.starts, dtype=np.float64)
        ends = np.array(self.ends[: self.count], dtype=np.float64)
        if self.identity:
            return starts, ends
        return starts[self.position], ends[self.position]


def sweep(graphs: Sequence[SimGraph], network: Optional[NetworkModel],
          orders: list[np.ndarray], offsets: list[float]) -> Optional[list[tuple]]:  # fmt: skip
    """(starts, ends) per rank, by node index; None when the sweep cannot finish (the
    event-driven simulation then decides)."""
    if len({graph.rank for graph in graphs}) < len(graphs):
        return None
    for graph, order in zip(graphs, orders):
        if len(order) < len(graph.ids) or not _sweepable(graph):
            return None
    passes = [_RankPass(g, order, offset) for g, order, offset in zip(graphs, orders, offsets)]
    rank_index = {graph.rank: r for r, graph in enumerate(graphs)}
    table = meetings(graphs)
    runnable = list(range(len(passes)))
    finished = 0
    while runnable:
        r = runnable.pop()
        rank_pass = passes[r]
        while True:
            stop = rank_pass.stops[rank_pass.stop]
            _run(rank_pass.ends, rank_pass.starts, *rank_pass.columns, rank_pass.duration,
                 rank_pass.cursor, stop)  # fmt: skip
            rank_pass.cursor = stop
            if stop == rank_pass.count:
                finished += 1
                break
            time = rank_pass.stop_start(stop)
            rank_pass.starts[stop] = time
            rank_pass.cursor = stop + 1
            rank_pass.stop += 1
            key = rank_pass.comm.get(stop)
            if key is None:
                rank_pass.ends[stop] = time + rank_pass.duration[stop]
                continue
            meeting = table[key]
            meeting.arrivals[rank_pass.graph.rank] = (time, stop)
            if len(meeting.arrivals) < len(meeting.members):
                break  # paused until the meeting completes
            if len(meeting.arrivals) == 1 and network is None:  # alone: its own duration
                rank_pass.ends[stop] = time + rank_pass.duration[stop]
                continue
            begin = max(t for t, _ in meeting.arrivals.values())
            recorded = {}
            for rank, (_, t) in meeting.arrivals.items():
                member = passes[rank_index[rank]]  # t is a position in its take order
                recorded[rank] = member.graph.recorded(int(member.order[t]))
            ends = member_ends(key, len(meeting.members), begin, recorded, network)
            if not min(ends.values()) >= begin:  # the event-driven order would differ
                return None
            for rank in meeting.arrivals:
                other = rank_index[rank]
                passes[other].ends[meeting.arrivals[rank][1]] = ends[rank]
                if other != r:
                    runnable.append(other)
    if finished < len(passes):
        return None
    return [rank_pass.results() for rank_pass in passes]


def _run(ends: list, starts: list, chain: list, first: list, second: list, duration: list,
         lo: int, hi: int) -> None:  # fmt: skip
    """The pass over positions ``lo`` to ``hi``: nodes with at most two dependencies besides
    their resource's previous node, all computed before."""
    for t in range(lo, hi):
        time = ends[chain[t]]
        end = ends[first[t]]
        if end > time:
            time = end
        end = ends[second[t]]
        if end > time:
            time = end
        starts[t] = time
        ends[t] = time + duration[t]


def _sweepable(graph: SimGraph) -> bool:
    """No negative (or NaN) duration, whose end would come before its start and reorder
    completions. (A communication node without a resource meets like any other: it
    arrives when its dependencies end.)"""
    durations = np.asarray(graph.duration_us, dtype=np.float64)
    return bool((durations >= 0).all())


def _previous_on_resource(graph: SimGraph, order: np.ndarray) -> np.ndarray:
    """Per node, the node its resource runs before it (-1: none, or no resource)."""
    resource = np.asarray(graph.resource, dtype=np.int64)[order]
    previous = np.full(len(graph.ids), -1, dtype=np.int64)
    if len(graph.resources) <= 64:  # a few threads and streams: one scan each
        for slot in range(len(graph.resources)):
            nodes = order[resource == slot]
            previous[nodes[1:]] = nodes[:-1]
        return previous
    held = resource != NO_RESOURCE
    nodes, slots = order[held], resource[held]
    by_slot = np.argsort(slots, kind="stable")
    nodes, slots = nodes[by_slot], slots[by_slot]
    same = slots[1:] == slots[:-1]
    previous[nodes[1:][same]] = nodes[:-1][same]
    return previous


def _first_two_deps(graph: SimGraph, chain: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per node, its first two dependencies other than ``chain`` (-1: none), and whether it
    has more."""
    preds = np.asarray(graph.preds, dtype=np.int64)
    pred_start = np.asarray(graph.pred_start, dtype=np.int64)
    kept = preds != np.repeat(chain, np.diff(pred_start))
    before = np.zeros(len(preds) + 1, dtype=np.int64)  # kept edges before each edge
    np.cumsum(kept, out=before[1:])
    row_start, row_end = before[pred_start[:-1]], before[pred_start[1:]]
    counts = row_end - row_start
    padded = np.append(preds[kept], [-1, -1])
    first = np.where(counts >= 1, padded[row_start], -1)
    second = np.where(counts >= 2, padded[row_start + 1], -1)
    return first, second, counts > 2
