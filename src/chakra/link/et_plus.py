"""Write a :class:`LinkedTrace` as ET+ JSON, compatible with the reference's ET+ (§5.2).

Top level: the host ET's keys (``schema``, ``pid``, ``time``, ``start_ts``, ``finish_ts``,
``nodes``) plus ``chakra_link`` (what was linked, how, and the ``dependencies`` list).
Host nodes are written in the 1.0.2+ layout (``ctrl_deps``, ``inputs``/``outputs`` objects,
``attrs`` list) with their original ids; linked ones gain ``ts``, ``inclusive_dur``,
``exclusive_dur`` (µs), ``inter_thread_dep``, and where known ``sync_dep``, ``idle_gap``
and ``join``. GPU nodes follow (ids above every host id) with the reference's keys (copies of
the parent's ``inputs``/``outputs``/``attrs``, ``cat``, ``ph``, ``ts``, ``inclusive_dur``,
``exclusive_dur``, ``stream``, ``pg_name``) and ours (``dur``, ``device``, ``correlation``,
``external_id``, ``launch``, ``linked_by``, ``orphan_reason``, ``collective``). One node per
line; the same inputs always give the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Optional

import msgspec

from chakra.errors import PathLike
from chakra.fileio import AtomicGroup, atomic_output
from chakra.ingest.et_plus_model import EtPlusNode, EtPlusTrace, LinkInfo, LinkSummary
from chakra.ingest.host_model import STANDARD_ATTR_TYPES, HostOp
from chakra.ingest.json_input import gc_paused
from chakra.link.linked_trace import GpuNode, LinkedTrace
from chakra.link.report import report_fields
from chakra.link.thread_map import thread_map
from chakra.link.writable import check_writable, process_root_id
from chakra.progress import tracked

FORMAT = "chakra-et-plus/1"
_ENCODER = msgspec.json.Encoder()
_STANDARD_ATTRS_JSON = b",".join(
    b'{"name":"%s","type":"%s","value":%%%s}'
    % (name.encode(), kind.encode(), b"s" if kind == "string" else b"d")
    for name, kind in STANDARD_ATTR_TYPES
)


def _attrs(op: HostOp, extras: dict[int, bytes], tid: Optional[int] = None) -> msgspec.Raw:
    """The ``attrs`` list as JSON text: the standard seven from a template (the hot path of
    large traces), then the op's other attrs, encoded once per distinct tuple (the loader
    shares equal tuples; ``extras`` remembers them by identity while the trace is alive)."""
    extra = extras.get(id(op.attrs))
    if extra is None:
        listed = [{"name": a.name, "type": a.type, "value": a.value} for a in op.attrs]
        extra = extras[id(op.attrs)] = _ENCODER.encode(listed)[1:-1]
    values = (op.rf_id or 0, op.fw_parent, op.seq_id, op.scope, op.tid if tid is None else tid,
              op.fw_tid,
              _ENCODER.encode(op.op_schema))  # fmt: skip
    standard = _STANDARD_ATTRS_JSON % values
    parts = [b"[", standard]
    if extra:
        parts += [b",", extra]
    comm = op.comm_attrs()
    if comm:
        parts += [b",", _ENCODER.encode(comm)[1:-1]]
    parts.append(b"]")
    return msgspec.Raw(b"".join(parts))


def host_node_untimed(op: HostOp, extras: Optional[dict[int, bytes]] = None) -> dict[str, Any]:
    """The ET+ form of a host op, before any timing is added. ``extras``: a cache shared by
    the calls of one write (see :func:`_attrs`)."""
    return {
        "id": op.id,
        "name": op.name,
        "ctrl_deps": op.parent_id,
        "inputs": op.inputs.normalized(),
        "outputs": op.outputs.normalized(),
        "attrs": _attrs(op, {} if extras is None else extras),
    }


def host_node(
    op: HostOp, linked: LinkedTrace, extras: Optional[dict[int, bytes]] = None
) -> dict[str, Any]:
    node = host_node_untimed(op, extras)
    match = linked.matches.get(op.id)
    if match is not None:
        event = match.event
        node["ts"] = event.ts_us
        node["inclusive_dur"] = event.dur_us
        node["exclusive_dur"] = match.exclusive_us
        node["inter_thread_dep"] = linked.inter_thread_dep.get(op.id)
        node["join"] = match.strategy.value
        node["kineto_thread"] = [event.pid, event.tid]
        ran_on = linked.ran_under.get(op.id)
        if ran_on is not None:  # replayed where it ran, not under its host ET parent
            node["ran_under"] = ran_on[0]
            node["attrs"] = _attrs(op, {} if extras is None else extras, tid=ran_on[1])
        if op.id in linked.idle_gap_us:
            node["idle_gap"] = linked.idle_gap_us[op.id]
    if op.id in linked.sync_dep:
        node["sync_dep"] = linked.sync_dep[op.id]
    return node


def _collective(gpu: GpuNode) -> Optional[dict[str, Any]]:
    args = gpu.event.args
    if args.collective_name is None and args.pg_name is None:
        return None
    return {
        "name": args.collective_name,
        "dtype": args.dtype,
        "in_msg_nelems": args.in_msg_nelems,
        "out_msg_nelems": args.out_msg_nelems,
        "group_size": args.group_size,
        "pg_name": args.pg_name,
        "pg_desc": args.pg_desc,
        "pg_ranks": args.pg_ranks,
        "in_split_size": args.in_split_size,
        "out_split_size": args.out_split_size,
    }


def gpu_node(gpu: GpuNode, parent: Optional[dict[str, Any]], root_id: int) -> dict[str, Any]:
    event = gpu.event
    empty = {"values": [], "shapes": [], "types": []}
    launch = gpu.launch
    node: dict[str, Any] = {
        "id": gpu.node_id, "name": event.name,
        "ctrl_deps": gpu.parent_id if gpu.parent_id is not None else root_id,
        "inputs": parent["inputs"] if parent else empty,
        "outputs": parent["outputs"] if parent else empty,
        "attrs": parent["attrs"] if parent else [],
        "cat": event.category, "ph": "X", "ts": event.ts_us, "dur": event.dur_us,
        "inclusive_dur": event.dur_us, "exclusive_dur": event.dur_us,
        "stream": event.stream, "device": event.args.device,
        "correlation": event.correlation, "external_id": event.external_id,
        "launch": None if launch is None else {
            "name": launch.name, "ts": launch.ts_us, "dur": launch.dur_us,
            "tid": launch.tid, "correlation": launch.correlation},
        "linked_by": gpu.linked_by.value, "orphan_reason": gpu.orphan_reason,
    }  # fmt: skip
    collective = _collective(gpu)
    if collective is not None:
        node["pg_name"] = collective["pg_name"]
        node["collective"] = collective
    return node


def _nodes(linked: LinkedTrace) -> Iterator[dict[str, Any]]:
    """Host nodes, then GPU nodes. A GPU node's copy of its parent's inputs, outputs and
    attrs is rebuilt from the parent op when written (cheap: raw views and a template), not
    kept for every parent between the two passes."""
    wanted = {g.parent_id for g in linked.gpu_nodes}
    parents: dict[int, HostOp] = {}
    extras: dict[int, bytes] = {}
    for op in linked.host.ops:
        if op.id in wanted:
            parents[op.id] = op
        yield host_node(op, linked, extras)
    for root in linked.replay_threads:  # ids between the host ET's and the GPU nodes'
        yield host_node_untimed(root, extras)
    root_id = process_root_id(linked)
    for gpu in linked.gpu_nodes:
        op = parents.get(gpu.parent_id) if gpu.parent_id else None
        yield gpu_node(gpu, None if op is None else host_node_untimed(op, extras), root_id)


def _metadata(linked: LinkedTrace) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "host_trace": linked.host.path if linked.host.source == "host_et" else None,
        "host_source": linked.host.source,  # "kineto": made from the device trace alone
        "device_trace": linked.device.path,
        "rank": linked.device.rank,
        "report": report_fields(linked.report),
        "dependencies": linked.edges,  # ET+ names and order: chakra.ingest.edges.Edge
        "threads": thread_map(linked),
    }


def write_et_plus(linked: LinkedTrace, path: PathLike, group: Optional[AtomicGroup] = None) -> None:
    """Write ET+ to ``path`` atomically (``.gz`` compresses; with a ``group``, moved into
    place when the group commits). Raises TraceFormatError, before anything is written,
    when the converter would refuse it (:func:`~chakra.link.writable.check_writable`)."""
    check_writable(linked)
    host = linked.host
    header = {"schema": host.schema, "pid": host.pid, "time": host.time,
              "start_ts": host.start_ts, "finish_ts": host.finish_ts}  # fmt: skip
    with gc_paused(), atomic_output(path, group=group) as out:
        out.write(_ENCODER.encode(header)[:-1] + b',\n"chakra_link": ')
        out.write(_ENCODER.encode(_metadata(linked)))
        out.write(b',\n"nodes": [')
        separator = b"\n"
        total = len(linked.host.ops) + len(linked.replay_threads) + len(linked.gpu_nodes)
        for node in tracked(_nodes(linked), total, f"writing {path}", unit="nodes"):
            out.write(separator + _ENCODER.encode(node))
            separator = b",\n"
        out.write(b"\n]}\n")


_NODE_DECODER = msgspec.json.Decoder(EtPlusNode, strict=False)


def as_et_plus(linked: LinkedTrace) -> EtPlusTrace:
    """The ET+ of ``linked`` in memory, as :func:`write_et_plus` then
    :func:`chakra.convert.load_et_plus` would give it, without the file: for the converter
    when a trace fits in memory (big ones go through the file, read as an outline). Each
    node is still built as its ET+ JSON (the writer's one definition of the format) and
    decoded; ``path`` is the host trace's, for messages. Raises TraceFormatError as
    :func:`write_et_plus` does."""
    check_writable(linked)
    host = linked.host
    nodes = [_NODE_DECODER.decode(_ENCODER.encode(node)) for node in _nodes(linked)]
    summary = LinkSummary(contradictions=dict(linked.report.contradictions))
    link = LinkInfo(FORMAT, linked.device.rank, list(linked.edges), summary, thread_map(linked),
                    linked.host.source)  # fmt: skip
    return EtPlusTrace.of(host.path, host, nodes, link)
