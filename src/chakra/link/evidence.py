"""Dependency evidence between linked nodes: stream order, cross-stream event waits, host
synchronisation, inter-thread hand-offs and idle gaps (rules in docs/design.md, "Linking").
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Optional

import msgspec

from chakra.ingest.device_model import CLOCK_RESOLUTION_US, DeviceTrace, KinetoEvent
from chakra.ingest.vocabulary import (
    BLOCKING_MEMCPY_APIS,
    RuntimeKind,
    SyncKind,
    copies_pageable_memory,
    copy_direction,
    runtime_kind,
)
from chakra.link.inferred import SYNC_RESUME, sync_resume_source
from chakra.link.linked_trace import Edge, EdgeKind, GpuNode, Number
from chakra.link.nesting import NO_PARENT, ThreadNesting


class StreamIndex:
    """GPU nodes per (device, stream) in execution order, searchable by launch time."""

    def __init__(self, nodes: Sequence[GpuNode]) -> None:
        self.by_stream: dict[tuple, list[GpuNode]] = defaultdict(list)
        for node in nodes:
            self.by_stream[node.stream_key].append(node)
        self.launch_times = {
            key: [n.launch_ts_us for n in stream] for key, stream in self.by_stream.items()
        }
        self.devices = sorted({key[0] for key in self.by_stream}, key=lambda d: (d is None, d))

    def streams_of(self, stream: int) -> list[tuple]:
        return [key for key in self.by_stream if key[1] == stream]

    def last_launched_before(self, key: tuple, instant: Number) -> Optional[GpuNode]:
        index = bisect_left(self.launch_times.get(key, []), instant) - 1
        return self.by_stream[key][index] if index >= 0 else None

    def first_launched_after(self, key: tuple, instant: Number) -> Optional[GpuNode]:
        times = self.launch_times.get(key, [])
        index = bisect_right(times, instant)
        return self.by_stream[key][index] if index < len(times) else None


def stream_order_edges(index: StreamIndex) -> list[Edge]:
    return [
        Edge(EdgeKind.STREAM_ORDER, a.node_id, b.node_id)
        for stream in index.by_stream.values()
        for a, b in zip(stream, stream[1:])
    ]


def launch_edges(nodes: Iterable[GpuNode]) -> list[Edge]:
    return [Edge(EdgeKind.LAUNCH, n.parent_id, n.node_id) for n in nodes if n.parent_id is not None]


def calls_by_correlation(device: DeviceTrace) -> dict[int, KinetoEvent]:
    """Runtime/driver calls by their ``correlation`` (shared by the GPU linker and evidence)."""
    return {e.correlation: e for e in device.runtime_calls if e.correlation is not None}


def event_wait_edges(
    device: DeviceTrace, index: StreamIndex, calls: Mapping[int, KinetoEvent], notes: list[str]
) -> list[Edge]:
    """From CUPTI ``Stream Wait Event`` records: the last op enqueued on the recording stream
    before ``cudaEventRecord`` -> the first op enqueued on the waiting stream after the
    ``cudaStreamWaitEvent``."""
    edges = []
    for sync in device.cuda_syncs:
        args = sync.args
        if args.sync_kind != SyncKind.STREAM_WAIT_EVENT:
            continue
        record = calls.get(args.wait_on_event_correlation)
        wait = calls.get(args.correlation)
        if record is None or wait is None or args.wait_on_stream is None or sync.stream is None:
            continue
        for key in index.streams_of(args.wait_on_stream):
            src = index.last_launched_before(key, record.ts_us or 0)
            dst = index.first_launched_after((key[0], sync.stream), wait.ts_us or 0)
            if src is not None and dst is not None:
                edges.append(
                    Edge(EdgeKind.EVENT_WAIT, src.node_id, dst.node_id, wait.name, wait.correlation)
                )
    waits = sum(1 for e in device.runtime_calls if runtime_kind(e.name) is RuntimeKind.STREAM_WAIT)
    if waits and not any(s.args.sync_kind == SyncKind.STREAM_WAIT_EVENT for s in device.cuda_syncs):
        notes.append(
            f"{waits} cudaStreamWaitEvent calls but no cuda_sync records: cross-stream event "
            "edges unknown (profile with CUDA sync events enabled to record them)"
        )
    return edges


def _sync_sources(
    call, sync, index: StreamIndex, calls, by_correlation, notes, infer
) -> tuple[list, bool]:
    """The GPU ops a synchronising call waited for, and whether that was inferred from
    timing (``inferred:sync_resume``: its stream or event is not recorded)."""
    kind = runtime_kind(call.name)
    instant = call.ts_us or 0
    if kind is RuntimeKind.MEMCPY:  # a copy the call waits for (see _waits_for_its_copy)
        node = by_correlation.get(call.correlation)
        return ([node] if node is not None else []), False
    unknown = (None, -1)
    if kind is RuntimeKind.SYNC_STREAM and sync is not None and sync.stream not in unknown:
        keys = index.streams_of(sync.stream)
    elif (
        kind is RuntimeKind.SYNC_EVENT
        and sync is not None
        and (sync.args.wait_on_stream not in unknown)
    ):
        record = calls.get(sync.args.wait_on_event_correlation)
        keys = index.streams_of(sync.args.wait_on_stream)
        instant = record.ts_us or 0 if record is not None else instant
    else:
        keys = list(index.by_stream)
    found = [n for n in (index.last_launched_before(key, instant) for key in keys) if n]
    if kind in (RuntimeKind.SYNC_STREAM, RuntimeKind.SYNC_EVENT) and len(keys) > 1:
        waited = sync_resume_source(call, found) if infer else None  # no record of what
        what = "stream" if kind is RuntimeKind.SYNC_STREAM else "event"
        if waited is not None:
            notes.append(f"{call.name} (correlation {call.correlation}): {what} unknown, "
                         "waited for the GPU op it returned at (inferred from timing)")  # fmt: skip
            return [waited], True
        if kind is RuntimeKind.SYNC_EVENT:
            notes.append(f"{call.name} (correlation {call.correlation}): event unknown")
            return [], False
        notes.append(f"{call.name} (correlation {call.correlation}): stream unknown, "
                     "treated as a device-wide sync")  # fmt: skip
    return found, False


def _waits_for_its_copy(
    call: KinetoEvent, by_correlation: Mapping[int, GpuNode], not_blocking: list[GpuNode]
) -> bool:
    """Whether a copy call returned only once its GPU copy (same correlation) was done: a
    blocking ``cudaMemcpy`` (and relatives), or any copy call, ``cudaMemcpyAsync`` included,
    whose copy is from or to pageable host memory, *when the measured times allow it*.

    A copy *to* pageable memory (DtoH) waits for the copy to complete; one *from* pageable
    memory (HtoD), even through ``cudaMemcpy``, returns once the driver has staged the data
    into a pinned buffer, which may be well before the copy ends (it may queue behind other
    work on its stream). So a pageable copy is taken as a host sync only when the call did
    not return before the copy ended (beyond the clock's resolution): the thread goes on
    when the call returns. A pageable copy that ended later did not block; it is added to
    ``not_blocking`` (the report counts them by direction) and gives no edge."""
    node = by_correlation.get(call.correlation)  # type: ignore[arg-type]
    pageable = node is not None and copies_pageable_memory(node.event.name)
    if node is not None and pageable and node.event.end_us > call.end_us + CLOCK_RESOLUTION_US:
        not_blocking.append(node)
        return False
    if call.name in BLOCKING_MEMCPY_APIS:
        return True
    return pageable and runtime_kind(call.name) is RuntimeKind.MEMCPY


class HostSyncs(msgspec.Struct, frozen=True):
    """The host_sync edges, and the pageable copies whose call returned before they ended
    (no edge: :func:`_waits_for_its_copy`)."""

    edges: list[Edge]
    not_blocking: list[GpuNode]


def host_sync_edges(
    device: DeviceTrace,
    index: StreamIndex,
    gpu_nodes: Sequence[GpuNode],
    timeline: HostTimeline,
    calls: Mapping[int, KinetoEvent],
    notes: list[str],
    infer: bool = True,
) -> HostSyncs:
    """GPU op -> the host op that could only run after it: for each synchronising call
    (device, stream and event synchronize; a copy call that waits for its copy, see
    :func:`_waits_for_its_copy`), the last op launched before it on each stream it waits
    for (for a copy: the copy itself) -> the next host op on the calling thread after the
    call (None when nothing follows). ``via`` is the synchronising call. With ``infer``, a
    stream or event synchronize the trace does not say the stream of waits for the op it
    returned at (``inferred:sync_resume``, :func:`chakra.link.inferred.sync_resume_source`)."""
    syncs = {s.args.correlation: s for s in device.cuda_syncs if s.args.correlation is not None}
    by_correlation = {n.event.correlation: n for n in gpu_nodes if n.event.correlation is not None}
    kinds = (RuntimeKind.SYNC_DEVICE, RuntimeKind.SYNC_STREAM, RuntimeKind.SYNC_EVENT)
    edges: list[Edge] = []
    not_blocking: list[GpuNode] = []
    for call in device.runtime_calls:
        if runtime_kind(call.name) not in kinds and not _waits_for_its_copy(
            call, by_correlation, not_blocking
        ):
            continue
        sources, inferred = _sync_sources(
            call, syncs.get(call.correlation), index, calls, by_correlation, notes, infer
        )
        dst = timeline.next_after(call)
        host = timeline.enclosing(call)
        via = f"{SYNC_RESUME} ({call.name})" if inferred else call.name
        for node in sources:
            edges.append(
                Edge(
                    EdgeKind.HOST_SYNC,
                    node.node_id,
                    dst,
                    via,
                    call.correlation,
                    call.ts_us,
                    call.end_us,
                    host,
                )
            )
    return HostSyncs(edges, not_blocking)


def pageable_not_blocking(copies: Iterable[GpuNode]) -> dict[str, int]:
    """The pageable copies that did not block, in the linked window, by direction (HtoD,
    DtoH)."""
    found = Counter(copy_direction(n.event.name) for n in copies if n.in_window)
    return dict(sorted(found.items()))


class HostTimeline:
    """Linked host ops per Kineto thread in time order: top-level ops, next-op lookup."""

    def __init__(self, nestings: Mapping[tuple, ThreadNesting], host_of: Mapping[int, int]):
        self.nestings = nestings
        self.host_of = host_of
        self.ops: dict[tuple, list[tuple[Number, Number, int, bool]]] = {}
        for thread, nesting in nestings.items():
            rows = []
            starts, ends, parent = nesting.starts, nesting.ends, nesting.parent
            # top-level: not a step, and every ancestor a step; a parent precedes its
            # children, so one pass in order answers it (no walk up per event)
            steps = [e.name.startswith("ProfilerStep#") for e in nesting.events]
            under_steps: list[bool] = []
            for i, event in enumerate(nesting.events):
                up = parent[i]
                under_steps.append(up == NO_PARENT or (steps[up] and under_steps[up]))
                host_id = host_of.get(id(event))
                if host_id is not None:
                    rows.append((starts[i], ends[i], host_id, under_steps[i] and not steps[i]))
            self.ops[thread] = rows
        self.starts = {t: [r[0] for r in rows] for t, rows in self.ops.items()}

    def next_after(self, call: KinetoEvent) -> Optional[int]:
        """The first linked host op on the call's thread starting at or after it ends."""
        thread = (call.pid, call.tid)
        starts = self.starts.get(thread, [])
        index = bisect_left(starts, call.end_us)
        return self.ops[thread][index][2] if index < len(starts) else None

    def enclosing(self, call: KinetoEvent) -> Optional[int]:
        """The innermost linked host op on the call's thread that encloses its start."""
        nesting = self.nestings.get((call.pid, call.tid))
        index = nesting.innermost_at(call.ts_us or 0) if nesting is not None else None
        if index is None:
            return None
        for candidate in [index, *nesting.ancestors(index)]:
            host_id = self.host_of.get(id(nesting.events[candidate]))
            if host_id is not None:
                return host_id
        return None

    def top_level(self) -> dict[tuple, list[tuple[Number, Number, int, bool]]]:
        return {t: [r for r in rows if r[3]] for t, rows in self.ops.items()}


def inter_thread_and_gaps(timeline: HostTimeline) -> tuple[list[Edge], dict, dict]:
    """Hand-offs between threads and idle gaps, over top-level host ops.

    A top-level op X on thread B depends on the top-level op Y of another thread that ended
    last within B's idle time before X (after B's previous top-level op ended, at or
    before X started): Y's end is what B was waiting for. The idle gap of X is X's start
    minus the end of B's previous top-level op.
    """
    top = timeline.top_level()
    ends = sorted((row[1], thread, row[2]) for thread, rows in top.items() for row in rows)
    end_times = [e[0] for e in ends]
    edges, dep, gaps = [], {}, {}
    for thread, rows in top.items():
        previous_end: Optional[Number] = None
        for start, end, host_id, _ in rows:
            if previous_end is not None:
                gaps[host_id] = max(start - previous_end, 0)
            low = bisect_right(end_times, previous_end) if previous_end is not None else 0
            high = bisect_right(end_times, start)
            for k in range(high - 1, low - 1, -1):
                if ends[k][1] != thread:
                    edges.append(Edge(EdgeKind.INTER_THREAD, ends[k][2], host_id))
                    dep[host_id] = ends[k][2]
                    break
            previous_end = end if previous_end is None else max(previous_end, end)
    return edges, dep, gaps
