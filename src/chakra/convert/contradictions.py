"""Dependencies the measured times contradict: the converter drops those left in its graph
and reports them, by kind, with those the linker already left out of the ET+, so that the
link report, the converter and ``chakra_validate`` (from the ``.et``'s GlobalMetadata)
give the same counts (docs/design.md, "Converting").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Optional

from chakra.convert.et_plus_input import EtPlusNode, EtPlusTrace, Number
from chakra.convert.graph import Graph
from chakra.ingest.device_model import CLOCK_RESOLUTION_US


def edge_kind(graph: Graph, src: int, dst: int, by_id: Mapping[int, EtPlusNode]) -> str:
    """The kind under which the edge ``src -> dst`` was added to ``graph``: the one recorded
    for it (:attr:`Graph.rare`), else the bulk kind its ends tell: a GPU op after a GPU op is
    stream order, after a host node its launch; a host node after a host node is the
    thread's chain (segments and idle nodes are host nodes, absent from ``by_id``)."""
    kind = graph.rare.get((src, dst))
    if kind is not None:
        return kind
    if _is_gpu(dst, by_id):
        return "stream_order" if _is_gpu(src, by_id) else "launch"
    return "cpu_chain"


def _is_gpu(node_id: int, by_id: Mapping[int, EtPlusNode]) -> bool:
    node = by_id.get(node_id)
    return node is not None and node.is_gpu


def drop_contradicting(
    graph: Graph,
    start_us: Mapping[int, Number],
    end_us: Mapping[int, Number],
    by_id: Mapping[int, EtPlusNode],
) -> Counter[str]:
    """Remove every dependency whose ``dst`` was measured to start before its ``src`` ended
    (beyond the clock's resolution): such an edge states something the trace shows did not
    happen. Returns how many were removed, by kind (:func:`edge_kind`). Linear in the
    edges."""
    removed: Counter[str] = Counter()
    for dst, deps in graph.deps.items():
        start = start_us.get(dst)
        if start is None:
            continue
        bad = [src for src in deps if end_us.get(src, start) > start + CLOCK_RESOLUTION_US]
        for src in bad:
            removed[edge_kind(graph, src, dst, by_id)] += 1
            deps.remove(src)
    return removed


def linker_contradictions(trace: EtPlusTrace) -> Counter[str]:
    """The evidence the linker found contradicting the measured times, by kind (its report
    in the ET+; none for another producer's ET+)."""
    report = trace.link.report if trace.link is not None else None
    return Counter(report.contradictions) if report is not None else Counter()


def _shown(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items()) if n) or "none"


def contradiction_warning(linked: Mapping[str, int], dropped: Mapping[str, int]) -> Optional[str]:
    """One line on every dependency the measured times contradict (None when none): in
    all, by kind, then what the linker left out and what the converter dropped."""
    total = Counter(linked)
    total.update(dropped)
    if not +total:
        return None
    return (
        f"dependencies contradicting the measured times, not in the graph: {_shown(total)} "
        f"(left out by the linker, in its report: {_shown(linked)}; dropped here, their "
        f"target having started before their source ended: {_shown(dropped)})"
    )
