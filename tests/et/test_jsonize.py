"""JSON rendering of .et files: one valid document, or JSON Lines."""

from __future__ import annotations

import json
from pathlib import Path

from chakra.et import GlobalMetadata, Node, NodeType, set_attr, write_et
from chakra.et.jsonize import jsonize_et


def small_trace(tmp_path: Path) -> Path:
    path = tmp_path / "small.et"
    gpu = Node(id=2, name="gemm", type=NodeType.COMP_NODE, data_deps=[1], duration_micros=15)
    set_attr(gpu, "is_cpu_op", False)
    set_attr(gpu, "stream", 7)
    write_et(path, GlobalMetadata(version="0.0.4"), [Node(id=1, name="mm"), Node(name="x"), gpu])
    return path


def test_default_output_is_one_json_document(tmp_path: Path) -> None:
    out = tmp_path / "small.json"
    assert jsonize_et(small_trace(tmp_path), out) == 3
    document = json.loads(out.read_text())
    assert document == {
        "globalMetadata": {"version": "0.0.4"},
        "nodes": [
            {"id": "1", "name": "mm"},
            {"name": "x"},
            {
                "id": "2",
                "name": "gemm",
                "type": "COMP_NODE",
                "dataDeps": ["1"],
                "durationMicros": "15",
                "attr": [
                    {"name": "is_cpu_op", "boolVal": False},
                    {"name": "stream", "int64Val": "7"},
                ],
            },
        ],
    }


def test_jsonl_has_metadata_then_one_node_per_line(tmp_path: Path) -> None:
    out = tmp_path / "small.jsonl"
    jsonize_et(small_trace(tmp_path), out, jsonl=True)
    lines = out.read_text().splitlines()
    assert len(lines) == 4
    assert json.loads(lines[0]) == {"version": "0.0.4"}
    assert [json.loads(line).get("id") for line in lines[1:]] == ["1", None, "2"]


def test_feeder_trace_renders_every_node(shared_traces: Path, tmp_path: Path) -> None:
    out = tmp_path / "feeder.json"
    assert jsonize_et(shared_traces / "chakra" / "feeder_trace.et.gz", out) == 3664
    document = json.loads(out.read_text())
    assert len(document["nodes"]) == 3664
    assert document["nodes"][0]["id"] == "216"
    assert {a["name"] for a in document["globalMetadata"]["attr"]} == {
        "schema",
        "pid",
        "time",
        "start_ts",
        "finish_ts",
    }
