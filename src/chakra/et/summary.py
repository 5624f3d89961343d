"""A short, JSON-ready summary of a Chakra ET file, computed while streaming it."""

from __future__ import annotations

from collections import Counter

from chakra.errors import AttributeKindError, EtFormatError, PathLike
from chakra.et.attributes import get_int_attr
from chakra.et.reader import EtReader
from chakra.et.schema import CollectiveCommType, NodeType
from chakra.fileio.json_document import JsonDocument


def summarize_et(path: PathLike) -> JsonDocument:
    types: Counter[str] = Counter()
    collectives: Counter[str] = Counter()
    data_deps = ctrl_deps = 0
    with EtReader(path) as reader:
        metadata = reader.metadata
        for node in reader:
            types[
                NodeType(node.type).name
                if node.type in NodeType._value2member_map_
                else str(node.type)
            ] += 1
            data_deps += len(node.data_deps)
            ctrl_deps += len(node.ctrl_deps)
            try:
                comm_type = get_int_attr(node, "comm_type")
            except AttributeKindError as exc:
                raise EtFormatError(path, f"node {node.id} ({node.name}): {exc}") from None
            if comm_type is not None and node.type == NodeType.COMM_COLL_NODE:
                known = comm_type in CollectiveCommType._value2member_map_
                collectives[CollectiveCommType(comm_type).name if known else str(comm_type)] += 1
        count = reader.nodes_read
    return {
        "kind": "Chakra ET",
        "gzip": reader.is_gzip,
        "version": metadata.version,
        "metadata_attrs": [attr.name for attr in metadata.attr],
        "nodes": count,
        "nodes_by_type": dict(sorted(types.items())),
        "collectives": dict(sorted(collectives.items())),
        "data_deps": data_deps,
        "ctrl_deps": ctrl_deps,
    }
