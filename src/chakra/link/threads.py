"""Which host ET thread each Kineto thread is, so that work handed to another thread stays
on the thread that ran it.

The host ET files an op under the op that started it: ``gloo:all_reduce`` sits under
``c10d::allreduce_`` on the main thread, although a gloo worker thread ran it (Kineto records
it there, and the host ET has a thread node whose ops are that worker's). Replaying it on the
main thread would serialise asynchronous work; it is placed on the worker's host thread
instead, and the hand-offs (issuing op -> work -> the op that waited) are the inter-thread
evidence.

The host ET has a thread node only for a thread on which it recorded an op of its own: a gloo
worker that ran nothing but ``gloo:*`` ops has none (its ops keep the main thread's ``tid``).
Such a Kineto thread becomes a replay thread of its own: a thread root made for it
(:class:`ReplayThreads`), with a ``tid`` no host thread uses.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Optional

import msgspec

from chakra.ingest.host_model import HostOp, HostTrace
from chakra.ingest.vocabulary import THREAD_ROOT_NAMES
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


#: The name of the thread root made for a Kineto thread the host ET has no thread for.
THREAD_ROOT_NAME = "[pytorch|profiler|execution_trace|thread]"
assert THREAD_ROOT_NAME in THREAD_ROOT_NAMES


class ReplayThreads(msgspec.Struct, frozen=True):
    """Where moved ops run: ``ran_under`` maps a host op id to (the node it ran under, the
    tid of that thread); ``roots`` are the thread roots made for Kineto threads that have no
    host ET thread (ids from the first free id up, children of the process root)."""

    ran_under: dict[int, tuple[int, int]]
    roots: tuple[HostOp, ...] = ()


def threads_ran_under(
    host: HostTrace,
    matches: Mapping[int, CpuMatch],
    other_thread: Iterable[int],
    nestings: Mapping[tuple, ThreadNesting],
    host_of: Mapping[int, int],
    notes: list[str],
) -> ReplayThreads:
    """Where the ops that ran on another thread than their host parent (``other_thread``),
    and the ops those enclosed on that thread, ran. An op ran under its innermost enclosing
    matched op on its Kineto thread, else under the root of the host ET thread that the
    Kineto thread is: the host thread whose ops it recorded most often, or, when the host ET
    has none, a thread root made for it (ids after the host ET's, a tid above its tids)."""
    moved = set(other_thread)
    if not moved:
        return ReplayThreads({})
    by_id = host.op_by_id()
    votes: dict[tuple, Counter[int]] = defaultdict(Counter)
    for host_id, match in matches.items():
        if host_id not in moved:
            root = _thread_root(host_id, by_id)
            if root is not None:
                votes[match.thread][root] += 1
    made = _made_roots(host, (matches[h].thread for h in sorted(moved)), votes)
    ran_on: dict[int, tuple[int, int]] = {}
    positions: dict[tuple, dict[int, int]] = {}  # per Kineto thread: id(event) -> index
    for host_id in sorted(moved):
        match = matches[host_id]
        counts = votes.get(match.thread)
        root_op = by_id[counts.most_common(1)[0][0]] if counts else made[match.thread]
        root, tid = root_op.id, root_op.tid
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
    if made:
        notes.append(
            f"{len(made)} Kineto threads have no thread in the host ET (their ops are filed "
            "under another thread's): each is replayed as a thread of its own, "
            f"tid {', '.join(str(op.tid) for op in made.values())}"
        )
    return ReplayThreads(ran_on, tuple(made.values()))


def _made_roots(
    host: HostTrace, threads: Iterable[tuple], votes: Mapping[tuple, Counter[int]]
) -> dict[tuple, HostOp]:
    """A thread root for each Kineto thread in ``threads`` that no host thread votes for,
    in first-seen order: ids after the host ET's largest, tids above its largest."""
    made: dict[tuple, HostOp] = {}
    process = next((op.id for op in host.ops if op.is_process_root), None)
    next_id = max((op.id for op in host.ops), default=0) + 1
    next_tid = max((op.tid for op in host.ops), default=0) + 1
    for thread in threads:
        if thread in votes or thread in made:
            continue
        parent = process if process is not None else next_id
        made[thread] = HostOp(next_id, THREAD_ROOT_NAME, parent, None, tid=next_tid)
        next_id, next_tid = next_id + 1, next_tid + 1
    return made
