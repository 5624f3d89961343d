"""Converting the shared host ETs, linked real traces and reference-style ET+."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra.convert import ConvertOptions, convert_et_plus, convert_file, load_et_plus
from chakra.convert.cycles import leftover_after_kahn
from chakra.errors import ChakraError
from chakra.et import NodeType, get_bool_attr, get_int_attr, get_str_attr, read_et
from chakra.et.graph_checks import ValidationOptions, validate_nodes
from chakra.link.batch import link_files
from chakra.link.linked_trace import LinkOptions
from tests.conftest import REPO_ROOT

HOST_ETS = ["chakra/allgather.1.0.2.host_et.json.gz", "param/resnet_1gpu.1.0.3.host_et.json.gz",
            "param/resnet_2gpu.1.1.0.host_et.json.gz", "param/pt2.1.1.1.host_et.json.gz",
            "hta/simple_add.host_et.json.gz", "param/linear.host_et.json.gz"]  # fmt: skip


def assert_sound(graph) -> None:
    ids = {n.id for n in graph.nodes}
    assert len(ids) == len(graph.nodes)
    for node in graph.nodes:
        assert set(node.data_deps) <= ids and set(node.ctrl_deps) <= ids
        assert get_bool_attr(node, "is_cpu_op") is not None
    deps = {n.id: set(n.data_deps) for n in graph.nodes}
    assert leftover_after_kahn(deps, ids) == set()
    report = validate_nodes(graph.nodes, ValidationOptions(require_streams=True))
    assert report.ok, report.problems[:3]
    assert graph.report.cycles_broken == [] and graph.report.dropped_edges == {}


@pytest.mark.parametrize("name", HOST_ETS)
@pytest.mark.slow
def test_every_shared_host_et_converts(shared_traces: Path, name: str) -> None:
    graph = convert_et_plus(load_et_plus(shared_traces / name), ConvertOptions())
    assert_sound(graph)


def test_allgather_1_0_2(shared_traces: Path) -> None:
    graph = convert_et_plus(load_et_plus(shared_traces / HOST_ETS[0]), ConvertOptions())
    gathers = [n for n in graph.nodes if n.type == NodeType.COMM_COLL_NODE]
    assert len(gathers) == 10
    # each gathers one float32 per rank: 4 bytes in, on the default group "0" (ASTRA-sim's 1)
    assert {(get_int_attr(n, "comm_type"), get_int_attr(n, "comm_size"),
             get_str_attr(n, "pg_name"), get_str_attr(n, "pg_name_original"))
            for n in gathers} == {(2, 4, "1", "0")}  # fmt: skip


@pytest.mark.slow
def test_resnet_1_1_0_metadata_node(shared_traces: Path) -> None:
    et_plus = load_et_plus(shared_traces / HOST_ETS[2])
    # by default no METADATA node (it aborts ASTRA-sim): a CPU node keeps the table
    graph = convert_et_plus(et_plus, ConvertOptions())
    assert not [n for n in graph.nodes if n.type == NodeType.METADATA_NODE]
    (init,) = [n for n in graph.nodes if "process_group:init" in n.name]
    assert init.type == NodeType.COMP_NODE and get_bool_attr(init, "is_cpu_op") is True
    (group,) = json.loads(get_str_attr(init, "process_groups"))
    assert (group["pg_name"], group["group_size"]) == ("0", 2)
    # asked for, the METADATA node in ASTRA-sim's form: a Python literal holding one JSON
    # text, read after cutting two characters from each end; group "0" has ASTRA-sim id 1
    graph = convert_et_plus(et_plus, ConvertOptions(process_group_metadata=True))
    (metadata,) = [n for n in graph.nodes if n.type == NodeType.METADATA_NODE]
    value = metadata.inputs.values
    assert value.startswith("['[{") and value.endswith("}]']")
    assert json.loads(value[2:-2]) == [{"pg_name": "1", "ranks": [0, 1], "pg_name_original": "0"}]
    collectives = [n for n in graph.nodes if n.type == NodeType.COMM_COLL_NODE]
    assert sorted(get_int_attr(n, "comm_type") for n in collectives) == [0] * 15 + [5] * 6


@pytest.mark.parametrize(
    ("host", "device"),
    [("hta/simple_add.host_et.json.gz", "hta/simple_add.kineto.json.gz"),
     ("param/linear.host_et.json.gz", "param/linear.kineto.json.gz")],
)  # fmt: skip
def test_linked_real_traces_convert(shared_traces: Path, tmp_path: Path, host, device) -> None:
    et_plus = tmp_path / "et_plus.json"
    link_files(shared_traces / host, shared_traces / device, et_plus, LinkOptions())
    first, second = tmp_path / "a.et", tmp_path / "b.et.gz"
    report = convert_file(et_plus, first)
    convert_file(et_plus, second)
    graph = convert_et_plus(load_et_plus(et_plus), ConvertOptions())
    assert report == graph.report
    assert [n.SerializeToString() for n in graph.nodes] == [
        n.SerializeToString() for n in read_et(first)[1]]  # fmt: skip
    assert_sound(graph)
    gpu = [n for n in graph.nodes if get_bool_attr(n, "is_cpu_op") is False]
    assert gpu and all(get_int_attr(n, "stream") == 7 for n in gpu)
    import gzip

    assert gzip.decompress(second.read_bytes()) == first.read_bytes()  # deterministic


def test_gloo_fixture_collectives_are_host_thread_comm_nodes(tmp_path: Path) -> None:
    data = REPO_ROOT / "tests" / "data" / "pytorch213" / "gloo_2rank"
    et_plus = tmp_path / "rank0.json"
    link_files(data / "rank0.host_et.json.gz", data / "rank0.kineto.json.gz", et_plus,
               LinkOptions())  # fmt: skip
    graph = convert_et_plus(load_et_plus(et_plus), ConvertOptions())
    assert_sound(graph)
    comm = [n for n in graph.nodes if n.type != NodeType.COMP_NODE and
            n.type != NodeType.METADATA_NODE]  # fmt: skip
    assert {n.name.split(":")[0] for n in comm} == {"gloo"}
    # ASTRA-sim refuses communication on the CPU: is_cpu_op false, runs_on_host, no stream
    assert all(get_bool_attr(n, "is_cpu_op") is False for n in comm)
    assert all(get_bool_attr(n, "runs_on_host") and get_int_attr(n, "stream") is None
               for n in comm)  # fmt: skip
    types = sorted((NodeType(n.type).name, get_int_attr(n, "comm_type")) for n in comm)
    assert ("COMM_SEND_NODE", None) in types and ("COMM_COLL_NODE", 6) in types


def reference_style_et_plus(path: Path, nodes: list) -> Path:
    document = {"schema": "1.1.0-chakra.0.0.4", "pid": 1, "time": "t", "start_ts": 0,
                "finish_ts": 1, "nodes": nodes}  # fmt: skip
    path.write_text(json.dumps(document))
    return path


def ref_node(node_id: int, name: str, parent: int, **extra) -> dict:
    attrs = [{"name": "rf_id", "type": "uint64", "value": node_id},
             {"name": "tid", "type": "uint64", "value": 1}]  # fmt: skip
    return {"id": node_id, "name": name, "ctrl_deps": parent, "attrs": attrs,
            "inputs": {"values": [], "shapes": [], "types": []},
            "outputs": {"values": [], "shapes": [], "types": []}, **extra}  # fmt: skip


def test_reference_linker_output_gets_stream_order_and_syncs(tmp_path: Path) -> None:
    nodes = [
        ref_node(1, "[pytorch|profiler|execution_trace|process]", 1),
        ref_node(2, "[pytorch|profiler|execution_trace|thread]", 1),
        ref_node(3, "aten::mm", 2, ts=10, inclusive_dur=5, exclusive_dur=5),
        ref_node(4, "aten::add", 2, ts=20, inclusive_dur=5, exclusive_dur=5, sync_dep=[6]),
        ref_node(5, "gemm", 3, cat="kernel", ph="X", ts=12, inclusive_dur=4, stream=7),
        ref_node(6, "add_kernel", 3, cat="kernel", ph="X", ts=17, inclusive_dur=2, stream=7),
    ]
    graph = convert_et_plus(load_et_plus(reference_style_et_plus(tmp_path / "r.json", nodes)),
                            ConvertOptions())  # fmt: skip
    deps = {n.id: list(n.data_deps) for n in graph.nodes}
    # kernel 6 started at 17, 1 us after its last dependency ended (kernel 5 at 16): a
    # delay node (no resource) replays that gap and carries the dependencies
    (delay,) = deps[6]
    assert deps[delay] == [3, 5]  # launched by op 3, after kernel 5 on stream 7
    assert {n.id: n.duration_micros for n in graph.nodes}[delay] == 1
    (wait,) = deps[4]  # op 4 started 1 us after kernel 6 ended (sync_dep): a delay again
    assert 6 in deps[wait]
    assert [n.duration_micros for n in graph.nodes if n.id in (5, 6)] == [4, 2]


def test_repeated_ids_and_unknown_deps(tmp_path: Path) -> None:
    base = [ref_node(1, "[pytorch|profiler|execution_trace|process]", 1),
            ref_node(2, "x", 1, ts=1, exclusive_dur=1)]  # fmt: skip
    repeated = reference_style_et_plus(tmp_path / "rep.json", [*base, ref_node(2, "y", 1, ts=2)])
    with pytest.raises(ChakraError, match=r"rep\.json: 1 node ids repeat \(e\.g\. 2\)"):
        convert_et_plus(load_et_plus(repeated), ConvertOptions())
    dangling = reference_style_et_plus(
        tmp_path / "dangling.json",
        [*base, ref_node(3, "z", 1, ts=3, exclusive_dur=1, inter_thread_dep=99, sync_dep=[98])],
    )
    graph = convert_et_plus(load_et_plus(dangling), ConvertOptions())
    assert graph.report.dropped_edges == {"host_sync": 1, "inter_thread": 1}
    assert any("dependencies to unknown nodes dropped" in w for w in graph.report.warnings)
    known_ids = {n.id for n in graph.nodes}
    assert all(set(n.data_deps) <= known_ids for n in graph.nodes)
