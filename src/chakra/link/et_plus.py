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

import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Optional

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
from chakra.workers import can_fork, forked

FORMAT = "chakra-et-plus/1"
_CHUNK_BYTES = 1 << 20  # the nodes' text written at a time
#: Written by two processes, the share of the nodes encoded here: the forked process's
#: nodes cost more (its pages are copied as it touches them), and so it evens out.
FIRST_SHARE = 0.6
_EDGES_AT_ONCE = 4096  # the dependencies encoded at a time
_ENCODER = msgspec.json.Encoder()
_STANDARD_ATTRS_JSON = b",".join(
    b'{"name":"%s","type":"%s","value":%%%s}'
    % (name.encode(), kind.encode(), b"s" if kind == "string" else b"d")
    for name, kind in STANDARD_ATTR_TYPES
)


class _Caches:
    """What one write encodes once per distinct object (the loader shares equal ones; the
    ops keep them alive while the trace is written, so identities stay unique): the extra
    attrs of a tuple, the JSON of an op schema. Not an OpArgs' normalized text: most are
    distinct, and keeping 44k of them cost memory and time (0.33 s against 0.30 s to
    write 52k nodes)."""

    def __init__(self) -> None:
        self.extras: dict[int, bytes] = {}
        self.schemas: dict[str, bytes] = {}


def _attrs(op: HostOp, caches: _Caches, tid: Optional[int] = None) -> msgspec.Raw:
    """The ``attrs`` list as JSON text: the standard seven from a template (the hot path of
    large traces), then the op's other attrs, encoded once per distinct tuple."""
    extra = caches.extras.get(id(op.attrs))
    if extra is None:
        listed = [{"name": a.name, "type": a.type, "value": a.value} for a in op.attrs]
        extra = caches.extras[id(op.attrs)] = _ENCODER.encode(listed)[1:-1]
    schema = caches.schemas.get(op.op_schema)
    if schema is None:
        schema = caches.schemas[op.op_schema] = _ENCODER.encode(op.op_schema)
    values = (op.rf_id or 0, op.fw_parent, op.seq_id, op.scope, op.tid if tid is None else tid,
              op.fw_tid, schema)  # fmt: skip
    standard = _STANDARD_ATTRS_JSON % values
    parts = [b"[", standard]
    if extra:
        parts += [b",", extra]
    if op.comm is not None:
        comm = op.comm_attrs()
        if comm:
            parts += [b",", _ENCODER.encode(comm)[1:-1]]
    parts.append(b"]")
    return msgspec.Raw(b"".join(parts))


def host_node_untimed(op: HostOp, caches: Optional[_Caches] = None) -> dict[str, Any]:
    """The ET+ form of a host op, before any timing is added. ``caches``: shared by the
    calls of one write (see :class:`_Caches`)."""
    caches = _Caches() if caches is None else caches
    return {
        "id": op.id,
        "name": op.name,
        "ctrl_deps": op.parent_id,
        "inputs": op.inputs.normalized(),
        "outputs": op.outputs.normalized(),
        "attrs": _attrs(op, caches),
    }


def host_node(op: HostOp, linked: LinkedTrace, caches: Optional[_Caches] = None) -> dict[str, Any]:
    caches = _Caches() if caches is None else caches
    node = host_node_untimed(op, caches)
    match = linked.matches.get(op.id)
    if match is not None:
        event = match.event
        node["ts"] = event.ts_us
        node["inclusive_dur"] = event.dur_us
        node["exclusive_dur"] = match.exclusive_us
        node["inter_thread_dep"] = linked.inter_thread_dep.get(op.id)
        node["join"] = match.strategy  # a str Enum: msgspec writes its value
        node["kineto_thread"] = [event.pid, event.tid]
        ran_on = linked.ran_under.get(op.id)
        if ran_on is not None:  # replayed where it ran, not under its host ET parent
            node["ran_under"] = ran_on[0]
            node["attrs"] = _attrs(op, caches, tid=ran_on[1])
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
        "linked_by": gpu.linked_by, "orphan_reason": gpu.orphan_reason,
    }  # fmt: skip
    collective = _collective(gpu)
    if collective is not None:
        node["pg_name"] = collective["pg_name"]
        node["collective"] = collective
    return node


def _nodes(
    linked: LinkedTrace, start: int = 0, stop: Optional[int] = None
) -> Iterator[dict[str, Any]]:
    """The nodes from position ``start`` to ``stop`` (None: the last) of: host nodes, the
    replay threads' roots (ids between the host ET's and the GPU nodes'), then GPU nodes.
    A GPU node's copy of its parent's inputs, outputs and attrs is rebuilt from the parent
    op when written (cheap: raw views and a template), not kept for every parent."""
    ops, roots, gpus = linked.host.ops, linked.replay_threads, linked.gpu_nodes
    stop = len(ops) + len(roots) + len(gpus) if stop is None else stop
    caches = _Caches()
    for op in ops[start:stop]:
        yield host_node(op, linked, caches)
    start, stop = max(0, start - len(ops)), max(0, stop - len(ops))
    for root in roots[start:stop]:
        yield host_node_untimed(root, caches)
    start, stop = max(0, start - len(roots)), max(0, stop - len(roots))
    if start >= stop:
        return
    wanted = {g.parent_id for g in gpus[start:stop]}
    parents = {op.id: op for op in ops if op.id in wanted}
    root_id = process_root_id(linked)
    for gpu in gpus[start:stop]:
        op = parents.get(gpu.parent_id) if gpu.parent_id else None
        yield gpu_node(gpu, None if op is None else host_node_untimed(op, caches), root_id)


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


def _write_metadata(linked: LinkedTrace, out: IO[bytes]) -> None:
    """``_metadata``'s JSON, its dependencies encoded :data:`_EDGES_AT_ONCE` at a time: the
    whole text at once (4 MB for 30k edges) raised a link's peak memory."""
    metadata = _metadata(linked)
    edges = metadata.pop("dependencies")
    threads = {"threads": metadata.pop("threads")}
    out.write(_ENCODER.encode(metadata)[:-1] + b',"dependencies":[')
    for start in range(0, len(edges), _EDGES_AT_ONCE):
        if start:
            out.write(b",")
        out.write(_ENCODER.encode(edges[start : start + _EDGES_AT_ONCE])[1:-1])
    out.write(b"]," + _ENCODER.encode(threads)[1:])


def write_et_plus(
    linked: LinkedTrace, path: PathLike, group: Optional[AtomicGroup] = None, processes: int = 1
) -> None:
    """Write ET+ to ``path`` atomically (``.gz`` compresses; with a ``group``, moved into
    place when the group commits); ``processes`` 2 or more: the later nodes are encoded
    by a forked process meanwhile (:func:`_write_in_two`), the same file either way. Raises
    TraceFormatError, before anything is written, when the converter would refuse it
    (:func:`~chakra.link.writable.check_writable`)."""
    check_writable(linked)
    host = linked.host
    header = {"schema": host.schema, "pid": host.pid, "time": host.time,
              "start_ts": host.start_ts, "finish_ts": host.finish_ts}  # fmt: skip
    with gc_paused(), atomic_output(path, group=group) as out:
        out.write(_ENCODER.encode(header)[:-1] + b',\n"chakra_link": ')
        _write_metadata(linked, out)
        out.write(b',\n"nodes": [')
        total = len(linked.host.ops) + len(linked.replay_threads) + len(linked.gpu_nodes)
        if processes < 2 or total < 2 or not can_fork():
            _write_nodes(tracked(_nodes(linked), total, f"writing {path}", unit="nodes"), out)
        else:
            _write_in_two(linked, total, path, out)
        out.write(b"\n]}\n")


def _write_in_two(linked: LinkedTrace, total: int, path: PathLike, out: IO[bytes]) -> None:
    """The nodes written to ``out``: the first :data:`FIRST_SHARE` encoded here while a
    forked process encodes the rest into a scratch file, then copied after them."""
    split = min(max(1, round(total * FIRST_SHARE)), total - 1)  # each process writes some
    with tempfile.TemporaryDirectory(prefix="chakra-et-plus-") as scratch:
        later = Path(scratch) / "later.json"

        def work() -> None:  # in the forked process
            with later.open("wb") as part:
                _write_nodes(_nodes(linked, split), part, first=False)

        with forked(work) as future:
            _write_nodes(
                tracked(_nodes(linked, 0, split), split, f"writing {path}", unit="nodes"), out
            )
            future.result()
        with later.open("rb") as part:
            shutil.copyfileobj(part, out, _CHUNK_BYTES)


def _write_nodes(nodes: Iterable[dict[str, Any]], out: IO[bytes], first: bool = True) -> None:
    """The nodes, one per line, separated by commas (``first``: the list's first ones).
    Encoded into a buffer written a chunk at a time: one write and no concatenated copy
    per node (52k writes of 1 KB cost more)."""
    chunk, separator = bytearray(), b"\n" if first else b",\n"
    for node in nodes:
        chunk += separator
        _ENCODER.encode_into(node, chunk, -1)
        separator = b",\n"
        if len(chunk) >= _CHUNK_BYTES:
            out.write(chunk)
            chunk = bytearray()
    out.write(chunk)


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
