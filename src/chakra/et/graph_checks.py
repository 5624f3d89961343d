"""Check a Chakra ET graph: unique ids, resolvable deps, no dependency cycle, feeder
attributes, and (by default) what the shipped ASTRA-sim requires (:mod:`chakra.et.astra_sim`).

The rules are those a consumer relies on: ASTRA-sim's C++ feeder reads each recognised
attribute from one fixed oneof member (reference §2.5), so a value stored under another
integer kind reads back as 0; it resolves ``data_deps`` and ``ctrl_deps`` by id, waits on
both, and silently never issues the nodes behind a cycle over the two together. A self dep
is reported as ``self_dep`` only, not also as a cycle; a cycle is reported once per strongly
connected region of the dependency graph (ids are its vertices, so a duplicate id merges
the deps of its nodes). :func:`validate_nodes` returns every problem found as a
:class:`ValidationReport` and raises nothing for a bad graph.

The rules come in two parts that ``chakra_sim`` shares too (it checks what it loads):
:func:`node_problems`, what one node shows alone (its type, attributes and values), and
the graph-wide ones of :mod:`chakra.et.dep_checks` (repeated ids, dangling and self deps,
cycles), over flat arrays a reader fills as it streams the nodes. :class:`GraphChecker`
does both for a stream, keeping per node only integers (id, deps, measured start) and its
name. Time is O(nodes + deps + attributes); no step recurses, so million-node chains and
cycles are fine.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

import msgspec
import numpy as np

from chakra.errors import PathLike
from chakra.et.astra_sim import astra_sim_faults
from chakra.et.attributes import ATTRIBUTE_KINDS, INTEGER_KINDS, attr_value
from chakra.et.dep_checks import DepArrays, DepFindings, dependency_problems
from chakra.et.problems import SLOT_NODE, PlacedProblem, Problem
from chakra.et.problems import node_label as _label
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

#: Attributes each node type must carry. ``is_cpu_op`` is optional: absent, it reads as false
#: (a GPU node), as ASTRA-sim's feeder reads it (reference §2.5, at HEAD) and as ASTRA-sim's
#: own examples write it (custom collectives: no ``is_cpu_op`` on any node).
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
#: ids and times must be below 2^63: chakra_sim keeps them in int64 arrays
_LIMIT = 1 << 63
#: the largest id chakra_sim keeps, and how an ``out_of_range`` problem says an id is past it
MAX_ID = _LIMIT - 1
ID_OUT_OF_RANGE = "has an id of 2^63 or more"
#: chakra_sim keeps durations as float µs and refuses 2^63 ns or more: the same float test
#: here (``not float(duration_micros) < MAX_US``, ``not 0 <= duration_ns / 1000.0 < MAX_US``),
#: so that the two agree at the boundary (2^63 - 1 ns rounds up to it)
MAX_US = float(_LIMIT) / 1000.0
_MAX_US = MAX_US
#: attributes chakra_sim reads as integers, of any integer kind (not a list, string, bool)
SIM_INT_ATTRS = ("tid", "device", "duration_ns")
_SIM_INT_ATTRS = SIM_INT_ATTRS


class ValidationOptions(msgspec.Struct, frozen=True):
    """``require_streams``: GPU nodes (``is_cpu_op`` false or absent, COMP/COMM types) must
    carry an int64 ``stream``. ``check_ctrl_deps``: report ``ctrl_deps`` naming no node.
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


def _attr_problems(node: Any, attrs: list[Any], present: Mapping[str, Any]) -> list[Problem]:
    """Missing required attributes, wrong oneof members and out-of-range values."""
    problems = []
    node_type = node.type
    for name in REQUIRED_ATTRS.get(node_type, ()):
        if name not in present:
            type_name = NodeType(node_type).name if node_type in _VALID_TYPES else node_type
            message = f"{_label(node.id, node.name)} of type {type_name} has no {name} attribute"
            problems.append(Problem("missing_attr", node.id, message))
    for attr in attrs:  # every copy of a name: readers differ on which one counts
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


def _range_problems(node: Any, attrs: list[Any]) -> list[Problem]:
    """What chakra_sim (int64 arrays) would refuse: an id or a duration of 2^63 (ns) or
    more, a negative duration_ns, and a tid, device or duration_ns not an integer."""
    problems: list[Problem] = []
    last = {attr.name: attr for attr in attrs if attr.name in _SIM_INT_ATTRS}
    if node.id < _LIMIT and float(node.duration_micros) < _MAX_US and not last:
        return problems
    label = _label(node.id, node.name)
    if node.id >= _LIMIT:
        message = f"{label} {ID_OUT_OF_RANGE} (chakra_sim keeps ids as int64)"
        problems.append(Problem("out_of_range", node.id, message))
    if not float(node.duration_micros) < _MAX_US:
        message = f"{label} has a duration_micros of 2^63 ns or more"
        problems.append(Problem("out_of_range", node.id, message))
    for name, attr in last.items():  # the last one counts, as for the readers
        kind = attr.WhichOneof("value")
        if kind is not None and kind not in INTEGER_KINDS:
            message = f"{label} holds {name} as {kind}, not an integer"
            problems.append(Problem("wrong_attr_kind", node.id, message))
        elif (name == "duration_ns" and kind is not None
              and not 0 <= attr_value(attr) / 1000.0 < _MAX_US):  # fmt: skip
            message = (f"{label} has duration_ns {attr_value(attr)}: negative, or 2^63 ns or"
                       " more once in µs (what chakra_sim refuses)")  # fmt: skip
            problems.append(Problem("out_of_range", node.id, message))
    return problems


def node_problems(node: Any, options: ValidationOptions = DEFAULT_OPTIONS) -> list[Problem]:
    """Problems visible from one node alone: its type, attributes, values and stream (its
    self deps are graph-wide: :mod:`chakra.et.dep_checks`)."""
    attrs = node.attr[:]  # a list made in C: faster to walk than the container, twice
    present: dict[str, Any] = {}
    for attr in attrs:
        if attr.name in FEEDER_ATTR_KINDS and attr.name not in present:
            present[attr.name] = attr
    problems = _attr_problems(node, attrs, present)
    problems.extend(_range_problems(node, attrs))
    if node.type not in _VALID_TYPES:
        message = f"{_label(node.id, node.name)} has type {node.type}, not a valid NodeType"
        problems.append(Problem("invalid_type", node.id, message))
    if options.astra_sim or options.comm_groups is not None:
        values = {name: attr_value(attr) for name, attr in present.items()}
        for kind, what in astra_sim_faults(node, values, options.astra_sim, options.comm_groups):
            problems.append(Problem(kind, node.id, f"{_label(node.id, node.name)} {what}"))
    if options.require_streams and _lacks_stream(node, attrs, present):
        message = f"{_label(node.id, node.name)} runs on the GPU but has no stream attribute"
        problems.append(Problem("missing_stream", node.id, message))
    return problems


def _lacks_stream(node: Any, attrs: list[Any], present: Mapping[str, Any]) -> bool:
    """A GPU node (``is_cpu_op`` false or absent, COMP or COMM type) with no ``stream``, but
    for a communication node marked ``runs_on_host``."""
    cpu = present.get("is_cpu_op")
    is_gpu = cpu is None or (cpu.WhichOneof("value") == "bool_val" and not cpu.bool_val)
    on_host = node.type in _COMM_NODE_TYPES and any(a.name == "runs_on_host" for a in attrs)
    return is_gpu and node.type in _GPU_TYPES and "stream" not in present and not on_host


class GraphChecker:
    """Checks a node stream as it goes: :meth:`add` each node (its own problems now, its
    id, deps and name kept for the graph-wide checks), then :meth:`finish`."""

    def __init__(self, options: ValidationOptions = DEFAULT_OPTIONS) -> None:
        self.options = options
        self.local: list[PlacedProblem] = []
        self.ids, self.names = array("Q"), []
        self.data, self.data_start = array("Q"), array("q", [0])
        self.ctrl, self.ctrl_owner = array("Q"), array("q")
        self.starts = array("d")

    def add(self, node: Any) -> None:
        position = len(self.names)
        self.ids.append(node.id)
        self.names.append(node.name)
        self.data.fromlist(node.data_deps[:])
        self.data_start.append(len(self.data))
        ctrl = node.ctrl_deps[:]
        if ctrl:
            self.ctrl.fromlist(ctrl)
            self.ctrl_owner.fromlist([position] * len(ctrl))
        start = node.start_time_micros
        self.starts.append(float(start) if start else -1.0)
        for problem in node_problems(node, self.options):
            self.local.append(PlacedProblem(position, SLOT_NODE, problem))

    def finish(self) -> ValidationReport:
        deps = DepArrays(
            _uint64(self.ids), self.names, _uint64(self.data), np.asarray(self.data_start),
            _uint64(self.ctrl), np.asarray(self.ctrl_owner), np.asarray(self.starts),
        )  # fmt: skip
        found = dependency_problems(deps, self.options.check_ctrl_deps)
        return report_of(len(self.names), self.local, found)


def _uint64(values: array) -> np.ndarray:
    return np.frombuffer(values, dtype=np.uint64) if len(values) else np.zeros(0, np.uint64)


def report_of(nodes: int, local: Sequence[PlacedProblem], found: DepFindings) -> ValidationReport:
    """The report of a stream of ``nodes`` nodes: each node's problems in stream order (a
    repeated id, then ``local``, its own, then its self deps), then ``found``'s dangling
    deps and cycles."""
    placed = sorted((*local, *found.placed), key=lambda p: (p.position, p.slot))
    return ValidationReport(nodes, (*(p.problem for p in placed), *found.tail))


def validate_nodes(
    nodes: Iterable[Any], options: ValidationOptions = DEFAULT_OPTIONS
) -> ValidationReport:
    """Validate ``Node`` messages (consumed once, in order); see the module docstring."""
    checker = GraphChecker(options)
    for node in nodes:
        checker.add(node)
    return checker.finish()


def validate_et(path: PathLike, options: ValidationOptions = DEFAULT_OPTIONS) -> ValidationReport:
    """Validate the nodes of a ``.et`` file (plain or gzip), streaming it with
    :class:`EtReader`. A malformed file raises :class:`~chakra.errors.EtFormatError`."""
    with EtReader(path) as reader:
        return validate_nodes(reader, options)
