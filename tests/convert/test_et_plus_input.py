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


def linked_et_plus(tmp_path: Path, name: str = "rank0.json") -> Path:
    from chakra.link import LinkOptions
    from chakra.link.batch import link_files
    from tests.conftest import REPO_ROOT

    data = REPO_ROOT / "tests" / "data" / "pytorch213" / "single"
    et_plus = tmp_path / name
    link_files(data / "host_et.json.gz", data / "kineto.json.gz", et_plus, LinkOptions())
    return et_plus


def test_our_et_plus_read_by_lines_equals_the_whole_document_decode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chakra.convert import et_plus_input, et_plus_lines

    for name in ("rank0.json", "rank0.json.gz"):
        path = linked_et_plus(tmp_path, name)
        assert et_plus_lines.read_by_lines(path, et_plus_input._DECODER, lambda r: r) is not None
        by_lines = load_et_plus(path)
        with monkeypatch.context() as patched:
            patched.setattr(et_plus_input, "read_by_lines", lambda *args: None)
            whole = load_et_plus(path)
        assert by_lines == whole and len(by_lines.nodes) > 100


def test_a_bad_line_is_reported_as_the_whole_document_decode_reports_it(tmp_path: Path) -> None:
    path = linked_et_plus(tmp_path)
    lines = path.read_bytes().split(b"\n")
    lines[5] = lines[5].replace(b'"ts":', b'"ts":"late","was":', 1)
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(TraceFormatError) as info:
        load_et_plus(path)
    assert "nodes[2].ts" in str(info.value)
