"""The simulated (and measured) schedule as a Chrome/Perfetto JSON trace.

Per rank, a process "rank R (simulated)" and, with ``compare``, a process "rank R
(measured)", aligned on the same origin. A track per host thread ("thread 123") and GPU
stream ("stream 7", "device 1 stream 7" when the rank uses more than one device); nodes that
hold no resource (``[delay]``, ``[end]``) are packed onto "no resource N" tracks so that they
do not overlap; the simulated process also has a "critical path" track
(:func:`chakra.simulate.analysis.critical_chain`).

Host ops are shown whole: an op and the later segments of its own time (``segment_of``) are
one slice, extended over its children on the same thread (``ctrl_deps``), so that a
thread's track is a call stack; ``segments=True`` shows every node as its own slice.

Every track is properly nested: a slice that starts inside another ends inside it. Times are
rounded to whole nanoseconds first. Measured starts are whole microseconds
(``start_time_micros``) while durations are exact (``duration_ns``), so neighbours can seem
to overlap by less than a microsecond: a slice that starts less than
:data:`START_RESOLUTION_US` before the end of the slice it would overlap starts at that end
instead (``args.moved_ns`` says by how much), and any other slice that would overlap its
enclosing slice's end is cut there (``args.cut_ns``).

An op's slice on the simulated process carries its stream, input shapes, simulated and
measured µs and dependency counts (:mod:`chakra.views.timeline_args`); the measured
process's slices carry ``node_id`` alone. A thread's track is named after the Kineto thread
it was recorded on (``thread 2 · thread 9001 (pt_gloo_runloop)``) when its ``.et`` records it
(:mod:`chakra.et.threads`). Flows between tracks and across ranks:
:mod:`chakra.views.timeline_flows`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Optional

import msgspec

from chakra.et.reader import EtReader
from chakra.et.threads import get_threads
from chakra.fileio.json_document import JsonDocument
from chakra.ingest.detect import TraceKind, sniff_kind
from chakra.ingest.et_plus_model import RecordedThread
from chakra.simulate.analysis import critical_chain
from chakra.simulate.meeting import START_RESOLUTION_US
from chakra.simulate.resources import device_count
from chakra.simulate.sim_graph import NO_RESOURCE, SimGraph
from chakra.simulate.sim_result import SimResult
from chakra.views.timeline_args import OpFacts
from chakra.views.timeline_flows import flow_events, to_ns, to_us
from chakra.views.timeline_window import TimeWindow, within

_START_RESOLUTION_NS = round(START_RESOLUTION_US * 1000)


class Slice(msgspec.Struct, frozen=True):
    """One complete event: ``node`` (index) stands for ``members`` (itself and the later
    segments of its op), on track ``tid``, from ``begin_ns`` to ``end_ns``."""

    tid: int
    begin_ns: int
    end_ns: int
    node: int
    members: tuple[int, ...] = ()
    cut_ns: int = 0
    moved_ns: int = 0


def chrome_trace(result: SimResult, compare: bool = False, segments: bool = False,
                 ranks: Optional[Collection[int]] = None,
                 window: Optional[TimeWindow] = None) -> JsonDocument:  # fmt: skip
    """The trace of ``result``, bound for a file (times in µs with nanosecond precision).
    ``compare`` adds the measured processes; ``segments`` shows each node as its own slice
    instead of whole ops; ``ranks``: the ranks shown, by rank id (None: all; flows to a
    rank not shown are left out); ``window``: only the slices that overlap it and the flows
    inside it (:func:`chakra.views.timeline_window.within`). Linear in nodes and edges, plus
    a sort per track."""
    events: list[dict[str, Any]] = []
    shown = [r for r, graph in enumerate(result.graphs) if ranks is None or graph.rank in ranks]
    base = max((graph.rank for graph in result.graphs), default=-1) + 1
    tracks = {r: track_names(result.graphs[r]) for r in shown}
    for r in shown:
        graph, start, end = result.graphs[r], result.start[r], result.end[r]
        spans = list(zip(_ns_of(start, len(graph.ids)), _ns_of(end, len(graph.ids))))
        facts = OpFacts(graph, start, end)
        events += _process(graph, graph.rank, "simulated", spans, segments, tracks[r], facts)
        events += _critical_track(result, r, spans)
    if compare:
        for r in shown:
            graph = result.graphs[r]
            spans = _measured_spans(result, r)
            if spans is not None:
                pid = base + graph.rank
                events += _process(graph, pid, "measured", spans, segments, tracks[r])
    events += flow_events(result, None if ranks is None else set(shown))
    if window is not None:
        events = within(events, window)
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _ns_of(times_us: Sequence[float], count: int) -> list[int]:
    """The first ``count`` times in whole nanoseconds (:func:`to_ns`, in one pass)."""
    return [round(us * 1000) for us in times_us[:count]]


def _measured_spans(result: SimResult, r: int) -> Optional[list[tuple[int, int]]]:
    """Measured (begin, end) ns per node, shifted onto the simulated origin; (-1, -1) for a
    node without a measured start; None when no node has one."""
    graph = result.graphs[r]
    known = [s for s in graph.measured_start_us if s >= 0]
    if not known or not len(result.start[r]):
        return None
    shift = min(result.start[r]) - min(known)
    factors = graph.duration_factor
    spans = []
    for i, s in enumerate(graph.measured_start_us):
        if s < 0:
            spans.append((-1, -1))
            continue
        duration = graph.duration_us[i]
        if factors is not None and factors[i]:  # a what-if's factor: show what was measured
            duration /= factors[i]
        spans.append((to_ns(s + shift), to_ns(s + shift + duration)))
    return spans


def _process(graph: SimGraph, pid: int, kind: str, spans: Sequence[tuple[int, int]],
             segments: bool, tracks: Sequence[str],
             facts: Optional[OpFacts] = None) -> list[dict[str, Any]]:  # fmt: skip
    """Metadata and slices of one process (a rank's simulated or measured schedule);
    ``tracks``: its resources' track names (:func:`track_names`); ``facts``: the slices'
    args beyond ``node_id`` (:mod:`chakra.views.timeline_args`)."""
    name = f"rank {graph.rank} ({kind})"
    events = [
        {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}},
        {
            "ph": "M",
            "name": "process_sort_index",
            "pid": pid,
            "args": {"sort_index": 2 * graph.rank + (kind == "measured")},
        },
    ]
    for k, label in enumerate(tracks):
        events += _thread_meta(pid, k, label)
    slices = whole_ops(graph, spans) if not segments else _single(graph, spans)
    slices, lanes = _pack_unheld(slices, len(graph.resources))
    for lane in range(lanes):
        events += _thread_meta(pid, len(graph.resources) + lane, f"no resource {lane}")
    for piece in nest(slices):
        events.append(_slice_event(graph, pid, piece, facts))
    return events


def track_names(graph: SimGraph) -> list[str]:
    """Each resource's track name; a thread is named after the Kineto thread its ``.et``
    records for it (:mod:`chakra.et.threads`; read once per rank, from the metadata)."""
    recorded: Mapping[object, RecordedThread] = {}
    if graph.source and sniff_kind(graph.source) is TraceKind.CHAKRA_ET:
        with EtReader(graph.source) as reader:
            threads = get_threads(reader.metadata, graph.source)
        recorded = {thread.tid: thread for thread in threads}
    devices = device_count(graph.resources)
    names = []
    for res in graph.resources:
        thread = recorded.get(res.number) if res.is_thread else None
        names.append(thread.track_name() if thread is not None else res.track_label(devices))
    return names


def _thread_meta(pid: int, tid: int, name: str) -> list[dict[str, Any]]:
    return [
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}},
        {
            "ph": "M",
            "name": "thread_sort_index",
            "pid": pid,
            "tid": tid,
            "args": {"sort_index": tid},
        },
    ]


def _slice_event(graph: SimGraph, pid: int, piece: Slice,
                 facts: Optional[OpFacts]) -> dict[str, Any]:  # fmt: skip
    if facts is not None:
        args = facts.args(piece.node, piece.members)
    else:
        args = {"node_id": graph.ids[piece.node]}
    if len(piece.members) > 1:
        args["segment_ids"] = [graph.ids[m] for m in piece.members if m != piece.node]
    if piece.cut_ns:
        args["cut_ns"] = piece.cut_ns
    if piece.moved_ns:
        args["moved_ns"] = piece.moved_ns
    return {
        "ph": "X",
        "cat": "op",
        "name": graph.names[piece.node],
        "pid": pid,
        "tid": piece.tid,
        "ts": to_us(piece.begin_ns),
        "dur": to_us(piece.end_ns - piece.begin_ns),
        "args": args,
    }


def _single(graph: SimGraph, spans: Sequence[tuple[int, int]]) -> list[Slice]:
    resource = graph.resource
    return [Slice(resource[i], b, e, i, (i,)) for i, (b, e) in enumerate(spans) if b >= 0]


def whole_ops(graph: SimGraph, spans: Sequence[tuple[int, int]]) -> list[Slice]:
    """One slice per op: a node with the later segments of its op, spanning them and every
    child op on the same resource (transitively). Nodes with ``spans`` begin < 0 are left
    out. Tid = resource index (NO_RESOURCE for nodes that hold none)."""
    position = {node_id: i for i, node_id in enumerate(graph.ids)}
    leader = list(range(len(graph.ids)))
    for i, op_id in (graph.segment_of or {}).items():
        leader[i] = position.get(op_id, i)
    members: dict[int, list[int]] = {}
    begin, end = [0] * len(leader), [0] * len(leader)  # valid where members has the head
    for i, (b, e) in enumerate(spans):
        if b < 0:
            continue
        head = leader[i]
        nodes = members.get(head)
        if nodes is None:
            members[head] = [i]
            begin[head], end[head] = b, e
        else:
            nodes.append(i)
            begin[head] = min(begin[head], b)
            end[head] = max(end[head], e)
    parent = _same_resource_parents(graph, leader, position)
    for head in _deepest_first(parent, list(members)):
        up = parent[head]
        if up >= 0 and up in members:
            begin[up] = min(begin[up], begin[head])
            end[up] = max(end[up], end[head])
    resource = graph.resource
    return [
        Slice(resource[head], begin[head], end[head], head, tuple(nodes))
        for head, nodes in members.items()
    ]


def _same_resource_parents(graph: SimGraph, leader: list[int],
                           position: dict[int, int]) -> list[int]:  # fmt: skip
    """Each op leader's parent op leader when both hold the same resource, else -1."""
    parent = [-1] * len(leader)
    if graph.parent_id is None:
        return parent
    resource = graph.resource
    for i, pid in enumerate(graph.parent_id):
        if pid < 0 or leader[i] != i:
            continue
        up = position.get(pid)
        if up is None:
            continue
        up = leader[up]
        if up != i and resource[up] == resource[i] != NO_RESOURCE:
            parent[i] = up
    return parent


def _deepest_first(parent: list[int], nodes: list[int]) -> list[int]:
    """``nodes`` ordered by depth in the ``parent`` forest, deepest first (no recursion; a
    parent cycle, which a valid graph cannot have, counts as the root)."""
    depth: dict[int, int] = {}
    for node in nodes:
        chain, at = [], node
        while at >= 0 and at not in depth and at not in chain:
            chain.append(at)
            at = parent[at]
        level = depth.get(at, -1) if at >= 0 else -1
        for step in reversed(chain):
            level += 1
            depth[step] = level
    return sorted(nodes, key=lambda n: -depth[n])


def _pack_unheld(slices: list[Slice], first_lane: int) -> tuple[list[Slice], int]:
    """Slices of nodes that hold no resource spread over lanes ``first_lane``, ... so that
    none overlaps another on its lane; returns the slices and the number of lanes."""
    held = [s for s in slices if s.tid != NO_RESOURCE]
    unheld = sorted(
        (s for s in slices if s.tid == NO_RESOURCE), key=lambda s: (s.begin_ns, s.end_ns, s.node)
    )
    lane_end: list[int] = []
    for piece in unheld:
        lane = next((k for k, e in enumerate(lane_end) if e <= piece.begin_ns), len(lane_end))
        if lane == len(lane_end):
            lane_end.append(piece.end_ns)
        lane_end[lane] = piece.end_ns
        held.append(msgspec.structs.replace(piece, tid=first_lane + lane))
    return held, len(lane_end)


def nest(slices: Sequence[Slice]) -> list[Slice]:
    """``slices`` adjusted so that on each track every slice that starts inside another ends
    inside it (see the module docstring). Sorted by track, begin, longest first. A moved
    start can change the order: passes repeat until one changes nothing (in practice two)."""
    out = list(slices)
    for _ in range(8):
        out, changed = _nest_pass(out)
        if not changed:
            break
    return out


def _nest_pass(slices: Sequence[Slice]) -> tuple[list[Slice], bool]:
    out: list[Slice] = []
    ordered = sorted(slices, key=lambda s: (s.tid, s.begin_ns, -s.end_ns, s.node))
    stack: list[Slice] = []
    changed = False
    for piece in ordered:
        if stack and stack[-1].tid != piece.tid:
            stack = []
        while stack:
            top = stack[-1]
            if top.end_ns <= piece.begin_ns:
                stack.pop()
            elif piece.end_ns <= top.end_ns:
                break
            elif top.end_ns - piece.begin_ns < _START_RESOLUTION_NS:  # a rounded start
                stack.pop()
                moved = top.end_ns - piece.begin_ns + piece.moved_ns
                piece = msgspec.structs.replace(piece, begin_ns=top.end_ns, moved_ns=moved)
                changed = True
            else:
                cut = piece.end_ns - top.end_ns
                piece = msgspec.structs.replace(piece, end_ns=top.end_ns, cut_ns=piece.cut_ns + cut)
                changed = True
                break
        stack.append(piece)
        out.append(piece)
    return out, changed


def _critical_track(result: SimResult, r: int, spans: Sequence[tuple[int, int]]) -> list[dict]:
    """The simulated process's "critical path" track: the chain's nodes, first to last."""
    graph = result.graphs[r]
    chain = critical_chain(result, r)
    if not chain:
        return []
    tid = len(graph.resources) + len(graph.ids) + 1  # after every possible lane
    events = _thread_meta(graph.rank, tid, "critical path")
    events[1]["args"]["sort_index"] = -1
    last = -1
    for node in reversed(chain):
        begin, end = spans[node]
        begin = max(begin, last)  # consecutive on the chain: never overlapping
        end = max(end, begin)
        last = end
        events.append(
            {
                "ph": "X",
                "cat": "critical_path",
                "name": graph.names[node],
                "pid": graph.rank,
                "tid": tid,
                "ts": to_us(begin),
                "dur": to_us(end - begin),
                "args": {"node_id": graph.ids[node]},
            }
        )
    return events
