"""Host ET loading: every real vintage, hand-made edge cases, and bad input."""

from __future__ import annotations

import gzip
import json
import logging
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from chakra.errors import TraceFormatError
from chakra.ingest import load_host_trace
from chakra.ingest.host_model import OpArgs, TensorRef
from tests.conftest import assert_one_line_error


def shared(shared_traces: Path, name: str) -> Path:
    return shared_traces / name


def test_simple_add_1_0_1(shared_traces: Path) -> None:
    trace = load_host_trace(shared_traces / "hta" / "simple_add.host_et.json.gz")
    assert trace.schema == "1.0.1"
    assert len(trace.ops) == 38
    ops = trace.op_by_id()
    assert ops[1].is_process_root and ops[1].parent_id == 1
    assert ops[2].is_thread_root and ops[2].parent_id == 1
    # 36 ops besides the two roots carry a record-function id
    assert sum(1 for op in trace.ops if op.rf_id) == 36
    empty = ops[5]  # aten::empty: inputs [[256, 256], 6, "<None>", "cuda", false, "<None>"]
    assert empty.name == "aten::empty"
    assert empty.inputs.types[0] == "GenericList[Int,Int]"
    assert list(empty.outputs.tensors()) == [TensorRef(6, 7, 0, 65536, 4, "cuda:0")]


def test_linear_1_0_1_execution_graph_roots(shared_traces: Path) -> None:
    trace = load_host_trace(shared_traces / "param" / "linear.host_et.json.gz")
    assert len(trace.ops) == 931
    assert {op.name for op in trace.thread_roots()} == {"[pytorch|profiler|execution_graph|thread]"}


def test_allgather_1_0_2_positional_comm_inputs(shared_traces: Path) -> None:
    trace = load_host_trace(shared_traces / "chakra" / "allgather.1.0.2.host_et.json.gz")
    assert trace.schema == "1.0.2-chakra.0.0.4"
    assert len(trace.ops) == 263
    names = Counter(op.name for op in trace.ops)
    assert names["c10d::allgather_"] == names["nccl:all_gather"] == 10
    (group,) = trace.process_groups
    assert (group.pg_name, group.backend_config, group.ranks, group.group_size) == (
        "0", "cuda:nccl", (), 2)  # fmt: skip
    gathers = [op.comm for op in trace.ops if op.comm and op.comm.collective_name == "all_gather"]
    assert len(gathers) == 10
    # record_param_comms id 30: inputs [[[14, 15, 0, 1, 4, "cuda:0"]], 12, 82149104, 0,
    # "all_gather", [], [], 2]; 82149104 is the default group's backend id, so pg "0"
    first = trace.op_by_id()[30].comm
    assert first is not None
    assert (first.seq, first.pg_name, first.pg_size, first.in_msg_nelems) == (12, "0", 2, 1)
    assert first.out_msg_nelems == 2  # two gathered 1-element tensors


def test_resnet_1_0_3_comm_ops(shared_traces: Path) -> None:
    trace = load_host_trace(shared_traces / "param" / "resnet_1gpu.1.0.3.host_et.json.gz")
    assert len(trace.ops) == 14391
    names = Counter(op.name for op in trace.ops)
    assert (names["c10d::allreduce_"], names["c10d::broadcast_"]) == (15, 6)
    comm_names = ("c10d::", "nccl:", "record_param_comms")
    assert sum(n for name, n in names.items() if name.startswith(comm_names)) == 69
    kinds = Counter(op.comm.collective_name for op in trace.ops if op.comm)
    assert kinds == {"allreduce": 15, "broadcast": 6, "wait": 6}
    assert {op.comm.pg_desc for op in trace.ops if op.comm and op.comm.pg_name} == {"default_pg"}


def test_resnet_1_1_0_attrs_and_process_group(shared_traces: Path) -> None:
    trace = load_host_trace(shared_traces / "param" / "resnet_2gpu.1.1.0.host_et.json.gz")
    assert len(trace.ops) == 14392
    (group,) = trace.process_groups
    assert (group.pg_name, group.pg_desc, group.group_size) == ("0", "default_pg", 2)
    broadcast = trace.op_by_id()[437].comm
    assert broadcast is not None
    assert (broadcast.collective_name, broadcast.dtype, broadcast.in_msg_nelems) == (
        "broadcast", "Float", 53120)  # fmt: skip
    assert broadcast.pg_size == 2


def test_pt2_1_1_1_triton_attrs(shared_traces: Path) -> None:
    trace = load_host_trace(shared_traces / "param" / "pt2.1.1.1.host_et.json.gz")
    assert len(trace.ops) == 20
    triton = [op for op in trace.ops if op.name.startswith("triton_")]
    assert len(triton) == 2
    assert all(op.attr("kernel_backend") == "triton" for op in triton)
    assert all(str(op.attr("kernel_file")).endswith(".py") for op in triton)


# --- hand-made traces ------------------------------------------------------------------------


def node(node_id: int, name: str, parent: int, **attrs: Any) -> dict[str, Any]:
    standard = {"rf_id": node_id, "fw_parent": 0, "seq_id": -1, "scope": 0, "tid": 1,
                "fw_tid": 0, "op_schema": ""}  # fmt: skip
    standard.update(attrs)
    return {
        "id": node_id,
        "name": name,
        "ctrl_deps": parent,
        "inputs": {"values": [], "shapes": [], "types": [], "strides": []},
        "outputs": {"values": [], "shapes": [], "types": [], "strides": []},
        "attrs": [{"name": k, "type": "uint64", "value": v} for k, v in standard.items()],
    }


def host_et(schema: str, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"schema": schema, "pid": 7, "time": "2026-01-01 00:00:00", "start_ts": 1,
            "finish_ts": 2, "nodes": nodes}  # fmt: skip


def write(path: Path, document: Any, *, compress: bool = False) -> Path:
    text = json.dumps(document).encode()
    path.write_bytes(gzip.compress(text) if compress else text)
    return path


def minimal_nodes() -> list[dict[str, Any]]:
    return [
        node(1, "[pytorch|profiler|execution_trace|process]", 1, rf_id=0),
        node(2, "[pytorch|profiler|execution_trace|thread]", 1, rf_id=0),
        node(3, "aten::mm", 2),
    ]


@pytest.mark.parametrize(
    "schema", ["1.1.1-chakra.1.0.0", "1.1.1-chakra.0.0.4", "1.0.4-chakra.0.0.4"]
)
def test_every_modern_known_schema_loads_silently(
    tmp_path: Path, schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path / "h.json", host_et(schema, minimal_nodes()))
    with caplog.at_level(logging.WARNING):
        trace = load_host_trace(path)
    assert [op.name for op in trace.ops][-1] == "aten::mm"
    assert trace.notes == () and caplog.records == []


def test_unknown_newer_schema_loads_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path / "h.json.gz", host_et("1.2.0-chakra.1.1.0", minimal_nodes()),
                 compress=True)  # fmt: skip
    with caplog.at_level(logging.WARNING):
        trace = load_host_trace(path)
    assert len(trace.ops) == 3
    assert (trace.version.major, trace.version.minor, trace.version.chakra) == (1, 2, (1, 1, 0))
    assert len(caplog.records) == 1
    assert "unknown host ET schema version '1.2.0-chakra.1.1.0'" in caplog.records[0].message
    assert trace.notes == (caplog.records[0].message.split(": ", 1)[1],)


def test_pytorch_2_13_extras_are_kept(tmp_path: Path) -> None:
    nodes = minimal_nodes()
    nodes[2]["attrs"].append({"name": "tensor_range", "type": "string", "value": "{}"})
    nodes[2]["inputs"] = {
        "values": [[[1, 2, 0, 6, 4, "cpu"], [3, 4, 0, 2, 2, "cpu"]], [[5, 6, 0, 10, 8, "cpu"]]],
        "shapes": [[[2, 3], [2]], [[10]]],
        "types": ["GenericList[Tensor(float),Tensor(c10::Half)]",
                  "GenericList[GenericList[Tensor(double)]]"],
        "strides": [[[3, 1], [1]], [[1]]],
    }  # fmt: skip
    trace = load_host_trace(write(tmp_path / "h.json", host_et("1.1.1-chakra.0.0.4", nodes)))
    mm = trace.op_by_id()[3]
    assert mm.attr("tensor_range") == "{}"
    assert mm.inputs.strides == [[[3, 1], [1]], [[1]]]
    assert [t.tensor_id for t in mm.inputs.tensors()] == [1, 3, 5]
    assert mm.inputs.tensor_bytes() == 6 * 4 + 2 * 2 + 10 * 8


def test_tensors_skip_non_tensor_values() -> None:
    args = OpArgs.of(values=[[1, 2], "<None>", [7, 8, 0, 3, 4, "cuda:0"]],
                     types=["GenericList[Int,Int]", "None", "Tensor(float)"])  # fmt: skip
    assert [t.nbytes for t in args.tensors()] == [12]


def test_process_group_table_and_comm_attrs(tmp_path: Path) -> None:
    groups = [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
               "ranks": [], "group_size": 4, "group_count": 2},
              {"pg_name": "1", "pg_desc": "tp", "backend_config": "cuda:nccl",
               "ranks": [0, 1], "group_size": 2, "group_count": 2}]  # fmt: skip
    init = node(3, "## process_group:init ##", 2)
    init["inputs"] = {"values": [json.dumps(groups)], "shapes": [[]], "types": ["String"]}
    comms = node(4, "record_param_comms", 2)
    comms["attrs"] += [
        {"name": "collective_name", "type": "string", "value": "allreduce"},
        {"name": "dtype", "type": "string", "value": "BFloat16"},
        {"name": "in_msg_nelems", "type": "uint64", "value": 1024},
        {"name": "out_msg_nelems", "type": "uint64", "value": 1024},
        {"name": "pg_name", "type": "string", "value": "1"},
        {"name": "pg_desc", "type": "string", "value": "tp"},
        {"name": "pg_size", "type": "uint64", "value": 2},
    ]
    nodes = [*minimal_nodes()[:2], init, comms]
    trace = load_host_trace(write(tmp_path / "h.json", host_et("1.1.0-chakra.0.0.4", nodes)))
    assert [(g.pg_name, g.ranks, g.group_size) for g in trace.process_groups] == [
        ("0", (), 4), ("1", (0, 1), 2)]  # fmt: skip
    comm = trace.op_by_id()[4].comm
    assert comm is not None
    assert (comm.collective_name, comm.dtype, comm.in_msg_nelems, comm.pg_name, comm.pg_size) == (
        "allreduce", "BFloat16", 1024, "1", 2)  # fmt: skip


def test_node_order_in_file_does_not_matter(tmp_path: Path) -> None:
    nodes = list(reversed(minimal_nodes()))
    trace = load_host_trace(write(tmp_path / "h.json", host_et("1.1.1-chakra.0.0.4", nodes)))
    assert [op.id for op in trace.ops] == [1, 2, 3]


# --- bad input --------------------------------------------------------------------------------

BAD_DOCUMENTS: dict[str, tuple[Any, str]] = {
    "kineto_passed_as_host": ({"traceEvents": [], "schemaVersion": 1}, "this is a Kineto"),
    "no_nodes": ({"schema": "1.0.1", "pid": 1}, "missing required field `nodes`"),
    "no_schema": ({"nodes": []}, "no 'schema' key"),
    "node_without_id": (host_et("1.0.1", [{"name": "x", "parent": 1}]),
                        "missing required field `id` (at nodes[0])"),
    "node_without_parent": (host_et("1.1.1-chakra.0.0.4", [{"id": 5, "name": "x"}]),
                            "node 5 (x) has no ctrl_deps/parent"),
    "string_id": (host_et("1.0.1", [{"id": "a", "name": "x", "parent": 1}]),
                  "Expected `int`, got `str` (at nodes[0].id)"),
    "duplicate_id": (host_et("1.1.1-chakra.0.0.4", [node(3, "a", 1), node(3, "b", 1)]),
                     "node id 3 appears more than once"),
    "array": ([1, 2], "Expected `object`, got `array`"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_DOCUMENTS))
def test_bad_documents_give_one_line_naming_the_file(tmp_path: Path, case: str) -> None:
    document, expected = BAD_DOCUMENTS[case]
    path = write(tmp_path / f"{case}.json", document)
    assert_one_line_error(load_host_trace, path, expected, TraceFormatError)


def test_truncated_json_and_gzip(tmp_path: Path) -> None:
    text = json.dumps(host_et("1.0.1", [])).encode()
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[:-5])
    with pytest.raises(TraceFormatError, match=r"cut\.json: not a valid host execution trace"):
        load_host_trace(cut)
    cut_gz = tmp_path / "cut.json.gz"
    cut_gz.write_bytes(gzip.compress(text)[:-10])
    with pytest.raises(TraceFormatError, match=r"cut\.json\.gz: corrupt or truncated gzip"):
        load_host_trace(cut_gz)
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    with pytest.raises(TraceFormatError, match="empty file"):
        load_host_trace(empty)


def test_equal_names_schemas_and_attrs_are_stored_once(tmp_path: Path) -> None:
    nodes = minimal_nodes()
    for node_id in (10, 11):
        op = node(node_id, "aten::add", 2, op_schema="aten::add(Tensor a) -> Tensor")
        op["attrs"].append({"name": "kernel_backend", "type": "string", "value": "cudnn"})
        nodes.append(op)
    trace = load_host_trace(write(tmp_path / "h.json", host_et("1.1.1-chakra.0.0.4", nodes)))
    first, second = trace.op_by_id()[10], trace.op_by_id()[11]
    assert first.name is second.name and first.op_schema is second.op_schema
    assert first.attrs is second.attrs  # the same tuple of the same HostAttr
    assert first.attr("kernel_backend") == "cudnn"


def test_attr_values_of_different_types_are_not_merged(tmp_path: Path) -> None:
    nodes = minimal_nodes()
    for node_id, value in ((10, 1), (11, True), (12, 1.0)):
        op = node(node_id, "aten::add", 2)
        op["attrs"].append({"name": "flag", "type": "bool", "value": value})
        nodes.append(op)
    ops = load_host_trace(write(tmp_path / "h.json", host_et("1.1.1", nodes))).op_by_id()
    values = [ops[i].attr("flag") for i in (10, 11, 12)]
    assert [type(v) for v in values] == [int, bool, float]


def test_op_args_keep_the_whole_object_and_its_parts() -> None:
    args = OpArgs.of(values=[[1, 2, 0, 3, 4, "cpu"]], shapes=[[3]], types=["Tensor(float)"],
                     strides=[[1]])  # fmt: skip
    assert bytes(args.values_json) == b'[[1,2,0,3,4,"cpu"]]'
    assert bytes(args.shapes_json) == b"[[3]]" and bytes(args.types_json) == b'["Tensor(float)"]'
    assert bytes(args.strides_json) == b"[[1]]" and args.strides == [[1]]
    assert OpArgs.of(values=[]).strides_json is None
    parts = OpArgs.from_parts(args.values_json, args.shapes_json, args.types_json)
    assert parts.values == args.values and parts.types == args.types and parts.strides is None
    assert args.tensor_bytes() == 12


def test_loaded_trace_keeps_no_view_of_the_file_bytes(tmp_path: Path) -> None:
    nodes = minimal_nodes()
    for node_id in (10, 11):
        op = node(node_id, "aten::add", 2)
        op["inputs"] = {"values": [[1, 2, 0, 3, 4, "cpu"]], "shapes": [[3]], "types": ["Tensor"]}
        nodes.append(op)
    path = write(tmp_path / "h.json", host_et("1.1.1-chakra.0.0.4", nodes))
    data = path.read_bytes()
    references = sys.getrefcount(data)
    trace = load_host_trace(path, data)
    assert sys.getrefcount(data) == references  # the arguments were copied out
    first, second = trace.op_by_id()[10], trace.op_by_id()[11]
    assert first.inputs is second.inputs  # equal texts, one copy
    assert first.inputs.values == [[1, 2, 0, 3, 4, "cpu"]]
