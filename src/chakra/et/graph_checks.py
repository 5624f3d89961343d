"""Check a Chakra ET graph: unique ids, resolvable deps, no dependency cycle, feeder
attributes, and (by default) what the shipped ASTRA-sim requires (:mod:`chakra.et.astra_sim`).

The rules are those a consumer relies on: ASTRA-sim's C++ feeder reads each recognised
attribute from one fixed oneof member (reference §2.5), so a value stored under another
integer kind reads back as 0; it resolves ``data_deps`` and ``ctrl_deps`` by id, waits on
both, and silently never issues the nodes behind a cycle over the two together. A self dep
is reported as ``self_dep`` only, not also as a cycle; a cycle is reported once per strongly
connected region of the dependency graph (ids are its vertices, so a duplicate id merges
the deps of its nodes). :func:`validate_nodes` returns every problem found as a
:class:`ValidationReport` and raises nothing for a bad graph. It streams its input once,
keeping per node only integers (id, data deps) plus the names of the few nodes a later
problem may name (those with a dep on an id not seen yet, and duplicates). Time is
O(nodes + deps + attributes); no step recurses, so million-node chains and cycles are fine.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Optional

import msgspec

from chakra.errors import PathLike
from chakra.et.astra_sim import astra_sim_faults
from chakra.et.attributes import ATTRIBUTE_KINDS, INTEGER_KINDS, attr_value
from chakra.et.cycles import find_cycles
from chakra.et.reader import EtReader
from chakra.et.schema import CollectiveCommType, NodeType

#: Every ``Problem.kind``.
PROBLEM_KINDS = (
    "duplicate_id",
    "dangling_data_dep",
    "dangling_ctrl_dep",
    "self_dep",
    "cycle",
    "invalid_type",
    "missing_attr",
    "wrong_attr_kind",
    "invalid_attr_value",
    "invalid_comm_type",
    "missing_stream",
    "invalid_pg_name",
    "astra_sim_unsupported",
    "unknown_group",
    "out_of_range",
)

#: Attributes the feeder reads, with the one oneof member it reads each from; checked
#: whenever present, on any node type.
FEEDER_ATTR_KINDS: Mapping[str, str] = {
    name: ATTRIBUTE_KINDS[name]
    for name in (
        "is_cpu_op",
        "num_ops",
        "tensor_size",
        "comm_type",
        "comm_size",
        "comm_priority",
        "comm_src",
        "comm_dst",
        "comm_tag",
        "pg_name",
        "stream",
    )
}

#: Attributes each node type must carry (``is_cpu_op`` too, on every type but METADATA).
REQUIRED_ATTRS: Mapping[int, tuple[str, ...]] = {
    NodeType.COMM_COLL_NODE: ("comm_type", "comm_size"),
    NodeType.COMM_SEND_NODE: ("comm_size",),
    NodeType.COMM_RECV_NODE: ("comm_size",),
    NodeType.MEM_LOAD_NODE: ("tensor_size",),
    NodeType.MEM_STORE_NODE: ("tensor_size",),
}

_VALID_TYPES = frozenset(int(t) for t in NodeType if t is not NodeType.INVALID_NODE)
_GPU_TYPES = frozenset(
    (NodeType.COMP_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE, NodeType.COMM_COLL_NODE)
)
_COMM_TYPES = frozenset(int(t) for t in CollectiveCommType)
#: a communication node marked ``runs_on_host`` ran on a host thread (gloo), not a GPU
_COMM_NODE_TYPES = frozenset(
    (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE, NodeType.COMM_COLL_NODE)
)
_CYCLE_IDS_SHOWN = 10
#: ids and times must be below 2^63: chakra_sim keeps them in int64 arrays
_LIMIT = 1 << 63
#: chakra_sim keeps durations as float µs and refuses 2^63 ns or more: the same float test
#: here, so that the two agree at the boundary (2^63 - 1 ns rounds up to it)
_MAX_US = float(_LIMIT) / 1000.0
#: attributes chakra_sim reads as integers, of any integer kind (not a list, string, bool)
_SIM_INT_ATTRS = ("tid", "device", "duration_ns")


class Problem(msgspec.Struct, frozen=True, gc=False):
    """One thing wrong with a graph.

    ``kind`` is one of :data:`PROBLEM_KINDS`; ``node_id`` the node concerned (None if none);
    ``message`` one sentence naming the node and the fault. ``related_ids`` holds the other
    ids involved: the missing id of a dangling dep, or for a cycle its ids in order, each
    listing the next among its ``data_deps`` and the last listing the first.
    """

    kind: str
    node_id: Optional[int]
    message: str
    related_ids: tuple[int, ...] = ()


class ValidationOptions(msgspec.Struct, frozen=True):
    """``require_streams``: GPU nodes (``is_cpu_op`` false, COMP/COMM types) must carry an
    int64 ``stream``. ``check_ctrl_deps``: report ``ctrl_deps`` naming no node.
    ``astra_sim``: report what the shipped ASTRA-sim cannot run (:mod:`chakra.et.astra_sim`).
    ``comm_groups``: the group ids of a comm-group file: a ``pg_name`` not among them is
    ``unknown_group`` (None: not checked)."""

    require_streams: bool = False
    check_ctrl_deps: bool = True
    astra_sim: bool = True
    comm_groups: Optional[frozenset[str]] = None


#: The options used when none are given.
DEFAULT_OPTIONS = ValidationOptions()


class ValidationReport(msgspec.Struct, frozen=True):
    """The outcome: how many nodes were read and every problem, per-node ones in file order,
    then dangling deps, then cycles."""

    nodes: int
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def counts(self) -> Mapping[str, int]:
        """Number of problems of each kind present."""
        return dict(Counter(problem.kind for problem in self.problems))


def _label(node_id: int, name: Optional[str]) -> str:
    return f"node {node_id}" if name is None else f"node {node_id} ({name!r})"


def _attr_problems(node: Any, present: Mapping[str, Any]) -> list[Problem]:
    """Missing required attributes, wrong oneof members and out-of-range values."""
    problems = []
    node_type = node.type
    required = REQUIRED_ATTRS.get(node_type, ())
    if node_type != NodeType.METADATA_NODE:
        required = ("is_cpu_op", *required)
    for name in required:
        if name not in present:
            type_name = NodeType(node_type).name if node_type in _VALID_TYPES else node_type
            message = f"{_label(node.id, node.name)} of type {type_name} has no {name} attribute"
            problems.append(Problem("missing_attr", node.id, message))
    for attr in node.attr:  # every copy of a name: readers differ on which one counts
        name = attr.name
        if name not in FEEDER_ATTR_KINDS:
            continue
        wanted = FEEDER_ATTR_KINDS[name]
        found = attr.WhichOneof("value")
        if found != wanted:
            message = (
                f"{_label(node.id, node.name)} holds {name} as {found or 'no value'}, but the"
                f" feeder reads only {wanted}"
            )
            problems.append(Problem("wrong_attr_kind", node.id, message))
        elif name == "comm_type" and attr.int64_val not in _COMM_TYPES:
            message = (
                f"{_label(node.id, node.name)} has comm_type {attr.int64_val},"
                " not a CollectiveCommType"
            )
            problems.append(Problem("invalid_comm_type", node.id, message))
        elif name == "comm_size" and attr.int64_val < 0:
            message = f"{_label(node.id, node.name)} has a negative comm_size {attr.int64_val}"
            problems.append(Problem("invalid_attr_value", node.id, message))
    return problems


def _range_problems(node: Any) -> list[Problem]:
    """What chakra_sim (int64 arrays) would refuse: an id or a duration of 2^63 (ns) or
    more, a negative duration_ns, and a tid, device or duration_ns not an integer."""
    problems = []
    label = _label(node.id, node.name)
    if node.id >= _LIMIT:
        message = f"{label} has an id of 2^63 or more (chakra_sim keeps ids as int64)"
        problems.append(Problem("out_of_range", node.id, message))
    if not float(node.duration_micros) < _MAX_US:
        message = f"{label} has a duration_micros of 2^63 ns or more"
        problems.append(Problem("out_of_range", node.id, message))
    last = {attr.name: attr for attr in node.attr if attr.name in _SIM_INT_ATTRS}
    for name, attr in last.items():  # the last one counts, as for the readers
        kind = attr.WhichOneof("value")
        if kind is not None and kind not in INTEGER_KINDS:
            message = f"{label} holds {name} as {kind}, not an integer"
            problems.append(Problem("wrong_attr_kind", node.id, message))
        elif name == "duration_ns" and not 0 <= attr_value(attr) / 1000.0 < _MAX_US:
            message = (f"{label} has duration_ns {attr_value(attr)}: negative, or 2^63 ns or"
                       " more once in µs (what chakra_sim refuses)")  # fmt: skip
            problems.append(Problem("out_of_range", node.id, message))
    return problems


def _node_problems(node: Any, options: ValidationOptions) -> list[Problem]:
    """Problems visible from one node alone: its type, attributes, stream and self dep."""
    present: dict[str, Any] = {}
    for attr in node.attr:
        if attr.name in FEEDER_ATTR_KINDS and attr.name not in present:
            present[attr.name] = attr
    problems = _attr_problems(node, present)
    problems.extend(_range_problems(node))
    if node.type not in _VALID_TYPES:
        message = f"{_label(node.id, node.name)} has type {node.type}, not a valid NodeType"
        problems.append(Problem("invalid_type", node.id, message))
    for field in ("data_deps", "ctrl_deps"):
        if node.id in getattr(node, field):
            message = f"{_label(node.id, node.name)} lists itself among its {field}"
            problems.append(Problem("self_dep", node.id, message))
    if options.astra_sim or options.comm_groups is not None:
        values = {name: attr_value(attr) for name, attr in present.items()}
        for kind, what in astra_sim_faults(node, values, options.astra_sim, options.comm_groups):
            problems.append(Problem(kind, node.id, f"{_label(node.id, node.name)} {what}"))
    cpu = present.get("is_cpu_op")
    is_gpu = cpu is not None and cpu.WhichOneof("value") == "bool_val" and not cpu.bool_val
    on_host = node.type in _COMM_NODE_TYPES and any(a.name == "runs_on_host" for a in node.attr)
    if (options.require_streams and is_gpu and node.type in _GPU_TYPES
            and "stream" not in present and not on_host):  # fmt: skip
        message = f"{_label(node.id, node.name)} runs on the GPU but has no stream attribute"
        problems.append(Problem("missing_stream", node.id, message))
    return problems


class _GraphBuilder:
    """Accumulates the id graph of a node stream, then finds the graph-wide problems.

    Vertices are distinct ids numbered in order of first appearance (a duplicate id adds its
    deps to the same vertex); edges run from a dep to its dependent. A dep on an id not seen
    yet waits in a pending list until the end of the stream.
    """

    def __init__(self, options: ValidationOptions) -> None:
        self.options = options
        self.nodes = 0
        self.problems: list[Problem] = []
        self.vertex_of: dict[int, int] = {}
        self.vertex_ids = array("Q")
        self.first_position = array("q")
        self.edge_parents = array("q")
        self.edge_children = array("q")
        self.pending: list[tuple[str, int, int, int]] = []  # (kind, position, node id, dep id)
        self.names: dict[int, str] = {}  # by position, for nodes a later problem may name
        self.vertex_names: dict[int, str] = {}

    def add(self, node: Any) -> None:
        position, node_id = self.nodes, node.id
        self.nodes += 1
        vertex = self.vertex_of.get(node_id)
        noteworthy = vertex is not None
        if vertex is None:
            vertex = self.vertex_of[node_id] = len(self.vertex_ids)
            self.vertex_ids.append(node_id)
            self.first_position.append(position)
        else:
            message = (
                f"{_label(node_id, node.name)}, node #{position + 1} of the stream, reuses the"
                f" id of node #{self.first_position[vertex] + 1}"
            )
            self.problems.append(Problem("duplicate_id", node_id, message))
        self.problems.extend(_node_problems(node, self.options))
        # ctrl deps are waited on like data deps: both are edges of the cycle check
        for kind, deps in (("dangling_data_dep", node.data_deps),
                           ("dangling_ctrl_dep", node.ctrl_deps)):  # fmt: skip
            for dep in deps:
                parent = self.vertex_of.get(dep)
                if parent is None:
                    self.pending.append((kind, position, vertex, dep))
                    noteworthy = True
                elif dep != node_id:
                    self.edge_parents.append(parent)
                    self.edge_children.append(vertex)
        if noteworthy:
            self.names[position] = node.name
            self.vertex_names.setdefault(vertex, node.name)

    def finish(self) -> ValidationReport:
        problems = self.problems
        for kind, position, vertex, dep in self.pending:
            parent = self.vertex_of.get(dep)
            if parent is None:
                if kind == "dangling_ctrl_dep" and not self.options.check_ctrl_deps:
                    continue
                node_id = self.vertex_ids[vertex]
                which = "data dep" if kind == "dangling_data_dep" else "ctrl dep"
                message = (
                    f"{_label(node_id, self.names[position])} has {which} {dep}, which no node has"
                )
                problems.append(Problem(kind, node_id, message, (dep,)))
            else:  # a dep on a later node
                self.edge_parents.append(parent)
                self.edge_children.append(vertex)
        problems.extend(self._cycle_problems())
        return ValidationReport(self.nodes, tuple(problems))

    def _cycle_problems(self) -> list[Problem]:
        cycles = find_cycles(len(self.vertex_ids), self.edge_parents, self.edge_children)
        return [self._cycle_problem(list(c.vertices), c.region) for c in cycles]

    def _cycle_problem(self, cycle: list[int], region: int) -> Problem:
        """A ``cycle`` problem, rotated to start at a vertex whose name is known."""
        named = [i for i, vertex in enumerate(cycle) if vertex in self.vertex_names]
        if named:
            cycle = cycle[named[0] :] + cycle[: named[0]]
        ids = tuple(self.vertex_ids[vertex] for vertex in cycle)
        shown = " -> ".join(str(i) for i in ids[:_CYCLE_IDS_SHOWN])
        more = f" -> ... ({len(ids)} ids in all)" if len(ids) > _CYCLE_IDS_SHOWN else ""
        message = (
            f"{_label(ids[0], self.vertex_names.get(cycle[0]))} is on a dependency cycle"
            f" {shown}{more} -> {ids[0]} (each lists the next among its data_deps or"
            f" ctrl_deps, both of which ASTRA-sim waits on), in a strongly connected region"
            f" of {region} nodes"
        )
        return Problem("cycle", ids[0], message, ids)


def validate_nodes(
    nodes: Iterable[Any], options: ValidationOptions = DEFAULT_OPTIONS
) -> ValidationReport:
    """Validate ``Node`` messages (consumed once, in order); see the module docstring."""
    builder = _GraphBuilder(options)
    for node in nodes:
        builder.add(node)
    return builder.finish()


def validate_et(path: PathLike, options: ValidationOptions = DEFAULT_OPTIONS) -> ValidationReport:
    """Validate the nodes of a ``.et`` file (plain or gzip), streaming it with
    :class:`EtReader`. A malformed file raises :class:`~chakra.errors.EtFormatError`."""
    with EtReader(path) as reader:
        return validate_nodes(reader, options)
