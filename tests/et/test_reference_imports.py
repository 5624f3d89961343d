"""Scripts written against the reference's import paths run unchanged: a workload written the
way ASTRA-sim's example generator scripts write theirs is valid for chakra_validate and
ASTRA-sim, and reads back through ``decodeMessage``."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from chakra.errors import EtFormatError
from chakra.et import read_et
from chakra.schema.protobuf.et_def_pb2 import (
    ALL_REDUCE,
    COMM_COLL_NODE,
    COMP_NODE,
    AttributeProto,
    CollectiveCommType,
    GlobalMetadata,
    Node,
    NodeType,
)
from chakra.src.third_party.utils.protolib import decodeMessage, encodeMessage, openFileRd
from tests.conftest import assert_astra_sim_ran_all

NPUS = 4
COMM_SIZE = 1 << 20


def write_all_reduce(prefix: Path) -> None:
    """As ASTRA-sim's microbenchmark generator scripts do: one file per NPU, opened 'wb';
    no pg_name (the whole world; ASTRA-sim knows a named group only from a comm-group file)."""
    for npu in range(NPUS):
        with open(f"{prefix}.{npu}.et", "wb") as et:
            encodeMessage(et, GlobalMetadata(version="0.0.4"))
            compute = Node()
            compute.id = 0
            compute.name = "compute"
            compute.type = COMP_NODE
            compute.duration_micros = 10
            compute.attr.append(AttributeProto(name="is_cpu_op", bool_val=False))
            compute.attr.append(AttributeProto(name="num_ops", int64_val=1000))
            compute.attr.append(AttributeProto(name="tensor_size", uint64_val=4096))
            encodeMessage(et, compute)
            node = Node()
            node.id = 1
            node.name = "All-Reduce"
            node.type = COMM_COLL_NODE
            node.data_deps.append(0)
            node.attr.append(AttributeProto(name="is_cpu_op", bool_val=False))
            node.attr.append(AttributeProto(name="comm_type", int64_val=ALL_REDUCE))
            node.attr.append(AttributeProto(name="comm_size", int64_val=COMM_SIZE))
            encodeMessage(et, node)


@pytest.fixture
def prefix(tmp_path: Path) -> Path:
    prefix = tmp_path / "all_reduce"
    write_all_reduce(prefix)
    return prefix


def test_enums_as_protoc_writes_them() -> None:
    assert COMM_COLL_NODE == NodeType.Value("COMM_COLL_NODE") == 7
    assert NodeType.Name(4) == "COMP_NODE"
    assert CollectiveCommType.Name(ALL_REDUCE) == "ALL_REDUCE"


def test_our_reader_reads_what_the_script_wrote(prefix: Path) -> None:
    metadata, nodes = read_et(f"{prefix}.2.et")
    assert metadata.version == "0.0.4"
    assert [(n.id, n.type) for n in nodes] == [(0, COMP_NODE), (1, COMM_COLL_NODE)]


def test_decode_message_reads_back_and_keeps_reading_past_an_empty_message(
    prefix: Path,
) -> None:
    stream = io.BytesIO()
    encodeMessage(stream, GlobalMetadata())  # size 0: the reference stopped reading here
    encodeMessage(stream, Node(id=5, name="after"))
    stream.seek(0)
    metadata, node = GlobalMetadata(), Node()
    assert decodeMessage(stream, metadata) and decodeMessage(stream, node)
    assert node.name == "after" and not decodeMessage(stream, node)
    with openFileRd(f"{prefix}.0.et") as et:
        assert decodeMessage(et, metadata) and metadata.version == "0.0.4"
        names = []
        while decodeMessage(et, node):
            names.append(node.name)
    assert names == ["compute", "All-Reduce"]


def test_decode_message_reports_a_cut_off_message() -> None:
    stream = io.BytesIO()
    encodeMessage(stream, Node(id=5, name="cut"))
    cut = io.BytesIO(stream.getvalue()[:-2])
    with pytest.raises(EtFormatError, match="file ends inside a message"):
        decodeMessage(cut, Node())


def test_chakra_validate_accepts_the_family(prefix: Path) -> None:
    files = [f"{prefix}.{npu}.et" for npu in range(NPUS)]
    result = subprocess.run([sys.executable, "-m", "chakra.cli.validate", *files],
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_astra_sim_runs_the_family(prefix: Path, astra_sim) -> None:
    verdict = astra_sim.run(prefix)
    assert_astra_sim_ran_all(verdict)
