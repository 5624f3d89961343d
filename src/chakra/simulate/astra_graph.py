"""ASTRA-sim's view of a Chakra ET graph, as a :class:`~chakra.simulate.sim_graph.SimGraph`: what
its Chakra feeder (v3) and ``Workload``/``HardwareResource`` read of each node.

- Dependencies: ``data_deps`` and ``ctrl_deps`` alike (the feeder enforces both).
- Slots: a node with ``is_cpu_op`` (absent: false) takes the rank's one CPU slot; else a
  COMP node its one GPU slot; a receive none; any other node its one communication slot.
  Streams and threads are not told apart.
- Durations: ``duration_micros`` (the ``duration_ns`` attribute is not read); a node of 0 µs
  lasts 1 ns. INVALID and METADATA nodes end when issued.
- Communication: ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER and ALL_TO_ALL meet across the ranks
  of their ``pg_name`` ("" and "0": every rank) in file order, timed by
  :class:`~chakra.simulate.astra_network.AstraRing`. BROADCAST, and the types ASTRA-sim
  does not run (it fails on them), replay their duration on the communication slot and
  meet nobody. A send meets the receive with the same source, destination, tag and size
  (the k-th with the k-th): a send needs ``comm_dst`` and ``comm_tag``, a receive
  ``comm_src`` and ``comm_tag``, as ASTRA-sim requires them; the other end is the file's
  rank (ASTRA-sim does not read it: its custom-collective examples leave it out).
"""

from __future__ import annotations

import logging
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, Optional

import msgspec

from chakra.et.attributes import attr_value
from chakra.et.graph_checks import GraphChecker
from chakra.et.schema import CollectiveCommType, NodeType
from chakra.simulate.astra_network import RING_COLLECTIVES
from chakra.simulate.load_checks import ASTRA_REMEDIES, LoadOptions, judge
from chakra.simulate.resources import Resource
from chakra.simulate.sim_graph import (
    NO_RESOURCE,
    CommKey,
    SimGraph,
    SimulationError,
    assemble_graph,
    check_durations,
    int_value,
    node_error,
    repeated_id_error,
)

logger = logging.getLogger(__name__)

#: 1 ns: what ASTRA-sim makes of a duration of 0.
SHORTEST_US = 0.001
_READ = frozenset({"is_cpu_op", "comm_type", "comm_size", "pg_name", "comm_src", "comm_dst",
                   "comm_tag"})  # fmt: skip
_INTEGERS = frozenset({"comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag"})
_INSTANT = (int(NodeType.INVALID_NODE), int(NodeType.METADATA_NODE))
_SEND, _RECV = int(NodeType.COMM_SEND_NODE), int(NodeType.COMM_RECV_NODE)
_COLL = int(NodeType.COMM_COLL_NODE)


class P2PKey(CommKey, frozen=True):
    """A send/receive pair: ``pg_name`` names the pair (source, destination and tag),
    ``index`` counts that pair's messages; the sender is ``source``."""

    source: int = 0
    destination: int = 0


def build_astra_graph(
    nodes: Iterable[Any], rank: int = 0, options: Optional[LoadOptions] = None, source: str = ""
) -> SimGraph:
    """Index ``nodes`` (any order) with ASTRA-sim's slots, dependencies and durations.
    Raises SimulationError for a repeated id, an unknown dependency, or a communication
    node without the attributes ASTRA-sim needs. One pass over the nodes. ``options``
    (None: no checks), ``source``: as for :func:`chakra.simulate.graph_build.build_graph`;
    the checks see every node (:class:`~chakra.et.graph_checks.GraphChecker`), and their
    verdict comes before any error of this model's own."""
    if options is None or options.checks is None:
        return _build(nodes, rank, lenient=False, checked=False)
    checker = GraphChecker(options.checks)
    watched = _watched(nodes, checker)
    try:
        graph = _build(watched, rank, options.lenient, checked=True)
    except SimulationError:
        for _ in watched:  # the rest of the nodes, for the checks' verdict
            pass
        judge(checker.finish(), rank, options.lenient, source, ASTRA_REMEDIES)
        raise
    report = checker.finish()
    judge(report, rank, options.lenient, source, ASTRA_REMEDIES)
    return msgspec.structs.replace(graph, problem_counts=dict(report.counts()))


def _watched(nodes: Iterable[Any], checker: GraphChecker) -> Iterator[Any]:
    for node in nodes:
        checker.add(node)
        yield node


def _build(nodes: Iterable[Any], rank: int, lenient: bool, checked: bool) -> SimGraph:
    """The graph; ``checked``: the checks see the nodes, so a file that cannot be read is
    reported as such, not as a repeated id read before the damage."""
    ids, names, durations, measured = array("q"), [], array("d"), array("d")
    resource, deps, dep_start = array("q"), array("Q"), array("q", [0])
    slots: dict[str, int] = {}
    resources: list[Resource] = []
    comm: dict[int, CommKey] = {}
    counts: Counter = Counter()
    replayed: Counter = Counter()
    node: Any = None
    try:
        for position, node in enumerate(nodes):
            ids.append(node.id)
            names.append(node.name)
            start = node.start_time_micros
            measured.append(float(start) if start else -1.0)
            values = _values(node)
            kind = node.type
            durations.append(_duration_us(kind, node.duration_micros))
            resource.append(_slot(slots, resources, kind, bool(values.get("is_cpu_op"))))
            data = node.data_deps[:]
            deps.fromlist(data)
            if len(node.ctrl_deps):
                known = set(data)
                deps.fromlist([d for d in dict.fromkeys(node.ctrl_deps) if d not in known])
            dep_start.append(len(deps))
            if kind == _COLL:
                key = _collective_key(node, rank, values, counts)
                if key is None:
                    replayed[values.get("comm_type")] += 1
                else:
                    comm[position] = key
            elif kind in (_SEND, _RECV):
                comm[position] = _p2p_key(node, rank, values, counts)
    except Exception as exc:
        repeated = None if checked else repeated_id_error(rank, ids)
        if repeated is not None:
            raise repeated from None
        if isinstance(exc, OverflowError):  # an id of 2^63 or more
            raise node_error(node, exc) from None
        raise
    check_durations(durations, ids, names, lenient)
    for comm_type, count in sorted(replayed.items(), key=lambda kv: str(kv[0])):
        if comm_type == CollectiveCommType.BROADCAST:  # as ASTRA-sim does
            logger.debug("rank %d: %d BROADCAST node(s) replay their duration", rank, count)
        else:
            logger.warning(
                "rank %d: %d %s node(s) replay their duration, though ASTRA-sim fails on them",
                rank,
                count,
                _type_name(comm_type),
            )
    return assemble_graph(
        rank, ids, names, durations, measured, resource, resources, deps, dep_start, comm,
        lenient,
    )  # fmt: skip


def _values(node: Any) -> dict[str, Any]:
    """The attributes ASTRA-sim's model reads; an integer one of another kind raises
    SimulationError naming the node (chakra_validate reports it as ``wrong_attr_kind``)."""
    values = {}
    for attr in node.attr:
        if attr.name in _INTEGERS:
            try:
                values[attr.name] = int_value(attr)
            except SimulationError as exc:
                raise node_error(node, exc) from None
        elif attr.name in _READ:
            values[attr.name] = attr_value(attr)
    return values


def _duration_us(kind: int, duration_micros: int) -> float:
    if kind in _INSTANT:
        return 0.0
    return float(duration_micros) if duration_micros else SHORTEST_US


def _slot(slots: dict[str, int], resources: list[Resource], kind: int, is_cpu_op: bool) -> int:
    """``HardwareResource``'s choice: the CPU, the GPU or the communication slot (numbered
    in first use: ``slots`` by name, ``resources`` in order), or none for a receive."""
    if is_cpu_op:
        name = "cpu"
    elif kind == int(NodeType.COMP_NODE):
        name = "gpu"
    elif kind == _RECV:
        return NO_RESOURCE
    else:
        name = "comm"
    slot = slots.get(name)
    if slot is None:
        slot = slots[name] = len(resources)
        resources.append(Resource.slot(name))
    return slot


def _collective_key(node: Any, rank: int, values: dict, counts: Counter) -> Any:
    """The meeting of a ring collective (None for one that only replays its duration)."""
    comm_type = values.get("comm_type")
    if comm_type is None or values.get("comm_size") is None:
        raise SimulationError(
            f"rank {rank}: collective node {node.id} ({node.name}) has no comm_type or no "
            "comm_size (ASTRA-sim needs both)"
        )
    if int(comm_type) not in RING_COLLECTIVES:
        return None
    pg = str(values.get("pg_name") or "0")  # "" and "0": ASTRA-sim's group of every rank
    counts[pg] += 1
    return CommKey(pg, counts[pg] - 1, int(comm_type), int(values["comm_size"]))


def _p2p_key(node: Any, rank: int, values: dict, counts: Counter) -> P2PKey:
    """The pair a send or receive belongs to. As ASTRA-sim reads it: a send names its
    destination (``comm_dst``), a receive its source (``comm_src``), both a ``comm_tag``;
    the near end is ``rank``, the file's own, when the node leaves it out."""
    sending = node.type == _SEND
    far, near = ("comm_dst", "comm_src") if sending else ("comm_src", "comm_dst")
    missing = [name for name in (far, "comm_tag") if values.get(name) is None]
    if missing:
        raise SimulationError(
            f"rank {rank}: node {node.id} ({node.name}) has no {', '.join(missing)} "
            f"(ASTRA-sim needs {far} and comm_tag on a {'send' if sending else 'receive'})"
        )
    ends = {far: int(values[far]), near: rank if values.get(near) is None else int(values[near])}
    source, destination, tag = ends["comm_src"], ends["comm_dst"], int(values["comm_tag"])
    own = source if sending else destination
    if own != rank or source == destination:
        raise SimulationError(
            f"rank {rank}: node {node.id} ({node.name}) sends from {source} to {destination}: "
            "ASTRA-sim issues a send on its source and a receive on its destination"
        )
    pair = f"p2p {source}->{destination} tag {tag}"
    counts[pair] += 1
    size = int(values.get("comm_size") or 0)
    return P2PKey(pair, counts[pair] - 1, -1, size, source, destination)


def _type_name(comm_type: Any) -> str:
    try:
        return CollectiveCommType(int(comm_type)).name
    except (TypeError, ValueError):
        return repr(comm_type)
