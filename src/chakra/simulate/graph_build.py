"""Build a :class:`~chakra.simulate.sim_graph.SimGraph` from protobuf nodes (streamed from a
file): one Python pass reads each node's fields into flat arrays, then array operations
(:mod:`chakra.simulate.csr`) match dependency ids to positions and build the rows.

The pass also makes ``chakra_validate``'s checks (:mod:`chakra.simulate.load_checks`) at
little cost: a node it reads as an ordinary one (a COMP node with a bool ``is_cpu_op`` or
none, every attribute it reads in the kind the validator wants, durations and id in range) has no
problem of its own, which the reader shows as it reads; any other node goes through
:func:`chakra.et.graph_checks.node_problems` while it is at hand; the graph-wide checks
(:mod:`chakra.et.dep_checks`) run on the arrays the pass fills anyway. A node's own
problems thus cost the full check only on the few unusual nodes (communication, memory,
metadata nodes and faulty ones).
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
from chakra.et.dep_checks import DepArrays, dependency_problems
from chakra.et.graph_checks import (
    FEEDER_ATTR_KINDS,
    MAX_ID,
    MAX_US,
    SIM_INT_ATTRS,
    ValidationOptions,
    ValidationReport,
    node_problems,
    report_of,
)
from chakra.et.problems import SLOT_NODE, PlacedProblem
from chakra.et.schema import NodeType
from chakra.simulate.load_checks import LoadOptions, judge
from chakra.simulate.resources import Resource
from chakra.simulate.sim_graph import (
    COMM_TYPES,
    NO_RESOURCE,
    CommKey,
    SimGraph,
    assemble_graph,
    check_durations,
    node_error,
    repeated_id_error,
)

_READ = frozenset({"is_cpu_op", "tid", "stream", "device", "comm_type", "comm_size", "pg_name",
                   "duration_ns", "runs_on_host", "segment_of", *FEEDER_ATTR_KINDS,
                   *SIM_INT_ATTRS})  # fmt: skip
_COMM_TYPE_VALUES = frozenset(int(t) for t in COMM_TYPES)  # plain ints: faster to look up
_COLL = int(NodeType.COMM_COLL_NODE)
_COMP = int(NodeType.COMP_NODE)
#: below the least ``duration_micros`` the validator's float test refuses: an integer test
#: that is cheaper, for the nodes whose ``duration_ns`` the replay reads instead
_NEAR_MAX_MICROS = int(MAX_US) - 4
_ABSENT: Any = object()


def build_graph(
    nodes: Iterable[Any],
    rank: int = 0,
    serialize_gpu: bool = False,
    options: Optional[LoadOptions] = None,
    source: str = "",
) -> SimGraph:
    """Index ``nodes`` (any order). Resources: a host node runs on its thread (``tid``; a
    host collective, written ``is_cpu_op`` false for ASTRA-sim, is marked ``runs_on_host``),
    a GPU node (``is_cpu_op`` false or absent, as the feeder reads it) on its (device,
    stream), or, with ``serialize_gpu`` (or
    ``options.serialize_gpu``), all GPU nodes of a device on one slot; a node with neither
    waits for no resource.

    ``options`` None: the nodes are not checked (nodes in memory that the caller vouches
    for); SimulationError for a repeated id, a dependency on an id that no node has, or a
    value the replay cannot read, the first a check of each node in turn would meet (a
    repeated id before any error of a later node, an unknown dependency once every node is
    read). With ``options``, what :mod:`chakra.simulate.load_checks` says (``source``, the
    file, names it in a lenient load's warning)."""
    if options is not None and options.serialize_gpu:
        serialize_gpu = True
    checks = options.checks if options is not None else None
    reader = NodeReader(serialize_gpu, checks)
    # the pass allocates no reference cycles: the collector would only rescan the nodes
    collecting = gc.isenabled()
    gc.disable()
    try:
        reader.read(nodes)
    except Exception:
        repeated = repeated_id_error(rank, reader.ids) if checks is None else None
        if repeated is not None:  # checked node by node, the repeat would have been met first
            raise repeated from None
        raise
    finally:
        if collecting:
            gc.enable()
    lenient = checks is not None and options is not None and options.lenient
    report = None
    if checks is not None:
        report = reader.report()
        judge(report, rank, lenient, source)
    graph = assemble_graph(rank, reader.ids, reader.names, reader.durations, reader.measured,
                           reader.resource, reader.resources, reader.deps, reader.dep_start,
                           reader.comm, lenient)  # fmt: skip
    check_durations(reader.durations, reader.ids, reader.names, lenient)
    return msgspec.structs.replace(
        graph,
        parent_id=reader.parent_id,
        segment_of=reader.segment_of,
        problem_counts=None if report is None else dict(report.counts()),
    )


def _value(attr: Any) -> Any:
    """The value of an attribute, whichever kind it holds (None when it holds none)."""
    kind = attr.WhichOneof("value")
    return getattr(attr, kind) if kind is not None else None


class NodeReader:
    """The per-node pass of :func:`build_graph`: appends each node's fields to flat arrays
    (one entry per node; ``deps`` the dependency ids one node after the other, ``dep_start``
    where each node's begin) and numbers the resources and each group's communications.
    With ``checks``, it also keeps the problems of unusual nodes and what the graph-wide
    checks need (every ``ctrl_deps`` entry), and tolerates what it would otherwise refuse
    (a value of a kind it cannot read is taken as absent: the checks report it)."""

    def __init__(self, serialize_gpu: bool, checks: Optional[ValidationOptions] = None) -> None:
        self.serialize_gpu, self.checks = serialize_gpu, checks
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
        #: ids of 2^63 or more by position (``ids`` holds -1 there), and the ctrl deps of
        #: the nodes whose ``ctrl_deps`` are more than one id below 2^63 (``parent_id``)
        self.large_ids: dict[int, int] = {}
        self.more_ctrl: dict[int, list[int]] = {}
        self.local: list[PlacedProblem] = []
        # every node is unusual when the checks ask what the reading does not show
        self.every_node = checks is not None and checks.require_streams
        self.unusual = self.every_node

    def read(self, nodes: Iterable[Any]) -> None:
        """Read every node; raises SimulationError naming the first node at fault."""
        node: Any = None
        try:
            for position, node in enumerate(nodes):
                self._read_node(position, node)
        except (SimulationError, OverflowError, TypeError, ValueError) as exc:  # a node's fault
            raise node_error(node, exc) from None

    def _read_node(self, position: int, node: Any) -> None:
        node_id = node.id
        try:
            self.ids.append(node_id)
        except OverflowError:  # 2^63 or more: the checks refuse it
            if self.checks is None:
                raise
            self.ids.append(-1)
            self.large_ids[position] = node_id
            self.unusual = True
        self.names.append(node.name)
        start = node.start_time_micros
        self.measured.append(float(start) if start else -1.0)
        on_host, tid, stream, device, duration_ns, values = self._attributes(node, position)
        if duration_ns is None:
            duration_us = float(node.duration_micros)
            if not duration_us < MAX_US:  # the validator's test
                self.unusual = True
        else:  # exact duration of a fractional-µs op
            duration_us = duration_ns / 1000.0
            if not 0.0 <= duration_us < MAX_US or node.duration_micros > _NEAR_MAX_MICROS:
                self.unusual = True
        self.durations.append(duration_us)
        self.resource.append(self._slot(on_host, tid, stream, device))
        ctrl = node.ctrl_deps
        if ctrl:
            first = ctrl[0]
            if first > MAX_ID or len(ctrl) > 1:
                self.more_ctrl[position] = ctrl[:]
                first = first if first <= MAX_ID else -1
            self.parent_id.append(first)
        else:
            self.parent_id.append(-1)
        self.deps.fromlist(node.data_deps[:])  # a list made in C: faster than the container
        self.dep_start.append(len(self.deps))
        node_type = node.type
        if node_type != _COMP or values is not None or self.unusual:
            self._unusual_node(position, node, node_type, values)

    def _unusual_node(self, position: int, node: Any, node_type: int, values: Any) -> None:
        """A node that is not an ordinary COMP node (or one the reading found faulty): its
        communication, and its own problems when checked."""
        self.unusual = self.every_node
        if node_type in _COMM_TYPE_VALUES:
            self._communication(position, node_type, values or {})
        if self.checks is not None:
            for problem in node_problems(node, self.checks):
                self.local.append(PlacedProblem(position, SLOT_NODE, problem))

    def _attributes(self, node: Any, position: int) -> tuple:
        """What the pass reads of a node's attributes: whether it runs on a host thread,
        its tid, stream, device and ``duration_ns`` (None when unset), and the other
        attributes the checks look at by name (None when it has none); records
        ``segment_of``. A reading that proves nothing about an attribute's kind marks the
        node unusual."""
        is_cpu_op, on_host = _ABSENT, False
        tid = stream = device = duration_ns = values = None
        for attr in node.attr[:]:  # a list made in C: faster to walk than the container
            name = attr.name
            if name not in _READ:
                continue
            # a nonzero member is the one set: the common case, read directly
            if name == "is_cpu_op":
                is_cpu_op = attr.bool_val  # false: a GPU node's, or another kind
                if not is_cpu_op and attr.WhichOneof("value") != "bool_val":
                    is_cpu_op = self._bool(attr)
            elif name == "runs_on_host":
                on_host = attr.bool_val or _value(attr)
            elif name == "tid":
                tid = attr.int64_val or self._integer(attr)
            elif name == "duration_ns":
                duration_ns = attr.int64_val or self._integer(attr)
            elif name == "stream":
                stream = attr.int64_val or self._stream(attr)
            elif name == "device":
                device = attr.int64_val or self._integer(attr)
            elif name == "segment_of":
                self._segment_of(position, _value(attr))
            else:  # the communication attributes, and the others the checks read
                if values is None:
                    values = {}
                values[name] = _value(attr)
        if is_cpu_op is _ABSENT:  # a GPU node, as ASTRA-sim's feeder reads it
            is_cpu_op = False
        return is_cpu_op or on_host, tid, stream, device, duration_ns, values

    def _bool(self, attr: Any) -> Any:
        """An ``is_cpu_op`` of another kind than ``bool_val``: its value, whichever kind
        holds it (None when unset); the node is unusual."""
        self.unusual = True
        kind = attr.WhichOneof("value")
        return getattr(attr, kind) if kind is not None else None

    def _stream(self, attr: Any) -> Optional[int]:
        """A ``stream`` that is not a nonzero ``int64_val``: as :meth:`_integer` reads it;
        the node is unusual unless it is an ``int64_val`` (the feeder reads no other)."""
        if attr.WhichOneof("value") != "int64_val":
            self.unusual = True
        return self._integer(attr)

    def _integer(self, attr: Any) -> Optional[int]:
        """An integer attribute whose nonzero member is not ``int64_val``: its value,
        whichever integer kind holds it (None when unset). Another kind raises
        SimulationError, or, when checked, reads as unset (the checks report it)."""
        kind = attr.WhichOneof("value")
        if kind is None:
            return None
        if kind not in INTEGER_KINDS:
            if self.checks is None:
                raise SimulationError(f"attribute {attr.name} holds {kind}, not an integer")
            self.unusual = True
            return None
        return getattr(attr, kind)

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
        try:
            comm_type = values.get("comm_type")
            is_coll = node_type == _COLL and comm_type is not None
            key_type = int(comm_type) if is_coll else -1
            size = int(values.get("comm_size") or 0)
        except (TypeError, ValueError, OverflowError):  # a value of another kind
            if self.checks is None:
                raise
            key_type, size = -1, 0  # the checks report it
        count = self.group_count.get(pg, 0)
        self.comm[position] = CommKey(pg, count, key_type, size)
        self.group_count[pg] = count + 1

    def report(self) -> ValidationReport:
        """What the checks found: the unusual nodes' own problems and the graph-wide ones."""
        count = len(self.names)
        ids = np.frombuffer(self.ids, dtype=np.uint64) if count else np.zeros(0, np.uint64)
        if self.large_ids:
            ids = ids.copy()
            ids[list(self.large_ids)] = list(self.large_ids.values())
        parent = np.frombuffer(self.parent_id, dtype=np.int64) if count else np.zeros(0, np.int64)
        single = parent >= 0
        single[list(self.more_ctrl)] = False
        owners = [np.flatnonzero(single)]
        ctrl = [parent[single].astype(np.uint64)]
        for position, listed in self.more_ctrl.items():
            owners.append(np.full(len(listed), position, dtype=np.int64))
            ctrl.append(np.array(listed, dtype=np.uint64))
        ctrl_owner = np.concatenate(owners)
        order = np.argsort(ctrl_owner, kind="stable") if self.more_ctrl else slice(None)
        deps = DepArrays(
            ids, self.names,
            np.frombuffer(self.deps, dtype=np.uint64) if len(self.deps) else np.zeros(0, np.uint64),
            np.frombuffer(self.dep_start, dtype=np.int64), np.concatenate(ctrl)[order],
            ctrl_owner[order], np.frombuffer(self.measured, dtype=np.float64) if count
            else np.zeros(0),
        )  # fmt: skip
        return report_of(count, self.local, dependency_problems(deps, self.checks.check_ctrl_deps))
