"""The event-driven simulation: a heap of completions, resources that run one node at a time
in their fixed order, and collectives that start when every rank of their group is ready.

The general method, for what the sweep (:mod:`chakra.simulate.sweep`) does not take: graphs
with cycles, deadlocks, negative durations. It is also what reports those errors. Cost: a
heap operation per node, never growing with simulated time.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Sequence
from typing import Optional

from chakra.simulate.meeting import meetings, member_ends
from chakra.simulate.network import NetworkModel
from chakra.simulate.sim_graph import NO_RESOURCE, CommKey, SimGraph, SimulationError


class EventSimulation:
    """Fills ``start``/``end`` (per rank, per node index) for ``graphs`` whose resources run
    their nodes in ``orders`` (per rank, per resource), rank ``r`` starting at
    ``offsets[r]``; raises SimulationError for a deadlock or nodes that never ran."""

    def __init__(self, graphs: Sequence[SimGraph], network: Optional[NetworkModel],
                 orders: list[list[list[int]]], offsets: list[float], start: list[array],
                 end: list[array]) -> None:  # fmt: skip
        self.graphs = graphs
        self.network = network
        self.start, self.end = start, end
        self._offsets = offsets
        self._events: list[tuple[float, int, int, int]] = []
        self._seq = 0
        self._waiting = [array("q", _pred_counts(g)) for g in graphs]
        self._order = orders
        self._next = [[0] * len(g.resources) for g in graphs]
        self._ready_at = [array("d", [-1.0]) * len(g.ids) for g in graphs]
        self._busy = [bytearray(len(g.resources)) for g in graphs]
        self._meetings = meetings(graphs)
        self._rank_index = {graph.rank: i for i, graph in enumerate(graphs)}

    def run(self) -> None:
        for r, offset in enumerate(self._offsets):
            for node, count in enumerate(self._waiting[r]):
                if count == 0:
                    self._ready(r, node, offset)
        events = self._events
        while events:
            time, _, r, node = heapq.heappop(events)
            self._complete(r, node, time)
        self._check_finished()

    def _push(self, time: float, r: int, node: int) -> None:
        self._seq += 1
        heapq.heappush(self._events, (time, self._seq, r, node))

    def _ready(self, r: int, node: int, time: float) -> None:
        resource = self.graphs[r].resource[node]
        if resource == NO_RESOURCE:  # holds nothing, but a communication still meets
            key = self.graphs[r].comm.get(node)
            if key is None:
                self._begin(r, node, time)
            else:
                self._arrive(key, r, node, time)
            return
        self._ready_at[r][node] = time
        if not self._busy[r][resource]:
            self._dispatch(r, resource, time)

    def _dispatch(self, r: int, resource: int, now: float) -> None:
        """Start the resource's next node if it is ready; else leave the resource idle."""
        position = self._next[r][resource]
        order = self._order[r][resource]
        if position >= len(order) or self._ready_at[r][order[position]] < 0:
            self._busy[r][resource] = 0
            return
        node = order[position]
        self._next[r][resource] = position + 1
        self._busy[r][resource] = 1
        arrival = max(self._ready_at[r][node], now)
        key = self.graphs[r].comm.get(node)
        if key is None:
            self._begin(r, node, arrival)
        else:
            self._arrive(key, r, node, arrival)

    def _begin(self, r: int, node: int, time: float, end: float = -1.0) -> None:
        self.start[r][node] = time
        self._push(time + self.graphs[r].duration_us[node] if end < 0 else end, r, node)

    def _arrive(self, key: CommKey, r: int, node: int, time: float) -> None:
        meeting = self._meetings[key]
        meeting.arrivals[self.graphs[r].rank] = (time, node)
        if len(meeting.arrivals) < len(meeting.members):
            return
        begin = max(t for t, _ in meeting.arrivals.values())
        recorded = {
            rank: self.graphs[self._rank_index[rank]].recorded(n)
            for rank, (_, n) in meeting.arrivals.items()
        }
        ends = member_ends(key, len(meeting.members), begin, recorded, self.network)
        for rank, (arrived, n) in sorted(meeting.arrivals.items()):
            self._begin(self._rank_index[rank], n, arrived, ends[rank])

    def _complete(self, r: int, node: int, time: float) -> None:
        graph = self.graphs[r]
        self.end[r][node] = time
        resource = graph.resource[node]
        if resource != NO_RESOURCE:
            self._dispatch(r, resource, time)
        waiting = self._waiting[r]
        succs = graph.succs
        for k in range(graph.succ_start[node], graph.succ_start[node + 1]):
            successor = succs[k]
            waiting[successor] -= 1
            if waiting[successor] == 0:
                self._ready(r, successor, time)

    def _check_finished(self) -> None:
        for key, meeting in sorted(self._meetings.items(), key=lambda kv: kv[0].index):
            if meeting.arrivals and len(meeting.arrivals) < len(meeting.members):
                missing = sorted(meeting.members - set(meeting.arrivals))
                arrived = ", ".join(
                    f"rank {rank} node {self.graphs[self._rank_index[rank]].ids[n]}"
                    for rank, (_, n) in sorted(meeting.arrivals.items())
                )
                files = [self.graphs[self._rank_index[rank]].source for rank in missing]
                named = f" ({', '.join(files)})" if all(files) else ""
                why = (
                    ""
                    if key.pg_name
                    else (
                        ": these collectives name no process group (the traces do not record "
                        "them, e.g. a Kineto trace alone from before PyTorch recorded process "
                        "groups), so every rank's are taken as one group's; the host execution "
                        "traces would tell the groups apart"
                    )
                )
                raise SimulationError(
                    f"deadlock: communication #{key.index} of group {key.pg_name!r} was reached "
                    f"by {arrived} but never by rank(s) {missing}{named}{why}"
                )
        for r, graph in enumerate(self.graphs):
            stuck = [i for i, end in enumerate(self.end[r]) if end < 0]
            if stuck:
                shown = ", ".join(f"{graph.ids[i]} ({graph.names[i]})" for i in stuck[:5])
                raise SimulationError(
                    f"{graph.where()}: {len(stuck)} nodes never ran (a cycle, or waiting on "
                    f"a communication that never completed), e.g. {shown}"
                )


def _pred_counts(graph: SimGraph) -> list[int]:
    starts = graph.pred_start
    return [starts[i + 1] - starts[i] for i in range(len(graph.ids))]
