"""The simulator's view of a Chakra ET graph: flat arrays indexed by node position.

Built once from protobuf nodes (streamed from a file), then read by the engine only: one
Python pass reads each node's fields, and array operations (:mod:`chakra.simulate.csr`)
match dependency ids to positions and build the rows. Each node has a duration, its
predecessors and successors (compressed rows), a :class:`~chakra.simulate.resources.Resource`
(a host thread, a GPU stream, or none), and, for communication nodes, what it must meet on
other ranks.
"""

from __future__ import annotations

import gc
from array import array
from collections.abc import Iterable
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

    def where(self) -> str:
        """How an error names this graph: its file and rank, or its rank alone."""
        return f"{self.source}: rank {self.rank}" if self.source else f"rank {self.rank}"

    def recorded(self, node: int) -> Recorded:
        """What a meeting needs of communication node ``node`` (an index)."""
        factor = 1.0 if self.duration_factor is None else self.duration_factor[node]
        return Recorded(self.duration_us[node], float(self.measured_start_us[node]), factor)


_READ = frozenset({"is_cpu_op", "tid", "stream", "device", "comm_type", "comm_size", "pg_name",
                   "duration_ns", "runs_on_host", "segment_of"})  # fmt: skip
_COMM_TYPE_VALUES = frozenset(int(t) for t in COMM_TYPES)  # plain ints: faster to look up
_COLL = int(NodeType.COMM_COLL_NODE)


def build_graph(nodes: Iterable[Any], rank: int = 0, serialize_gpu: bool = False) -> SimGraph:
    """Index ``nodes`` (any order). Raises SimulationError for a repeated id or a
    dependency on an id that no node has. Resources: a host node runs on its thread
    (``tid``; a host collective, written ``is_cpu_op`` false for ASTRA-sim, is marked
    ``runs_on_host``), a GPU node on its (device, stream), or, with ``serialize_gpu``, all
    GPU nodes of a device on one slot; a node with neither waits for no resource.

    One pass over the nodes fills flat arrays (dependencies as the ids they name); ids are
    then matched and the rows transposed with array operations (:mod:`.csr`). Errors are
    the ones a check of each node in turn would raise first: a repeated id is reported
    before any error of a later node (a bad attribute value, a file that cannot be read),
    and an unknown dependency only once every node has been read."""
    reader = _NodeReader(serialize_gpu)
    # the pass allocates no reference cycles: the collector would only rescan the nodes
    collecting = gc.isenabled()
    gc.disable()
    try:
        reader.read(nodes)
    except Exception:
        repeated = repeated_id_error(rank, reader.ids)
        if repeated is not None:  # checked node by node, the repeat would have been met first
            raise repeated from None
        raise
    finally:
        if collecting:
            gc.enable()
    graph = assemble_graph(
        rank,
        reader.ids,
        reader.names,
        reader.durations,
        reader.measured,
        reader.resource,
        reader.resources,
        reader.deps,
        reader.dep_start,
        reader.comm,
    )
    check_durations(reader.durations, reader.ids, reader.names)
    return msgspec.structs.replace(graph, parent_id=reader.parent_id, segment_of=reader.segment_of)


def assemble_graph(rank: int, ids: array, names: list[str], durations: array, measured: array,
                   resource: array, resources: list[Resource], deps: array,
                   dep_start: array, comm: dict[int, CommKey]) -> SimGraph:  # fmt: skip
    """The :class:`SimGraph` of the flat arrays a reading pass filled (one entry per node;
    ``deps`` the dependency ids one node after the other, ``dep_start`` where each node's
    begin; ``resource`` indexes ``resources``). Raises SimulationError for a repeated id or
    a dependency on an id that no node has."""
    index, repeat = index_ids(ids)
    if repeat >= 0:
        raise _repeated(rank, ids, repeat)
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


def _value(attr: Any) -> Any:
    """The value of an attribute, whichever kind it holds (None when it holds none)."""
    kind = attr.WhichOneof("value")
    return getattr(attr, kind) if kind is not None else None


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


def check_durations(durations: array, ids: array, names: list[str]) -> None:
    """Raises SimulationError for the first negative or non-finite duration (µs)."""
    if not durations:
        return
    values = np.frombuffer(durations, dtype=np.float64)
    bad = ~np.isfinite(values) | (values < 0) | (values >= _MAX_US)
    if bad.any():
        i = int(np.argmax(bad))
        raise SimulationError(
            f"node {ids[i]} ({names[i]}): duration {float(values[i])} µs is negative, not "
            "finite or 2^63 ns or more"
        )


def _repeated(rank: int, ids: array, position: int) -> SimulationError:
    return SimulationError(f"rank {rank}: node id {ids[position]} appears twice")


class _NodeReader:
    """The per-node pass of :func:`build_graph`: appends each node's fields to flat arrays
    (one entry per node; ``deps`` the dependency ids one node after the other, ``dep_start``
    where each node's begin) and numbers the resources and each group's communications."""

    def __init__(self, serialize_gpu: bool) -> None:
        self.serialize_gpu = serialize_gpu
        self.ids, self.names, self.durations = array("q"), [], array("d")
        self.measured, self.resource = array("d"), array("q")
        self.deps, self.dep_start = array("Q"), array("q", [0])
        self.resources: list[Resource] = []
        # the slot of each resource, by (tid,) or (device, stream): cheaper to hash per node
        # than a Resource
        self._slots: dict[tuple, int] = {}
        self.comm: dict[int, CommKey] = {}
        self.group_count: dict[str, int] = {}
        self.parent_id: array = array("q")
        self.segment_of: dict[int, int] = {}

    def read(self, nodes: Iterable[Any]) -> None:
        """Read every node; raises SimulationError naming the first node at fault."""
        node: Any = None
        try:
            for position, node in enumerate(nodes):
                self._read_node(position, node)
        except (SimulationError, OverflowError, TypeError, ValueError) as exc:  # a node's fault
            raise node_error(node, exc) from None

    def _read_node(self, position: int, node: Any) -> None:
        self.ids.append(node.id)
        self.names.append(node.name)
        start = node.start_time_micros
        self.measured.append(float(start) if start else -1.0)
        on_host, tid, stream, device, duration_ns, values = self._attributes(node, position)
        if duration_ns is not None:  # exact duration of a fractional-µs op
            self.durations.append(duration_ns / 1000.0)
        else:
            self.durations.append(float(node.duration_micros))
        self.resource.append(self._slot(on_host, tid, stream, device))
        ctrl = node.ctrl_deps
        self.parent_id.append(ctrl[0] if ctrl and ctrl[0] <= _MAX_ID else -1)
        self.deps.fromlist(node.data_deps[:])  # a list made in C: faster than the container
        self.dep_start.append(len(self.deps))
        if node.type in _COMM_TYPE_VALUES:
            self._communication(position, node.type, values or {})

    def _attributes(self, node: Any, position: int) -> tuple:
        """What the pass reads of a node's attributes: whether it runs on a host thread,
        its tid, stream, device and ``duration_ns`` (None when unset), and the
        communication attributes by name (None when it has none); records ``segment_of``."""
        is_cpu_op, on_host = True, False
        tid = stream = device = duration_ns = values = None
        for attr in node.attr[:]:  # a list made in C: faster to walk than the container
            name = attr.name
            if name not in _READ:
                continue
            # a nonzero member is the one set: the common case, read directly
            if name == "is_cpu_op":
                is_cpu_op = attr.bool_val or _value(attr)
            elif name == "runs_on_host":
                on_host = attr.bool_val or _value(attr)
            elif name == "tid":
                tid = attr.int64_val or int_value(attr)
            elif name == "duration_ns":
                duration_ns = attr.int64_val or int_value(attr)
            elif name == "stream":
                stream = attr.int64_val or int_value(attr)
            elif name == "device":
                device = attr.int64_val or int_value(attr)
            elif name == "segment_of":
                self._segment_of(position, _value(attr))
            else:  # the communication attributes
                if values is None:
                    values = {}
                values[name] = _value(attr)
        return is_cpu_op or on_host, tid, stream, device, duration_ns, values

    def _segment_of(self, position: int, op_id: Any) -> None:
        if op_id.__class__ is int:  # not a bool, nor any other kind
            self.segment_of[position] = op_id
        else:  # the last one counts, as for every attribute
            self.segment_of.pop(position, None)

    def _slot(self, on_host: bool, tid: Any, stream: Any, device: Any) -> int:
        """The resource slot of a node: its thread on the host, its (device, stream) or,
        with ``serialize_gpu``, its device's one slot; NO_RESOURCE for a host node
        without a tid."""
        if on_host:
            if tid is None:
                return NO_RESOURCE
            key: tuple = (int(tid),)
        else:
            device = int(device or 0)
            if self.serialize_gpu:  # the reference before stream ids: one slot per device
                key = (device, "all")
            else:
                key = (device, int(stream) if stream is not None else 0)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = len(self.resources)
            self.resources.append(Resource.thread(*key) if on_host else Resource.stream(*key))
        return slot

    def _communication(self, position: int, node_type: int, values: dict[str, Any]) -> None:
        pg = str(values.get("pg_name") or "")
        comm_type = values.get("comm_type")
        count = self.group_count.get(pg, 0)
        is_coll = node_type == _COLL and comm_type is not None
        self.comm[position] = CommKey(
            pg, count, int(comm_type) if is_coll else -1, int(values.get("comm_size") or 0)
        )
        self.group_count[pg] = count + 1
