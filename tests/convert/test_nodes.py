"""Serialized Chakra nodes built from ET+ nodes: fields checked by hand after parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra.convert import ConvertOptions, convert_et_plus, load_et_plus
from chakra.convert.classify import Classified
from chakra.convert.et_plus_input import EtPlusAttr, EtPlusNode, NodePayload
from chakra.convert.nodes import build_node, delay_node, idle_node
from chakra.errors import ChakraError
from chakra.et.schema import CollectiveCommType, Node, NodeType

KERNEL = EtPlusNode(id=7, name="gemm", ctrl_deps=3, ts=100.25, dur=2.5, cat="kernel",
                    stream=20, device=0,
                    attrs=[EtPlusAttr("rf_id", "uint64", 11), EtPlusAttr("tid", "uint64", 4),
                           EtPlusAttr("op_schema", "string", "aten::mm(...)")])  # fmt: skip


def attrs(node) -> dict:
    return {a.name: getattr(a, a.WhichOneof("value")) for a in node.attr}


def test_gpu_node_fields() -> None:
    node = Node.FromString(build_node(KERNEL, Classified(NodeType.COMP_NODE, False), [3, 5], 3))
    assert (node.id, node.name, node.type) == (7, "gemm", NodeType.COMP_NODE)
    assert list(node.ctrl_deps) == [3] and list(node.data_deps) == [3, 5]
    assert (node.start_time_micros, node.duration_micros) == (100, 2)  # 2.5 rounds to even
    assert attrs(node) == {"duration_ns": 2500, "rf_id": 11, "tid": 4,
                           "op_schema": "aten::mm(...)", "is_cpu_op": False, "stream": 20,
                           "device": 0}  # fmt: skip
    assert not node.HasField("inputs")


def test_payload_replaces_the_nodes_own_fields() -> None:
    payload = NodePayload(id=7, inputs=b'{"values":[1],"shapes":[[]],"types":["Int"]}',
                          attrs=[EtPlusAttr("seq_id", "int64", -1)])  # fmt: skip
    kind = Classified(NodeType.COMM_COLL_NODE, False, CollectiveCommType.ALL_GATHER, 64, "0")
    node = Node.FromString(build_node(KERNEL, kind, [], None, None, payload))
    assert (node.inputs.values, node.inputs.shapes, node.inputs.types) == ("[1]", "[[]]",
                                                                           '["Int"]')  # fmt: skip
    assert list(node.ctrl_deps) == [] and node.type == NodeType.COMM_COLL_NODE
    assert attrs(node) == {"duration_ns": 2500, "seq_id": -1, "op_schema": "",
                           "is_cpu_op": False, "stream": 20, "device": 0,
                           "comm_type": int(CollectiveCommType.ALL_GATHER), "comm_size": 64,
                           "pg_name": "0"}  # fmt: skip


def test_idle_and_delay_nodes() -> None:
    idle = Node.FromString(idle_node(90, KERNEL, 0.75, [8], 3))
    assert (idle.name, list(idle.ctrl_deps), list(idle.data_deps)) == ("[idle]", [3], [8])
    assert (idle.start_time_micros, idle.duration_micros) == (100, 1)  # 99.5 -> 100, 0.75 -> 1
    assert attrs(idle) == {"duration_ns": 750, "tid": 4, "is_cpu_op": True, "idle_before": 7}

    class Delay:
        node_id, start_us, duration_us = 91, 98.0, 2.0

    # a delay's parent is the delayed op's parent, never the op itself: the op lists the
    # delay among its data_deps, so a ctrl_deps on the op would close a cycle
    delay = Node.FromString(delay_node(Delay, KERNEL, [1, 2], 3))
    assert (delay.name, list(delay.ctrl_deps), delay.duration_micros) == ("[delay]", [3], 2)
    assert attrs(delay) == {"is_cpu_op": True, "delay_before": 7}  # no tid: no resource


def test_negative_ids_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    node = {"id": -2, "name": "aten::mm", "ts": 1.0, "inclusive_dur": 1.0, "exclusive_dur": 1.0}
    path.write_text(json.dumps({"schema": "1.1.1-chakra.0.0.4", "nodes": [node]}))
    with pytest.raises(ChakraError, match="node id -2 is negative"):
        convert_et_plus(load_et_plus(path), ConvertOptions())
