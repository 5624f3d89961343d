"""Serialized node pieces equal what protobuf builds field by field."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chakra.et.framing import encode_varint
from chakra.et.node_fields import (
    AttrPieces,
    NodeHeads,
    bool_attr,
    int64_attr,
    int64_entries,
    io_info,
    string_attr,
)
from chakra.et.schema import IOInfo, Node

names = st.text(min_size=1, max_size=30)
int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@given(name=names, value=int64s, flag=st.booleans(), text=st.text(max_size=300))
def test_attr_pieces_parse_as_the_attrs_protobuf_builds(
    name: str, value: int, flag: bool, text: str
) -> None:
    expected = Node(id=3)
    expected.attr.add(name=name, int64_val=value)
    expected.attr.add(name=name, bool_val=flag)
    expected.attr.add(name=name, string_val=text)
    built = Node(id=3)
    built.MergeFromString(int64_attr(name, value) + bool_attr(name, flag) + string_attr(name, text))
    assert built == expected
    assert built.SerializeToString() == expected.SerializeToString()


@given(values=st.binary(max_size=200), shapes=st.binary(max_size=50), types=st.binary(max_size=50))
def test_io_pieces_parse_as_the_io_info_protobuf_builds(
    values: bytes, shapes: bytes, types: bytes
) -> None:
    texts = [t.decode("latin-1").encode() for t in (values, shapes, types)]  # valid UTF-8
    expected = Node(id=1)
    expected.inputs.CopyFrom(IOInfo(values=texts[0].decode(), shapes=texts[1].decode(),
                                    types=texts[2].decode()))  # fmt: skip
    expected.outputs.CopyFrom(expected.inputs)
    built = Node(id=1)
    built.MergeFromString(io_info(False, *texts) + io_info(True, *texts))
    assert built.SerializeToString() == expected.SerializeToString()


@given(name=names, value=int64s)
def test_int64_pieces_equal_the_plain_encoding(name: str, value: int) -> None:
    pieces = AttrPieces()
    assert pieces.int64(name, value) == int64_attr(name, value)
    assert pieces.int64(name, value) == int64_attr(name, value)  # the name's heads reused


@given(values=st.lists(st.one_of(int64s, st.booleans(), st.none(), st.text()), max_size=4))
def test_int64_entries_keep_the_ints_in_the_order_of_the_names(values: list) -> None:
    names = ["rf_id", "seq_id", "tid", "scope"][: len(values)]
    mapping = dict(zip(reversed(names), reversed(values)))  # the mapping's order is not used
    expected = b"".join(
        int64_attr(name, value)
        for name, value in zip(names, values)
        if isinstance(value, int) and not isinstance(value, bool)
    )
    assert int64_entries(["rf_id", "seq_id", "tid", "scope"])(mapping) == expected


def test_bool_and_string_pieces_are_reused_and_kinds_kept_apart() -> None:
    pieces = AttrPieces()
    assert pieces.string("op_schema", "x") is pieces.string("op_schema", "x")
    assert pieces.boolean("is_cpu_op", True) == bool_attr("is_cpu_op", True)
    assert pieces.int64("tid", 1) != pieces.boolean("tid", True)


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_varints_match_protobuf(value: int) -> None:
    node = Node(id=value)
    assert node.SerializeToString() == (b"\x08" + encode_varint(value) if value else b"")


uint64s = st.integers(min_value=0, max_value=2**64 - 1)


@given(
    node_id=uint64s,
    name=st.text(max_size=40),
    node_type=st.integers(min_value=0, max_value=7),
    ctrl=st.lists(uint64s, max_size=3),
    data=st.lists(uint64s, max_size=20),
    start=uint64s,
    duration=uint64s,
)
def test_node_heads_serialize_as_protobuf_does(
    node_id: int, name: str, node_type: int, ctrl: list, data: list, start: int, duration: int
) -> None:
    expected = Node(id=node_id, name=name, type=node_type, ctrl_deps=ctrl, data_deps=data,
                    start_time_micros=start, duration_micros=duration)  # fmt: skip
    expected.attr.add(name="tid", int64_val=3)
    head = NodeHeads().head(node_id, name, node_type, ctrl, data, start, duration)
    assert head + int64_attr("tid", 3) == expected.SerializeToString()


def test_node_head_of_hand_computed_bytes() -> None:
    # id 300 = varint ac 02; name "mm"; type 4; ctrl_deps [1]; data_deps [2, 300];
    # start 1; duration 0 (left out)
    head = NodeHeads().head(300, "mm", 4, [1], [2, 300], 1, 0)
    assert head == bytes.fromhex("08ac0212026d6d18042201012a0302ac023001")
