"""Load a host execution trace (``.json`` or ``.json.gz``) of any known schema version."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from operator import attrgetter
from typing import Any, Optional

import msgspec

from chakra.errors import PathLike, TraceFormatError
from chakra.ingest.host_checks import check_digits, check_new_args, check_utf8
from chakra.ingest.host_comms import (
    comm_attrs_from_attrs,
    comm_attrs_from_inputs,
    name_groups,
    parse_process_groups,
)
from chakra.ingest.host_json import (
    EMPTY_JSON_LIST,
    HOST_NODE_DECODER,
    HOST_TRACE_DECODER,
    RawAttr,
    RawHostNode,
    RawHostTrace,
    is_null,
)
from chakra.ingest.host_model import HostAttr, HostOp, HostTrace, OpArgs, SchemaVersion
from chakra.ingest.host_schema import (
    KNOWN_SCHEMAS,
    NEWEST_KNOWN,
    Layout,
    layout_by_structure,
    parse_version,
)
from chakra.ingest.json_input import (
    decode_element,
    decode_trace,
    gc_paused,
    read_json_bytes,
)
from chakra.ingest.parent_cycles import check_host_parents
from chakra.ingest.vocabulary import PROCESS_GROUP_INIT_NAME, RECORD_PARAM_COMMS_NAME
from chakra.progress import Progress, phase

logger = logging.getLogger(__name__)

#: attrs that every 1.0.2+ node carries; they become HostOp fields.
_EMPTY_NODE = msgspec.Raw(b"{}")
_NO_ARGS = OpArgs()
#: The key of the ``strings`` entry listing the OpArgs built for the node being read: each
#: distinct text is checked once, when first met (no set of every one checked: 3 MiB of peak)
_NEW_ARGS = ("new args",)
STANDARD_ATTRS = ("rf_id", "fw_parent", "seq_id", "scope", "tid", "fw_tid", "op_schema")
_INTEGER_STANDARD_ATTRS = frozenset(STANDARD_ATTRS) - {"op_schema"}
_STANDARD_SET = frozenset(STANDARD_ATTRS)
_INT_TYPE = {int}
_NAME_OF, _TYPE_OF, _VALUE_OF = attrgetter("name"), attrgetter("type"), attrgetter("value")
_ID_OF = attrgetter("id")
WHAT = "host execution trace"
_I64 = -(2**63)  # integer attrs must be within int64 (.et fields, the simulator's arrays)


def load_host_trace(path: PathLike, data: Optional[bytes] = None) -> HostTrace:
    """Load a host ET; gzip is recognised by content.

    Raises :class:`~chakra.errors.TraceFormatError` (one line naming the file) for a file
    that is not a host ET of a readable layout, or whose parents form a cycle (naming its
    nodes: :mod:`chakra.ingest.parent_cycles`). An unknown schema version is read with the
    layout its nodes show, with a warning logged and kept in ``HostTrace.notes``. ``data``
    is the file's decompressed content when the caller has already read it.
    """
    if data is None:
        data = read_json_bytes(path)
    check_utf8(path, data)  # op arguments stay raw JSON, which msgspec does not check
    check_digits(path, data)
    with phase(f"loading host ET {path}", len(data), in_bytes=True) as progress, gc_paused():
        raw: RawHostTrace = decode_trace(
            path, data, HOST_TRACE_DECODER, WHAT, other=("traceEvents", "Kineto device trace")
        )
        del data
        first = _decode_node(path, raw.nodes, 0) if raw.nodes else None
        version, layout, notes = _resolve_schema(path, raw.schema, first)
        ops = _build_ops(path, raw.nodes, layout, progress)
        check_host_parents(path, ops)
    groups, group_note = _process_groups(ops)
    if group_note:
        notes.append(group_note)
    ops, group_notes = name_groups(ops, groups)
    notes.extend(group_notes)
    for note in notes:
        logger.warning("%s: %s", path, note)
    return HostTrace(
        path=str(path),
        schema=raw.schema or "",
        version=version,
        pid=raw.pid,
        time=raw.time,
        start_ts=raw.start_ts,
        finish_ts=raw.finish_ts,
        ops=ops,
        process_groups=groups,
        notes=tuple(notes),
    )


def _resolve_schema(
    path: PathLike, schema: Optional[str], first: Optional[RawHostNode]
) -> tuple[SchemaVersion, Layout, list]:
    if schema is None:
        raise TraceFormatError(path, f"no 'schema' key; not a {WHAT}")
    shown = layout_by_structure(
        has_attrs=first is not None and first.attrs is not None,
        has_ctrl_deps=first is not None and first.ctrl_deps is not None,
    )
    version = parse_version(schema) or SchemaVersion(0, 0, 0)
    known = KNOWN_SCHEMAS.get(schema.strip())
    if known is not None:
        return version, known, []
    guess = "1.0.1" if shown is Layout.TOP_LEVEL else NEWEST_KNOWN
    note = f"unknown host ET schema version {schema!r}; read with the layout of {guess}"
    return version, shown, [note]


def _decode_node(path: PathLike, nodes: list[msgspec.Raw], index: int) -> RawHostNode:
    return decode_element(path, nodes, index, HOST_NODE_DECODER, WHAT)


def _build_ops(
    path: PathLike, nodes: list[msgspec.Raw], layout: Layout, progress: Progress
) -> tuple[HostOp, ...]:
    """Decode and build the ops one node at a time (each node's intermediate record is
    freed before the next is decoded), sharing equal strings (names, schemas, attrs);
    ``progress`` counts the nodes."""
    build = _op_from_attrs if layout is Layout.ATTRS else _op_from_top_level
    strings: dict[Any, Any] = {_NEW_ARGS: []}
    built = []
    for index in progress.tracked(range(len(nodes)), len(nodes), "nodes"):
        built.append(build(path, _decode_node(path, nodes, index), strings))
        check_new_args(path, built[-1], strings[_NEW_ARGS])
        nodes[index] = _EMPTY_NODE  # the raw view is not needed any more
    ops = sorted(built, key=_ID_OF)
    for previous, current in zip(ops, ops[1:]):
        if previous.id == current.id:
            raise TraceFormatError(path, f"node id {current.id} appears more than once")
    return tuple(ops)


def _parent_of(path: PathLike, node: RawHostNode) -> int:
    parent = node.ctrl_deps if node.ctrl_deps is not None else node.parent
    if parent is None:
        raise TraceFormatError(path, f"node {node.id} ({node.name}) has no ctrl_deps/parent")
    return parent


def _args(
    strings: dict[Any, Any], raw: msgspec.Raw, shapes: msgspec.Raw, types: msgspec.Raw
) -> OpArgs:
    """OpArgs from a raw ``inputs``/``outputs`` value: an object with values/shapes/types
    (1.0.2+, kept as it is), or a bare value list whose shapes and types are sibling keys
    (1.0.1). The text is copied out of the file's bytes (which are then freed after loading:
    the arguments are under half of a host ET), one copy per distinct text; each new OpArgs
    is listed under ``strings[_NEW_ARGS]`` for :func:`check_new_args`."""
    text = bytes(raw)  # the dict's key; a view's first byte alone costs as much to read
    args = strings.get(text)
    if args is not None:
        return args
    if text[:1] == b"{":
        args = strings[text] = OpArgs(msgspec.Raw(text))
        strings[_NEW_ARGS].append(args)
        return args
    if text[:1] != b"[":
        return _NO_ARGS

    def listed(value: msgspec.Raw) -> msgspec.Raw:
        return EMPTY_JSON_LIST if is_null(value) else value

    args = OpArgs.from_parts(raw, listed(shapes), listed(types))
    strings[_NEW_ARGS].append(args)
    return args


def _int_attr(path: PathLike, node: RawHostNode, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TraceFormatError(path, f"node {node.id}: attr {name!r} is not an integer")
    try:
        number = int(value)
    except (ValueError, OverflowError) as exc:
        raise TraceFormatError(path, f"node {node.id}: attr {name!r} is not an integer") from exc
    if not _I64 <= number < -_I64:
        raise TraceFormatError(path, f"node {node.id}: attr {name!r} is outside int64: {number}")
    return number


def _shared(strings: dict[Any, Any], value: Any) -> Any:
    """``value``, or the equal one seen before: millions of ops repeat a few hundred names,
    schemas and attrs, which are then stored once."""
    try:
        return strings.setdefault(value, value)
    except TypeError:  # unhashable (a list value)
        return value


def _shared_tuple(strings: dict[Any, Any], attrs: list[HostAttr]) -> tuple[HostAttr, ...]:
    """One tuple per distinct sequence of (shared) attr objects; keyed by identity, since
    equal-comparing values of different types (1, 1.0, True) must stay apart."""
    if not attrs:
        return ()
    key = ("attrs", *map(id, attrs))  # the dict keeps every keyed object, so ids stay unique
    found = strings.get(key)
    if found is None:
        found = strings[key] = tuple(attrs)
    return found


def _shared_attr(strings: dict[Any, Any], name: str, kind: str, value: Any) -> HostAttr:
    if type(value) not in (str, int, float, bool) and value is not None:
        return HostAttr(_shared(strings, name), _shared(strings, kind), value)
    key = ("attr", name, kind, type(value), value)
    attr = strings.get(key)
    if attr is None:
        attr = strings[key] = HostAttr(_shared(strings, name), _shared(strings, kind), value)
    return attr


def _op_from_attrs(path: PathLike, node: RawHostNode, strings: dict[Any, Any]) -> HostOp:
    attrs = node.attrs or ()
    names = tuple(map(_NAME_OF, attrs))
    standard = _standard_values(names, attrs)
    if standard is None:
        return _op_from_any_attrs(path, node, strings)
    rf_id, fw_parent, seq_id, scope, tid, fw_tid, op_schema = standard
    inputs = _args(strings, node.inputs, node.input_shapes, node.input_types)
    outputs = _args(strings, node.outputs, node.output_shapes, node.output_types)
    return HostOp(
        node.id,
        _shared(strings, node.name),
        _parent_of(path, node),
        rf_id,
        fw_parent,
        seq_id,
        scope,
        tid,
        fw_tid,
        _shared(strings, str(op_schema)),
        inputs,
        outputs,
        _extras(strings, names, attrs),
        _comm(node, inputs, outputs) if node.name == RECORD_PARAM_COMMS_NAME else None,
    )


def _standard_values(names: tuple[str, ...], attrs: Sequence[RawAttr]) -> Optional[tuple]:
    """The seven standard values when the attrs start with them in their usual order, the
    six integers within int64, and name none of them again (what every writer does); None
    for any other node, which :func:`_op_from_any_attrs` reads. C-level maps, not a Python
    loop per attr: the host ET's hot path."""
    if names[:7] != STANDARD_ATTRS or not _STANDARD_SET.isdisjoint(names[7:]):
        return None
    values = tuple(map(_VALUE_OF, attrs[:7]))
    integers = values[:6]
    if set(map(type, integers)) != _INT_TYPE or min(integers) < _I64 or max(integers) >= -_I64:
        return None
    return values


def _extras(strings: dict[Any, Any], names: tuple[str, ...], attrs: Sequence[RawAttr]) -> tuple:
    """The shared tuple of the attrs after the standard seven, looked up by their names,
    types and values (with the values' classes: 1, 1.0 and True stay apart) before they are
    built one at a time."""
    rest = attrs[7:]
    if not rest:
        return ()
    values = tuple(map(_VALUE_OF, rest))
    key = ("extras", names[7:], tuple(map(_TYPE_OF, rest)), tuple(map(type, values)), values)
    try:
        found = strings.get(key)
    except TypeError:  # an unhashable (list) value
        key, found = None, None
    if found is None:
        built = [_shared_attr(strings, a.name, a.type, a.value) for a in rest]
        found = _shared_tuple(strings, built)
        if key is not None:
            strings[key] = found
    return found


def _op_from_any_attrs(path: PathLike, node: RawHostNode, strings: dict[str, str]) -> HostOp:
    fields: dict[str, Any] = {}
    extra = []
    op_schema: Any = ""
    for attr in node.attrs or ():
        name, value = attr.name, attr.value
        if name in _INTEGER_STANDARD_ATTRS:
            fields[name] = (
                value
                if type(value) is int and _I64 <= value < -_I64
                else _int_attr(path, node, name, value)
            )
        elif name == "op_schema":
            op_schema = value
        else:
            extra.append(_shared_attr(strings, name, attr.type, value))
    inputs = _args(strings, node.inputs, node.input_shapes, node.input_types)
    outputs = _args(strings, node.outputs, node.output_shapes, node.output_types)
    return HostOp(
        id=node.id,
        name=_shared(strings, node.name),
        parent_id=_parent_of(path, node),
        rf_id=fields.pop("rf_id", None),
        op_schema=_shared(strings, str(op_schema)),
        inputs=inputs,
        outputs=outputs,
        attrs=_shared_tuple(strings, extra),
        comm=_comm(node, inputs, outputs),
        **fields,
    )


def _op_from_top_level(path: PathLike, node: RawHostNode, strings: dict[str, str]) -> HostOp:
    inputs = _args(strings, node.inputs, node.input_shapes, node.input_types)
    outputs = _args(strings, node.outputs, node.output_shapes, node.output_types)
    return HostOp(
        id=node.id,
        name=_shared(strings, node.name),
        parent_id=_parent_of(path, node),
        rf_id=node.rf_id,
        fw_parent=node.fw_parent or 0,
        seq_id=node.seq_id if node.seq_id is not None else -1,
        scope=node.scope or 0,
        tid=node.tid or 0,
        fw_tid=node.fw_tid or 0,
        op_schema=_shared(strings, node.op_schema or ""),
        inputs=inputs,
        outputs=outputs,
        comm=_comm(node, inputs, outputs),
    )


def _comm(node: RawHostNode, inputs: OpArgs, outputs: OpArgs) -> Optional[Any]:
    if node.name != RECORD_PARAM_COMMS_NAME:
        return None
    return comm_attrs_from_attrs(node.attrs or []) or comm_attrs_from_inputs(inputs, outputs)


def _process_groups(ops: tuple[HostOp, ...]) -> tuple[tuple, Optional[str]]:
    init = next((op for op in ops if op.name == PROCESS_GROUP_INIT_NAME), None)
    if init is None:
        return (), None
    return parse_process_groups(init.inputs)
