"""Attribute helpers: conventional kinds on write, any integer kind on read."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra.errors import AttributeKindError
from chakra.et import (
    GlobalMetadata,
    Node,
    attr_kind,
    find_attr,
    get_attr,
    get_bool_attr,
    get_int_attr,
    get_str_attr,
    make_attr,
    read_et,
    set_attr,
)
from chakra.et.attributes import INTEGER_KINDS


def test_conventional_kinds_of_the_reference() -> None:
    node = Node(id=1)
    for name, value in [
        ("is_cpu_op", True),
        ("comm_type", 5),
        ("comm_size", 1 << 20),
        ("pg_name", "0"),
        ("stream", 7),
        ("tensor_size", 64),
        ("comm_src", 1),
        ("rf_id", 12),
        ("op_schema", "aten::mm(...)"),
    ]:
        set_attr(node, name, value)
    kinds = {attr.name: attr_kind(attr) for attr in node.attr}
    assert kinds == {
        "is_cpu_op": "bool_val",
        "comm_type": "int64_val",
        "comm_size": "int64_val",
        "pg_name": "string_val",
        "stream": "int64_val",
        "tensor_size": "uint64_val",
        "comm_src": "int32_val",
        "rf_id": "int64_val",
        "op_schema": "string_val",
    }


@pytest.mark.parametrize("kind", sorted(INTEGER_KINDS))
def test_integers_are_read_whatever_kind_the_writer_chose(kind: str) -> None:
    node = Node(id=3)
    node.attr.add().CopyFrom(make_attr("comm_size", 1000, kind))
    assert get_int_attr(node, "comm_size") == 1000
    assert get_bool_attr(node, "comm_size") is True


def test_r126_style_uint64_comm_size_reads_back() -> None:
    """The r126 text converter wrote comm_size as uint64; the reference feeder read 0."""
    node = Node(id=1)
    node.attr.add(name="comm_size", uint64_val=65536)
    assert get_int_attr(node, "comm_size") == 65536


def test_negative_values_keep_their_sign() -> None:
    node = Node()
    set_attr(node, "seq_id", -1)
    node.attr.add(name="neg32", sint32_val=-5)
    assert get_int_attr(node, "seq_id") == -1
    assert get_int_attr(node, "neg32") == -5


def test_set_replaces_in_place_and_missing_gives_default() -> None:
    node = Node()
    set_attr(node, "a", 1)
    set_attr(node, "b", "x")
    set_attr(node, "a", 2)
    assert [(a.name, get_attr(node, a.name)) for a in node.attr] == [("a", 2), ("b", "x")]
    assert get_int_attr(node, "missing") is None
    assert get_str_attr(node, "missing", "dflt") == "dflt"
    assert find_attr(node, "missing") is None


def test_lists_and_inferred_kinds() -> None:
    meta = GlobalMetadata()
    set_attr(meta, "dims", [True, False])
    set_attr(meta, "sizes", [1, 2, 3], "uint32_list")
    set_attr(meta, "ratio", 0.5)
    assert get_attr(meta, "dims") == [True, False]
    assert attr_kind(find_attr(meta, "sizes")) == "uint32_list"
    assert get_attr(meta, "sizes") == [1, 2, 3]
    assert attr_kind(find_attr(meta, "ratio")) == "double_val"


def test_wrong_kind_is_a_clear_error() -> None:
    node = Node(id=9)
    set_attr(node, "pg_name", "dp")
    with pytest.raises(AttributeKindError, match="'pg_name' of node 9 holds string_val"):
        get_int_attr(node, "pg_name")
    with pytest.raises(AttributeKindError):
        set_attr(node, "comm_size", "big")
    with pytest.raises(AttributeKindError):
        set_attr(node, "thing", object())  # type: ignore[arg-type]


def test_feeder_trace_involved_dim_bool_lists(shared_traces: Path) -> None:
    _, nodes = read_et(shared_traces / "chakra" / "feeder_trace.et.gz")
    with_dims = [n for n in nodes if find_attr(n, "involved_dim") is not None]
    assert len(with_dims) == 7
    assert all(isinstance(get_attr(n, "involved_dim"), list) for n in with_dims)
    types = [get_int_attr(n, "comm_type") for n in nodes if find_attr(n, "comm_type")]
    assert sorted(types) == [0, 0, 0, 0, 0, 5, 5]


def test_failed_set_leaves_the_message_unchanged() -> None:
    node = Node(id=1)
    set_attr(node, "stream", 7)
    before = node.SerializeToString()
    with pytest.raises(AttributeKindError):
        set_attr(node, "comm_size", "not a number")
    with pytest.raises(AttributeKindError):
        set_attr(node, "stream", "not a number")
    assert node.SerializeToString() == before
