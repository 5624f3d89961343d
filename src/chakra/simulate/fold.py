"""The ``fold`` ASTRA-sim profile of a rank: a graph that ASTRA-sim's resource model (one CPU,
one GPU and one communication slot per rank, ready nodes issued by ascending id) replays at
the step that was measured, and whose communication ASTRA-sim's network still times.

The full graph has a thread per host thread and a stream per GPU stream; ASTRA-sim runs all
of a rank's host ops on one slot and all its kernels on another, so it serialises what ran
side by side (1.4 to 2.8 times the measured step on real jobs). The fold keeps what the
network decides and replaces the rest by the time it took:

- every communication node (collective, send, receive) is kept as it is (type, size,
  group, peers), so ASTRA-sim's network times it and the ranks meet as they did;
- the rank's timeline in the replay (the schedule the full graph reproduces, within a
  fraction of a percent of the measured one) is cut at each communication's *arrival* (when
  its last dependency ended) and at its *latest finish* (the critical path method's: its
  end plus its float, how late it could end without the rank ending later); the pieces
  become a chain of compute nodes (``[fold]``, on the GPU slot), each lasting its piece,
  but for the time the rank's critical path spent inside a communication (from its arrival
  to its end), which the communication itself stands for;
- a communication depends on the piece that ends by its arrival; the first piece that
  begins at its latest finish depends on it as well as on the piece before.

So at the recorded speed of the network the chain reaches every arrival when the replay
did; a communication that takes longer holds the chain up only by what its float does not
absorb, as in the full graph, and a faster one shortens the step where the rank waited for
it. Several late communications interact along the one chain (work the full graph could
still overlap is taken in sequence). Linear in the nodes plus a sort.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any, Optional

from chakra.et import Node, NodeType, set_attr
from chakra.simulate.sim_graph import SimGraph
from chakra.simulate.sim_result import SimResult

#: The node types ASTRA-sim's network times (kept as they are).
COMM_TYPES = frozenset({NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE,
                        NodeType.COMM_RECV_NODE})  # fmt: skip
#: What a fold file's metadata says it is (attribute ``astra_sim_profile``).
FOLD = "fold"
SEGMENT_NAME = "[fold]"
#: Times closer than this (µs) are taken as one: a node started when that one ended.
_TIE_US = 1e-6


def fold_rank(
    nodes: Sequence[Node], graph: SimGraph, start_us: Sequence[float], end_us: Sequence[float]
) -> list[Node]:
    """The fold of one rank: ``nodes`` (its full graph), ``graph`` built from them and the
    times the replay gave each node of ``graph`` (``start_us[i]``, ``end_us[i]``: node
    ``graph.ids[i]``). Ids: the pieces and the communications in time order, from 1."""
    if not len(start_us):
        return []
    position = {node_id: i for i, node_id in enumerate(graph.ids)}
    comms = [n for n in nodes if n.type in COMM_TYPES and n.id in position]
    first, last = min(start_us), max(end_us)
    arrival = {c.id: _us(_arrival(graph, position[c.id], end_us, first)) for c in comms}
    latest = _latest_finish(graph, start_us, end_us, last)
    # a communication holds the chain up where the rank could no longer absorb its delay:
    # its latest finish (its end plus its float); on the critical path, its end
    waited = {c.id: {_us(latest[position[c.id]])} for c in comms}
    blocked = {graph.ids[i]: (_us(a), _us(end_us[i]))
               for i, a in _blocked(graph, start_us, end_us, first)}  # fmt: skip
    for comm_id, (_, done) in blocked.items():
        if comm_id in waited:
            waited[comm_id].add(done)
    cuts = {_us(first), _us(last), *arrival.values(), *(p for s in waited.values() for p in s)}
    points = sorted(cuts)
    pieces = _outside(points, sorted(blocked.values()))
    return _chain(pieces, comms, arrival, waited)


def _outside(points: list[int], intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The pieces between consecutive ``points`` that no interval of ``intervals`` (sorted)
    holds whole: one sweep, the furthest end among the intervals begun so far."""
    pieces, k, reach = [], 0, None
    for begin, end in zip(points, points[1:]):
        while k < len(intervals) and intervals[k][0] <= begin:
            reach = max(intervals[k][1], reach if reach is not None else intervals[k][1])
            k += 1
        if reach is None or reach < end:
            pieces.append((begin, end))
    return pieces


def _us(value: float) -> int:
    """A time on the whole-µs grid of ``duration_micros`` (cut points rounded once, so the
    pieces add up to the rank's span without drift)."""
    return round(value)


def _arrival(graph: SimGraph, i: int, end_us: Sequence[float], first: float) -> float:
    """When node ``i``'s last dependency ended (the rank's arrival at a communication)."""
    preds = graph.preds[graph.pred_start[i] : graph.pred_start[i + 1]]
    return max((end_us[p] for p in preds), default=first)


def _latest_finish(
    graph: SimGraph, start_us: Sequence[float], end_us: Sequence[float], last: float
) -> list[float]:
    """Each node's latest finish in the replay (the critical path method's backward pass
    over the dependencies and each resource's order): how late it could have ended without
    the rank ending later."""
    following = {before: after for after, before in _previous_on_resource(graph, start_us).items()}
    latest = [last] * len(end_us)
    order = sorted(range(len(end_us)), key=lambda i: (start_us[i], end_us[i]), reverse=True)
    for node in order:
        successors = list(graph.succs[graph.succ_start[node] : graph.succ_start[node + 1]])
        if node in following:
            successors.append(following[node])
        for succ in successors:
            latest_start = latest[succ] - (end_us[succ] - start_us[succ])
            if latest_start < latest[node]:
                latest[node] = latest_start
    return latest


def _blocked(
    graph: SimGraph, start_us: Sequence[float], end_us: Sequence[float], first: float
) -> list[tuple[int, float]]:
    """The communications on the rank's critical path (a backward walk from its last end,
    each step to the dependency or the previous node of the same resource that ended as the
    node started; a communication steps to its arrival), with the rank's arrival at each:
    from the arrival to the communication's end, the rank waited for it."""
    previous = _previous_on_resource(graph, start_us)
    node = max(range(len(end_us)), key=lambda i: end_us[i])
    found: list[tuple[int, float]] = []
    for _ in range(len(end_us)):  # a walk visits each node once at most
        preds = list(graph.preds[graph.pred_start[node] : graph.pred_start[node + 1]])
        if node in graph.comm:
            arrival = _arrival(graph, node, end_us, first)
            found.append((node, arrival))
            before = [p for p in preds if end_us[p] >= arrival - _TIE_US]
        else:
            behind = previous.get(node)
            candidates = preds + ([behind] if behind is not None else [])
            before = [p for p in candidates if abs(end_us[p] - start_us[node]) <= _TIE_US]
        if not before:
            break
        node = min(before, key=lambda p: (p in graph.comm, -end_us[p]))  # ties: compute
    return found


def _previous_on_resource(graph: SimGraph, start_us: Sequence[float]) -> dict[int, int]:
    """Each node's predecessor on its resource (thread, stream) in the replay."""
    by_resource: dict[int, list[int]] = {}
    for i, resource in enumerate(graph.resource):
        if resource >= 0:
            by_resource.setdefault(resource, []).append(i)
    out = {}
    for members in by_resource.values():
        members.sort(key=lambda i: start_us[i])
        out.update(zip(members[1:], members[:-1]))
    return out


def _chain(
    pieces: list[tuple[int, int]],
    comms: list[Node],
    arrival: dict[int, int],
    waited: dict[int, set[int]],
) -> list[Node]:
    """The ``pieces`` (begin, end) as a chain of compute nodes and the communications, in
    time order: a communication after the last piece that ends by its arrival, and the
    first piece that begins at or after a point where a communication was waited for
    depends on it."""
    ends = [end for _, end in pieces]
    begins = [begin for begin, _ in pieces]
    after: dict[int, list[Node]] = {}  # piece index (-1: none) -> communications after it
    for comm in sorted(comms, key=lambda c: (arrival[c.id], c.id)):
        after.setdefault(bisect.bisect_right(ends, arrival[comm.id]) - 1, []).append(comm)
    waits: dict[int, set[int]] = {}  # piece index -> communications it waits for
    for comm_id, points in waited.items():
        for point in points:
            k = bisect.bisect_left(begins, point)
            if k < len(pieces):
                waits.setdefault(k, set()).add(comm_id)
    out: list[Node] = []
    new_id: dict[int, int] = {}
    for comm in after.pop(-1, ()):
        new_id[comm.id] = _append_comm(out, comm, None)
    previous: Optional[int] = None
    for k, (begin, end) in enumerate(pieces):
        piece = Node(id=len(out) + 1, name=SEGMENT_NAME, type=NodeType.COMP_NODE,
                     duration_micros=end - begin)  # fmt: skip
        set_attr(piece, "is_cpu_op", False)
        if previous is not None:
            piece.data_deps.append(previous)
        piece.data_deps.extend(sorted(new_id[c] for c in waits.get(k, ()) if c in new_id))
        out.append(piece)
        previous = piece.id
        for comm in after.get(k, ()):
            new_id[comm.id] = _append_comm(out, comm, piece.id)
    return out


def _append_comm(out: list[Node], comm: Node, after_piece: Optional[int]) -> int:
    """Append a copy of ``comm`` (its dependencies replaced by ``after_piece``); its id."""
    kept = Node()
    kept.CopyFrom(comm)
    kept.id = len(out) + 1
    del kept.data_deps[:]
    del kept.ctrl_deps[:]
    if after_piece is not None:
        kept.data_deps.append(after_piece)
    out.append(kept)
    return kept.id


def fold_job(nodes_by_rank: Sequence[Sequence[Node]], result: SimResult) -> list[list[Node]]:
    """The fold of every rank of a job: ``nodes_by_rank`` (the full graphs, rank order) as
    ``result`` (their joint replay) ran them."""
    return [fold_rank(nodes, result.graphs[rank], result.start[rank], result.end[rank])
            for rank, nodes in enumerate(nodes_by_rank)]  # fmt: skip


def fold_metadata(metadata: Any, ring_gbps: Optional[float]) -> Any:
    """``metadata`` (a rank's GlobalMetadata) saying the file is the fold profile, and the
    ring bandwidth that reproduces the measured collectives (when fitted)."""
    out = type(metadata)()
    out.CopyFrom(metadata)
    set_attr(out, "astra_sim_profile", FOLD)
    if ring_gbps is not None:
        set_attr(out, "astra_sim_fitted_gbps", float(ring_gbps))
    return out
