"""Loading ET+ JSON: nodes decoded one at a time, repeated values stored once, errors located."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chakra.convert.et_plus_input import load_et_plus
from chakra.errors import TraceFormatError


def et_plus_node(node_id: int, rf_id: Any, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "name": "aten::mm", "ctrl_deps": 1, "ts": 10.0 + node_id,
            "inclusive_dur": 1.0, "exclusive_dur": 1.0,
            "attrs": [{"name": "rf_id", "type": "uint64", "value": rf_id},
                      {"name": "tid", "type": "uint64", "value": 1}], **extra}  # fmt: skip


def write(path: Path, nodes: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"schema": "1.1.1-chakra.0.0.4", "nodes": nodes}))
    return path


def test_repeated_names_and_attrs_are_one_object(tmp_path: Path) -> None:
    trace = load_et_plus(write(tmp_path / "p.json", [et_plus_node(2, 5), et_plus_node(3, 6)]))
    first, second = trace.nodes
    assert first.name is second.name
    assert first.attrs[1] is second.attrs[1]  # tid 1 on both
    assert (first.attr("rf_id"), second.attr("rf_id")) == (5, 6)


def test_equal_comparing_values_of_other_types_stay_apart(tmp_path: Path) -> None:
    nodes = [et_plus_node(2, 1), et_plus_node(3, True), et_plus_node(4, 1.0)]
    trace = load_et_plus(write(tmp_path / "p.json", nodes))
    assert [type(n.attr("rf_id")) for n in trace.nodes] == [int, bool, float]


def test_a_bad_node_is_named_by_its_position(tmp_path: Path) -> None:
    path = write(tmp_path / "p.json", [et_plus_node(2, 5), et_plus_node(3, 6, ts="late")])
    with pytest.raises(TraceFormatError) as info:
        load_et_plus(path)
    assert "nodes[1].ts" in str(info.value) and str(path) in str(info.value)
