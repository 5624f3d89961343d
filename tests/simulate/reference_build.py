"""The graph builder as it was before the array-based one (kept as a reference for
``test_build.py``): a dictionary from id to position and preds/succs rows built in Python."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from typing import Any, Optional

from chakra.et.attributes import INTEGER_KINDS
from chakra.et.schema import NodeType
from chakra.simulate.resources import Resource
from chakra.simulate.sim_graph import NO_RESOURCE, CommKey, SimGraph, SimulationError

COMM_TYPES = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)


def _attrs(node: Any) -> dict[str, Any]:
    """The attributes the simulator reads, in one pass over the node's list. Raises
    SimulationError for a tid, stream, device or duration_ns holding no integer."""
    values = {}
    for attr in node.attr:
        if attr.name in _READ:
            kind = attr.WhichOneof("value")
            if attr.name in _INTEGER and kind is not None and kind not in INTEGER_KINDS:
                raise SimulationError(
                    f"node {node.id} ({node.name}): attribute {attr.name} holds {kind}, "
                    "not an integer"
                )
            values[attr.name] = getattr(attr, kind) if kind is not None else None
    return values


_INTEGER = frozenset({"tid", "stream", "device", "duration_ns"})


_READ = frozenset({"is_cpu_op", "tid", "stream", "device", "comm_type", "comm_size", "pg_name",
                   "duration_ns", "segment_of"})  # fmt: skip


def _resource_key(values: dict[str, Any], serialize_gpu: bool) -> Optional[Resource]:
    if values.get("is_cpu_op", False):  # absent: a GPU node, as the feeder reads it
        tid = values.get("tid")
        return Resource("thread", 0, int(tid)) if tid is not None else None
    device = int(values.get("device") or 0)
    if serialize_gpu:  # the reference before stream ids: one GPU slot for all streams
        return Resource("stream", device, "all")
    stream = values.get("stream")
    return Resource("stream", device, int(stream) if stream is not None else 0)


def _comm_key(node_type: int, values: dict[str, Any], group_count: dict[str, int]) -> CommKey:
    pg = str(values.get("pg_name") or "")
    comm_type = values.get("comm_type")
    is_coll = node_type == NodeType.COMM_COLL_NODE
    key = CommKey(pg, group_count.get(pg, 0),
                  int(comm_type) if is_coll and comm_type is not None else -1,
                  int(values.get("comm_size") or 0))  # fmt: skip
    group_count[pg] = group_count.get(pg, 0) + 1
    return key


def _csr(rows: list[list[int]]) -> tuple[array, array]:
    start = array("q", [0])
    flat = array("q")
    for row in rows:
        flat.extend(row)
        start.append(len(flat))
    return flat, start


def reference_build_graph(
    nodes: Iterable[Any], rank: int = 0, serialize_gpu: bool = False
) -> SimGraph:
    """Index ``nodes`` (any order). Raises SimulationError for a repeated id or a
    dependency on an id that no node has. Resources: a host node runs on its thread
    (``tid``), a GPU node on its (device, stream), or, with ``serialize_gpu``, all GPU
    nodes of a device on one slot; a node with neither waits for no resource."""
    ids, names, durations, measured = array("q"), [], array("d"), array("d")
    resource, resources, index_of = array("q"), [], {}
    resource_index: dict[Resource, int] = {}
    raw_deps: list[Any] = []
    comm: dict[int, CommKey] = {}
    group_count: dict[str, int] = {}
    parent_id, segment_of = array("q"), {}
    for position, node in enumerate(nodes):
        if node.id in index_of:
            raise SimulationError(f"rank {rank}: node id {node.id} appears twice")
        index_of[node.id] = position
        if node.id >= 1 << 63:
            raise SimulationError(f"node {node.id} ({node.name}): its id is 2^63 or more (the "
                                  "simulator keeps ids as int64)")  # fmt: skip
        ids.append(node.id)
        names.append(node.name)
        durations.append(float(node.duration_micros))
        measured.append(float(node.start_time_micros) if node.start_time_micros else -1.0)
        values = _attrs(node)
        if values.get("duration_ns") is not None:  # exact duration of a fractional-µs op
            durations[-1] = values["duration_ns"] / 1000.0
        key = _resource_key(values, serialize_gpu)
        if key is None:
            resource.append(NO_RESOURCE)
        else:
            resource.append(resource_index.setdefault(key, len(resource_index)))
        raw_deps.append(list(node.data_deps))
        parents = list(node.ctrl_deps)
        parent_id.append(parents[0] if parents and parents[0] < 1 << 63 else -1)
        op_id = values.get("segment_of")
        if type(op_id) is int:
            segment_of[position] = op_id
        if node.type in COMM_TYPES:
            try:
                comm[position] = _comm_key(node.type, values, group_count)
            except (TypeError, ValueError, OverflowError) as exc:
                raise SimulationError(f"node {node.id} ({node.name}): an attribute holds a "
                                      f"value of the wrong kind ({exc})") from None  # fmt: skip
    resources = [None] * len(resource_index)
    for key, index in resource_index.items():
        resources[index] = key
    pred_rows: list[list[int]] = []
    succ_rows: list[list[int]] = [[] for _ in ids]
    for position, deps in enumerate(raw_deps):
        row = []
        for dep in deps:
            source = index_of.get(dep)
            if source is None:
                raise SimulationError(
                    f"rank {rank}: node {ids[position]} ({names[position]}) depends on "
                    f"unknown node {dep}"
                )
            row.append(source)
            succ_rows[source].append(position)
        pred_rows.append(row)
    for position, duration in enumerate(durations):
        if not (math.isfinite(duration) and 0 <= duration < float(1 << 63) / 1000.0):
            raise SimulationError(
                f"node {ids[position]} ({names[position]}): duration {duration} µs is "
                "negative, not finite or 2^63 ns or more"
            )
    preds, pred_start = _csr(pred_rows)
    succs, succ_start = _csr(succ_rows)
    return SimGraph(rank, ids, names, durations, resource, resources, preds, pred_start,
                    succs, succ_start, measured, comm, None, parent_id, segment_of)  # fmt: skip
