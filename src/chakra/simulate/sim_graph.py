"""The simulator's view of a Chakra ET graph: flat arrays indexed by node position.

Built once from protobuf nodes (streamed from a file; :mod:`chakra.simulate.graph_build`),
then read by the engine only. Each node has a duration, its predecessors and successors
(compressed rows), a :class:`~chakra.simulate.resources.Resource` (a host thread, a GPU
stream, or none), and, for communication nodes, what it must meet on other ranks.
"""

from __future__ import annotations

from array import array
from typing import Any, Optional

import msgspec
import numpy as np

from chakra.errors import SimulationError
from chakra.et.attributes import INTEGER_KINDS
from chakra.et.schema import NodeType
from chakra.simulate.csr import (
    dependency_positions,
    index_ids,
    owner_of,
    successor_rows,
    to_array,
    usable_deps,
)
from chakra.simulate.resources import Resource

COMM_TYPES = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)
NO_RESOURCE = -1
_MAX_ID = (1 << 63) - 1  # ids are kept as int64
_MAX_US = float(1 << 63) / 1000.0  # durations in ns are kept as int64


class CommKey(msgspec.Struct, frozen=True):
    """What a communication node must meet on the other ranks: its group and its
    position among the group's communications on this rank; plus what a network model
    needs (collective type, -1 for send/recv, and size in bytes)."""

    pg_name: str
    index: int
    comm_type: int = -1
    size_bytes: int = 0


class Recorded(msgspec.Struct, frozen=True):
    """What a meeting needs of a communication node: its duration (µs), its measured start
    (µs, negative when unknown) and the factor a what-if multiplied its duration by (1 when
    none)."""

    duration_us: float
    measured_start_us: float
    factor: float


class SimGraph(msgspec.Struct, frozen=True):
    """Arrays of one rank's graph, read only (a what-if makes new graphs). ``resource[i]``
    indexes ``resources`` (or -1: runs without waiting for any resource), numbered in first
    use. Each resource runs its nodes one at a time, in one fixed order that the graph gives
    (:func:`chakra.simulate.order.take_order`; ASTRA-sim's slots: the ready node with the
    smallest id). ``pred_start[i]:pred_start[i+1]`` slices ``preds``."""

    rank: int
    ids: array
    names: list[str]
    duration_us: array
    resource: array
    resources: list[Resource]
    preds: array
    pred_start: array
    succs: array
    succ_start: array
    measured_start_us: array  # -1 when unknown
    comm: dict[int, CommKey]  # node index -> key, for communication nodes
    #: what a what-if multiplied each recorded duration by (None: nothing scaled); a
    #: collective's measured wait for its last member is not scaled, its transfer is
    duration_factor: Optional[array] = None
    #: for the timeline's call stacks: each node's parent op id (its first ``ctrl_deps``,
    #: -1 for none), and node index -> the op id of a later segment of a host op's own
    #: time (``segment_of``); None for graphs built without them
    parent_id: Optional[array] = None
    segment_of: Optional[dict[int, int]] = None
    #: the file the graph was read from ("" when built from nodes in memory): the
    #: engine's errors name it
    source: str = ""
    #: each node's input shapes, the JSON text its ``inputs.shapes`` holds ("" for none),
    #: for what-if rules that select by shape; None unless asked for (not read at load:
    #: :func:`chakra.simulate.selection.with_instance_facts` reads them when a rule needs them)
    input_shapes: Optional[list[str]] = None
    #: the number of problems of each kind the checks of its load found (a lenient load
    #: goes on with them: :mod:`chakra.simulate.load_checks`); None when not checked
    problem_counts: Optional[dict[str, int]] = None

    def where(self) -> str:
        """How an error names this graph: its file and rank, or its rank alone."""
        return f"{self.source}: rank {self.rank}" if self.source else f"rank {self.rank}"

    def recorded(self, node: int) -> Recorded:
        """What a meeting needs of communication node ``node`` (an index)."""
        factor = 1.0 if self.duration_factor is None else self.duration_factor[node]
        return Recorded(self.duration_us[node], float(self.measured_start_us[node]), factor)


def assemble_graph(rank: int, ids: array, names: list[str], durations: array, measured: array,
                   resource: array, resources: list[Resource], deps: array,
                   dep_start: array, comm: dict[int, CommKey],
                   lenient: bool = False) -> SimGraph:  # fmt: skip
    """The :class:`SimGraph` of the flat arrays a reading pass filled (one entry per node;
    ``deps`` the dependency ids one node after the other, ``dep_start`` where each node's
    begin; ``resource`` indexes ``resources``). Raises SimulationError for a repeated id or
    a dependency on an id that no node has; ``lenient``: such a dependency, and one of a
    node on itself, is left out instead."""
    index, repeat = index_ids(ids)
    if repeat >= 0:
        raise _repeated(rank, ids, repeat)
    if lenient:
        deps, dep_start = usable_deps(index, ids, deps, dep_start)
    positions, missing = dependency_positions(index, deps)
    if missing >= 0:
        owner = owner_of(dep_start, missing)
        raise SimulationError(
            f"rank {rank}: node {ids[owner]} ({names[owner]}) depends on "
            f"unknown node {deps[missing]}"
        )
    succs, succ_start = successor_rows(positions, dep_start)
    return SimGraph(
        rank,
        ids,
        names,
        durations,
        resource,
        resources,
        to_array(positions),
        dep_start,
        succs,
        succ_start,
        measured,
        comm,
    )


def repeated_id_error(rank: int, ids: array) -> Optional[SimulationError]:
    """The error for the first repeated id among ``ids`` (None when all are unique): what a
    reading pass that failed part-way reports first."""
    repeat = index_ids(ids)[1]
    return _repeated(rank, ids, repeat) if repeat >= 0 else None


def int_value(attr: Any) -> Optional[int]:
    """An integer attribute whose nonzero member is not ``int64_val``: its value, whichever
    integer kind holds it (None when unset). Raises SimulationError for another kind."""
    kind = attr.WhichOneof("value")
    if kind is None:
        return None
    if kind not in INTEGER_KINDS:
        raise SimulationError(f"attribute {attr.name} holds {kind}, not an integer")
    return getattr(attr, kind)


def node_error(node: Any, exc: Exception) -> SimulationError:
    """What a node the reading pass could not take gets reported as."""
    if node.id > _MAX_ID:
        problem = "its id is 2^63 or more (the simulator keeps ids as int64)"
    elif isinstance(exc, SimulationError):
        problem = str(exc)
    else:  # int() of a communication attribute of another kind
        problem = f"an attribute holds a value of the wrong kind ({exc})"
    return SimulationError(f"node {node.id} ({node.name}): {problem}")


def check_durations(durations: array, ids: array, names: list[str], lenient: bool = False) -> None:
    """Raises SimulationError for the first negative or non-finite duration (µs), or of
    2^63 ns or more; ``lenient``: sets them to 0 instead."""
    if not durations:
        return
    values = np.frombuffer(durations, dtype=np.float64)
    bad = ~np.isfinite(values) | (values < 0) | (values >= _MAX_US)
    if lenient:
        for i in np.flatnonzero(bad).tolist():
            durations[i] = 0.0
        return
    if bad.any():
        i = int(np.argmax(bad))
        raise SimulationError(
            f"node {ids[i]} ({names[i]}): duration {float(values[i])} µs is negative, not "
            "finite or 2^63 ns or more"
        )


def _repeated(rank: int, ids: array, position: int) -> SimulationError:
    return SimulationError(f"rank {rank}: node id {ids[position]} appears twice")
