"""``convert_et_plus``: ET+ -> Chakra ET graph (a pure function), and the writer around it."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, Optional

import msgspec

import chakra
from chakra.convert.classify import Classifier
from chakra.convert.cycles import break_cycles
from chakra.convert.et_plus_input import EtPlusNode, EtPlusTrace, load_et_plus
from chakra.convert.graph import Graph, evidence, thread_chains
from chakra.convert.nodes import build_node, idle_node
from chakra.errors import ChakraError, PathLike
from chakra.et.attributes import set_attr
from chakra.et.schema import GlobalMetadata, NodeType
from chakra.et.writer import write_et
from chakra.ingest.json_input import gc_paused

logger = logging.getLogger(__name__)


class ConvertOptions(msgspec.Struct, frozen=True):
    """``gaps``: replay measured idle time before top-level CPU ops as idle nodes."""

    gaps: bool = True


class ConvertReport(msgspec.Struct, frozen=True):
    nodes_by_type: dict[str, int]
    edges: dict[str, int]
    dropped_edges: dict[str, int]
    idle_nodes: int
    cycles_broken: list[str]
    warnings: list[str]


class EtGraph(msgspec.Struct, frozen=True):
    """A converted trace: GlobalMetadata and nodes sorted by id (protobuf messages)."""

    metadata: Any
    nodes: tuple[Any, ...]
    report: ConvertReport


def _metadata(trace: EtPlusTrace) -> Any:
    metadata = GlobalMetadata()
    set_attr(metadata, "schema", trace.schema)
    for name in ("pid", "start_ts", "finish_ts"):
        value = getattr(trace, name)
        if isinstance(value, int) and value >= 0:
            set_attr(metadata, name, value)
    if trace.time is not None:
        set_attr(metadata, "time", trace.time)
    set_attr(metadata, "producer", "chakra_converter")
    set_attr(metadata, "producer_version", chakra.__version__)
    return metadata


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
    return by_id


def convert_et_plus(trace: EtPlusTrace, options: ConvertOptions) -> EtGraph:
    """Convert a loaded ET+ into a Chakra ET graph (see docs/design.md, "Converting")."""
    with gc_paused():
        return _convert(trace, options)


def _convert(trace: EtPlusTrace, options: ConvertOptions) -> EtGraph:
    by_id = _index(trace)
    graph = Graph(by_id)
    next_id = max(by_id) + 1
    idle = thread_chains(trace, by_id, graph, options.gaps, next_id)
    evidence(trace, graph)
    start_us = {n.id: n.ts for n in trace.nodes if n.ts is not None}
    start_us.update({gap.node_id: by_id[gap.before].ts or 0 for gap in idle})
    broken = break_cycles(graph.deps, graph.ids, start_us)
    classifier = Classifier(by_id)
    nodes = []
    types: Counter[str] = Counter()
    for node in trace.nodes:
        kind = classifier.classify(node)
        parent = node.ctrl_deps if node.ctrl_deps in by_id and node.ctrl_deps != node.id else None
        nodes.append(build_node(node, kind, sorted(graph.deps.get(node.id, ())), parent))
        types[kind.node_type.name] += 1
    for gap in idle:
        nodes.append(idle_node(gap.node_id, by_id[gap.before], gap.duration_us,
                               sorted(graph.deps.get(gap.node_id, ()))))  # fmt: skip
        types[NodeType.COMP_NODE.name] += 1
    nodes.sort(key=lambda n: n.id)
    warnings = [f"{count} x {what}" for what, count in sorted(classifier.guesses.items())]
    if graph.dropped:
        warnings.append("dependencies to unknown nodes dropped: " + ", ".join(
            f"{kind} {count}" for kind, count in sorted(graph.dropped.items())))  # fmt: skip
    cycles = [f"removed {src} -> {dst} from cycle {' -> '.join(map(str, cycle[:10]))}"
              for src, dst, cycle in broken]  # fmt: skip
    for message in [*warnings, *cycles]:
        logger.warning("%s: %s", trace.path, message)
    report = ConvertReport(
        nodes_by_type=dict(sorted(types.items())),
        edges=dict(sorted(graph.counts.items())),
        dropped_edges=dict(sorted(graph.dropped.items())),
        idle_nodes=len(idle),
        cycles_broken=cycles,
        warnings=warnings,
    )
    return EtGraph(metadata=_metadata(trace), nodes=tuple(nodes), report=report)


def convert_file(
    input_path: PathLike, output_path: PathLike, options: Optional[ConvertOptions] = None
) -> EtGraph:
    """Load ET+, convert, and write the ``.et`` (atomically; ``.gz`` compresses)."""
    graph = convert_et_plus(load_et_plus(input_path), options or ConvertOptions())
    write_et(output_path, graph.metadata, graph.nodes)
    return graph
