"""ASTRA-sim's resource model on our event-driven simulation: per rank one CPU, one GPU and
one communication slot (:mod:`chakra.simulate.astra_graph` assigns them), and its issue loop
(``Workload::issue_dep_free_nodes``): whenever a node of a rank ends, and once at time 0,
the rank's nodes whose dependencies are all done are visited in ascending id, and each is
issued if its slot is free. A slot so takes the ready node with the smallest id, not the
next in a fixed order as our default model's threads and streams do, which is why this is
its own dispatch rather than an order given to :class:`~chakra.simulate.events.
EventSimulation`. Completions at the same time are handled in the order their nodes were
issued, as in ASTRA-sim's event lists.

Collectives and sends/receives are timed by :class:`~chakra.simulate.astra_network.
AstraRing`: a collective when its last member arrives (each member then ends at its own
time), a send as soon as it is issued (it does not wait for the receive), a receive when
both sides are there. Times are whole nanoseconds inside, as in ASTRA-sim, and microseconds
in ``start``/``end`` like every engine's. Every rank starts at 0, as in ASTRA-sim.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Sequence

import numpy as np

from chakra.simulate.astra_graph import P2PKey
from chakra.simulate.astra_network import AstraRing
from chakra.simulate.engine import Engine
from chakra.simulate.events import EventSimulation
from chakra.simulate.meeting import Meeting
from chakra.simulate.sim_graph import NO_RESOURCE, CommKey, SimGraph


class AstraEngine(Engine):
    """An :class:`~chakra.simulate.engine.Engine` with ASTRA-sim's resource model, for
    graphs built by :func:`~chakra.simulate.astra_graph.build_astra_graph`, with
    collectives timed by ``ring``."""

    def __init__(self, graphs: Sequence[SimGraph], ring: AstraRing) -> None:
        super().__init__(graphs)
        self.ring = ring

    def _run(self) -> None:
        AstraEventSimulation(self.graphs, self.ring, self.start, self.end).run()


class AstraEventSimulation(EventSimulation):
    """Fills ``start``/``end`` (µs, per rank, per node index) with ASTRA-sim's issue loop;
    raises SimulationError for a deadlock or nodes that never ran. Cost: a heap operation
    per node, and per collective :meth:`AstraRing.collective_ends_ns`."""

    def __init__(self, graphs: Sequence[SimGraph], ring: AstraRing, start: list[array],
                 end: list[array]) -> None:  # fmt: skip
        no_orders: list[list[list[int]]] = [[] for _ in graphs]  # slots take ready nodes
        super().__init__(graphs, None, no_orders, [0.0] * len(graphs), start, end)
        self._ring = ring
        self._duration_ns = [[round(d * 1000.0) for d in g.duration_us] for g in graphs]
        # per rank, per slot: the ready nodes not yet issued, a heap of (id, node)
        self._queued: list[list[list[tuple[int, int]]]] = [
            [[] for _ in graph.resources] for graph in graphs
        ]
        self._message_ns: dict[CommKey, int] = {}

    def run(self) -> None:
        for r, waiting in enumerate(self._waiting):
            self._issue(r, [node for node, count in enumerate(waiting) if count == 0], 0.0)
        events = self._events
        while events:
            time, _, r, node = heapq.heappop(events)
            self._complete(r, node, time)
        self._check_finished()
        for times in (*self.start, *self.end):
            values = np.frombuffer(times, dtype=np.float64)  # a view: ns -> µs in place
            values /= 1000.0

    def _complete(self, r: int, node: int, time: float) -> None:
        graph = self.graphs[r]
        self.end[r][node] = time
        slot = graph.resource[node]
        if slot != NO_RESOURCE:
            self._busy[r][slot] = 0
        waiting, succs, ready = self._waiting[r], graph.succs, []
        for k in range(graph.succ_start[node], graph.succ_start[node + 1]):
            successor = succs[k]
            waiting[successor] -= 1
            if waiting[successor] == 0:
                ready.append(successor)
        self._issue(r, ready, time)

    def _issue(self, r: int, ready: list[int], now: float) -> None:
        """Queue the newly ready nodes, then issue, in ascending id, every ready node
        without a slot and the smallest-id ready node of each free slot."""
        graph = self.graphs[r]
        ids, queued, busy = graph.ids, self._queued[r], self._busy[r]
        chosen = []
        for node in ready:
            slot = graph.resource[node]
            if slot == NO_RESOURCE:
                chosen.append((ids[node], node))
            else:
                heapq.heappush(queued[slot], (ids[node], node))
        for slot, heap in enumerate(queued):
            if heap and not busy[slot]:
                chosen.append(heapq.heappop(heap))
                busy[slot] = 1
        chosen.sort()
        for _, node in chosen:
            key = graph.comm.get(node)
            if key is None:
                self._begin(r, node, now)
            else:
                self._arrive(key, r, node, now)

    def _begin(self, r: int, node: int, time: float, end: float = -1.0) -> None:
        self.start[r][node] = time
        self._push(time + self._duration_ns[r][node] if end < 0 else end, r, node)

    def _arrive(self, key: CommKey, r: int, node: int, time: float) -> None:
        meeting = self._meetings[key]
        meeting.arrivals[self.graphs[r].rank] = (time, node)
        if isinstance(key, P2PKey):
            self._arrive_p2p(key, meeting, self.graphs[r].rank)
            return
        if len(meeting.arrivals) < len(meeting.members):
            return
        members = sorted(meeting.arrivals)
        ends = self._ring.collective_ends_ns(
            key.comm_type, key.size_bytes, members, [int(meeting.arrivals[m][0]) for m in members]
        )
        for rank, end in zip(members, ends):
            arrived, member_node = meeting.arrivals[rank]
            self._begin(self._rank_index[rank], member_node, arrived, float(end))

    def _arrive_p2p(self, key: P2PKey, meeting: Meeting, rank: int) -> None:
        """A send ends when its message arrives; the receive then, or when it is issued if
        later. The receive begins once: when the second of the two arrives."""
        sent = meeting.arrivals.get(key.source)
        if sent is None:
            return  # a receive waits for its send
        if rank == key.source:
            message = int(sent[0]) + self._ring.message_ns(
                key.source, key.destination, key.size_bytes
            )
            self._message_ns[key] = message
            self._begin(self._rank_index[key.source], sent[1], sent[0], float(message))
        received = meeting.arrivals.get(key.destination)
        if received is not None:
            end = max(self._message_ns[key], int(received[0]))
            self._begin(self._rank_index[key.destination], received[1], received[0], float(end))
