"""``build_graph`` against the builder it replaced (``reference_build.py``): the same SimGraph,
field by field and type by type, or the same error, on random node lists."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra.et import AttributeProto, Node, NodeType
from chakra.simulate import LoadOptions, SimGraph, SimulationError, build_graph
from chakra.simulate.resources import Resource
from tests.simulate.reference_build import reference_build_graph

READ_NAMES = ["is_cpu_op", "tid", "stream", "device", "comm_type", "comm_size", "pg_name",
              "duration_ns"]  # fmt: skip
OTHER_NAMES = ["rf_id", "op_schema", "Tid", ""]
INT_RANGES = {
    "int32": (-(2**31), 2**31 - 1), "sint32": (-(2**31), 2**31 - 1),
    "sfixed32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1), "fixed32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1), "sint64": (-(2**63), 2**63 - 1),
    "sfixed64": (-(2**63), 2**63 - 1), "uint64": (0, 2**64 - 1), "fixed64": (0, 2**64 - 1),
}  # fmt: skip
RARELY = st.sampled_from([False] * 9 + [True])


def small_or_any(low: int, high: int) -> st.SearchStrategy[int]:
    """Mostly the small values real traces hold (so that resources repeat), sometimes any."""
    small = st.integers(max(low, -3), min(high, 12))
    return st.one_of(small, small, small, st.integers(low, high))


@st.composite
def attributes(draw: st.DrawFn) -> Any:
    name = draw(st.sampled_from(READ_NAMES * 3 + OTHER_NAMES))
    kind = draw(st.sampled_from([*INT_RANGES, *INT_RANGES, "bool", "double", "float",
                                 "string", "bytes", "list", "none"]))  # fmt: skip
    attr = AttributeProto(name=name)
    if kind in INT_RANGES:
        setattr(attr, f"{kind}_val", draw(small_or_any(*INT_RANGES[kind])))
    elif kind == "bool":
        attr.bool_val = draw(st.booleans())
    elif kind == "double":
        attr.double_val = draw(st.floats(allow_nan=True, allow_infinity=True))
    elif kind == "float":
        attr.float_val = draw(st.floats(width=32))
    elif kind == "string":
        attr.string_val = draw(st.sampled_from(["", "0", "7", "pg", "x1"]) | st.text(max_size=4))
    elif kind == "bytes":
        attr.bytes_val = draw(st.sampled_from([b"", b"3", b"x"]))
    elif kind == "list":
        attr.int64_list.values.extend(draw(st.lists(st.integers(-5, 5), max_size=2)))
    return attr


@st.composite
def node_lists(draw: st.DrawFn) -> list[Any]:
    """Nodes with shuffled ids (sometimes in order, sometimes a repeat or an id too large for
    int64), dependencies on earlier or later nodes (sometimes on no node), attributes of
    every kind, missing or repeated."""
    count = draw(st.integers(0, 14))
    if draw(st.booleans()):
        ids = list(range(count))
    else:
        ids = draw(st.lists(small_or_any(0, 2**63 - 1), min_size=count, max_size=count,
                            unique=True))  # fmt: skip
        ids = draw(st.permutations(ids))
    if count > 1 and draw(RARELY):
        ids[draw(st.integers(1, count - 1))] = ids[draw(st.integers(0, count - 1))]
    if count and draw(RARELY):
        ids[draw(st.integers(0, count - 1))] = draw(st.integers(2**63, 2**64 - 1))
    nodes = []
    for node_id in ids:
        deps = draw(st.lists(st.sampled_from(ids), max_size=3)) if ids else []
        if draw(RARELY) and draw(RARELY):
            deps.insert(draw(st.integers(0, len(deps))), draw(small_or_any(0, 2**64 - 1)))
        out = Node(id=node_id, name=draw(st.sampled_from(["a", "b", "kernel", ""])),
                   type=draw(st.sampled_from([*NodeType, *NodeType, 99])),
                   duration_micros=draw(small_or_any(0, 2**64 - 1)),
                   start_time_micros=draw(st.sampled_from([0, 0, 3, 10, 2**53 + 1])),
                   data_deps=deps)  # fmt: skip
        out.attr.extend(draw(st.lists(attributes(), max_size=5)))
        nodes.append(out)
    return nodes


def outcome(build: Any, nodes: list[Any], rank: int, serialize_gpu: bool) -> Any:
    """The graph's fields (arrays as typecode and bytes, so that NaN compares equal), or
    the error's type and message."""
    try:
        graph = build(iter(nodes), rank, serialize_gpu)
    except Exception as exc:  # any error must be the same one
        return type(exc), str(exc)
    assert isinstance(graph, SimGraph)
    fields = []
    for field in graph.__struct_fields__:
        value = getattr(graph, field)
        if isinstance(value, array):
            value = (value.typecode, value.tobytes())
        fields.append((field, type(value), value))
    return fields


@settings(max_examples=400, deadline=None)
@given(nodes=node_lists(), rank=st.integers(0, 3), serialize_gpu=st.booleans())
@pytest.mark.slow
def test_same_graph_or_error_as_the_reference(nodes: list[Any], rank: int,
                                              serialize_gpu: bool) -> None:  # fmt: skip
    expected = outcome(reference_build_graph, nodes, rank, serialize_gpu)
    assert outcome(build_graph, nodes, rank, serialize_gpu) == expected


def _plain(node_id: int, deps: tuple = ()) -> Any:
    out = Node(id=node_id, name=f"n{node_id}", duration_micros=1, data_deps=list(deps))
    out.attr.extend([AttributeProto(name="tid", int64_val=1)])
    return out


def test_repeated_id_is_reported_before_a_later_error() -> None:
    def nodes(repeat: bool) -> Iterator[Any]:
        yield _plain(1)
        yield _plain(1 if repeat else 2)
        raise RuntimeError("file cut short")

    with pytest.raises(SimulationError, match="rank 0: node id 1 appears twice"):
        build_graph(nodes(True))
    with pytest.raises(RuntimeError, match="file cut short"):
        build_graph(nodes(False))


def test_unknown_dependency_names_the_first_node_with_one() -> None:
    nodes = [_plain(5, (9,)), _plain(3, (4, 2**64 - 1)), _plain(4, (7,))]
    with pytest.raises(SimulationError, match=r"node 5 \(n5\) depends on unknown node 9"):
        build_graph(nodes, 0)
    with pytest.raises(
        SimulationError, match=f"node 3 \\(n3\\) depends on unknown node {2**64 - 1}"
    ):
        build_graph(nodes[1:], 0)


def test_rows_in_both_directions() -> None:
    graph = build_graph([_plain(30, (10, 20, 10)), _plain(10), _plain(20, (10,))])
    assert list(graph.preds) == [1, 2, 1, 1]
    assert list(graph.pred_start) == [0, 3, 3, 4]
    assert list(graph.succs) == [0, 0, 2, 0]
    assert list(graph.succ_start) == [0, 0, 3, 4]
    assert {type(getattr(graph, f)) for f in ("preds", "succs", "pred_start", "ids")} == {array}


def test_a_node_without_is_cpu_op_is_a_gpu_node_as_the_feeder_reads_it() -> None:
    # ASTRA-sim's custom-collective examples write no is_cpu_op: the feeder reads false
    kernel = Node(id=1, name="COMP_NODE_tb0_step1", type=NodeType.COMP_NODE, duration_micros=2)
    for options in (None, LoadOptions()):  # unchecked, and with chakra_sim's checks
        graph = build_graph([kernel], 0, options=options)
        assert graph.resources == [Resource.stream(0, 0)] and list(graph.resource) == [0]
        assert graph.problem_counts in (None, {})
