"""Reading real and hand-made .et files, and every kind of bad input."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from chakra.errors import EtFormatError, FileAccessError
from chakra.et import EtReader, GlobalMetadata, Node, NodeType, get_bool_attr, read_et
from tests.conftest import assert_one_line_error
from tests.et.samples import BAD_INPUT_NAMES, bad_inputs, framed


def test_feeder_trace_counts(shared_traces: Path) -> None:
    metadata, nodes = read_et(shared_traces / "chakra" / "feeder_trace.et.gz")
    types = Counter(NodeType(node.type) for node in nodes)
    assert len(nodes) == 3664
    assert types == {NodeType.COMP_NODE: 3643, NodeType.COMM_COLL_NODE: 21}
    assert sum(1 for n in nodes if get_bool_attr(n, "is_cpu_op")) == 2448
    assert sum(1 for n in nodes if n.duration_micros > 0) == 3507
    assert {a.name: a.WhichOneof("value") for a in metadata.attr}["pid"] == "uint64_val"


def test_feeder_trace_agrees_with_its_workload_graph_json(shared_traces: Path) -> None:
    _, nodes = read_et(shared_traces / "chakra" / "feeder_trace.et.gz")
    with gzip.open(shared_traces / "chakra" / "feeder_trace.workload_graph.json.gz") as f:
        graph = json.load(f)["workload_graph"]
    from_et = [
        (n.id, int(n.type), n.duration_micros, list(n.data_deps), get_bool_attr(n, "is_cpu_op"))
        for n in nodes
    ]
    from_json = [
        (g["Id"], g["NodeType"], g.get("runtime", 0), g["data_deps"], g["is_cpu_op"]) for g in graph
    ]
    assert sorted(from_et) == sorted(from_json)


def test_astra_sim_microbenchmark_files(shared_traces: Path) -> None:
    paths = sorted((shared_traces / "astra-sim").glob("*.et"))
    assert len(paths) == 4
    for npu, path in enumerate(paths):
        metadata, nodes = read_et(path)
        assert metadata.version == "0.0.4"
        assert [(n.id, n.type) for n in nodes] == [(npu, NodeType.COMM_COLL_NODE)]


def test_zero_length_messages_do_not_end_the_file(tmp_path: Path) -> None:
    """Reference defect §10.28: an empty message was taken as end of file. An empty
    GlobalMetadata reads; an empty node (a node has an id or a name) is an error naming its
    offset, not a silent end, nor one of the endless empty nodes of a file of zeros."""
    path = tmp_path / "empty_messages.et"
    path.write_bytes(framed(GlobalMetadata(), Node(id=0), Node(id=0), Node(id=7, name="after")))
    assert path.read_bytes()[:3] == b"\x00\x00\x00"  # three empty messages, as written
    with pytest.raises(EtFormatError, match=r"node #1 is an empty message .* at byte offset 1"):
        read_et(path)
    path.write_bytes(framed(GlobalMetadata(), Node(id=7, name="after")))
    metadata, nodes = read_et(path)
    assert metadata == GlobalMetadata()
    assert [(n.id, n.name) for n in nodes] == [(7, "after")]


@pytest.mark.parametrize("body", [b"\x08\x05", b" " * 32], ids=["id-only", "spaces"])
def test_a_node_without_name_and_type_is_refused(tmp_path: Path, body: bytes) -> None:
    """A message that decodes as a Node but has neither a name nor a type (INVALID_NODE) is no
    node: the endless such "nodes" of a gzip of spaces end at the first, not at the budget."""
    path = tmp_path / "nameless.et"
    good = framed(GlobalMetadata(), Node(id=1, name="a"))
    path.write_bytes(good + bytes((len(body),)) + body)
    with pytest.raises(
        EtFormatError,
        match=rf"nameless\.et: node #2 has neither a name nor a "
        rf"type: not a Chakra ET node at byte offset {len(good)}$",
    ):
        read_et(path)


def test_gzip_is_recognised_by_content_whatever_the_name(tmp_path: Path) -> None:
    path = tmp_path / "looks_plain.et"
    path.write_bytes(gzip.compress(framed(GlobalMetadata(version="v"), Node(id=5, name="a"))))
    with EtReader(path) as reader:
        assert reader.is_gzip
        assert reader.metadata.version == "v"
        assert [n.id for n in reader] == [5]


def test_reader_streams_one_node_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "many.et"
    path.write_bytes(
        framed(GlobalMetadata(), *[Node(id=i, type=NodeType.COMP_NODE) for i in range(1, 1001)])
    )
    reader = EtReader(path)
    iterator = iter(reader)
    assert next(iterator).id == 1
    assert reader.nodes_read == 1
    assert sum(1 for _ in iterator) == 999
    assert reader.nodes_read == 1000


@pytest.mark.parametrize("case", BAD_INPUT_NAMES)
def test_bad_input_raises_one_error_naming_file_and_offset(tmp_path: Path, case: str) -> None:
    path, expected = bad_inputs(tmp_path)[case]
    error = assert_one_line_error(read_et, path, expected, EtFormatError)
    assert isinstance(error, EtFormatError) and error.offset is not None


def test_missing_file_is_a_file_access_error(tmp_path: Path) -> None:
    with pytest.raises(FileAccessError, match=r"cannot open .*nope\.et: No such file"):
        EtReader(tmp_path / "nope.et")


def test_undecodable_node_is_reported_with_its_position(tmp_path: Path) -> None:
    path = tmp_path / "bad_node.et"
    good = framed(GlobalMetadata(), Node(id=1, name="a"))
    path.write_bytes(good + b"\x02\x0f\x01")  # field 1 with wire type 7: invalid
    with pytest.raises(EtFormatError, match=rf"cannot decode node #2 .* offset {len(good)}$"):
        read_et(path)
