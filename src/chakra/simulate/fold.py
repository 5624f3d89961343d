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
  its last dependency ended) and at each start of a node that waited for one; the pieces
  become a chain of compute nodes (``[fold]``, on the GPU slot), each lasting its piece;
- a communication depends on the piece that ends at its arrival; the piece that starts
  where one of its waiters started depends on it as well as on the piece before.

So at the recorded speed of the network the chain reaches every arrival when the replay
did, and a slower network delays exactly the pieces that waited for a communication, and
everything after them (the fold keeps one chain: work that the full graph could still have
overlapped with a late communication is taken as waiting for it). Linear in the nodes plus
a sort of the cut points.
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


def fold_rank(
    nodes: Sequence[Node], graph: SimGraph, start_us: Sequence[float], end_us: Sequence[float]
) -> list[Node]:
    """The fold of one rank: ``nodes`` (its full graph), ``graph`` built from them and the
    times the replay gave each node of ``graph`` (``start_us[i]``, ``end_us[i]``: node
    ``graph.ids[i]``). Ids: the pieces and the communications in time order, from 1."""
    position = {node_id: i for i, node_id in enumerate(graph.ids)}
    comms = [n for n in nodes if n.type in COMM_TYPES]
    if not len(start_us):
        return []
    first, last = min(start_us), max(end_us)
    waiters = _waiters(nodes, {n.id for n in comms})
    arrival = {}
    cuts = {_us(first), _us(last)}
    for comm in comms:
        ends = [end_us[position[d]] for d in comm.data_deps if d in position]
        arrival[comm.id] = _us(max(ends, default=first))
        cuts.add(arrival[comm.id])
        for waiter in waiters.get(comm.id, ()):
            cuts.add(_us(start_us[position[waiter]]))
    points = sorted(cuts)
    waited_at: dict[int, list[int]] = {}  # cut point -> communications waited for there
    for comm in comms:
        for waiter in waiters.get(comm.id, ()):
            waited_at.setdefault(_us(start_us[position[waiter]]), []).append(comm.id)
    return _chain(points, comms, arrival, waited_at)


def _us(value: float) -> int:
    """A time on the whole-µs grid of ``duration_micros`` (cut points rounded once, so the
    pieces add up to the rank's span without drift)."""
    return round(value)


def _waiters(nodes: Sequence[Node], comm_ids: set[int]) -> dict[int, list[int]]:
    """For each communication, the nodes that depend on it (``data_deps``)."""
    out: dict[int, list[int]] = {}
    for node in nodes:
        for dep in node.data_deps:
            if dep in comm_ids:
                out.setdefault(dep, []).append(node.id)
    return out


def _chain(
    points: list[int],
    comms: list[Node],
    arrival: dict[int, int],
    waited_at: dict[int, list[int]],
) -> list[Node]:
    """The pieces between consecutive ``points`` and the communications, numbered in time
    order (a communication right after the piece that ends at its arrival)."""
    by_arrival: dict[int, list[Node]] = {}
    for comm in sorted(comms, key=lambda c: (arrival[c.id], c.id)):
        by_arrival.setdefault(arrival[comm.id], []).append(comm)
    out: list[Node] = []
    new_id: dict[int, int] = {}  # a communication's id in the full graph -> in the fold
    previous = None
    for begin in [None, *points[:-1]]:  # None: the communications that arrive at the start
        if begin is not None:
            end = points[bisect.bisect_right(points, begin)]
            piece = Node(id=len(out) + 1, name=SEGMENT_NAME, type=NodeType.COMP_NODE,
                         duration_micros=end - begin)  # fmt: skip
            set_attr(piece, "is_cpu_op", False)
            deps = [] if previous is None else [previous]
            deps += [new_id[c] for c in waited_at.get(begin, ()) if c in new_id]
            piece.data_deps.extend(deps)
            out.append(piece)
            previous, at = piece.id, end
        else:
            at = points[0]
        for comm in by_arrival.pop(at, ()):
            kept = Node()
            kept.CopyFrom(comm)
            kept.id = len(out) + 1
            del kept.data_deps[:]
            del kept.ctrl_deps[:]
            if previous is not None:
                kept.data_deps.append(previous)
            new_id[comm.id] = kept.id
            out.append(kept)
    return out


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
