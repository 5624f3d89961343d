"""Small hand-made ET graphs for the feeder tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from chakra.et import GlobalMetadata, Node, NodeType, write_et


def make_node(node_id: int, deps: Sequence[int] = (), **fields: Any) -> Any:
    fields.setdefault("type", NodeType.COMP_NODE)
    return Node(id=node_id, name=f"n{node_id}", data_deps=list(deps), **fields)


def write_graph(path: Path, nodes: Iterable[Any]) -> Path:
    write_et(path, GlobalMetadata(version="1.0.0"), nodes)
    return path


def write_deps(path: Path, deps: dict[int, Sequence[int]]) -> Path:
    """One node per key, in the dict's order, with those data dependencies."""
    return write_graph(path, (make_node(node_id, parents) for node_id, parents in deps.items()))


def drain(feeder: Any) -> list[int]:
    """Run the typical loop to the end; return the ids in issue order."""
    order = []
    while feeder.has_nodes_to_issue():
        node = feeder.get_next_issuable_node()
        assert node is not None, "stalled with nodes left to issue"
        order.append(node.id)
        feeder.free_children_nodes(node.id)
        feeder.remove_node(node.id)
    return order
