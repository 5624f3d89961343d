"""Microbenchmark Chakra ETs: one small graph per family and NPU (reference §7.2).

Every file gets its own ids starting at 0 (the reference used one global counter across all
files). Files are written atomically into ``output_dir``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from chakra.errors import ChakraError, FileAccessError, PathLike
from chakra.et import CollectiveCommType, GlobalMetadata, Node, NodeType, add_attr, write_et

#: ``GlobalMetadata.version`` of every generated file.
GENERATOR_VERSION = "1.0.0"

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


class GeneratorError(ChakraError):
    """Generator options out of range."""


@dataclass(frozen=True)
class GeneratorOptions:
    """``runtime_us``: duration of compute nodes; ``tensor_size`` bytes of memory and
    send/recv nodes; ``comm_size`` bytes of collectives."""

    num_npus: int = 64
    runtime_us: int = 5
    tensor_size: int = 1024
    comm_size: int = 65536


def _metadata_node() -> list[Any]:
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


def _tensor_node(node_type: NodeType, size: int) -> list[Any]:
    node = _node(0, node_type, node_type.name)
    add_attr(node, "tensor_size", size, "uint64_val")
    if node_type in (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE):
        # Not in the reference, which left send/recv without the size the feeder reads.
        add_attr(node, "comm_size", size, "int64_val")
    return [node]


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


def families(options: GeneratorOptions) -> Iterator[tuple[str, Callable[[], list[Any]]]]:
    """``(file stem, node builder)`` for each family, in the reference's order."""
    yield "one_metadata_node_all_types", _metadata_node
    yield (
        "one_remote_mem_load_node",
        lambda: _tensor_node(NodeType.MEM_LOAD_NODE, options.tensor_size),
    )
    yield (
        "one_remote_mem_store_node",
        lambda: _tensor_node(NodeType.MEM_STORE_NODE, options.tensor_size),
    )
    yield "one_comp_node", lambda: _comp_nodes(1, options.runtime_us, False)
    yield "two_comp_nodes_independent", lambda: _comp_nodes(2, options.runtime_us, False)
    yield "two_comp_nodes_dependent", lambda: _comp_nodes(2, options.runtime_us, True)
    for comm_type in COLLECTIVES:
        yield comm_type.name, lambda c=comm_type: _collective(c, options.comm_size)
    yield "one_comm_send_node", lambda: _tensor_node(NodeType.COMM_SEND_NODE, options.tensor_size)
    yield "one_comm_recv_node", lambda: _tensor_node(NodeType.COMM_RECV_NODE, options.tensor_size)


def generate(options: GeneratorOptions, output_dir: PathLike = ".") -> list[Path]:
    """Write every family for every NPU as ``<output_dir>/<family>.<npu>.et``; return the
    paths written. Ids start at 0 in each file. O(num_npus * families)."""
    if options.num_npus < 1:
        raise GeneratorError(f"--num_npus must be at least 1, not {options.num_npus}")
    for name in ("runtime_us", "tensor_size", "comm_size"):
        if getattr(options, name) < 0:
            raise GeneratorError(f"{name} must not be negative, not {getattr(options, name)}")
    folder = Path(output_dir)
    if not folder.is_dir():
        raise FileAccessError(f"output folder {folder} does not exist")
    written = []
    for stem, build in families(options):
        for npu in range(options.num_npus):
            path = folder / f"{stem}.{npu}.et"
            write_et(path, GlobalMetadata(version=GENERATOR_VERSION), build())
            written.append(path)
    return written
