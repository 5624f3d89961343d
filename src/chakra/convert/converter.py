"""``convert_et_plus``: ET+ -> Chakra ET graph (a pure function), and the writer around it."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from itertools import chain
from typing import Any, Optional

import msgspec

import chakra
from chakra.convert.classify import COMMON_KINDS, Classified, Classifier, reads_payload
from chakra.convert.contradictions import (
    contradiction_warning,
    drop_contradicting,
    linker_contradictions,
)
from chakra.convert.cycles import break_cycles
from chakra.convert.et_plus_input import (
    EtPlusNode,
    EtPlusTrace,
    load_et_plus,
)
from chakra.convert.evidence_edges import evidence
from chakra.convert.graph import (
    DelayNode,
    Deps,
    Graph,
    IdleNode,
    add_delays,
    thread_chains,
)
from chakra.convert.idle_waits import idle_after_waits
from chakra.convert.node_stream import serialized_nodes, write_nodes
from chakra.convert.parents import Parents, backward_parents
from chakra.convert.segments import Segmentation
from chakra.errors import ChakraError, PathLike
from chakra.et.attributes import set_attr
from chakra.et.contradictions import set_contradictions
from chakra.et.schema import GlobalMetadata, Node, NodeType
from chakra.et.threads import set_threads
from chakra.fileio import AtomicGroup
from chakra.ingest.json_input import gc_paused
from chakra.progress import STEPS, Progress, phase, tracked

logger = logging.getLogger(__name__)


class ConvertOptions(msgspec.Struct, frozen=True):
    """``gaps``: replay measured idle time before top-level CPU ops as idle nodes.
    ``rank``: this trace's global rank (default: the ET+'s, from Kineto), for the ends of
    send/recv. ``process_group_metadata``: write the process_group:init op as a METADATA
    node in the form ASTRA-sim parses (the shipped ASTRA-sim aborts on any METADATA node:
    by default it is a CPU node keeping the table in ``process_groups``)."""

    gaps: bool = True
    rank: Optional[int] = None
    process_group_metadata: bool = False
    #: refuse a send/recv whose peer rank is unknown (no comm_src/comm_dst): a .et of one
    #: rank must be valid alone; chakra_pipeline fills them from the other ranks instead
    require_peers: bool = False


class ConvertReport(msgspec.Struct, frozen=True):
    nodes_by_type: dict[str, int]
    edges: dict[str, int]
    dropped_edges: dict[str, int]
    idle_nodes: int
    cycles_broken: list[str]
    warnings: list[str]
    #: dependencies dropped because the measured times contradict them (contradictions.py)
    contradicting_edges_dropped: int = 0
    #: the same by kind
    contradicting_edges_dropped_by_kind: dict[str, int] = {}
    #: every dependency the measured times contradict, by kind: those the linker left out
    #: (its report) and those dropped here; recorded in the .et (chakra.et.contradictions)
    contradictions: dict[str, int] = {}
    #: ops closed after their parent returned, replayed without holding their thread
    replayed_beside_thread: int = 0
    #: parents not written as ctrl_deps: they would close a cycle with data_deps (parents.py)
    parents_left_out: int = 0
    #: ASTRA-sim group id -> global ranks, for the groups whose members this trace names
    comm_groups: dict[str, list[int]] = {}


class EtGraph(msgspec.Struct, frozen=True):
    """A converted trace: GlobalMetadata and nodes sorted by id (protobuf messages)."""

    metadata: Any
    nodes: tuple[Any, ...]
    report: ConvertReport


def _metadata(trace: EtPlusTrace, report: ConvertReport, options: ConvertOptions) -> Any:
    metadata = GlobalMetadata()
    set_attr(metadata, "schema", trace.schema)
    rank = _rank(trace, options)
    if rank is not None and rank >= 0:  # for chakra_sim: chakra.simulate.rank_order
        set_attr(metadata, "rank", rank)
    for name in ("pid", "start_ts", "finish_ts"):
        value = getattr(trace, name)
        if isinstance(value, int) and value >= 0:
            set_attr(metadata, name, value)
    if trace.time is not None:
        set_attr(metadata, "time", trace.time)
    set_attr(metadata, "producer", "chakra_converter")
    set_attr(metadata, "producer_version", chakra.__version__)
    set_contradictions(metadata, report.contradictions)
    if trace.link is not None:
        set_threads(metadata, trace.link.threads)
    return metadata


def _rank(trace: EtPlusTrace, options: ConvertOptions) -> Optional[int]:
    """The trace's global rank: ``options.rank``, else the one Kineto recorded, else None."""
    return options.rank if options.rank is not None else trace.link.rank if trace.link else None


def _index(trace: EtPlusTrace) -> dict[int, EtPlusNode]:
    by_id: dict[int, EtPlusNode] = {}
    repeated = Counter()
    for node in trace.nodes:
        if node.id in by_id:
            repeated[node.id] += 1
        by_id[node.id] = node
    if repeated:
        shown = ", ".join(str(i) for i in sorted(repeated)[:5])
        raise ChakraError(f"{trace.path}: {len(repeated)} node ids repeat (e.g. {shown})")
    if by_id and min(by_id) < 0:
        raise ChakraError(f"{trace.path}: node id {min(by_id)} is negative (ids are unsigned)")
    return by_id


def convert_et_plus(trace: EtPlusTrace, options: ConvertOptions) -> EtGraph:
    """Convert a loaded ET+ into a Chakra ET graph held in memory (see docs/design.md,
    "Converting"). :func:`convert_file` streams the nodes to disk instead."""
    with gc_paused():
        plan, report = _planned(trace, options)
        total = sum(report.nodes_by_type.values())
        serialized = tracked(serialized_nodes(trace, plan), total,
                             f"building the nodes of {trace.path}", unit="nodes")  # fmt: skip
        nodes = tuple(map(Node.FromString, serialized))
        return EtGraph(_metadata(trace, report, options), nodes, report)


class _Plan(msgspec.Struct):
    """Everything but the protobuf nodes and the report: the graph, extra nodes and node
    kinds."""

    by_id: dict[int, EtPlusNode]
    deps: dict[int, Deps]
    segments: Segmentation
    idle: list[IdleNode]
    delays: list[DelayNode]
    kinds: dict[int, Classified]
    parents: Parents
    end: Optional[tuple]  # (id, deps, start_us) of the [end] node, if any (_end_node)


#: The steps of :func:`_plan` its progress counts (``progress.step`` calls).
_PLAN_STEPS = 8


def _planned(trace: EtPlusTrace, options: ConvertOptions) -> tuple[_Plan, ConvertReport]:
    """:func:`_plan`, a phase of its own: big traces report their progress a step at a time
    (:mod:`chakra.progress`)."""
    count = len(trace.nodes)
    with phase(f"converting {trace.path}", count, detail=f"{count:,} nodes",
               total=_PLAN_STEPS, unit=STEPS) as progress:  # fmt: skip
        return _plan(trace, options, progress)


def _plan(
    trace: EtPlusTrace, options: ConvertOptions, progress: Progress
) -> tuple[_Plan, ConvertReport]:
    progress.step("indexing nodes")
    by_id = _index(trace)
    graph = Graph(by_id)
    segments = Segmentation(max(by_id) + 1)
    classifier = Classifier(by_id, _rank(trace, options), options.process_group_metadata)
    host_comms = {n.id for n in trace.nodes if not n.is_gpu and classifier.is_host_collective(n)}
    progress.step("chaining each thread's ops")
    idle = thread_chains(trace, by_id, graph, options.gaps, segments, host_comms)
    segments.pieces.clear()  # program order is in the graph now; frees a list per host op
    progress.step("adding the linker's dependencies")
    evidence(trace, by_id, graph, segments)
    start_us = {n.id: n.ts for n in trace.nodes if n.ts is not None}
    for op_segments in segments.segments.values():
        start_us.update((s.node_id, s.start) for s in op_segments)
    start_us.update({gap.node_id: by_id[gap.before].ts or 0 for gap in idle})
    measured_end = _measured_ends(by_id, segments, idle)
    idle = idle_after_waits(idle, graph, by_id, measured_end)
    progress.step("dropping dependencies the measured times contradict")
    contradicting = drop_contradicting(graph, start_us, measured_end, by_id)
    progress.step("breaking cycles")
    broken = break_cycles(graph.deps, graph.ids, start_us)
    progress.step("adding delays")
    timed = chain(
        ((n.id, start_us[n.id]) for n in trace.nodes if n.ts is not None and n.end is not None),
        ((s.node_id, s.start) for s in segments.extra),  # later segments wait too
    )
    delays = add_delays(timed, graph, measured_end, segments.next_id)
    start_us.update((delay.node_id, delay.start_us) for delay in delays)
    progress.step("choosing parents")
    parents = Parents(by_id, segments, idle, delays)
    parents.left_out = backward_parents(parents.items(), graph.deps, graph.ids, start_us)
    progress.step("classifying nodes")
    distinct: dict[Classified, Classified] = {}  # most nodes are one of a few kinds
    kinds = {node.id: kind if kind in COMMON_KINDS else distinct.setdefault(kind, kind)
             for node in trace.nodes for kind in (classifier.classify(node),)}  # fmt: skip
    if options.require_peers:
        _require_peers(trace, kinds)
    end = _end_node(kinds, graph, parents, measured_end, by_id)
    plan = _Plan(by_id, graph.deps, segments, idle, delays, kinds, parents, end)
    linked = linker_contradictions(trace)
    return plan, _report(plan, trace.path, classifier, graph, linked, contradicting, broken)


def _report(
    plan: _Plan,
    path: str,
    classifier: Classifier,
    graph: Graph,
    linked: Counter,
    dropped: Counter,
    broken: list,
) -> ConvertReport:
    """The report of a plan, its warnings logged: what the classifier guessed, the
    dependencies the measured times contradict (``linked``: left out by the linker,
    ``dropped`` here), the ``broken`` cycles."""
    kinds, segments, end = plan.kinds, plan.segments, plan.end
    types = Counter(kind.node_type.name for kind in kinds.values())
    types[NodeType.COMP_NODE.name] += (len(plan.idle) + len(segments.extra) + len(plan.delays)
                                       + bool(end))  # fmt: skip
    warnings = [f"{count} x {what}" for what, count in sorted(classifier.guesses.items())]
    warnings += [f"{count} x {what}" for what, count in sorted(classifier.notes.items())]
    groups = _comm_groups(kinds.values())
    unlisted = sorted({k.pg_name for k in kinds.values() if k.pg_name is not None} - set(groups))
    if unlisted:
        warnings.append(f"process groups {', '.join(unlisted)} have no known members here "
                        "(no pg_ranks): the comm-group file cannot list them; chakra_pipeline "
                        "finds them from all ranks")  # fmt: skip
    if end is not None:
        warnings.append(f"an [end] node (0 us, no resource) after the {len(end[1])} send/recv "
                        "ops that end the graph: ASTRA-sim aborts when a rank finishes on one "
                        "and the graph has CPU nodes")  # fmt: skip
    renamed = classifier.group_ids.renamed
    if renamed:
        warnings.append("process groups named by text given ASTRA-sim group ids: " + ", ".join(
            f"{name[:40]!r} -> {group}" for name, group in sorted(renamed.items())))  # fmt: skip
    if graph.dropped:
        warnings.append("dependencies to unknown nodes dropped: " + ", ".join(
            f"{kind} {count}" for kind, count in sorted(graph.dropped.items())))  # fmt: skip
    contradicted = contradiction_warning(linked, dropped)
    if contradicted is not None:
        warnings.append(contradicted)
    cycles = [f"removed {src} -> {dst} from cycle {' -> '.join(map(str, cycle[:10]))}"
              for src, dst, cycle in broken]  # fmt: skip
    for message in [*warnings, *cycles]:
        logger.warning("%s: %s", path, message)
    return ConvertReport(
        nodes_by_type=dict(sorted(types.items())),
        edges=dict(sorted(graph.counts.items())),
        dropped_edges=dict(sorted(graph.dropped.items())),
        idle_nodes=len(plan.idle),
        cycles_broken=cycles,
        warnings=warnings,
        contradicting_edges_dropped=sum(dropped.values()),
        contradicting_edges_dropped_by_kind=dict(sorted(dropped.items())),
        contradictions=dict(sorted((linked + dropped).items())),
        replayed_beside_thread=len(segments.detached),
        parents_left_out=len(plan.parents.left_out),
        comm_groups=groups,
    )


def _require_peers(trace: EtPlusTrace, kinds: dict[int, Classified]) -> None:
    """Refuse a send/recv without both ends: chakra_validate rejects such a ``.et``."""
    p2p = (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)
    unknown = sorted(
        i for i, k in kinds.items()
        if k.node_type in p2p and (k.comm_src is None or k.comm_dst is None)
    )  # fmt: skip
    if unknown:
        raise ChakraError(
            f"{trace.path}: node {unknown[0]} ({len(unknown)} send/recv in all): the peer "
            "rank is unknown (give --rank, and the trace needs a readable process_group:init "
            "table naming the pair), so no valid .et can be written; chakra_pipeline converts "
            "all ranks together"
        )


def _end_node(
    kinds: dict[int, Classified],
    graph: Graph,
    parents: Parents,
    measured_end: dict[int, Any],
    by_id: dict[int, EtPlusNode],
) -> Optional[tuple]:
    """``(id, deps, start_us)`` of a node after the send/recv ops nothing depends on, when
    there are such: the shipped ASTRA-sim ends its process when a rank's last node is a
    send or recv and the graph has CPU nodes (its statistics throw outside any handler)."""
    p2p = (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)
    ends = [i for i, kind in kinds.items() if kind.node_type in p2p]
    if not ends:
        return None
    candidates = set(ends)  # a set of the few send/recv, not of every node with a successor
    followed = {src for srcs in graph.deps.values() for src in srcs if src in candidates}
    followed.update(p for _, p in parents.items() if p in candidates)
    ends = sorted(i for i in ends if i not in followed)
    if not ends:
        return None
    times = [measured_end.get(i, by_id[i].end) for i in ends]
    start = max((t for t in times if t is not None), default=0)
    return max(graph.ids) + 1, ends, start


def _comm_groups(kinds: Iterable[Classified]) -> dict[str, list[int]]:
    """Members of each group the communication nodes name (their ``pg_ranks``)."""
    groups: dict[str, list[int]] = {}
    for kind in kinds:
        if kind.pg_name is not None and kind.pg_ranks:
            groups.setdefault(kind.pg_name, sorted(kind.pg_ranks))
    return dict(sorted(groups.items(), key=lambda item: int(item[0])))


def _measured_ends(
    by_id: dict[int, EtPlusNode], segments: Segmentation, idle: list
) -> dict[int, Any]:
    """Measured end of every node that has one: GPU ops, host op segments, idle nodes."""
    ends: dict[int, Any] = {
        n.id: n.end for n in by_id.values() if n.is_gpu and n.end is not None
    }  # fmt: skip
    for op_segments in segments.segments.values():
        ends.update((s.node_id, s.end) for s in op_segments)
    ends.update((g.node_id, by_id[g.before].ts) for g in idle if by_id[g.before].ts is not None)
    return ends


def convert_file(
    input_path: PathLike,
    output_path: PathLike,
    options: Optional[ConvertOptions] = None,
    group: Optional[AtomicGroup] = None,
    processes: int = 1,
) -> ConvertReport:
    """Load ET+, convert, and stream the ``.et`` to disk (atomically; ``.gz`` compresses):
    only one protobuf node is in memory at a time. Our own ET+ is loaded as an outline and
    read a second time while writing (see ``load_et_plus``). With a ``group``, the ``.et``
    appears when the group commits. ``processes`` 2: a forked second process builds the
    later half of the nodes (:func:`chakra.convert.node_stream.write_nodes`), same bytes."""
    trace = load_et_plus(input_path, keep_whole=reads_payload)
    options = options or ConvertOptions()
    with gc_paused():
        plan, report = _planned(trace, options)
        metadata = _metadata(trace, report, options)
        write_nodes(output_path, metadata, trace, plan, group, processes)
    return report
