"""Checks a link against the measured times, so that "linked" means verified.

A host op's match is accepted only when the Kineto op has the host op's name and sits where
the host ET says it ran: it starts inside the Kineto op of its nearest matched host ancestor
(on the same thread), or, when it ran on another thread (work handed to a worker thread,
e.g. ``gloo:*``), not before that ancestor started. Evidence edges are checked the same
way: ``dst`` may not start before ``src`` ended, beyond the clock's resolution.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Optional

import msgspec

from chakra.ingest.device_model import CLOCK_RESOLUTION_US, KinetoEvent
from chakra.ingest.host_model import HostOp
from chakra.link.linked_trace import Edge, EdgeKind, GpuNode, JoinStrategy, Number


class Verification(msgspec.Struct, frozen=True):
    """Accepted matches, how many were rejected (by strategy), the host ops that ran on
    another thread than their nearest matched host ancestor, and the ops whose host parent
    is stale (``reparented``): an exact, unique Record-function-id match whose name agrees
    but which Kineto shows outside that parent (e.g. filed under an autograd op that had
    ended): the id is trusted over the parent, and the op is placed where it ran."""

    accepted: dict[int, tuple[KinetoEvent, JoinStrategy]]
    rejected: dict[str, int]
    other_thread: frozenset[int]
    reparented: frozenset[int] = frozenset()


def _starts_inside(outer: KinetoEvent, inner: KinetoEvent) -> bool:
    """``inner`` was entered while ``outer`` was open. Its end is not checked: a record
    function may be closed after its caller returned (``gloo:send`` ends when the transfer
    does)."""
    start = inner.ts_us or 0
    return (outer.ts_us or 0) - CLOCK_RESOLUTION_US <= start <= outer.end_us + CLOCK_RESOLUTION_US


def verify_matches(
    ops: Iterable[HostOp], matches: Mapping[int, tuple[KinetoEvent, JoinStrategy]]
) -> Verification:
    """Accept each match whose name agrees and whose nesting agrees with the host ET's.

    Ops are visited parents first (host ids grow as ops are entered), so a child is checked
    against its nearest *accepted* ancestor: one wrong match does not condemn a subtree that
    is right.
    """
    parent_of: dict[int, int] = {}
    name_of: dict[int, str] = {}
    for op in ops:
        parent_of[op.id] = op.parent_id
        name_of[op.id] = op.name
    accepted: dict[int, tuple[KinetoEvent, JoinStrategy]] = {}
    rejected: Counter[str] = Counter()
    other_thread: set[int] = set()
    reparented: set[int] = set()
    for host_id in sorted(matches):
        event, strategy = matches[host_id]
        if name_of.get(host_id, event.name) != event.name:
            rejected[strategy.value] += 1
            continue
        ancestor = _accepted_ancestor(host_id, parent_of, accepted)
        if ancestor is not None:
            outer = accepted[ancestor][0]
            nests = _nests_in(outer, event)
            if nests is None and strategy is JoinStrategy.RECORD_FUNCTION_ID:
                reparented.add(host_id)  # the exact id wins over a stale parent
            elif nests is None:
                rejected[strategy.value] += 1
                continue
            elif nests == "other thread":
                other_thread.add(host_id)
        accepted[host_id] = (event, strategy)
    return Verification(accepted, dict(sorted(rejected.items())), frozenset(other_thread),
                        frozenset(reparented))  # fmt: skip


def _nests_in(outer: KinetoEvent, event: KinetoEvent) -> Optional[str]:
    """Whether ``event`` can have run under ``outer``: "inside" it on its thread, on an
    "other thread" not before it started, else None."""
    if (outer.pid, outer.tid) != (event.pid, event.tid):
        if (event.ts_us or 0) + CLOCK_RESOLUTION_US < (outer.ts_us or 0):
            return None
        return "other thread"
    return "inside" if _starts_inside(outer, event) else None


def _accepted_ancestor(host_id: int, parent_of: Mapping[int, int], accepted) -> Optional[int]:
    seen = 0
    node = parent_of.get(host_id)
    while node is not None and seen < 10_000:
        if node in accepted:
            return node
        parent = parent_of.get(node)
        if parent == node:
            return None
        node = parent
        seen += 1
    return None


def edge_contradictions(
    edges: Iterable[Edge],
    events: Mapping[int, KinetoEvent],
    gpu_nodes: Iterable[GpuNode],
) -> tuple[dict[str, int], list[Edge]]:
    """Edges whose ``dst`` started before ``src`` ended (beyond the clock's resolution), by
    kind, and the edges that do not (the ones worth writing). Each edge is checked at the
    node the converter makes it wait (so that what it would drop is counted here, and not
    written): a host sync inside a linked host op at the call's own segment, which starts
    at the latest when the call returns (:func:`sync_resumed`). Launch edges are checked as
    "the parent encloses the launch call" instead (a GPU op may start before the op that
    launched it ends) and kept: they name the parent. ``events``: the Kineto event of each
    linked host op and of each of ``gpu_nodes``, by id (their times are read from them:
    a (start, end) per node, next to a copy, was the link's peak memory)."""
    launches = {node.node_id: node.launch for node in gpu_nodes}
    found: Counter[str] = Counter()
    kept: list[Edge] = []
    for edge in edges:
        src = events.get(edge.src)
        if edge.kind is EdgeKind.HOST_SYNC:
            waits = sync_resumed(edge, events)
        else:
            dst = events.get(edge.dst) if edge.dst is not None else None
            waits = (dst.ts_us or 0) if dst is not None else None
        if src is None or waits is None:
            kept.append(edge)
        elif edge.kind is EdgeKind.LAUNCH:
            kept.append(edge)
            launch = launches.get(edge.dst)  # type: ignore[arg-type]
            instant = launch.ts_us if launch is not None else None
            if instant is not None and not (
                (src.ts_us or 0) - CLOCK_RESOLUTION_US
                <= instant
                <= src.end_us + CLOCK_RESOLUTION_US
            ):
                found["launch_outside_parent"] += 1
        elif src.end_us > waits + CLOCK_RESOLUTION_US:
            found[edge.kind.value] += 1
        else:
            kept.append(edge)
    return dict(sorted(found.items())), kept


def sync_resumed(edge: Edge, events: Mapping[int, KinetoEvent]) -> Optional[Number]:
    """When the thread that made a host sync's call went on, as the converter replays it
    (``chakra.convert``: the call's segment of its enclosing host op starts when the GPU
    ops it waited for ended, clipped to the call): at the latest when the call returned,
    or when the enclosing op ended if that was earlier. A call outside any linked host op
    waits at ``dst``, the next host op on its thread (None: nothing follows). ``events``:
    the Kineto event of each node, by id."""
    host = events.get(edge.via_host) if edge.via_host is not None else None
    start, end = edge.via_ts_us, edge.via_end_us
    if host is not None and start is not None and end is not None and start < host.end_us:
        return min(end, host.end_us)
    dst = events.get(edge.dst) if edge.dst is not None else None
    return (dst.ts_us or 0) if dst is not None else None
