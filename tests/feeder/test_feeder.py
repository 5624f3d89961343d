"""EtFeeder on hand-made graphs: windows, missing parents, push-back, unknown ids, accessors."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from chakra.errors import ChakraError
from chakra.et import AttributeProto, IOInfo, NodeType
from chakra.feeder import (
    EtFeeder,
    FeederError,
    MissingAttributeError,
    UnknownNodeError,
)
from tests.feeder.graphs import drain, make_node, write_deps, write_graph


def test_chain_with_tiny_window_keeps_memory_bounded(tmp_path: Path) -> None:
    path = write_deps(tmp_path / "chain.et", {i: [i - 1] if i else [] for i in range(100)})
    with EtFeeder(path, window_size=3) as feeder:
        order, most_loaded = [], 0
        while feeder.has_nodes_to_issue():
            most_loaded = max(most_loaded, feeder.loaded_count)
            node = feeder.get_next_issuable_node()
            assert node is not None
            order.append(node.id)
            assert feeder.get_next_issuable_node() is None  # a chain: one at a time
            feeder.free_children_nodes(node.id)
            feeder.remove_node(node.id)
    assert order == list(range(100))
    assert most_loaded <= 3


def test_forward_dependencies_across_windows(tmp_path: Path) -> None:
    # Each node depends on one written 5 positions later; the last ones have none.
    deps = {i: [i + 5] if i + 5 < 40 else [] for i in range(40)}
    path = write_deps(tmp_path / "forward.et", deps)
    with EtFeeder(path, window_size=3) as feeder:
        order = drain(feeder)
    assert sorted(order) == list(range(40))
    position = {node_id: index for index, node_id in enumerate(order)}
    assert all(position[i + 5] < position[i] for i in range(35))


def test_parent_freed_and_removed_before_child_is_read(tmp_path: Path) -> None:
    # 0 <- 1 <- ... chain, plus node 50 depending on 0, read long after 0 was removed.
    deps = {i: [i - 1] if i else [] for i in range(50)}
    deps[50] = [0]
    path = write_deps(tmp_path / "late.et", deps)
    with EtFeeder(path, window_size=2) as feeder:
        assert sorted(drain(feeder)) == list(range(51))
        assert feeder.unresolved_dependencies() == {}


def test_dependency_on_missing_id_is_reported(tmp_path: Path) -> None:
    path = write_deps(tmp_path / "missing.et", {1: [], 2: [99], 3: [2], 4: [1]})
    with EtFeeder(path, window_size=2) as feeder:
        order = drain(feeder)  # ends: does not stall
        assert order == [1, 4]
        assert feeder.unresolved_dependencies() == {99: (2,)}
        assert feeder.stranded_nodes() == {2, 3}
        assert not feeder.has_nodes_to_issue()


def test_get_next_issues_each_node_once(tmp_path: Path) -> None:
    path = write_deps(tmp_path / "flat.et", {i: [] for i in range(10)})
    with EtFeeder(path, window_size=3) as feeder:
        issued = []
        while (node := feeder.get_next_issuable_node()) is not None:
            issued.append(node.id)
        # nothing removed: the window stays full of issued nodes, yet nothing is repeated
        assert len(issued) == len(set(issued))
        for node_id in issued:
            feeder.remove_node(node_id)
        assert sorted(issued + drain(feeder)) == list(range(10))


def test_push_back(tmp_path: Path) -> None:
    path = write_deps(tmp_path / "pb.et", {1: [], 2: [], 3: [1]})
    with EtFeeder(path) as feeder:
        assert feeder.get_next_issuable_node().id == 1  # type: ignore[union-attr]
        assert feeder.get_next_issuable_node().id == 2  # type: ignore[union-attr]
        feeder.push_back_issuable_node(2)
        feeder.push_back_issuable_node(2)  # already issuable: no duplicate
        feeder.push_back_issuable_node(1)
        assert [feeder.get_next_issuable_node().id for _ in range(2)] == [1, 2]  # type: ignore[union-attr]
        assert feeder.get_next_issuable_node() is None
        with pytest.raises(FeederError, match="node 3: 1 of its dependencies"):
            feeder.push_back_issuable_node(3)
        with pytest.raises(UnknownNodeError, match="node 7"):
            feeder.push_back_issuable_node(7)


def test_remove_drops_node_from_issuable_set(tmp_path: Path) -> None:
    path = write_deps(tmp_path / "rm.et", {1: [], 2: []})
    with EtFeeder(path) as feeder:
        feeder.remove_node(1)
        assert feeder.get_next_issuable_node().id == 2  # type: ignore[union-attr]
        assert feeder.get_next_issuable_node() is None


def test_unknown_ids_are_clear_errors(tmp_path: Path) -> None:
    path = write_deps(tmp_path / "u.et", {1: [], 2: [1]})
    with EtFeeder(path) as feeder:
        feeder.remove_node(1)
        for call in (feeder.lookup_node, feeder.remove_node, feeder.free_children_nodes):
            with pytest.raises(UnknownNodeError) as info:
                call(1)
            assert info.value.node_id == 1
            assert str(info.value).startswith(f"{path}: ") and "node 1: it was removed" in str(
                info.value
            )
        with pytest.raises(ChakraError, match="node 5: it is not in the file"):
            feeder.lookup_node(5)
        assert feeder.has_nodes_to_issue()  # node 2 is still loaded


def test_free_twice_is_harmless(tmp_path: Path) -> None:
    path = write_deps(tmp_path / "ft.et", {1: [], 2: [1], 3: [1, 2]})
    with EtFeeder(path) as feeder:
        feeder.get_next_issuable_node()
        feeder.free_children_nodes(1)
        feeder.free_children_nodes(1)
        assert feeder.get_next_issuable_node().id == 2  # type: ignore[union-attr]
        assert feeder.get_next_issuable_node() is None  # 3 still waits for 2


def test_duplicate_ids_and_bad_window(tmp_path: Path) -> None:
    path = write_deps(tmp_path / "dup.et", {1: []})
    with pytest.raises(FeederError, match="window_size"):
        EtFeeder(path, window_size=0)
    dup = write_graph(tmp_path / "dup2.et", [make_node(1), make_node(1)])
    with pytest.raises(FeederError, match="node id 1 appears twice"):
        EtFeeder(dup)


def test_gzip_by_content(tmp_path: Path) -> None:
    plain = write_deps(tmp_path / "g.et", {1: [], 2: [1]})
    zipped = tmp_path / "no_suffix"
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    with EtFeeder(zipped) as feeder:
        assert drain(feeder) == [1, 2]


def test_accessors(tmp_path: Path) -> None:
    full = make_node(
        1,
        type=NodeType.COMM_SEND_NODE,
        duration_micros=42,
        inputs=IOInfo(values="[1]", shapes="[[2]]", types="[Tensor]"),
        attr=[
            AttributeProto(name="is_cpu_op", bool_val=True),
            AttributeProto(name="num_ops", int64_val=7),
            AttributeProto(name="tensor_size", uint64_val=1 << 40),
            AttributeProto(name="comm_type", int64_val=2),
            AttributeProto(name="comm_priority", int32_val=3),
            AttributeProto(name="comm_size", uint64_val=4096),  # r126 kind: C++ reads 0
            AttributeProto(name="comm_src", int32_val=1),
            AttributeProto(name="comm_dst", sint32_val=2),
            AttributeProto(name="comm_tag", uint32_val=9),
            AttributeProto(name="pg_name", string_val="pg0"),
            AttributeProto(name="involved_dim", bool_list={"values": [True, False]}),
        ],
    )
    path = write_graph(tmp_path / "acc.et", [full, make_node(2)])
    with EtFeeder(path) as feeder:
        node, bare = feeder.lookup_node(1), feeder.lookup_node(2)
        assert (node.id, node.name, node.type, node.runtime) == (1, "n1", 5, 42)
        assert node.is_cpu_op and node.num_ops == 7 and node.tensor_size == 1 << 40
        assert (node.comm_type, node.comm_priority, node.comm_size) == (2, 3, 4096)
        assert (node.comm_src, node.comm_dst, node.comm_tag, node.pg_name) == (1, 2, 9, "pg0")
        assert (node.inputs_values, node.inputs_shapes, node.inputs_types) == (
            "[1]",
            "[[2]]",
            "[Tensor]",
        )
        assert (node.outputs_values, node.outputs_shapes, node.outputs_types) == ("", "", "")
        assert node.has_other_attr("involved_dim") and not node.has_other_attr("comm_size")
        assert node.get_other_attr("involved_dim") == [True, False]
        with pytest.raises(MissingAttributeError, match="node 1 has no other attribute 'rf_id'"):
            node.get_other_attr("rf_id")
        assert not bare.is_cpu_op and bare.num_ops == 0 and bare.comm_size == 0
        assert bare.pg_name == "" and bare.runtime == 0 and bare.children() == []
