"""The dependency graph (``data_deps``) of a converted trace, and its acyclicity.

Classes of dependency, each from the linker's evidence (docs/design.md, "Converting"):
per-thread CPU chain (pre-order of the host op tree by measured start, with idle nodes for the
measured gaps before top-level ops), GPU op after its launching CPU op, stream order,
cross-stream event waits, CPU op after the GPU ops it blocked on, inter-thread order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping
from itertools import repeat
from typing import Optional, Union

import msgspec

from chakra.convert.et_plus_input import EtPlusNode, EtPlusTrace, Number
from chakra.convert.segments import Segment, Segmentation, SyncCall, cut_points
from chakra.errors import TraceFormatError
from chakra.ingest.device_model import CLOCK_RESOLUTION_US
from chakra.ingest.edges import EARLY_END, EdgeKind
from chakra.ingest.vocabulary import PROCESS_ROOT_NAMES, THREAD_ROOT_NAMES


class IdleNode(msgspec.Struct, frozen=True, gc=False):
    """A measured gap before a top-level CPU op, replayed as a CPU node of that duration."""

    node_id: int
    before: int  # the op it precedes
    duration_us: Number


Deps = Union[list[int], set[int]]
#: The kinds of most edges, told by what they join (a host node -> a host node, a host node
#: -> a GPU op, a GPU op -> a GPU op): :attr:`Graph.rare` records the others.
BULK_KINDS = frozenset(("cpu_chain", "launch", "stream_order"))
#: Past this many dependencies, a node's list becomes a set (constant-time membership).
_LIST_LIMIT = 16


class Graph:
    """``deps[dst]``: the distinct ``src`` ids that must complete before ``dst`` starts.

    Most nodes have one to three, kept in a list (a quarter of a set's memory); a node with
    more than ``_LIST_LIMIT`` gets a set, so adding stays O(1) however many it has.
    """

    def __init__(self, ids: Iterable[int]) -> None:
        self.ids = set(ids)
        self.deps: dict[int, Deps] = {}
        self.counts: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        #: (src, dst) -> kind of each edge not of a bulk kind, which the node types tell
        #: (:func:`chakra.convert.contradictions.edge_kind`)
        self.rare: dict[tuple[int, int], str] = {}

    def add(self, src: Optional[int], dst: Optional[int], kind: str) -> None:
        if src is None or dst is None:
            return
        if src not in self.ids or dst not in self.ids or src == dst:
            self.dropped[kind] += 1
            return
        deps = self.deps.get(dst)
        if deps is None:
            self.deps[dst] = [src]
        elif src in deps:
            return
        elif isinstance(deps, list) and len(deps) >= _LIST_LIMIT:
            self.deps[dst] = {*deps, src}
        elif isinstance(deps, list):
            deps.append(src)
        else:
            deps.add(src)
        self.counts[kind] += 1
        if kind not in BULK_KINDS:
            self.rare[(src, dst)] = kind


class _Restore(msgspec.Struct, frozen=True, gc=False):
    """Marker in the chaining walk: the thread continues from ``node_id`` again (after a
    detached op's subtree)."""

    node_id: Optional[int]


def first_starts(nodes: Iterable[EtPlusNode], children: Mapping[int, list[EtPlusNode]]):
    """Each node's earliest measured start within its subtree (itself included), or None
    when nothing in it was timed: where an untimed op's work began, told by its timed
    descendants. One post-order pass: a node is entered once (its entry in ``first`` is
    None until its subtree is done), so that even a parent cycle cannot make it loop."""
    first: dict[int, Optional[Number]] = {}
    for root in nodes:
        if root.id in first:
            continue
        stack: list[tuple[EtPlusNode, bool]] = [(root, False)]
        while stack:
            node, done = stack.pop()
            kids = children.get(node.id, ())
            if not done:
                if node.id in first:
                    continue
                if not kids:  # a leaf (most ops): its own start, without a second visit
                    first[node.id] = node.ts
                    continue
                first[node.id] = None  # entered
                stack.append((node, True))
                stack.extend((kid, False) for kid in kids if kid.id not in first)
                continue
            times = [t for t in (first.get(k.id) for k in kids) if t is not None]
            if node.ts is not None:
                times.append(node.ts)
            first[node.id] = min(times) if times else None
    return first


def program_order(kids: Collection[EtPlusNode], first: Mapping[int, Optional[Number]]) -> list:
    """Children in the order the thread ran them: by the first measured start in each
    child's subtree; a child with no timing at all keeps its place after the sibling that
    precedes it by id (host ids grow in program order), never jumping ahead of timed work."""
    if len(kids) == 1:  # nothing to order (many ops run one child)
        return list(kids)
    by_id = sorted(kids, key=lambda n: n.id)
    keyed = []
    previous: Number = float("-inf")
    for index, kid in enumerate(by_id):
        start = first.get(kid.id)
        if start is not None:
            previous = start
        keyed.append(((start if start is not None else previous), start is None, index, kid))
    keyed.sort(key=lambda entry: entry[:3])
    return [entry[3] for entry in keyed]


def outlives_parent(node: EtPlusNode, parent: Optional[EtPlusNode]) -> bool:
    """``node`` was closed after its parent returned, on the same thread (a record function
    ended asynchronously, e.g. ``gloo:send`` when its transfer completes): the thread did
    not wait for it, so it is replayed beside the thread, not on it."""
    if parent is None or node.ran_under is not None:
        return False
    end, parent_end = node.end, parent.end  # properties: each read once
    return end is not None and parent_end is not None and end > parent_end + CLOCK_RESOLUTION_US


def _roots(nodes: list[EtPlusNode], by_id: Mapping[int, EtPlusNode]) -> list[EtPlusNode]:
    roots = [
        n for n in nodes if n.ctrl_deps is None or n.ctrl_deps == n.id or n.ctrl_deps not in by_id
    ]
    return sorted(roots, key=lambda n: (n.name not in PROCESS_ROOT_NAMES, n.id))


def thread_chains(
    trace: EtPlusTrace,
    by_id: Mapping[int, EtPlusNode],
    graph: Graph,
    gaps: bool,
    segments: Segmentation,
    meets_last: Collection[int] = (),
) -> list[IdleNode]:
    """Chain each thread's CPU work in program order: an op's segments interleaved with its
    children's subtrees (children in program order, :func:`program_order`); a thread root
    follows its parent. An op that ran elsewhere (``ran_under``, e.g. on a worker thread) is
    a child of the node it ran under. With ``gaps``, an idle node precedes each op with a
    measured ``idle_gap`` whose parent is untimed (a timed parent's own segments already cover the
    gap). ``meets_last``: host communication ops, whose id goes to their last segment (where
    they meet the other ranks). Iterative DFS; returns the idle nodes created (ids from
    ``segments.next_id``)."""
    children = _host_children(trace, by_id)
    first = first_starts((n for n in trace.nodes if not n.is_gpu), children)
    for parent_id, kids in children.items():
        children[parent_id] = program_order(kids, first)
    _split_timed_ops(trace, by_id, children, first, segments, meets_last)
    graph.ids.update(segment.node_id for segment in segments.extra)
    return _chain(trace, by_id, children, graph, gaps, segments)


def _host_children(
    trace: EtPlusTrace, by_id: Mapping[int, EtPlusNode]
) -> defaultdict[int, list[EtPlusNode]]:
    """Host op id -> the host ops that ran under it (``ran_under``, else ``ctrl_deps``)."""
    children: defaultdict[int, list[EtPlusNode]] = defaultdict(list)
    for node in trace.nodes:
        parent = node.ran_under if node.ran_under in by_id else node.ctrl_deps
        if not node.is_gpu and parent in by_id and parent != node.id:
            children[parent].append(node)
    return children


def _split_timed_ops(
    trace: EtPlusTrace,
    by_id: Mapping[int, EtPlusNode],
    children: Mapping[int, list[EtPlusNode]],
    first: Mapping[int, Optional[Number]],
    segments: Segmentation,
    meets_last: Collection[int],
) -> None:
    """Cut every timed host op into segments around its children and the synchronising
    calls it made (:meth:`Segmentation.split`)."""
    calls = sync_calls(trace, by_id)
    cuts = cut_points(trace.nodes, calls)
    completed: dict[int, Number] = {}  # collective -> when its work completed, if before
    for dep in trace.link.dependencies if trace.link is not None else ():
        if dep.via_api == EARLY_END and dep.via_ts_us is not None:
            cuts.setdefault(dep.src, []).append(dep.via_ts_us)
            completed[dep.src] = min(completed.get(dep.src, dep.via_ts_us), dep.via_ts_us)
    resumes: dict[int, dict[Number, Number]] = defaultdict(dict)
    for call in calls:
        resumes[call.host][call.start] = call.resumed
    for node in trace.nodes:
        if node.cat is None and node.ts is not None and node.end is not None:  # timed host op
            segments.split(
                node,
                children.get(node.id, ()),
                cuts.get(node.id, ()),
                first,
                anchor_last=node.id in meets_last,
                anchor_at=completed.get(node.id),
                resumes=resumes.get(node.id),
            )


def _chain(
    trace: EtPlusTrace,
    by_id: Mapping[int, EtPlusNode],
    children: Mapping[int, list[EtPlusNode]],
    graph: Graph,
    gaps: bool,
    segments: Segmentation,
) -> list[IdleNode]:
    """The walk of :func:`thread_chains`: an explicit stack of nodes, segments and restore
    marks, each with the chain (thread root id) it belongs to; ``last[chain]`` is the node
    the next one on that chain follows. More node walks than :func:`_walk_bound` mean a
    parent cycle the reader let through: refused rather than followed forever."""
    idle: list[IdleNode] = []
    last: dict[int, int] = {}
    detached = segments.detached
    roots = _roots(trace.nodes, by_id)
    stack: list[tuple[object, int]] = [(root, root.id) for root in reversed(roots)]
    walks_left = _walk_bound(trace, roots, by_id)
    while stack:
        item, chain = stack.pop()
        if isinstance(item, _Restore):
            if item.node_id is not None:
                last[chain] = item.node_id
            continue
        if isinstance(item, Segment):
            graph.add(last.get(chain), item.node_id, "cpu_chain")
            last[chain] = item.node_id
            continue
        node = item
        if (walks_left := walks_left - 1) < 0:
            raise TraceFormatError(trace.path, "parent cycle in the op hierarchy")
        parent = by_id.get(node.ctrl_deps) if node.ctrl_deps is not None else None
        if node.name in THREAD_ROOT_NAMES:
            graph.add(node.ctrl_deps, node.id, "thread_start")
            chain = node.id
            last[chain] = node.id
        elif outlives_parent(node, parent):
            detached.add(node.id)
            stack.append((_Restore(last.get(chain)), chain))
            graph.add(last.get(chain), node.id, "cpu_chain")
            last[chain] = node.id
        elif node.id not in segments.pieces:  # untimed: one node
            graph.add(last.get(chain), node.id, "cpu_chain")
            last[chain] = node.id
        previous = last.get(chain)
        if (
            gaps
            and node.idle_gap
            and previous is not None
            and (parent is None or parent.ts is None)
        ):
            last[chain] = _idle_before(node, previous, graph, segments, idle)
        if node.id in segments.pieces and node.id not in detached:
            pieces = segments.pieces[node.id]
        else:
            pieces = children.get(node.id, [])
        stack.extend(zip(reversed(pieces), repeat(chain)))  # pairs made in C, not a generator
    return idle


def _walk_bound(
    trace: EtPlusTrace, roots: list[EtPlusNode], by_id: Mapping[int, EtPlusNode]
) -> int:
    """How many node walks :func:`_chain` makes at most without a parent cycle: a node is
    walked once for each root among itself and its ancestors (a root that ran under
    another node is walked as a root and as that node's child)."""
    also_children = sum(1 for r in roots if r.ran_under in by_id and r.ran_under != r.id)
    return len(trace.nodes) * (1 + also_children) + 1


def _idle_before(
    node: EtPlusNode, previous: int, graph: Graph, segments: Segmentation, idle: list[IdleNode]
) -> int:
    """Add an idle node of ``node``'s measured gap after ``previous``; returns its id."""
    gap = IdleNode(segments.next_id, node.id, node.idle_gap or 0)
    segments.next_id += 1
    idle.append(gap)
    graph.ids.add(gap.node_id)
    graph.add(previous, gap.node_id, "cpu_chain")
    return gap.node_id


def sync_calls(trace: EtPlusTrace, by_id: Mapping[int, EtPlusNode]) -> list[SyncCall]:
    """The synchronising calls made inside timed host ops, each with when it stopped
    being blocked: the end of the last GPU op it waited for, clipped to the call."""
    if trace.link is None:
        return []
    waited: dict[tuple[int, Number, Number], Number] = {}
    for dep in trace.link.dependencies:
        if dep.kind is not EdgeKind.HOST_SYNC or dep.via_host is None:
            continue
        if dep.via_ts_us is None or dep.via_end_us is None:
            continue
        key = (dep.via_host, dep.via_ts_us, dep.via_end_us)
        gpu = by_id.get(dep.src)
        gpu_end = gpu.end if gpu is not None and gpu.end is not None else dep.via_ts_us
        waited[key] = max(waited.get(key, dep.via_ts_us), min(gpu_end, dep.via_end_us))
    return [SyncCall(host, start, end, resumed) for (host, start, end), resumed in waited.items()]


class DelayNode(msgspec.Struct, frozen=True, gc=False):
    """Measured time between a node's latest dependency ending and the node starting
    (launch latency, a thread waking up: waiting the trace does not explain). It holds
    no resource."""

    node_id: int
    before: int
    start_us: Number
    duration_us: Number


def add_delays(
    starts: Iterable[tuple[int, Number]],
    graph: Graph,
    measured_end: Mapping[int, Number],
    next_id: int,
) -> list[DelayNode]:
    """Put a delay node between a node (id, measured start) and its dependencies when it
    started later than they all ended; the node then depends on the delay node alone."""
    delays = []
    for node_id, start in starts:
        deps = graph.deps.get(node_id)
        ends = [measured_end[d] for d in deps or () if d in measured_end]
        if not ends or start <= max(ends):
            continue
        latest = max(ends)
        delay = DelayNode(next_id + len(delays), node_id, latest, start - latest)
        delays.append(delay)
        graph.ids.add(delay.node_id)
        graph.deps[delay.node_id] = list(deps or ())
        graph.deps[node_id] = [delay.node_id]
        graph.counts["start_delay"] += 1
    return delays
