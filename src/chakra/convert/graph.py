"""The dependency graph (``data_deps``) of a converted trace, and its acyclicity.

Classes of dependency, each from the linker's evidence (docs/design.md, "Converting"):
per-thread CPU chain (pre-order of the host op tree by measured start, with idle nodes for the
measured gaps before top-level ops), GPU op after its launching CPU op, stream order,
cross-stream event waits, CPU op after the GPU ops it blocked on, inter-thread order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Optional

import msgspec

from chakra.convert.et_plus_input import EtPlusNode, EtPlusTrace, Number
from chakra.ingest.vocabulary import PROCESS_ROOT_NAMES, THREAD_ROOT_NAMES

EVIDENCE_KINDS = ("launch", "stream_order", "event_wait", "host_sync", "inter_thread")


class IdleNode(msgspec.Struct, frozen=True, gc=False):
    """A measured gap before a top-level CPU op, replayed as a CPU node of that duration."""

    node_id: int
    before: int  # the op it precedes
    duration_us: Number


class Graph:
    """``deps[dst]`` = set of ``src`` ids that must complete before ``dst`` starts."""

    def __init__(self, ids: Iterable[int]) -> None:
        self.ids = set(ids)
        self.deps: dict[int, set[int]] = defaultdict(set)
        self.counts: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()

    def add(self, src: Optional[int], dst: Optional[int], kind: str) -> None:
        if src is None or dst is None:
            return
        if src not in self.ids or dst not in self.ids or src == dst:
            self.dropped[kind] += 1
            return
        if src not in self.deps[dst]:
            self.deps[dst].add(src)
            self.counts[kind] += 1


def _sort_key(node: EtPlusNode, inherited: Number) -> tuple:
    return (node.ts if node.ts is not None else inherited, node.id)


def _roots(nodes: list[EtPlusNode], by_id: Mapping[int, EtPlusNode]) -> list[EtPlusNode]:
    roots = [n for n in nodes if n.ctrl_deps is None or n.ctrl_deps == n.id
             or n.ctrl_deps not in by_id]  # fmt: skip
    return sorted(roots, key=lambda n: (n.name not in PROCESS_ROOT_NAMES, n.id))


def thread_chains(
    trace: EtPlusTrace, by_id: Mapping[int, EtPlusNode], graph: Graph, gaps: bool, next_id: int
) -> list[IdleNode]:
    """Chain each thread's CPU ops in pre-order (children by measured start); a thread
    root follows its parent; with ``gaps``, an idle node precedes each op with a measured
    ``idle_gap``. Iterative DFS; returns the idle nodes created (ids from ``next_id``)."""
    children: dict[int, list[EtPlusNode]] = defaultdict(list)
    for node in trace.nodes:
        if not node.is_gpu and node.ctrl_deps in by_id and node.ctrl_deps != node.id:
            children[node.ctrl_deps].append(node)
    idle: list[IdleNode] = []
    last: dict[int, int] = {}
    stack: list[tuple[EtPlusNode, int, Number]] = [
        (root, root.id, root.ts or 0) for root in reversed(_roots(trace.nodes, by_id))
    ]
    while stack:
        node, chain, inherited = stack.pop()
        if node.name in THREAD_ROOT_NAMES:
            graph.add(node.ctrl_deps, node.id, "thread_start")
            chain = node.id
        else:
            previous = last.get(chain)
            if gaps and node.idle_gap and previous is not None:
                gap = IdleNode(next_id + len(idle), node.id, node.idle_gap)
                idle.append(gap)
                graph.ids.add(gap.node_id)
                graph.add(previous, gap.node_id, "cpu_chain")
                previous = gap.node_id
            graph.add(previous, node.id, "cpu_chain")
        last[chain] = node.id
        start = node.ts if node.ts is not None else inherited
        kids = sorted(children.get(node.id, ()), key=lambda n: _sort_key(n, start))
        stack.extend((kid, chain, start) for kid in reversed(kids))
    return idle


def evidence(trace: EtPlusTrace, graph: Graph) -> None:
    """Add the linker's dependency evidence; for reference ET+ (no ``chakra_link``), rebuild
    launch and stream order from the GPU nodes and use ``sync_dep``/``inter_thread_dep``."""
    gpu = [n for n in trace.nodes if n.is_gpu]
    for node in gpu:
        graph.add(node.ctrl_deps, node.id, "launch")
    if trace.link is not None:
        for dep in trace.link.dependencies:
            if dep.kind in EVIDENCE_KINDS:
                graph.add(dep.src, dep.dst, dep.kind)
    else:
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
            graph.add(node.inter_thread_dep, node.id, "inter_thread")
