"""Shared helpers of the text-workload tests: render nodes as plain tuples."""

from __future__ import annotations

from pathlib import Path

from chakra.et import NodeType, get_attr

COMP = "COMP"
COLL = "COLL"


def row(node) -> tuple:
    """(id, name, kind, duration, comm_type, comm_size, data_deps) of one node; checks that
    every node is a device node (is_cpu_op false) and has no control deps."""
    assert get_attr(node, "is_cpu_op") is False
    assert list(node.ctrl_deps) == []
    deps = list(node.data_deps)
    if node.type == NodeType.COMP_NODE:
        assert [a.name for a in node.attr] == ["is_cpu_op"]
        return (node.id, node.name, COMP, node.duration_micros, deps)
    assert node.type == NodeType.COMM_COLL_NODE
    assert node.duration_micros == 0
    assert {a.name: a.WhichOneof("value") for a in node.attr} == {
        "comm_type": "int64_val",
        "comm_size": "int64_val",
        "is_cpu_op": "bool_val",
    }
    return (
        node.id,
        node.name,
        COLL,
        get_attr(node, "comm_type"),
        get_attr(node, "comm_size"),
        deps,
    )


def write(tmp_path: Path, text: str, name: str = "w.txt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path
