"""``chakra_generator``: the file set, per-file ids, attribute kinds, the output folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chakra.errors import ChakraError
from chakra.et import CollectiveCommType, NodeType, find_attr, get_attr, read_et
from chakra.tools.generator import GeneratorOptions, generate

FAMILIES = [
    "one_remote_mem_load_node", "one_remote_mem_store_node",
    "one_comp_node", "two_comp_nodes_independent", "two_comp_nodes_dependent",
    "ALL_REDUCE", "ALL_TO_ALL", "ALL_GATHER", "REDUCE_SCATTER", "BROADCAST",
    "one_comm_send_node", "two_comm_nodes_send_recv",
]  # fmt: skip
#: Written only with --all-families: ASTRA-sim cannot run them.
UNRUNNABLE = ["one_metadata_node_all_types", "BARRIER", "one_comm_recv_node"]


def generator(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    script = [sys.executable, "-m", "chakra.cli.generator"]
    return subprocess.run([*script, *args], capture_output=True, text=True, check=False, cwd=cwd)


@pytest.mark.parametrize("all_families", [False, True])
def test_file_set_and_ids_restart_in_every_file(tmp_path: Path, all_families: bool) -> None:
    written = generate(GeneratorOptions(num_npus=2, all_families=all_families), tmp_path)
    names = FAMILIES + UNRUNNABLE if all_families else FAMILIES
    expected = {f"{family}.{npu}.et" for family in names for npu in (0, 1)}
    assert {p.name for p in written} == expected
    assert {p.name for p in tmp_path.iterdir()} == expected
    for path in written:
        metadata, nodes = read_et(path)
        assert metadata.version == "1.0.0"
        assert [n.id for n in nodes] == list(range(len(nodes)))


def test_attributes_and_kinds(tmp_path: Path) -> None:
    options = GeneratorOptions(num_npus=1, runtime_us=7, tensor_size=99, comm_size=4096,
                               all_families=True)  # fmt: skip
    generate(options, tmp_path)
    _, (load,) = read_et(tmp_path / "one_remote_mem_load_node.0.et")
    assert (load.name, load.type) == ("MEM_LOAD_NODE", NodeType.MEM_LOAD_NODE)
    assert find_attr(load, "tensor_size").WhichOneof("value") == "uint64_val"
    assert find_attr(load, "tensor_size").uint64_val == 99
    assert find_attr(load, "is_cpu_op").WhichOneof("value") == "bool_val"
    assert find_attr(load, "is_cpu_op").bool_val is False
    _, comps = read_et(tmp_path / "two_comp_nodes_dependent.0.et")
    assert [c.duration_micros for c in comps] == [7, 7]
    assert list(comps[1].data_deps) == [0] and not comps[0].data_deps
    _, (gather,) = read_et(tmp_path / "ALL_GATHER.0.et")
    assert gather.name == "ALL_GATHER" and gather.type == NodeType.COMM_COLL_NODE
    assert find_attr(gather, "comm_type").int64_val == CollectiveCommType.ALL_GATHER
    assert find_attr(gather, "comm_size").WhichOneof("value") == "int64_val"
    assert find_attr(gather, "comm_size").int64_val == 4096
    _, (barrier,) = read_et(tmp_path / "BARRIER.0.et")
    assert find_attr(barrier, "comm_size").int64_val == 0
    _, (meta,) = read_et(tmp_path / "one_metadata_node_all_types.0.et")
    assert len(meta.attr) == 30 and find_attr(meta, "is_cpu_op") is None
    assert find_attr(meta, "sint64").WhichOneof("value") == "sint64_val"


def test_send_and_recv_form_a_ring(tmp_path: Path) -> None:
    """NPU r sends to r + 1 and receives from r - 1, naming both ends and a tag."""
    generate(GeneratorOptions(num_npus=3, tensor_size=99, all_families=True), tmp_path)

    def ends(node) -> tuple:
        return tuple(get_attr(node, name) for name in ("comm_src", "comm_dst", "comm_tag",
                                                       "comm_size", "tensor_size"))  # fmt: skip

    for npu, (before, after) in enumerate([(2, 1), (0, 2), (1, 0)]):
        _, (send,) = read_et(tmp_path / f"one_comm_send_node.{npu}.et")
        _, (recv,) = read_et(tmp_path / f"one_comm_recv_node.{npu}.et")
        _, pair = read_et(tmp_path / f"two_comm_nodes_send_recv.{npu}.et")
        assert send.type == NodeType.COMM_SEND_NODE and recv.type == NodeType.COMM_RECV_NODE
        assert ends(send) == (npu, after, 0, 99, 99)
        assert ends(recv) == (before, npu, 0, 99, 99)
        assert [(n.id, n.type, ends(n), list(n.data_deps)) for n in pair] == [
            (0, NodeType.COMM_SEND_NODE, ends(send), []),
            (1, NodeType.COMM_RECV_NODE, ends(recv), []),
        ]
        assert find_attr(send, "comm_dst").WhichOneof("value") == "int32_val"


def test_bad_options_raise(tmp_path: Path) -> None:
    with pytest.raises(ChakraError, match="num_npus"):
        generate(GeneratorOptions(num_npus=0), tmp_path)
    with pytest.raises(ChakraError, match="does not exist"):
        generate(GeneratorOptions(num_npus=1), tmp_path / "missing")
    with pytest.raises(ChakraError, match=r"comm_size must be from 0 to 9223372036854775807"):
        generate(GeneratorOptions(num_npus=1, comm_size=2**63), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_cli_output_dir_and_default_cwd(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    result = generator("--num_npus", "1", "--output-dir", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(list(out.iterdir())) == len(FAMILIES)
    result = generator("--num_npus", "1", "--all-families", "--output-dir", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(list(out.iterdir())) == len(FAMILIES) + len(UNRUNNABLE)
    result = generator("--num_npus", "1", cwd=out.parent)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ALL_REDUCE.0.et").is_file()
    result = generator("--output-dir", str(tmp_path / "nope"), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "does not exist" in result.stderr
