"""Microbenchmark Chakra ETs: one small graph per family and NPU (reference §7.2).

Every file gets its own ids starting at 0 (the reference used one global counter across all
files). The files of a run are written into ``output_dir`` together or not at all.

By default only the families ASTRA-sim can run to completion are written (checked in the
tests against the real ASTRA-sim); ``all_families`` adds the reference's three that it
cannot: a METADATA node (any METADATA node aborts ASTRA-sim's statistics), BARRIER (an
unsupported collective there) and a receive with no sender (it never completes). Send and
receive nodes form a ring: NPU ``r`` sends to ``r + 1`` and receives from ``r - 1`` (mod the
NPU count), naming both ends in ``comm_src``/``comm_dst`` with tag :data:`P2P_TAG`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from chakra.errors import FileAccessError, GeneratorError, PathLike
from chakra.et import CollectiveCommType, GlobalMetadata, Node, NodeType, add_attr, write_et
from chakra.fileio import AtomicGroup
from chakra.tools.option_values import (
    GENERATOR_COMM_SIZE,
    GENERATOR_NUM_NPUS,
    GENERATOR_RUNTIME_US,
    GENERATOR_TENSOR_SIZE,
)

#: ``GlobalMetadata.version`` of every generated file.
GENERATOR_VERSION = "1.0.0"

#: The largest size or duration: they go into 64-bit fields (``comm_size`` is an int64).
INT64_MAX = 2**63 - 1

#: ``comm_tag`` of every send and receive node.
P2P_TAG = 0

#: Collective families, in the order the reference writes them, and their ``comm_size``
#: rule (BARRIER carries 0).
COLLECTIVES = (
    CollectiveCommType.ALL_REDUCE,
    CollectiveCommType.ALL_TO_ALL,
    CollectiveCommType.ALL_GATHER,
    CollectiveCommType.REDUCE_SCATTER,
    CollectiveCommType.BROADCAST,
    CollectiveCommType.BARRIER,
)


@dataclass(frozen=True)
class GeneratorOptions:
    """``runtime_us``: duration of compute nodes; ``tensor_size`` bytes of memory and
    send/recv nodes; ``comm_size`` bytes of collectives; ``all_families`` also writes the
    families ASTRA-sim cannot run (see the module docstring)."""

    num_npus: int = GENERATOR_NUM_NPUS
    runtime_us: int = GENERATOR_RUNTIME_US
    tensor_size: int = GENERATOR_TENSOR_SIZE
    comm_size: int = GENERATOR_COMM_SIZE
    all_families: bool = False


#: Builds the nodes of one family for one NPU: (options, npu) -> nodes.
Builder = Callable[[GeneratorOptions, int], list[Any]]


@dataclass(frozen=True)
class Family:
    """One kind of microbenchmark graph, written as ``<name>.<npu>.et``.

    ``astra_sim_cannot_run`` says why ASTRA-sim cannot run it to completion ("" when it can);
    such a family is written only with ``GeneratorOptions.all_families``.
    """

    name: str
    build: Builder
    astra_sim_cannot_run: str = ""


def _metadata_node(options: GeneratorOptions, npu: int) -> list[Any]:
    node = Node(id=0, name="METADATA_NODE", type=NodeType.METADATA_NODE)
    samples: list[tuple[str, Any, Any]] = [
        ("double", 1.2345, [1.2345, 2.3456]),
        ("float", 1.2345, [1.2345, 2.3456]),
        ("int32", 12345, [12345, 67890]),
        ("int64", 9876543210, [9876543210, 1234567890]),
        ("uint32", 12345, [12345, 67890]),
        ("uint64", 9876543210, [9876543210, 1234567890]),
        ("sint32", -12345, [-12345, 67890]),
        ("sint64", -9876543210, [-9876543210, 1234567890]),
        ("fixed32", 12345, [12345, 67890]),
        ("fixed64", 9876543210, [9876543210, 1234567890]),
        ("sfixed32", -12345, [-12345, 67890]),
        ("sfixed64", -9876543210, [-9876543210, 1234567890]),
        ("bool", True, [True, False, True, False]),
        ("string", "12345", [str(12345 + i) for i in range(10)]),
        ("bytes", b"12345", [b"12345", b"67890"]),
    ]
    documented = {"double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
                  "bool", "string"}  # fmt: skip
    for kind, scalar, values in samples:
        add_attr(node, kind, scalar, f"{kind}_val")
        if kind in documented:
            node.attr[-1].doc_string = kind
        add_attr(node, f"{kind}_list", values, f"{kind}_list")
    return [node]


def _node(node_id: int, node_type: NodeType, name: str) -> Any:
    node = Node(id=node_id, name=name, type=node_type)
    add_attr(node, "is_cpu_op", False)
    return node


def _memory_node(node_type: NodeType, size: int) -> list[Any]:
    node = _node(0, node_type, node_type.name)
    add_attr(node, "tensor_size", size, "uint64_val")
    return [node]


def _p2p_node(node_id: int, node_type: NodeType, size: int, src: int, dst: int) -> Any:
    """A send or receive of ``size`` bytes from NPU ``src`` to NPU ``dst``."""
    node = _node(node_id, node_type, node_type.name)
    add_attr(node, "tensor_size", size, "uint64_val")
    # Not in the reference, which left send/recv without what the feeder reads.
    add_attr(node, "comm_size", size, "int64_val")
    add_attr(node, "comm_src", src)
    add_attr(node, "comm_dst", dst)
    add_attr(node, "comm_tag", P2P_TAG)
    return node


def _neighbours(options: GeneratorOptions, npu: int) -> tuple[int, int]:
    """(previous, next) NPU of ``npu`` on the ring of all NPUs."""
    return (npu - 1) % options.num_npus, (npu + 1) % options.num_npus


def _send(options: GeneratorOptions, npu: int) -> list[Any]:
    _, after = _neighbours(options, npu)
    return [_p2p_node(0, NodeType.COMM_SEND_NODE, options.tensor_size, npu, after)]


def _recv(options: GeneratorOptions, npu: int) -> list[Any]:
    before, _ = _neighbours(options, npu)
    return [_p2p_node(0, NodeType.COMM_RECV_NODE, options.tensor_size, before, npu)]


def _send_recv(options: GeneratorOptions, npu: int) -> list[Any]:
    """Send to the next NPU and, independently, receive from the previous one."""
    before, after = _neighbours(options, npu)
    size = options.tensor_size
    return [
        _p2p_node(0, NodeType.COMM_SEND_NODE, size, npu, after),
        _p2p_node(1, NodeType.COMM_RECV_NODE, size, before, npu),
    ]


def _comp_nodes(count: int, runtime_us: int, dependent: bool) -> list[Any]:
    nodes = []
    for node_id in range(count):
        node = _node(node_id, NodeType.COMP_NODE, "COMP_NODE")
        node.duration_micros = runtime_us
        if dependent and node_id > 0:
            node.data_deps.append(node_id - 1)
        nodes.append(node)
    return nodes


def _collective(comm_type: CollectiveCommType, size: int) -> list[Any]:
    node = _node(0, NodeType.COMM_COLL_NODE, comm_type.name)
    add_attr(node, "comm_type", int(comm_type), "int64_val")
    add_attr(node, "comm_size", 0 if comm_type is CollectiveCommType.BARRIER else size, "int64_val")
    return [node]


def _collective_family(comm_type: CollectiveCommType) -> Family:
    why = "ASTRA-sim does not support BARRIER" if comm_type is CollectiveCommType.BARRIER else ""
    return Family(comm_type.name, lambda o, _: _collective(comm_type, o.comm_size), why)


#: Every family, in the reference's order, then the ones added here.
FAMILIES: tuple[Family, ...] = (
    Family("one_metadata_node_all_types", _metadata_node,
           "any METADATA node aborts ASTRA-sim's statistics"),
    Family("one_remote_mem_load_node",
           lambda o, _: _memory_node(NodeType.MEM_LOAD_NODE, o.tensor_size)),
    Family("one_remote_mem_store_node",
           lambda o, _: _memory_node(NodeType.MEM_STORE_NODE, o.tensor_size)),
    Family("one_comp_node", lambda o, _: _comp_nodes(1, o.runtime_us, False)),
    Family("two_comp_nodes_independent", lambda o, _: _comp_nodes(2, o.runtime_us, False)),
    Family("two_comp_nodes_dependent", lambda o, _: _comp_nodes(2, o.runtime_us, True)),
    *(_collective_family(comm_type) for comm_type in COLLECTIVES),
    Family("one_comm_send_node", _send),
    Family("one_comm_recv_node", _recv, "a receive with no sender never completes"),
    Family("two_comm_nodes_send_recv", _send_recv),
)  # fmt: skip


def families(options: GeneratorOptions) -> Iterator[Family]:
    """The families ``options`` asks for, in :data:`FAMILIES` order."""
    return (f for f in FAMILIES if options.all_families or not f.astra_sim_cannot_run)


def generate(options: GeneratorOptions, output_dir: PathLike = ".") -> list[Path]:
    """Write every family for every NPU as ``<output_dir>/<family>.<npu>.et``; return the
    paths written. Ids start at 0 in each file. O(num_npus * families). The files appear
    together or not at all (:class:`~chakra.fileio.AtomicGroup`): a failure on any file
    leaves none of them."""
    if options.num_npus < 1:
        raise GeneratorError(f"--num_npus must be at least 1, not {options.num_npus}")
    for name in ("runtime_us", "tensor_size", "comm_size"):
        value = getattr(options, name)
        if not 0 <= value <= INT64_MAX:
            raise GeneratorError(f"{name} must be from 0 to {INT64_MAX} (int64), not {value}")
    folder = Path(output_dir)
    if not folder.is_dir():
        raise FileAccessError(f"output folder {folder} does not exist")
    written = []
    with AtomicGroup() as group:
        for family in families(options):
            for npu in range(options.num_npus):
                path = folder / f"{family.name}.{npu}.et"
                metadata = GlobalMetadata(version=GENERATOR_VERSION)
                write_et(path, metadata, family.build(options, npu), group)
                written.append(path)
    return written
