"""Build protobuf Chakra ET nodes from ET+ nodes and their classification."""

from __future__ import annotations

from typing import Any, Optional

import msgspec

from chakra.convert.classify import Classified
from chakra.convert.et_plus_input import EtPlusNode
from chakra.et.attributes import add_attr
from chakra.et.node_fields import AttrPieces, io_info
from chakra.et.schema import Node, NodeType
from chakra.ingest.host_json import ARGS_DECODER

#: Host attrs copied onto every node, as the reference converter writes them.
INT_ATTRS = ("rf_id", "fw_parent", "seq_id", "scope", "tid", "fw_tid")


def _io(raw: msgspec.Raw, outputs: bool) -> bytes:
    """The serialized IOInfo with the JSON text of values, shapes and types (empty when the
    node has none)."""
    if bytes(memoryview(raw)[:1]) != b"{":
        return b""
    args = ARGS_DECODER.decode(raw)
    return io_info(outputs, bytes(args.values), bytes(args.shapes), bytes(args.types))


_PIECES = AttrPieces(frozenset({"rf_id", "seq_id", "segment_of", "delay_before"}))


def _micros(value: Any) -> int:
    return max(round(value), 0) if isinstance(value, (int, float)) else 0


def _add_exact_duration(out: Any, value: Any) -> None:
    """``duration_micros`` is a whole number; a fractional duration is also kept exactly as
    ``duration_ns`` (the simulator prefers it), so that replays do not drift."""
    if isinstance(value, float) and value > 0:
        nanos = round(value * 1000)
        if nanos != out.duration_micros * 1000:
            out.attr.add(name="duration_ns", int64_val=nanos)


def build_node(
    node: EtPlusNode,
    kind: Classified,
    data_deps: list[int],
    parent: Any,
    own_us: Optional[float] = None,
) -> Any:
    """One Chakra node. Duration: a GPU op's measured duration; for a CPU op, ``own_us``
    (its first segment, see convert/segments.py) when it was split, else its exclusive
    time."""
    duration = node.dur if node.is_gpu else node.exclusive_dur
    if node.is_gpu and duration is None:
        duration = node.inclusive_dur
    if own_us is not None:
        duration = own_us
    out = Node(id=node.id, name=node.name, type=kind.node_type, data_deps=data_deps,
               duration_micros=_micros(duration))  # fmt: skip
    _add_exact_duration(out, duration)
    if node.ts is not None:  # the measured start, for measured-vs-simulated comparisons
        out.start_time_micros = _micros(node.ts)
    if parent is not None:
        out.ctrl_deps.append(parent)
    # inputs, outputs and the common attrs as serialized pieces, merged in one call (the
    # hot path of large conversions; see chakra.et.node_fields)
    pieces = [_io(node.inputs, False), _io(node.outputs, True)]
    values = {a.name: a.value for a in node.attrs}
    for name in INT_ATTRS:
        value = values.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            pieces.append(_PIECES.int64(name, value))
    pieces.append(_PIECES.string("op_schema", str(values.get("op_schema") or "")))
    pieces.append(_PIECES.boolean("is_cpu_op", kind.is_cpu_op))
    if node.is_gpu:
        if node.stream is not None:
            pieces.append(_PIECES.int64("stream", node.stream))
        if node.device is not None:
            pieces.append(_PIECES.int64("device", node.device))
    out.MergeFromString(b"".join(pieces))
    _comm_attrs(out, kind)
    return out


def _comm_attrs(out: Any, kind: Classified) -> None:
    if kind.process_groups is not None:
        add_attr(out, "process_groups", kind.process_groups)
    if kind.comm_type is not None:
        add_attr(out, "comm_type", int(kind.comm_type))
    if kind.node_type in (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE,
                          NodeType.COMM_RECV_NODE):  # fmt: skip
        add_attr(out, "comm_size", kind.comm_size or 0)
    if kind.pg_name:
        add_attr(out, "pg_name", kind.pg_name)
    if kind.pg_ranks:
        add_attr(out, "pg_ranks", list(kind.pg_ranks), "int64_list")


def idle_node(node_id: int, before: EtPlusNode, duration_us: float, data_deps: list[int]) -> Any:
    """The measured idle time before a top-level CPU op, as a CPU node on its thread."""
    out = Node(id=node_id, name="[idle]", type=NodeType.COMP_NODE, data_deps=data_deps,
               duration_micros=_micros(duration_us))  # fmt: skip
    _add_exact_duration(out, duration_us)
    if before.ts is not None:
        out.start_time_micros = _micros(before.ts - duration_us)
    if before.ctrl_deps is not None:
        out.ctrl_deps.append(before.ctrl_deps)
    tid = before.attr("tid")
    if isinstance(tid, int):
        add_attr(out, "tid", tid)
    add_attr(out, "is_cpu_op", True)
    add_attr(out, "idle_before", before.id)
    return out


def _cpu_node(node_id: int, name: str, op: EtPlusNode, start_us: Any, duration_us: Any,
              data_deps: list[int], marker: str, tid: bool = True) -> Any:  # fmt: skip
    """A CPU node for part of ``op``'s time; ``marker`` names the attr holding ``op``'s id."""
    out = Node(id=node_id, name=name, type=NodeType.COMP_NODE, data_deps=data_deps,
               duration_micros=_micros(duration_us))  # fmt: skip
    _add_exact_duration(out, duration_us)
    if start_us is not None:
        out.start_time_micros = _micros(start_us)
    out.ctrl_deps.append(op.id)
    value = op.attr("tid")
    pieces = []
    if tid and isinstance(value, int):
        pieces.append(_PIECES.int64("tid", value))
    pieces.append(_PIECES.boolean("is_cpu_op", True))
    pieces.append(_PIECES.int64(marker, op.id))
    out.MergeFromString(b"".join(pieces))
    return out


def segment_node(segment: Any, op: EtPlusNode, data_deps: list[int]) -> Any:
    """A later segment of a host op's own time, on the op's thread."""
    return _cpu_node(segment.node_id, op.name, op, segment.start, segment.end - segment.start,
                     data_deps, "segment_of")  # fmt: skip


def delay_node(delay: Any, before: EtPlusNode, data_deps: list[int]) -> Any:
    """The measured wait before a node started; no ``tid``, so it holds no resource."""
    return _cpu_node(delay.node_id, "[delay]", before, delay.start_us, delay.duration_us,
                     data_deps, "delay_before", tid=False)  # fmt: skip
