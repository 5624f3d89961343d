"""The event-driven engine as it was before the sweep (verbatim but for this docstring and
the class name): the reference the fast engine must match exactly, start, end and errors."""

from __future__ import annotations

import heapq
from array import array
from collections import defaultdict
from collections.abc import Sequence
from typing import Optional

from chakra.simulate.meeting import member_ends
from chakra.simulate.network import NetworkModel
from chakra.simulate.sim_graph import NO_RESOURCE, CommKey, SimGraph, SimulationError

INF = float("inf")


class _Meeting:
    """Arrivals at one collective (or send/recv pair) across ranks."""

    __slots__ = ("arrivals", "members")

    def __init__(self, members: frozenset[int]) -> None:
        self.members = members
        self.arrivals: dict[int, tuple[float, int]] = {}


class ReferenceEngine:
    """Simulate one or more ranks' graphs together. ``run`` fills ``start``/``end`` (µs,
    per rank, per node index). A collective occupies each member's stream from its arrival
    and ends on each as :func:`chakra.simulate.meeting.member_ends` says (the latest arrival
    plus the member's own recorded tail)."""

    def __init__(self, graphs: Sequence[SimGraph], network: Optional[NetworkModel] = None) -> None:
        self.graphs = list(graphs)
        self.network = network
        self.start = [array("d", [-1.0]) * len(g.ids) for g in self.graphs]
        self.end = [array("d", [-1.0]) * len(g.ids) for g in self.graphs]
        self._events: list[tuple[float, int, int, int]] = []
        self._seq = 0
        self._waiting = [array("q", self._pred_counts(g)) for g in self.graphs]
        self._order = [self._resource_order(g) for g in self.graphs]
        self._next = [[0] * len(g.resources) for g in self.graphs]
        self._ready_at = [array("d", [-1.0]) * len(g.ids) for g in self.graphs]
        self._busy = [bytearray(len(g.resources)) for g in self.graphs]
        # a group's members: every rank with a communication in it (so a rank that skips
        # one of the group's communications is a deadlock, reported, not a silent pass)
        groups: dict[str, set[int]] = defaultdict(set)
        for graph in self.graphs:
            for key in graph.comm.values():
                groups[key.pg_name].add(graph.rank)
        self._meetings = {
            key: _Meeting(frozenset(groups[key.pg_name]))
            for graph in self.graphs
            for key in graph.comm.values()
        }
        self._rank_index = {graph.rank: i for i, graph in enumerate(self.graphs)}

    @staticmethod
    def _resource_order(graph: SimGraph) -> list[list[int]]:
        """Per resource, its nodes in a dependency-respecting order closest to the measured
        one: a topological sort that always takes the ready node with the earliest
        (measured, else inherited from its predecessors) start, then the smallest id."""
        count = len(graph.ids)
        starts = graph.pred_start
        waiting = [starts[i + 1] - starts[i] for i in range(count)]
        inherited = [0.0] * count
        measured, ids, succs, succ_start = (
            graph.measured_start_us, graph.ids, graph.succs, graph.succ_start)  # fmt: skip
        heap = [(max(measured[i], 0.0), ids[i], i) for i in range(count) if waiting[i] == 0]
        heapq.heapify(heap)
        order: list[list[int]] = [[] for _ in graph.resources]
        while heap:
            key, _, node = heapq.heappop(heap)
            resource = graph.resource[node]
            if resource != NO_RESOURCE:
                order[resource].append(node)
            for k in range(succ_start[node], succ_start[node + 1]):
                successor = succs[k]
                inherited[successor] = max(inherited[successor], key)
                waiting[successor] -= 1
                if waiting[successor] == 0:
                    start = measured[successor]
                    own = start if start >= 0 else inherited[successor]
                    heapq.heappush(heap, (own, ids[successor], successor))
        return order

    @staticmethod
    def _pred_counts(graph: SimGraph) -> list[int]:
        starts = graph.pred_start
        return [starts[i + 1] - starts[i] for i in range(len(graph.ids))]

    def _rank_offsets(self) -> list[float]:
        """When every rank carries measured starts, ranks begin as far apart as they were
        measured (traces of one job share a clock, to the precision of its sync); else 0."""
        firsts = [min((s for s in g.measured_start_us if s >= 0), default=-1.0)
                  for g in self.graphs]  # fmt: skip
        if len(firsts) < 2 or min(firsts) < 0:
            return [0.0] * len(firsts)
        return [first - min(firsts) for first in firsts]

    def run(self) -> None:
        for r, offset in enumerate(self._rank_offsets()):
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
        if resource == NO_RESOURCE:  # holds nothing; a communication still meets
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
        recorded = {rank: self.graphs[self._rank_index[rank]].recorded(n)
                    for rank, (_, n) in meeting.arrivals.items()}  # fmt: skip
        # the meeting rule is the simulator's policy (tested on its own in test_meeting.py);
        # this engine checks the algorithm that applies it
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
                raise SimulationError(
                    f"deadlock: communication #{key.index} of group {key.pg_name!r} was reached "
                    f"by {arrived} but never by rank(s) {missing}"
                )
        for r, graph in enumerate(self.graphs):
            stuck = [i for i, end in enumerate(self.end[r]) if end < 0]
            if stuck:
                shown = ", ".join(f"{graph.ids[i]} ({graph.names[i]})" for i in stuck[:5])
                raise SimulationError(
                    f"rank {graph.rank}: {len(stuck)} nodes never ran (a cycle, or waiting on "
                    f"a communication that never completed), e.g. {shown}"
                )
