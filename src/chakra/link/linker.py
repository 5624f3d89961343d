"""``link_traces``: host ET + Kineto trace -> :class:`LinkedTrace` (a pure function)."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from typing import Optional

import msgspec

from chakra.errors import LinkError
from chakra.ingest.device_model import DeviceTrace, KinetoEvent
from chakra.ingest.edges import EARLY_END
from chakra.ingest.host_model import HostTrace
from chakra.ingest.json_input import gc_paused
from chakra.link.cpu_join import CpuJoin, join_cpu_ops, kineto_cpu_events, linkable_host_ops
from chakra.link.evidence import (
    HostTimeline,
    StreamIndex,
    calls_by_correlation,
    event_wait_edges,
    host_sync_edges,
    inter_thread_and_gaps,
    launch_edges,
    pageable_not_blocking,
    stream_order_edges,
)
from chakra.link.gpu_link import GpuLinker
from chakra.link.inferred import (
    TAIL_WAIT,
    is_inferred,
    levels_of,
    stream_resume_edges,
    tail_wait_edges,
    thread_resume_edges,
    thread_wake_edges,
)
from chakra.link.linked_trace import (
    CpuMatch,
    Edge,
    EdgeKind,
    GpuLinkStrategy,
    GpuNode,
    LinkedTrace,
    LinkOptions,
    LinkReport,
    Number,
)
from chakra.link.nesting import ThreadNesting, program_order_key
from chakra.link.threads import ReplayThreads, threads_ran_under
from chakra.link.verify import edge_contradictions
from chakra.progress import STEPS, Progress, phase

logger = logging.getLogger(__name__)


def _check_pair(host: HostTrace, device: DeviceTrace, options: LinkOptions) -> None:
    if not device.cpu_ops and not device.gpu_ops:
        raise LinkError(f"{device.path}: the Kineto trace holds no CPU or GPU ops to link")
    pids = device.host_pids
    if host.pid is not None and pids and host.pid not in pids and not options.allow_pid_mismatch:
        shown = ", ".join(map(str, pids))
        raise LinkError(
            f"{host.path} (pid {host.pid}) and {device.path} (pid {shown}) come from different "
            "processes; pass --allow-pid-mismatch to link them anyway"
        )


def _nestings(device: DeviceTrace) -> dict[tuple, ThreadNesting]:
    threads: dict[tuple, list] = defaultdict(list)
    for event in sorted(kineto_cpu_events(device), key=program_order_key):
        threads[(event.pid, event.tid)].append(event)
    return {thread: ThreadNesting(events) for thread, events in threads.items()}


def _matches(join: CpuJoin, nestings: dict[tuple, ThreadNesting]) -> dict[int, CpuMatch]:
    exclusive = {
        id(event): (nesting.exclusive_us[i], thread)
        for thread, nesting in nestings.items()
        for i, event in enumerate(nesting.events)
    }
    matches = {}
    for host_id, (event, strategy) in join.matches.items():
        excl, thread = exclusive[id(event)]
        matches[host_id] = CpuMatch(host_id, event, strategy, excl, thread)
    return matches


#: The steps of :func:`link_traces` its progress counts (``progress.step`` calls in _link).
_STEPS = 6


def link_traces(host: HostTrace, device: DeviceTrace, options: LinkOptions) -> LinkedTrace:
    """Link ``host`` with ``device``: match CPU ops, attach GPU ops to their launching host
    ops, and collect every dependency the traces show (see docs/design.md, "Linking").
    Big traces report their progress (:mod:`chakra.progress`), a step at a time."""
    size = len(host.ops) + len(device.cpu_ops) + len(device.gpu_ops)
    detail = (
        f"{len(host.ops):,} host ops, {len(device.cpu_ops):,} Kineto CPU ops, "
        f"{len(device.gpu_ops):,} GPU ops"
    )
    linking = phase(
        f"linking {host.path} with {device.path}", size, detail=detail, total=_STEPS, unit=STEPS
    )
    with gc_paused(), linking as progress:  # builds acyclic values only: json_input.gc_paused
        return _link(host, device, options, progress)


def _link(
    host: HostTrace, device: DeviceTrace, options: LinkOptions, progress: Progress
) -> LinkedTrace:
    _check_pair(host, device, options)
    progress.step("matching CPU ops")
    join = join_cpu_ops(host, device, options)
    if not join.matches:
        raise LinkError(
            f"no host op of {host.path} matches a CPU op of {device.path}: "
            "are they from the same run?"
        )
    progress.step("nesting CPU ops per thread")
    nestings = _nestings(device)
    matches = _matches(join, nestings)
    join = msgspec.structs.replace(join, matches={})  # in ``matches`` now: not held twice
    host_of = {id(m.event): host_id for host_id, m in matches.items()}
    progress.step("attaching GPU ops")
    calls = calls_by_correlation(device)
    notes = list(join.notes)
    threads = _replay_threads(host, join, matches, nestings, host_of, notes)
    linker = GpuLinker(nestings, host_of, calls, join.window)
    first_gpu_id = max(op.id for op in host.ops) + 1 + len(threads.roots)
    all_gpu_nodes = linker.link(device.gpu_ops, first_gpu_id)
    progress.step("collecting dependencies")
    found = _dependencies(
        device, all_gpu_nodes, HostTimeline(nestings, host_of), calls, notes, options.inferred
    )
    progress.step("checking dependencies against the measured times")
    gpu_nodes, gpu_edges = _keep_window(all_gpu_nodes, found.gpu_edges, first_gpu_id)
    contradictions, edges = _checked([*gpu_edges, *found.thread_edges], matches, gpu_nodes, notes)
    not_blocking = pageable_not_blocking(found.not_blocking)
    progress.step("reporting")
    report = _report(
        host, device, join, matches, gpu_nodes, linker, edges, notes, contradictions, not_blocking
    )
    report = msgspec.structs.replace(
        report,
        threads_not_in_host_et=len(threads.roots),
        host_source=host.source,
        host_source_notes=list(host.notes) if host.source != "host_et" else [],
    )
    for note in notes:
        logger.warning("%s", note)
    return LinkedTrace(
        host=host,
        device=device,
        matches=matches,
        gpu_nodes=gpu_nodes,
        edges=tuple(edges),
        inter_thread_dep=found.inter_thread,
        idle_gap_us=found.gaps,
        sync_dep=_sync_dep(edges),
        report=report,
        ran_under=threads.ran_under,
        replay_threads=threads.roots,
    )


def _sync_dep(edges: list[Edge]) -> dict[int, list[int]]:
    """For each host op that waited in a host sync, the GPU nodes it waited for."""
    sync_dep: dict[int, list[int]] = defaultdict(list)
    for edge in edges:
        waiting = edge.dst if edge.kind is EdgeKind.HOST_SYNC else None
        if waiting is not None and edge.src not in sync_dep[waiting]:
            sync_dep[waiting].append(edge.src)
    return dict(sync_dep)


def _checked(
    edges: list[Edge], matches: dict[int, CpuMatch], gpu_nodes: tuple[GpuNode, ...], notes: list
) -> tuple[dict[str, int], list[Edge]]:
    """The edges the measured times contradict, by kind (noted), and the others."""
    events = {host_id: match.event for host_id, match in matches.items()}
    events.update((node.node_id, node.event) for node in gpu_nodes)
    # into an op's end, or from a collective's completion before it closed: consistent
    exempt = (TAIL_WAIT, EARLY_END)
    tails = [e for e in edges if e.via_api in exempt]
    checked = [e for e in edges if e.via_api not in exempt]
    contradictions, kept = edge_contradictions(checked, events, gpu_nodes)
    kept += tails
    if contradictions:
        shown = ", ".join(f"{count} {kind}" for kind, count in contradictions.items())
        notes.append(f"evidence contradicting the measured times (not written): {shown}")
    return contradictions, kept


def _replay_threads(
    host: HostTrace,
    join: CpuJoin,
    matches: dict[int, CpuMatch],
    nestings: dict[tuple, ThreadNesting],
    host_of: dict[int, int],
    notes: list[str],
) -> ReplayThreads:
    """Where the ops that ran elsewhere than under their host parent ran: on another
    thread, or under another op than a stale host parent (:mod:`chakra.link.threads`)."""
    if join.reparented:
        notes.append(
            f"{len(join.reparented)} host ops whose host ET parent had ended when Kineto "
            "shows them (a stale parent): kept by their unique Record function id and "
            "re-parented where they ran"
        )
    moved = join.other_thread | join.reparented
    return threads_ran_under(host, matches, moved, nestings, host_of, notes)


class _Dependencies(msgspec.Struct, frozen=True):
    """What :func:`_dependencies` collects: the edges of GPU ops (launch, stream order,
    event waits, host syncs) and between host threads, the threads' ``inter_thread_dep``
    and idle gaps, and the pageable copies that did not block (no edge)."""

    gpu_edges: list[Edge]
    thread_edges: list[Edge]
    inter_thread: dict[int, int]
    gaps: dict[int, Number]
    not_blocking: list[GpuNode]


def _dependencies(
    device: DeviceTrace,
    gpu_nodes: tuple[GpuNode, ...],
    timeline: HostTimeline,
    calls: dict[int, KinetoEvent],
    notes: list[str],
    inferred: bool,
) -> _Dependencies:
    """Every edge the traces show (:mod:`chakra.link.evidence`); with ``inferred``, also
    the waits the times show (:mod:`chakra.link.inferred`)."""
    index = StreamIndex(gpu_nodes)
    thread_edges, inter_thread, gaps = inter_thread_and_gaps(timeline)
    syncs = host_sync_edges(device, index, gpu_nodes, timeline, calls, notes, inferred)
    event_waits = event_wait_edges(device, index, calls, notes)
    gpu_edges = [*launch_edges(gpu_nodes), *stream_order_edges(index), *event_waits, *syncs.edges]
    if inferred:
        gpu_edges += stream_resume_edges(gpu_nodes, event_waits)
        top = timeline.top_level()
        levels = levels_of(timeline.nestings, timeline.host_of)
        thread_edges += thread_resume_edges(timeline.nestings, timeline.host_of, top, levels)
        thread_edges += tail_wait_edges(timeline.nestings, timeline.host_of, top, levels)
        del levels  # not held through the rest: it was the link's peak memory
        steps = {
            timeline.host_of[id(s.event)] for s in device.steps if id(s.event) in timeline.host_of
        }
        thread_edges += thread_wake_edges(timeline.ops, thread_edges, steps)
    return _Dependencies(gpu_edges, thread_edges, inter_thread, gaps, syncs.not_blocking)


def _keep_window(
    nodes: tuple[GpuNode, ...], edges: list[Edge], first_id: int
) -> tuple[tuple[GpuNode, ...], list[Edge]]:
    """Drop GPU nodes launched outside the window and every edge touching them; number the
    rest densely from ``first_id``. Evidence is collected before dropping, so an edge is
    never re-routed to a wrong neighbour when the true one lies outside."""
    if all(node.in_window for node in nodes) and all(
        node.node_id == first_id + i for i, node in enumerate(nodes)
    ):
        return nodes, edges  # nothing to drop or renumber: no second copy of everything
    new_id = {}
    kept = []
    for node in nodes:
        if node.in_window:
            new_id[node.node_id] = first_id + len(kept)
            kept.append(msgspec.structs.replace(node, node_id=new_id[node.node_id]))
    dropped = {node.node_id for node in nodes if not node.in_window}

    def remap(node_id: Optional[int]) -> Optional[int]:
        return new_id.get(node_id, node_id) if node_id is not None else None

    kept_edges = [
        msgspec.structs.replace(edge, src=remap(edge.src), dst=remap(edge.dst))
        for edge in edges
        if edge.src not in dropped and edge.dst not in dropped
    ]
    return tuple(kept), kept_edges


def _report(
    host, device, join, matches, gpu_nodes, linker, edges, notes, contradictions, not_blocking
) -> LinkReport:
    by_external_id = sum(1 for n in gpu_nodes if n.linked_by is GpuLinkStrategy.EXTERNAL_ID)
    if by_external_id:
        notes.append(
            f"{by_external_id} GPU ops have no launch event; attached by their External id"
        )
    by_strategy = Counter(match.strategy.value for match in matches.values())
    linkable = len(linkable_host_ops(host))
    return LinkReport(
        host_ops=linkable,
        kineto_cpu_ops=len(device.cpu_ops),
        matched=dict(sorted(by_strategy.items())),
        unmatched_host_ops=linkable - len(matches),
        gpu_ops_total=len(device.gpu_ops),
        gpu_ops_linked=sum(1 for n in gpu_nodes if n.parent_id is not None)
        - contradictions.get("launch_outside_parent", 0),
        gpu_ops_linked_by_external_id=by_external_id,
        gpu_ops_orphaned=dict(sorted(linker.orphans.items())),
        gpu_ops_outside_window=linker.outside_window,
        streams=sorted({n.event.stream for n in gpu_nodes if n.event.stream is not None}),
        edges=dict(sorted(Counter(e.kind.value for e in edges).items())),
        window=join.window,
        notes=notes,
        rejected=join.rejected,
        host_ops_on_other_threads=len(join.other_thread),
        host_ops_reparented=len(join.reparented),
        contradictions=contradictions,
        pageable_copies_not_blocking=not_blocking,
        inferred=dict(sorted(Counter(e.kind.value for e in edges if is_inferred(e)).items())),
    )
