"""Which host ET thread each Kineto thread is, so that work handed to another thread stays
on the thread that ran it.

The host ET files an op under the op that started it: ``gloo:all_reduce`` sits under
``c10d::allreduce_`` on the main thread, although a gloo worker thread ran it (Kineto records
it there, and the host ET has a thread node whose ops are that worker's). Replaying it on the
main thread would serialise asynchronous work; it is placed on the worker's host thread
instead, and the hand-offs (issuing op -> work -> the op that waited) are the inter-thread
evidence.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Optional

from chakra.ingest.host_model import HostOp, HostTrace
from chakra.link.linked_trace import CpuMatch
from chakra.link.nesting import ThreadNesting


def _thread_root(op_id: int, by_id: Mapping[int, HostOp]) -> Optional[int]:
    seen = 0
    op = by_id.get(op_id)
    while op is not None and seen < 10_000:
        if op.is_thread_root:
            return op.id
        if op.parent_id == op.id:
            return None
        op = by_id.get(op.parent_id)
        seen += 1
    return None


def threads_ran_under(
    host: HostTrace,
    matches: Mapping[int, CpuMatch],
    other_thread: Iterable[int],
    nestings: Mapping[tuple, ThreadNesting],
    host_of: Mapping[int, int],
    notes: list[str],
) -> dict[int, tuple[int, int]]:
    """host op id -> (the host node it ran under, the tid of that thread) for the ops that
    ran on another thread than their host parent (``other_thread``) and for the ops those
    enclosed on that thread. An op ran under its innermost enclosing matched op on its Kineto
    thread, else under the root of the host ET thread that the Kineto thread is: the host
    thread whose ops it recorded most often."""
    moved = set(other_thread)
    if not moved:
        return {}
    by_id = host.op_by_id()
    votes: dict[tuple, Counter[int]] = defaultdict(Counter)
    for host_id, match in matches.items():
        if host_id not in moved:
            root = _thread_root(host_id, by_id)
            if root is not None:
                votes[match.thread][root] += 1
    ran_on: dict[int, tuple[int, int]] = {}
    unplaced = 0
    positions: dict[tuple, dict[int, int]] = {}  # per Kineto thread: id(event) -> index
    for host_id in sorted(moved):
        match = matches[host_id]
        counts = votes.get(match.thread)
        root = counts.most_common(1)[0][0] if counts else None
        if root is None:
            unplaced += 1
            continue
        tid = by_id[root].tid
        nesting = nestings[match.thread]
        if match.thread not in positions:
            positions[match.thread] = {id(e): i for i, e in enumerate(nesting.events)}
        index = positions[match.thread][id(match.event)]
        enclosing = next((host_of[id(nesting.events[a])] for a in nesting.ancestors(index)
                          if id(nesting.events[a]) in host_of), root)  # fmt: skip
        ran_on[host_id] = (enclosing, tid)
        for inner in nesting.descendants(index):
            inner_id = host_of.get(id(nesting.events[inner]))
            if inner_id is None or inner_id in moved:
                continue
            parent = next(host_of[id(nesting.events[a])] for a in nesting.ancestors(inner)
                          if id(nesting.events[a]) in host_of)  # fmt: skip
            if parent != by_id[inner_id].parent_id:
                ran_on[inner_id] = (parent, tid)
    if unplaced:
        notes.append(
            f"{unplaced} host ops ran on a Kineto thread that has no host ET thread; they "
            "stay on the thread of the op that started them"
        )
    return ran_on
