"""Build serialized Chakra ET nodes from ET+ nodes and their classification.

Each builder returns a ``Node`` message's bytes, assembled from serialized pieces (see
:mod:`chakra.et.node_fields`) rather than through a message object: the hot path of large
conversions (benchmarks/convert_throughput.py). ``tests/convert/test_nodes.py`` checks them
against protobuf's own messages.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import msgspec

from chakra.convert.classify import Classified
from chakra.convert.et_plus_input import EtPlusNode, NodePayload
from chakra.et.attributes import add_attr
from chakra.et.node_fields import (
    AttrPieces,
    NodeHeads,
    bool_attr,
    int64_entries,
    io_info,
    remember,
)
from chakra.et.schema import Node, NodeType
from chakra.ingest.host_json import ARGS_DECODER

#: Host attrs copied onto every node, as the reference converter writes them.
INT_ATTRS = ("rf_id", "fw_parent", "seq_id", "scope", "tid", "fw_tid")
COMM_NODE_TYPES = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)
_COMP = int(NodeType.COMP_NODE)


def _io(raw: msgspec.Raw, outputs: bool) -> bytes:
    """The serialized IOInfo with the JSON text of values, shapes and types (empty when the
    node has none); remembered for the texts seen before (a GPU op repeats its launching
    op's), up to a bound."""
    text = bytes(raw)
    cache = _OUTPUTS if outputs else _INPUTS
    piece = cache.get(text)
    if piece is not None:
        return piece
    if text[:1] != b"{":
        return remember(cache, text, b"", _IO_CACHE_LIMIT)
    args = ARGS_DECODER.decode(text)
    piece = io_info(outputs, args.values, args.shapes, args.types)
    return remember(cache, text, piece, _IO_CACHE_LIMIT)


_IO_CACHE_LIMIT = 1 << 12  # keys are whole JSON texts: a few hundred bytes each
_INPUTS: dict[bytes, bytes] = {}
_OUTPUTS: dict[bytes, bytes] = {}


_PIECES = AttrPieces()
_HEADS = NodeHeads()
_COMM_PIECES: dict[Classified, bytes] = {}


def _micros(value: Any) -> int:
    return max(round(value), 0) if isinstance(value, (int, float)) else 0


def _duration(value: Any) -> tuple[int, bytes]:
    """``duration_micros`` (a whole number) and, for a fractional duration, the exact one as
    ``duration_ns`` (the simulator prefers it), so that replays do not drift."""
    if isinstance(value, float):
        micros = max(round(value), 0)
        if value > 0:
            nanos = round(value * 1000)
            if nanos != micros * 1000:
                return micros, _PIECES.int64("duration_ns", nanos)
        return micros, b""
    return (max(round(value), 0) if isinstance(value, int) else 0), b""


def build_node(
    node: EtPlusNode,
    kind: Classified,
    data_deps: list[int],
    parent: Optional[int],
    own_us: Optional[float] = None,
    payload: Union[EtPlusNode, NodePayload, None] = None,
    holds_thread: bool = True,
    start_us: Optional[float] = None,
) -> bytes:
    """One Chakra node. Duration: a GPU op's measured duration; for a CPU op, ``own_us``
    (its first segment, see convert/segments.py) when it was split, else its exclusive
    time. The measured start is kept for measured-vs-simulated comparisons. Inputs, outputs
    and attrs come from ``payload`` (default: ``node`` itself). ``holds_thread`` False
    leaves out ``tid``: the node then runs beside its thread (an op closed after its
    parent returned). ``start_us``: the measured start of the segment the node stands for,
    when it is not the op's start (a communication op anchored on its last segment)."""
    payload = node if payload is None else payload
    gpu = node.cat is not None
    if own_us is not None:
        duration = own_us
    elif gpu:
        duration = node.dur if node.dur is not None else node.inclusive_dur
    else:
        duration = node.exclusive_dur
    micros, exact = _duration(duration)
    values = {a.name: a.value for a in payload.attrs}
    schema = values.get("op_schema")
    return b"".join((
        _HEADS.head(node.id, node.name, int(kind.node_type), () if parent is None else (parent,),
                    data_deps, _micros(node.ts if start_us is None else start_us), micros),
        _io(payload.inputs, False) if kind.metadata_values is None
        else io_info(False, kind.metadata_values.encode(), b"", b""),
        _io(payload.outputs, True),
        exact,
        _INTS(values) if holds_thread else _INTS_BESIDE(values),
        _tail(schema if schema.__class__ is str else str(schema or ""), kind,
              node.stream if gpu else None, node.device if gpu else None),
    ))  # fmt: skip


_INTS = int64_entries(INT_ATTRS)
_INTS_BESIDE = int64_entries([name for name in INT_ATTRS if name != "tid"])  # no thread held
#: (op_schema, id of the kind, stream, device) -> (the kind, the serialized attrs after the
#: int ones); the kind is kept so that its id names it alone while the entry lives
_TAILS: dict[tuple[str, int, Optional[int], Optional[int]], tuple[Classified, bytes]] = {}


def _tail(op_schema: str, kind: Classified, stream: Optional[int], device: Optional[int]) -> bytes:
    """The serialized attrs after the int ones: ``op_schema``, the CPU flags, a GPU op's
    stream and device, the communication attrs; remembered (up to a bound) for the
    combinations seen before, keyed by the kind's identity (kinds are shared per plan, and
    hashing one hashes all its fields)."""
    key = (op_schema, id(kind), stream, device)
    cached = _TAILS.get(key)
    if cached is not None and cached[0] is kind:
        return cached[1]
    pieces = [_PIECES.string("op_schema", op_schema)]
    # ASTRA-sim refuses a communication node on the CPU ("Comm node should not be on CPU"):
    # a host collective (gloo) is written is_cpu_op false and runs_on_host true
    host_comm = kind.is_cpu_op and kind.node_type in COMM_NODE_TYPES
    pieces.append(_PIECES.boolean("is_cpu_op", kind.is_cpu_op and not host_comm))
    if host_comm:
        pieces.append(_PIECES.boolean("runs_on_host", True))
    if stream is not None:
        pieces.append(_PIECES.int64("stream", stream))
    if device is not None:
        pieces.append(_PIECES.int64("device", device))
    pieces.append(_comm_attrs(kind))
    tail = b"".join(pieces)
    if len(_TAILS) >= _TAIL_CACHE_LIMIT:
        _TAILS.clear()
    _TAILS[key] = (kind, tail)
    return tail


_TAIL_CACHE_LIMIT = 1 << 12


def _comm_attrs(kind: Classified) -> bytes:
    """The serialized communication attrs of ``kind`` (once per distinct kind)."""
    cached = _COMM_PIECES.get(kind)
    if cached is not None:
        return cached
    out = Node()
    if kind.process_groups is not None:
        add_attr(out, "process_groups", kind.process_groups)
    if kind.comm_type is not None:
        add_attr(out, "comm_type", int(kind.comm_type))
    if kind.node_type in COMM_NODE_TYPES:
        add_attr(out, "comm_size", kind.comm_size or 0)
    if kind.pg_name:
        add_attr(out, "pg_name", kind.pg_name)
    if kind.pg_ranks:
        add_attr(out, "pg_ranks", list(kind.pg_ranks), "int64_list")
    if kind.pg_size:
        add_attr(out, "pg_size", kind.pg_size)
    if kind.type_guessed:
        add_attr(out, "comm_type_guessed", True)
    if kind.comm_type_original is not None:
        add_attr(out, "comm_type_original", int(kind.comm_type_original))
    if kind.pg_name_original is not None:
        add_attr(out, "pg_name_original", kind.pg_name_original)
    for name in ("comm_src", "comm_dst", "comm_tag"):
        value = getattr(kind, name)
        if value is not None:
            add_attr(out, name, value)
    return remember(_COMM_PIECES, kind, out.SerializeToString(), 1 << 12)  # attrs: field 10


def idle_node(node_id: int, before: EtPlusNode, duration_us: float, data_deps: list[int],
              parent: Optional[int]) -> bytes:  # fmt: skip
    """The measured idle time before a top-level CPU op, as a CPU node on its thread."""
    micros, exact = _duration(duration_us)
    start = _micros(before.ts - duration_us) if before.ts is not None else 0
    parents = () if parent is None else (parent,)
    pieces = [
        _HEADS.head(node_id, "[idle]", _COMP, parents, data_deps, start, micros),
        exact,
    ]
    tid = before.attr("tid")
    if isinstance(tid, int):
        pieces.append(_PIECES.int64("tid", tid))
    pieces.append(_PIECES.boolean("is_cpu_op", True))
    pieces.append(_PIECES.int64("idle_before", before.id))
    return b"".join(pieces)


def _cpu_node(node_id: int, name: str, op: EtPlusNode, start_us: Any, duration_us: Any,
              data_deps: list[int], parent: Optional[int], marker: str,
              tid: bool = True) -> bytes:  # fmt: skip
    """A CPU node for part of ``op``'s time; ``marker`` names the attr holding ``op``'s id."""
    micros, exact = _duration(duration_us)
    start = _micros(start_us) if start_us is not None else 0
    parents = () if parent is None else (parent,)
    value = op.attr("tid") if tid else None
    return b"".join((
        _HEADS.head(node_id, name, _COMP, parents, data_deps, start, micros),
        exact,
        _PIECES.int64("tid", value) if isinstance(value, int) else b"",
        _ON_CPU,
        _PIECES.int64(marker, op.id),
    ))  # fmt: skip


_ON_CPU = bool_attr("is_cpu_op", True)


def segment_node(segment: Any, op: EtPlusNode, data_deps: list[int],
                 parent: Optional[int]) -> bytes:  # fmt: skip
    """A later segment of a host op's own time, on the op's thread."""
    return _cpu_node(
        segment.node_id,
        op.name,
        op,
        segment.start,
        segment.end - segment.start,
        data_deps,
        parent,
        "segment_of",
    )


def delay_node(delay: Any, before: EtPlusNode, data_deps: list[int],
               parent: Optional[int]) -> bytes:  # fmt: skip
    """The measured wait before a node started; no ``tid``, so it holds no resource.
    ``delay_before`` names the op it delays (not a ``ctrl_deps``: that would close a cycle
    with the op's ``data_deps``)."""
    return _cpu_node(
        delay.node_id,
        "[delay]",
        before,
        delay.start_us,
        delay.duration_us,
        data_deps,
        parent,
        "delay_before",
        tid=False,
    )


def end_node(node_id: int, data_deps: list[int], start_us: Any) -> bytes:
    """A 0 us CPU node after the send/recv ops that end a graph (see converter._end_node);
    no ``tid``: it holds no resource, so the replay is unchanged."""
    pieces = [
        _HEADS.head(node_id, "[end]", _COMP, (), data_deps, _micros(start_us), 0),
        _PIECES.boolean("is_cpu_op", True),
    ]
    return b"".join(pieces)
