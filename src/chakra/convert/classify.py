"""Chakra node type, ``is_cpu_op`` and communication attributes of each ET+ node."""

from __future__ import annotations

import ast
import json
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any, Optional

import msgspec

from chakra.convert.astra_sim import GroupIds
from chakra.convert.collectives import (
    PointToPoint,
    dtype_bytes,
    kernel_kind,
    kind_from_name,
)
from chakra.convert.et_plus_input import EtPlusNode
from chakra.et.astra_sim import INT32_MAX, STAND_INS
from chakra.et.schema import CollectiveCommType, NodeType
from chakra.ingest.host_comms import RANK_LIMIT, group_problem, table_problem
from chakra.ingest.host_json import NULL_JSON
from chakra.ingest.host_model import OpArgs

PROCESS_GROUP_INIT = "process_group:init"
HOST_COMM_PREFIXES = ("c10d::", "gloo:")


class Classified(msgspec.Struct, frozen=True, gc=False):
    """What a node becomes. ``comm_type`` for collectives; ``comm_size`` in bytes (0:
    unknown); ``type_guessed``: nothing named the communication, ``comm_type`` is a guess
    (peers may know it: :mod:`chakra.ranks`); ``pg_size``: members of the group, if known."""

    node_type: NodeType
    is_cpu_op: bool
    comm_type: Optional[CollectiveCommType] = None
    comm_size: Optional[int] = None
    pg_name: Optional[str] = None
    pg_ranks: Optional[tuple[int, ...]] = None
    process_groups: Optional[str] = None  # the process_group:init node: its table as JSON
    type_guessed: bool = False
    pg_size: Optional[int] = None
    #: what ASTRA-sim cannot take as is (convert/astra_sim.py): the type replaced by a
    #: stand-in, the PyTorch group name replaced by a group id
    comm_type_original: Optional[CollectiveCommType] = None
    pg_name_original: Optional[str] = None
    #: send/recv: the global ranks sending and receiving, and the pair's message number
    comm_src: Optional[int] = None
    comm_dst: Optional[int] = None
    comm_tag: Optional[int] = None
    #: the process_group:init node as ASTRA-sim's METADATA form (``--process-group-metadata``)
    metadata_values: Optional[str] = None


def _is_comm_kernel(node: EtPlusNode) -> bool:
    name = node.name.lower()
    return node.collective is not None or "nccl" in name or "rccl" in name


def reads_payload(node: EtPlusNode) -> bool:
    """Whether classifying some node may read this node's inputs or attrs (the node is a
    communication op, describes one, or holds the process group table): the converter's
    outline of a large trace keeps these nodes whole (see ``load_et_plus``)."""
    name = node.name
    return (
        name == "record_param_comms"
        or PROCESS_GROUP_INIT in name
        or name.startswith(HOST_COMM_PREFIXES)
        or (node.is_gpu and _is_comm_kernel(node))
    )


def _ranks(value: Any) -> Optional[tuple[int, ...]]:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return None
    if isinstance(value, (list, tuple)) and group_problem(value, None) is None:
        return tuple(value)
    return None


def _pg_size(value: Any) -> Optional[int]:
    return value if type(value) is int and 0 < value < RANK_LIMIT else None


def _tensor_bytes(raw: msgspec.Raw) -> int:
    if bytes(memoryview(raw)[:1]) != b"{":
        return 0
    return OpArgs(raw).tensor_bytes()


def _shape_bytes(raw: msgspec.Raw) -> int:
    """Bytes of the inputs from their shapes and element types alone (a host side made from
    a Kineto trace recorded with ``record_shapes``: ``[[1732]]`` of ``float`` is 6,928
    bytes; a ``[]`` shape of a known type is one element); 0 without both."""
    if bytes(memoryview(raw)[:1]) != b"{":
        return 0
    args = OpArgs(raw)
    shapes, types = args.shapes, args.types
    if not (isinstance(shapes, list) and isinstance(types, list)):  # a mangled file
        return 0
    total = 0
    for shape, type_name in zip(shapes, types):
        width = dtype_bytes(type_name) if isinstance(type_name, str) else None
        if width and isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape):
            total += width * math.prod(shape)
    return total if 0 < total < RANK_LIMIT else 0


#: The kinds of nearly every node, one instance each: ``kind in COMMON_KINDS`` finds them
#: by identity, where hashing a kind hashes all its fields.
GPU_COMPUTE = Classified(NodeType.COMP_NODE, False)
CPU_COMPUTE = Classified(NodeType.COMP_NODE, True)
COMMON_KINDS = (CPU_COMPUTE, GPU_COMPUTE)


class Classifier:
    """Classifies nodes; ``by_id`` gives access to ancestors for host metadata. Counts what
    it had to guess in ``guesses``."""

    def __init__(
        self, by_id: Mapping[int, EtPlusNode], rank: Optional[int] = None, metadata: bool = False
    ) -> None:
        self.by_id = by_id
        self.rank = rank
        self.metadata = metadata
        self.group_ids = GroupIds()
        self.p2p_count: Counter[tuple[str, int, int]] = Counter()
        self.notes: Counter[str] = Counter()  # what was rewritten for ASTRA-sim, not guessed
        self.guesses: Counter[str] = Counter()
        nodes = by_id.values()
        self.children: dict[int, list[EtPlusNode]] = {}
        for node in nodes:
            if node.ctrl_deps is not None and node.ctrl_deps != node.id:
                self.children.setdefault(node.ctrl_deps, []).append(node)
        self.host_collectives_are_gloo = any(n.name.startswith("gloo:") for n in nodes)
        self.gpu_collectives = any(n.is_gpu and _is_comm_kernel(n) for n in nodes)
        init = next((n for n in nodes if PROCESS_GROUP_INIT in n.name), None)
        table = [] if init is None else process_groups(init)
        if init is not None and not table:
            self.guesses[
                "process_group:init table empty, unreadable or out of range: process groups unknown"
            ] += 1
        #: the world group's name: the table's group listing every rank (PyTorch writes
        #: ``ranks: []`` for the default group), else "0"
        self.world_group = next(
            (
                str(g.get("pg_name"))
                for g in table
                if isinstance(g, dict) and not g.get("ranks") and g.get("pg_name") is not None
            ),
            "0",
        )
        #: each group's global ranks from the table (``ranks: []``: the first group_size)
        self.group_ranks: dict[str, tuple[int, ...]] = {}
        for group in table:
            if isinstance(group, dict) and group.get("pg_name") is not None:
                ranks = group.get("ranks") or range(int(group.get("group_size") or 0))
                if ranks and all(isinstance(r, int) for r in ranks):
                    self.group_ranks[str(group["pg_name"])] = tuple(ranks)

    def ancestors(self, node: EtPlusNode, depth: int = 4) -> list[EtPlusNode]:
        chain, current = [], node
        for _ in range(depth):
            parent = self.by_id.get(current.ctrl_deps) if current.ctrl_deps is not None else None
            if parent is None or parent is current:
                break
            chain.append(parent)
            current = parent
        return chain

    def classify(self, node: EtPlusNode) -> Classified:
        if PROCESS_GROUP_INIT in node.name:
            groups = process_groups(node)
            table = json.dumps(groups, sort_keys=True)
            if not self.metadata:  # a METADATA node aborts the shipped ASTRA-sim
                return Classified(NodeType.COMP_NODE, True, process_groups=table)
            return Classified(
                NodeType.METADATA_NODE,
                True,
                process_groups=table,
                metadata_values=self._astra_table(groups),
            )
        if node.is_gpu:
            if _is_comm_kernel(node):
                return self._comm(node, is_cpu_op=False)
            return GPU_COMPUTE
        if self.is_host_collective(node):
            return self._comm(node, is_cpu_op=True)
        return CPU_COMPUTE

    def is_host_collective(self, node: EtPlusNode) -> bool:
        """Collectives of CPU backends: the ``gloo:*`` ops if the trace has them (a job can
        use gloo beside NCCL, e.g. for CPU tensors: gloo still communicates on the host;
        there, only the timed ones, whose place on their thread is known);
        else, when no GPU kernel communicates, the ``c10d::*`` ones. With NCCL, the kernels
        are the communication and the ``c10d::*`` ops only launch them."""
        if self.gpu_collectives and (not self.host_collectives_are_gloo or node.ts is None):
            return False  # beside NCCL, an untimed gloo op (not linked) would meet blind
        prefix = "gloo:" if self.host_collectives_are_gloo else "c10d::"
        return node.name.startswith(prefix) and kind_from_name(node.name) is not None

    def _record_param_comms(self, node: EtPlusNode) -> Optional[EtPlusNode]:
        """The ``record_param_comms`` op describing a communication: the node itself, an
        ancestor (GPU kernels), or a child (host collectives such as ``c10d::*``)."""
        candidates = [node, *self.ancestors(node), *self.children.get(node.id, ())]
        return next((n for n in candidates if n.name == "record_param_comms"), None)

    def _kind(self, node: EtPlusNode, comms: Optional[EtPlusNode]) -> Optional[object]:
        names = [comms.attr("collective_name") if comms else None]
        names += [
            a.name
            for a in [node, *self.ancestors(node)]
            if a.name.startswith(("nccl:", "c10d::", "gloo:"))
        ]
        names.append(node.collective.name if node.collective else None)
        for name in names:
            kind = kind_from_name(name)
            if kind is not None:
                return kind
        return kernel_kind(node.name) if node.is_gpu else None

    def _comm(self, node: EtPlusNode, is_cpu_op: bool) -> Classified:
        comms = self._record_param_comms(node)
        kind = self._kind(node, comms)
        guessed = kind is None
        if kind is None:
            self.guesses[f"untyped communication op {node.name[:60]!r}: typed ALL_REDUCE"] += 1
            kind = CollectiveCommType.ALL_REDUCE
        size = self._size(node, comms)
        if size == 0:
            self.guesses["communication ops of unknown size: comm_size 0"] += 1
        pg_name = (
            (comms.attr("pg_name") if comms else None)
            or node.pg_name
            or (node.collective.pg_name if node.collective else None)
        )
        if pg_name is None and is_cpu_op:  # gloo records no group: it ran in the world's
            self.guesses[
                f"host collectives in no known process group: world group {self.world_group!r}"
            ] += 1
            pg_name = self.world_group
        elif pg_name is None:
            self.guesses["communication ops in no known process group: no pg_name"] += 1
        ranks = _ranks(node.collective.pg_ranks) if node.collective else None
        pg_size = (comms.attr("pg_size") if comms else None) or (
            node.collective.group_size if node.collective else None
        )
        original = None if pg_name is None else str(pg_name)
        if ranks is None and original is not None:
            ranks = self.group_ranks.get(original)
        group = None if original is None else self.group_ids.of(original)
        if isinstance(kind, PointToPoint):
            return self._point_to_point(kind, is_cpu_op, size, group, original, ranks, pg_size)
        stand_in = STAND_INS.get(kind)
        if stand_in is not None:
            self.notes[
                f"{kind.name} written as {stand_in.name} (ASTRA-sim has no "
                f"{kind.name}; comm_type_original keeps it)"
            ] += 1
            if kind is CollectiveCommType.BARRIER:
                size = 0
        return Classified(
            NodeType.COMM_COLL_NODE,
            is_cpu_op,
            kind if stand_in is None else stand_in,
            size,
            group,
            ranks,
            type_guessed=guessed,
            pg_size=_pg_size(pg_size),
            comm_type_original=None if stand_in is None else kind,
            pg_name_original=original,
        )

    def _point_to_point(self, kind: PointToPoint, is_cpu_op: bool, size: int,
                        group: Optional[str], original: Optional[str],
                        ranks: Optional[tuple[int, ...]], pg_size: Any) -> Classified:  # fmt: skip
        """A send or recv, with the global ranks at both ends when the group is a pair that
        holds this rank, and a tag numbering the pair's messages in each direction."""
        send = kind is PointToPoint.SEND
        src = dst = tag = None
        peer = None
        if ranks is not None and len(ranks) == 2 and self.rank in ranks:
            peer = ranks[1] if ranks[0] == self.rank else ranks[0]
        if peer is not None and peer <= INT32_MAX:  # comm_src/comm_dst are int32 in a .et
            src, dst = (self.rank, peer) if send else (peer, self.rank)
            tag = self.p2p_count[(group or "", src, dst)]
            self.p2p_count[(group or "", src, dst)] += 1
        elif peer is not None:
            self.guesses[
                f"send/recv ops whose peer rank is above {INT32_MAX:,} (a .et's comm_src and "
                "comm_dst are int32): no comm_src/comm_dst"
            ] += 1
        else:
            self.guesses[
                "send/recv ops whose peer rank is unknown here: no comm_src/comm_dst "
                "(chakra_pipeline fills them from the other ranks)"
            ] += 1
        return Classified(
            NodeType.COMM_SEND_NODE if send else NodeType.COMM_RECV_NODE,
            is_cpu_op,
            None,
            size,
            group,
            ranks,
            pg_size=_pg_size(pg_size),
            pg_name_original=original,
            comm_src=src,
            comm_dst=dst,
            comm_tag=tag,
        )

    def _astra_table(self, groups: list[dict[str, Any]]) -> str:
        """The group table in the form ASTRA-sim parses from a METADATA node's input value
        (a Python literal holding one JSON string), with its group ids; a group listing no
        ranks (PyTorch's default group) lists ``range(group_size)``."""
        table = []
        for group in groups:
            if not isinstance(group, dict) or group.get("pg_name") is None:
                continue
            ranks = group.get("ranks") or list(range(int(group.get("group_size") or 0)))
            table.append(
                {
                    "pg_name": self.group_ids.of(str(group["pg_name"])),
                    "ranks": ranks,
                    "pg_name_original": str(group["pg_name"]),
                }
            )
        return repr([json.dumps(table)])

    def _size(self, node: EtPlusNode, comms: Optional[EtPlusNode]) -> int:
        """Bytes of the input message: element count x dtype size from the host metadata,
        else from Kineto's, else the bytes of the tensor inputs (nested lists too) of the
        ``record_param_comms`` op, else of the node itself."""
        sources = []
        if comms is not None:
            sources.append((comms.attr("in_msg_nelems"), comms.attr("dtype")))
        if node.collective is not None:
            sources.append((node.collective.in_msg_nelems, node.collective.dtype))
        for nelems, dtype in sources:
            width = dtype_bytes(dtype)
            if type(nelems) is int and width and 0 <= nelems * width < RANK_LIMIT:
                return nelems * width
        for measure in (_tensor_bytes, _shape_bytes):
            for raw in (comms.inputs if comms else NULL_JSON, node.inputs):
                size = measure(raw)
                if size:
                    return size
        return 0


def _first_is_str(values: Any) -> bool:
    return isinstance(values, list) and bool(values) and isinstance(values[0], str)


def _is_name(value: Any) -> bool:
    """A group name: an int, or a string that UTF-8 can encode (json.loads lets a lone
    surrogate such as ``"\\ud800"`` through; no file can hold it)."""
    if isinstance(value, int):
        return True
    if not isinstance(value, str):
        return False
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def process_groups(node: EtPlusNode) -> list[dict[str, Any]]:
    """The table in a ``## process_group:init ##`` node's inputs (empty if unreadable: not
    JSON, numbers beyond the int-string limit, a group whose ranks or size are out of
    range, or groups holding too many ranks in all, see
    :func:`~chakra.ingest.host_comms.group_problem` and ``table_problem``)."""
    if bytes(memoryview(node.inputs)[:1]) != b"{":
        return []
    values = OpArgs(node.inputs).values
    try:
        table = json.loads(values[0]) if _first_is_str(values) else []
    except (ValueError, RecursionError):  # JSONDecodeError, or a 5,000-digit number
        return []
    if not isinstance(table, list):
        return []
    for group in table:
        if not isinstance(group, dict) or not _is_name(group.get("pg_name", "")):
            return []
        if group_problem(group.get("ranks"), group.get("group_size")) is not None:
            return []
    counts = (len(g.get("ranks") or ()) or (g.get("group_size") or 0) for g in table)
    return [] if table_problem(counts) is not None else table
