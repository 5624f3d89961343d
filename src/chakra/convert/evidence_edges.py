"""The linker's dependency evidence mapped onto the converted graph's nodes: a GPU op
follows the segment of its launching op that ends by the launch, a continuation after a
synchronising call waits for the GPU, an inter-thread source is the op's last segment, and a
thread that waited for another inside an op (before a child, or in its last stretch) has
that wait as an edge instead of own time."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Optional

from chakra.convert.et_plus_input import EtPlusNode, EtPlusTrace
from chakra.convert.graph import Graph
from chakra.convert.segments import Segmentation
from chakra.ingest.edges import EARLY_END, TAIL_WAIT, EdgeKind


def _waiting_parent(
    src: int, dst: Optional[int], by_id, graph: Graph, segments, ended_at=None
) -> None:
    """A thread that waited for another inside an op (the main thread in ``ProfilerStep`` or
    ``## backward ##`` while the autograd thread runs): the op's own time right before the
    waiting child starts when the other thread's op ended, and depends on it. ``ended_at``:
    a collective that completed then, before it closed (``inferred:early_end``): the edge
    leaves from its segment ending then, which carries its id."""
    waiting = by_id.get(dst) if dst is not None else None
    source = by_id.get(src)
    if waiting is None or waiting.ts is None or source is None or source.end is None:
        return
    parent = waiting.ran_under if waiting.ran_under is not None else waiting.ctrl_deps
    if parent is None or parent == waiting.id:
        return
    if ended_at is None:  # the node the edge leaves from: the op's last segment
        last = segments.segments.get(src)
        ended_at, src = (last[-1].end if last else source.end), segments.last(src)
    segment = segments.wait_before(parent, waiting.ts, ended_at)
    if segment is not None:
        graph.add(src, segment, "inter_thread")


def _waiting_tail(src: int, dst: Optional[int], by_id, graph: Graph, segments) -> None:
    """An op whose own time after its last child was a wait for another thread's op
    (``inferred:tail_wait``): its last segment starts when that op ended, and depends on
    it."""
    waiting = by_id.get(dst) if dst is not None else None
    source = by_id.get(src)
    if waiting is None or waiting.end is None or source is None or source.end is None:
        return
    last = segments.segments.get(src)
    ended = last[-1].end if last else source.end
    segment = segments.wait_before(waiting.id, waiting.end, ended)
    if segment is not None:
        graph.add(segments.last(src), segment, "inter_thread")


def evidence(
    trace: EtPlusTrace, by_id: Mapping[int, EtPlusNode], graph: Graph, segments: Segmentation
) -> None:
    """Add the linker's dependency evidence, mapped onto segments: a GPU op follows the
    segment of its launching op that ends by the launch; a continuation after a
    synchronising call waits for the GPU; an inter-thread source is the op's last segment.
    For reference ET+ (no ``chakra_link``), stream order is rebuilt from the GPU nodes and
    ``sync_dep``/``inter_thread_dep`` are used."""
    gpu = [n for n in trace.nodes if n.is_gpu]
    for node in gpu:
        launch = node.launch.ts if node.launch is not None else None
        src = segments.ending_by(node.ctrl_deps, launch) if launch is not None else None
        graph.add(src if src is not None else node.ctrl_deps, node.id, "launch")
    if trace.link is not None:
        for dep in trace.link.dependencies:
            kind = dep.kind
            if kind is EdgeKind.HOST_SYNC:  # the call's own segment waits for the GPU
                call = dep.via_ts_us if dep.via_ts_us is not None else dep.via_end_us
                has_host = dep.via_host is not None
                inside = segments.containing(dep.via_host, call) if has_host else None
                graph.add(dep.src, inside if inside is not None else dep.dst, kind.value)
            elif kind is EdgeKind.INTER_THREAD and dep.via_api == TAIL_WAIT:
                _waiting_tail(dep.src, dep.dst, by_id, graph, segments)
            elif kind is EdgeKind.INTER_THREAD and dep.via_api == EARLY_END:
                # from the collective's segment that ends when its work completed (its id)
                dst = segments.first(dep.dst) if dep.dst is not None else None
                graph.add(dep.src, dst, kind.value)
                _waiting_parent(dep.src, dep.dst, by_id, graph, segments, dep.via_ts_us)
            elif kind is EdgeKind.INTER_THREAD:
                dst = segments.first(dep.dst) if dep.dst is not None else None
                graph.add(segments.last(dep.src), dst, kind.value)
                _waiting_parent(dep.src, dep.dst, by_id, graph, segments)
            elif kind in (EdgeKind.STREAM_ORDER, EdgeKind.EVENT_WAIT):
                graph.add(dep.src, dep.dst, kind.value)
        return
    streams: dict[tuple, list[EtPlusNode]] = defaultdict(list)
    for node in gpu:
        streams[(node.device, node.stream)].append(node)
    for ops in streams.values():
        ops.sort(key=lambda n: (n.ts or 0, n.id))
        for a, b in zip(ops, ops[1:]):
            graph.add(a.id, b.id, "stream_order")
    for node in trace.nodes:
        for src in node.sync_dep:
            graph.add(src, node.id, "host_sync")
        if node.inter_thread_dep is not None:
            graph.add(segments.last(node.inter_thread_dep), node.id, "inter_thread")
