"""Read ET+ JSON: ours (``chakra_trace_link``) or the reference linker's.

Both put every host op and GPU op in ``nodes``; a node with a ``cat`` is a GPU op. Ours also
carries ``chakra_link.dependencies`` (the linker's evidence); for the reference's ET+ the
converter rebuilds what it can (stream order, launch, ``sync_dep``, ``inter_thread_dep``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, Callable, Optional

import msgspec

from chakra.convert.et_plus_lines import read_by_lines, reread_nodes
from chakra.errors import PathLike, TraceFormatError
from chakra.ingest.et_plus_checks import check_parents, check_ranges
from chakra.ingest.et_plus_model import EtPlusAttr as EtPlusAttr  # the model, re-exported
from chakra.ingest.et_plus_model import EtPlusNode, EtPlusTrace, LinkInfo, NodePayload
from chakra.ingest.et_plus_model import Number as Number
from chakra.ingest.host_json import NULL_JSON
from chakra.ingest.host_loader import load_host_trace
from chakra.ingest.host_model import HostOp
from chakra.ingest.json_input import decode_element, decode_json, gc_paused, read_json_bytes
from chakra.progress import Progress, phase

logger = logging.getLogger(__name__)


class _RawEtPlus(msgspec.Struct, gc=False):
    nodes: list[msgspec.Raw]  # decoded one at a time (see _decode_nodes)
    schema: str = ""
    pid: Optional[int] = None
    time: Optional[str] = None
    start_ts: Optional[int] = None
    finish_ts: Optional[int] = None
    chakra_link: Optional[LinkInfo] = None


_DECODER = msgspec.json.Decoder(_RawEtPlus, strict=False)
_NODE_DECODER = msgspec.json.Decoder(EtPlusNode, strict=False)
_WHAT = "ET+ trace (host + device)"


def _decode_nodes(path: PathLike, raws: list[msgspec.Raw], progress: Progress) -> list[EtPlusNode]:
    """Decode the nodes one at a time, sharing what repeats across them (see
    :class:`_Sharing`), so that no list of raw records exists at once, and nothing refers to
    the file's bytes afterwards; ``progress`` counts them."""
    sharing = _Sharing(path)
    nodes = []
    for index in progress.tracked(range(len(raws)), len(raws), "nodes"):
        nodes.append(sharing.node(decode_element(path, raws, index, _NODE_DECODER, _WHAT)))
        raws[index] = _EMPTY
    return nodes


class _Sharing:
    """Equal names, attrs, inputs and outputs of many nodes stored once (a GPU node copies
    its launching op's, host ops repeat a few hundred names); inputs and outputs are copied
    out of the file's bytes."""

    def __init__(self, path: PathLike) -> None:
        self._shared: dict[Any, Any] = {}
        self._path = path

    def node(self, node: EtPlusNode) -> EtPlusNode:
        shared = self._shared
        attrs = []
        for attr in node.attrs:
            value = attr.value
            try:  # the value's class is part of the key: 1, 1.0 and True are equal keys
                key = (attr.name, attr.type, value.__class__, value)
                attrs.append(shared.setdefault(key, attr))
            except TypeError:  # a list value
                attrs.append(attr)
        return msgspec.structs.replace(
            node,
            name=shared.setdefault(node.name, node.name),
            attrs=attrs,
            inputs=self._owned(node, node.inputs),
            outputs=self._owned(node, node.outputs),
        )

    def _owned(self, node: EtPlusNode, raw: msgspec.Raw) -> msgspec.Raw:
        """``raw`` copied out of the file's bytes (so that they can be freed after loading),
        one copy per distinct text (a GPU node repeats its launching op's inputs and
        outputs); each distinct text is checked to be UTF-8 (it is written as is)."""
        text = bytes(raw)
        owned = self._shared.get(text)
        if owned is None:
            check_utf8(self._path, node.id, text)
            owned = self._shared[text] = msgspec.Raw(text)
        return owned

    def outline(self, node: EtPlusNode) -> EtPlusNode:
        """``node`` without inputs, outputs, Kineto thread and attrs but ``tid``."""
        shared = self._shared
        tid = None
        for attr in node.attrs:  # a loop: a generator per node costs more
            if attr.name == "tid":
                tid = attr
                break
        try:
            key = (_TID_ONLY, tid.type, tid.value.__class__, tid.value) if tid else _TID_ONLY
            attrs = shared.setdefault(key, [tid] if tid else [])
        except TypeError:  # a list value
            attrs = [tid]
        return msgspec.structs.replace(
            node,
            name=shared.setdefault(node.name, node.name),
            attrs=attrs,
            inputs=NULL_JSON,
            outputs=NULL_JSON,
            kineto_thread=None,
        )


_TID_ONLY = object()  # keys the shared attrs lists of outline nodes


def check_utf8(path: PathLike, node_id: int, text: bytes) -> None:
    """Refuse invalid UTF-8 in the raw JSON of a node's inputs or outputs: it is copied into
    the ``.et`` as is, and a protobuf string must be UTF-8."""
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(
            path,
            f"node {node_id}: inputs or outputs hold invalid UTF-8 "
            f"(byte {exc.start} of their JSON)",
        ) from None


_EMPTY = msgspec.Raw(b"{}")


def load_et_plus(
    path: PathLike, keep_whole: Optional[Callable[[EtPlusNode], bool]] = None
) -> EtPlusTrace:
    """Load an ET+ JSON file (gzip by content), or a plain host ET, which becomes an ET+
    without timing (a warning says so). Raises TraceFormatError naming the file, also for
    what no ``.et`` can hold (:mod:`chakra.ingest.et_plus_checks`: numbers out of range, a
    parent cycle).

    Our own ET+ is read a line at a time (see :mod:`chakra.convert.et_plus_lines`); other
    files are decoded whole. With ``keep_whole``, such a file whose node ids increase
    line after line loads as an outline: only the nodes ``keep_whole`` accepts keep their
    inputs, outputs and attrs (the others keep ``tid``), a fraction of the memory; the
    trace's ``outline`` is then True."""
    by_lines = _read_lines(path, keep_whole)
    if by_lines is not None and any(node.ts is not None for node in by_lines[1]):
        header, nodes = by_lines
        outline = keep_whole is not None and _ids_increase(nodes)
        if keep_whole is not None and not outline:
            return load_et_plus(path)  # read again, whole: the outline cannot be used
        _check(path, header, nodes)
        return EtPlusTrace.of(path, header, nodes, header.chakra_link, outline)
    del by_lines
    data = read_json_bytes(path)
    with phase(f"loading ET+ {path}", len(data), in_bytes=True) as progress, gc_paused():
        raw: _RawEtPlus = decode_json(path, data, _DECODER, _WHAT)
        if not raw.nodes:
            raise TraceFormatError(path, "the ET+ trace holds no nodes")
        nodes = _decode_nodes(path, raw.nodes, progress)
    if not any(node.ts is not None for node in nodes):
        del nodes, raw  # read again as a host ET
        return _from_host_trace(path, data)
    _check(path, raw, nodes)
    return EtPlusTrace.of(path, raw, nodes, raw.chakra_link)


def _check(path: PathLike, header: Any, nodes: list[EtPlusNode]) -> None:
    """What the converter needs of any ET+ (:mod:`chakra.ingest.et_plus_checks`): numbers
    a ``.et`` can hold, and no parent cycle."""
    check_ranges(path, header, nodes)
    check_parents(path, nodes)


def _read_lines(
    path: PathLike, keep_whole: Optional[Callable[[EtPlusNode], bool]]
) -> Optional[tuple[_RawEtPlus, list[EtPlusNode]]]:
    """Header and nodes of our own ET+ read line by line (outlined unless ``keep_whole``
    accepts them, when given), or None for any other file."""
    sharing = _Sharing(path)

    def decode(raw: msgspec.Raw) -> EtPlusNode:
        node = _NODE_DECODER.decode(raw)
        whole = keep_whole is None or keep_whole(node)
        return sharing.node(node) if whole else sharing.outline(node)

    with gc_paused():
        return read_by_lines(path, _DECODER, decode)


def _ids_increase(nodes: list[EtPlusNode]) -> bool:
    return all(nodes[i].id < nodes[i + 1].id for i in range(len(nodes) - 1))


_PAYLOAD_DECODER = msgspec.json.Decoder(NodePayload, strict=False)


def with_payloads(trace: EtPlusTrace, skip: int = 0) -> Iterator[tuple[EtPlusNode, NodePayload]]:
    """Each node of an outline trace with its payload read again from the file, one at a
    time, in id order, from the ``skip``-th on (the lines before it passed over, not
    decoded). Raises TraceFormatError when the file changed since it was loaded."""
    again = reread_nodes(trace.path, _PAYLOAD_DECODER.decode, skip)
    for loaded in trace.nodes[skip:]:
        payload = next(again, None)
        if payload is None or payload.id != loaded.id:
            found = "its end" if payload is None else f"node {payload.id}"
            raise TraceFormatError(
                trace.path,
                f"the file changed while it was converted ({found} where node {loaded.id} was)",
            )
        check_utf8(trace.path, loaded.id, bytes(payload.inputs) + bytes(payload.outputs))
        yield loaded, payload
    if next(again, None) is not None:
        raise TraceFormatError(
            trace.path,
            "the file changed while it was converted (more nodes than when it was first read)",
        )


def _from_host_trace(path: PathLike, data: bytes) -> EtPlusTrace:
    """A host ET read as ET+ with no timing: the nodes the linker would write, without
    ``ts``/durations. Every schema version the host loader knows is accepted."""
    host = load_host_trace(path, data)
    logger.warning(
        "%s: a host execution trace without device timing: durations are 0 "
        "(link it with its Kineto trace by chakra_trace_link for measured times)",
        path,
    )
    sharing = _Sharing(path)
    nodes = [sharing.node(untimed_node(op)) for op in host.ops]
    check_ranges(path, host, nodes)
    return EtPlusTrace.of(path, host, nodes, None)


def untimed_node(op: HostOp) -> EtPlusNode:
    """The ET+ node of a host op before any timing is added, as the linker writes it
    (:func:`chakra.link.et_plus.host_node_untimed`), built without a JSON round trip."""
    attrs = [*op.standard_attrs(), *op.attrs, *op.comm_attrs()]
    return EtPlusNode(
        id=op.id,
        name=op.name,
        ctrl_deps=op.parent_id,
        attrs=attrs,
        inputs=op.inputs.normalized(),
        outputs=op.outputs.normalized(),
    )
