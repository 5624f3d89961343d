"""``ctrl_deps``: each node's parent, kept only where it cannot close a dependency cycle.

Chakra's ``ctrl_deps`` name a node's parent in the op hierarchy (the op that launched a
kernel, the op a later segment belongs to). ASTRA-sim's feeder waits on ``ctrl_deps`` as it
waits on ``data_deps``, so a parent edge pointing against the data dependencies makes a
cycle over the two together: the consumer then silently never issues the nodes behind it.

Rule: order the nodes topologically over ``data_deps`` (already acyclic), taking among the
ready nodes the earliest measured start first (then the lowest id); keep a parent edge only
when the parent comes before its child in that order. Every kept edge then points forward
in one order, so ``data_deps`` and ``ctrl_deps`` together are acyclic by construction. A
parent is dropped when data dependencies make it end after its child starts (an op replayed
on its last segment, whose children ran before that segment) or when it is not ready before
its child; each drop is counted. O((V + E) log V).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from typing import Any


def forward_parents(
    parents: Mapping[int, int],
    deps: Mapping[int, Iterable[int]],
    ids: Iterable[int],
    start_us: Mapping[int, Any],
) -> tuple[dict[int, int], int]:
    """The parent edges (child -> parent) that point forward in the order of the module
    doc, and how many were dropped. ``deps`` must be acyclic over ``ids``."""
    pending: dict[int, int] = {}
    successors: dict[int, list[int]] = {}
    for node in ids:
        pending[node] = 0
    for dst, srcs in deps.items():
        count = 0
        for src in srcs:
            successors.setdefault(src, []).append(dst)
            count += 1
        pending[dst] = count
    ready = [(_start(start_us, n), n) for n, count in pending.items() if count == 0]
    heapq.heapify(ready)
    position: dict[int, int] = {}
    while ready:
        _, node = heapq.heappop(ready)
        position[node] = len(position)
        for succ in successors.get(node, ()):
            pending[succ] -= 1
            if pending[succ] == 0:
                heapq.heappush(ready, (_start(start_us, succ), succ))
    kept = {}
    for child, parent in parents.items():
        at_child, at_parent = position.get(child), position.get(parent)
        if at_child is not None and at_parent is not None and at_parent < at_child:
            kept[child] = parent
    return kept, len(parents) - len(kept)


def _start(start_us: Mapping[int, Any], node: int) -> float:
    value = start_us.get(node)
    return float(value) if isinstance(value, (int, float)) else 0.0
