"""Flow arrows of the timeline (:mod:`chakra.views.timeline`): the dependency edges
between resources of a simulated run, as Chrome trace flow events.

Flows (``ph`` ``s``/``f``, category ``flow``) on the simulated processes show the
dependency edges between resources, named by kind: ``launch`` (host op -> GPU op), ``stream
order`` (GPU op -> GPU op on the same stream), ``event wait`` (GPU op -> GPU op on another
stream), ``host sync`` (GPU op -> host op), ``inter-thread`` (host op -> host op on another
thread), seen through nodes that hold no resource; and ``collective``, from the last member
to arrive at a collective (or send/recv) to each other member, across ranks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Set
from typing import Any, Optional

from chakra.simulate.resources import Resource
from chakra.simulate.sim_graph import NO_RESOURCE, CommKey, SimGraph
from chakra.simulate.sim_result import SimResult

#: The flow kinds, as the events name them.
FLOW_KINDS = ("launch", "stream order", "event wait", "host sync", "inter-thread", "collective")


def to_ns(us: float) -> int:
    """Microseconds to whole nanoseconds."""
    return round(us * 1000)


def to_us(ns: int) -> float:
    """Nanoseconds to (fractional) microseconds, as Chrome traces count time."""
    return ns / 1000


def edge_kind(source: Resource, target: Resource, same: bool) -> Optional[str]:
    """The flow kind of a dependency from a node on resource ``source`` to one on
    ``target`` (ASTRA-sim's gpu and comm slots count as streams, its cpu slot as a
    thread); None for program order on one thread."""
    on_gpu = not source.is_host, not target.is_host
    if on_gpu == (False, True):
        return "launch"
    if on_gpu == (True, False):
        return "host sync"
    if on_gpu == (True, True):
        return "stream order" if same else "event wait"
    return None if same else "inter-thread"


def flow_events(result: SimResult, shown: Optional[Set[int]] = None) -> list[dict[str, Any]]:
    """The ``s``/``f`` event pairs of every flow of ``result`` (after ``run()``) between the
    graphs at positions ``shown`` (None: all); a rank's simulated process has pid = its
    rank, a resource's track tid = its index."""
    events: list[dict[str, Any]] = []
    for r, graph in enumerate(result.graphs):
        if shown is not None and r not in shown:
            continue
        for source, target, kind in _edges(graph):
            events += _flow(
                len(events),
                kind,
                (graph.rank, graph.resource[source], _mid(result, r, source)),
                (graph.rank, graph.resource[target], _mid(result, r, target)),
            )
    for last, other in _meetings(result, shown):
        events += _flow(len(events), "collective", last, other)
    return events


def _mid(result: SimResult, r: int, node: int) -> int:
    return (to_ns(result.start[r][node]) + to_ns(result.end[r][node])) // 2


def _flow(count: int, kind: str, source: tuple, target: tuple) -> list[dict[str, Any]]:
    flow_id = count // 2 + 1
    (spid, stid, sts), (tpid, ttid, tts) = source, target
    return [
        {
            "ph": "s",
            "id": flow_id,
            "cat": "flow",
            "name": kind,
            "pid": spid,
            "tid": stid,
            "ts": to_us(sts),
        },
        {
            "ph": "f",
            "bp": "e",
            "id": flow_id,
            "cat": "flow",
            "name": kind,
            "pid": tpid,
            "tid": ttid,
            "ts": to_us(tts),
        },
    ]


def _edges(graph: SimGraph) -> list[tuple[int, int, str]]:
    """(source, target, kind) of the dependencies between resources, a node that holds no
    resource standing for its own dependencies (transitively)."""
    resource, keys = graph.resource, graph.resources
    preds, start = graph.preds, graph.pred_start
    out = []
    kinds: dict[tuple[int, int], Optional[str]] = {}  # by (source slot, target slot)
    for node in range(len(graph.ids)):
        if resource[node] == NO_RESOURCE:
            continue
        seen: set[int] = set()
        todo = list(preds[start[node] : start[node + 1]])
        while todo:
            pred = todo.pop()
            if pred in seen:
                continue
            seen.add(pred)
            if resource[pred] == NO_RESOURCE:
                todo += preds[start[pred] : start[pred + 1]]
                continue
            slots = (resource[pred], resource[node])
            kind = kinds.get(slots, "")
            if kind == "":
                kind = kinds[slots] = edge_kind(
                    keys[slots[0]], keys[slots[1]], slots[0] == slots[1]
                )
            if kind is not None:
                out.append((pred, node, kind))
    return out


def _meetings(result: SimResult, shown: Optional[Set[int]]) -> list[tuple[tuple, tuple]]:
    """(last arrival, other member) as (pid, tid, ns) pairs for every cross-rank meeting
    (between the graphs at positions ``shown``; None: all)."""
    met: dict[CommKey, list[tuple[int, int]]] = defaultdict(list)
    for r, graph in enumerate(result.graphs):
        for node, key in graph.comm.items():
            met[key].append((r, node))
    out = []
    for members in met.values():
        if len(members) < 2:
            continue
        last = max(members, key=lambda m: (result.start[m[0]][m[1]], m))
        if shown is not None:  # the arrow starts at the last arrival: both ends shown
            members = [m for m in members if m[0] in shown]
            if last not in members:
                continue
        where = [
            (result.graphs[r].rank, result.graphs[r].resource[n], _mid(result, r, n))
            for r, n in (last, *members)
        ]
        if where[0][1] == NO_RESOURCE:
            continue
        out += [
            (where[0], w) for m, w in zip(members, where[1:]) if m != last and w[1] != NO_RESOURCE
        ]
    return out
