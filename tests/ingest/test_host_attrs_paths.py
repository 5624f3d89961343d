"""Host ET attrs: nodes whose standard attrs come first in the usual order (the loader's
fast path) load to the same ops as nodes that list them any other way (the general path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from chakra.errors import TraceFormatError
from chakra.ingest import load_host_trace

STANDARD = (("rf_id", "uint64", 7), ("fw_parent", "uint64", 3), ("seq_id", "int64", -1),
            ("scope", "uint64", 0), ("tid", "uint64", 1), ("fw_tid", "uint64", 0),
            ("op_schema", "string", "aten::add(Tensor a) -> Tensor"))  # fmt: skip
EXTRAS = (("kernel_backend", "string", "cudnn"), ("sizes", "list", [1, 2]),
          ("flag", "bool", True), ("count", "uint64", 1))  # fmt: skip


def _node(node_id: int, attrs: Any) -> dict[str, Any]:
    return {"id": node_id, "name": "aten::add", "ctrl_deps": 2,
            "inputs": {"values": [], "shapes": [], "types": []},
            "outputs": {"values": [], "shapes": [], "types": []},
            "attrs": [{"name": n, "type": t, "value": v} for n, t, v in attrs]}  # fmt: skip


def _load(tmp_path: Path, extra_nodes: list[dict[str, Any]]) -> dict[int, Any]:
    roots = [_node(1, [("rf_id", "uint64", 0)]), _node(2, [("rf_id", "uint64", 0)])]
    roots[0]["name"], roots[0]["ctrl_deps"] = "[pytorch|profiler|execution_trace|process]", 1
    roots[1]["name"], roots[1]["ctrl_deps"] = "[pytorch|profiler|execution_trace|thread]", 1
    document = {"schema": "1.1.1-chakra.0.0.4", "pid": 7, "nodes": roots + extra_nodes}
    path = tmp_path / "h.json"
    path.write_text(json.dumps(document))
    return load_host_trace(path).op_by_id()


def _fields(op: Any) -> dict[str, Any]:
    fields = msgspec.structs.asdict(op)
    del fields["id"]
    fields["attrs"] = [(a.name, a.type, a.value, type(a.value)) for a in op.attrs]
    return fields


def test_standard_order_and_any_order_give_equal_ops(tmp_path: Path) -> None:
    shuffled = [STANDARD[3], *EXTRAS[:2], *STANDARD[4:], *STANDARD[:3], *EXTRAS[2:]]
    hashable = STANDARD + EXTRAS[:1] + EXTRAS[2:]
    ops = _load(tmp_path, [_node(10, STANDARD + EXTRAS), _node(11, shuffled),
                           _node(12, hashable), _node(13, hashable)])  # fmt: skip
    assert _fields(ops[10]) == _fields(ops[11])
    assert ops[12].attrs is ops[13].attrs  # equal extras: one shared tuple
    assert [type(a.value) for a in ops[10].attrs] == [str, list, bool, int]


def test_a_standard_attr_named_again_takes_the_later_value(tmp_path: Path) -> None:
    ops = _load(tmp_path, [_node(10, (*STANDARD, ("seq_id", "int64", 42)))])
    assert ops[10].seq_id == 42 and ops[10].attrs == ()


def test_integer_attrs_given_as_text_or_float_are_read_as_integers(tmp_path: Path) -> None:
    attrs = list(STANDARD)
    attrs[2], attrs[3] = ("seq_id", "int64", "5"), ("scope", "uint64", 2.0)
    ops = _load(tmp_path, [_node(10, attrs)])
    assert (ops[10].seq_id, ops[10].scope) == (5, 2)


@pytest.mark.parametrize(
    ("value", "message"), [(True, "is not an integer"), (2**63, "is outside int64")]
)
def test_a_bad_integer_attr_names_the_node(tmp_path: Path, value: Any, message: str) -> None:
    attrs = list(STANDARD)
    attrs[4] = ("tid", "uint64", value)
    with pytest.raises(TraceFormatError, match=f"node 10: attr 'tid' {message}"):
        _load(tmp_path, [_node(10, attrs)])
