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
from array import array
from collections.abc import Collection, Mapping
from typing import Any


def forward_parents(
    parents: Mapping[int, int],
    deps: Mapping[int, Collection[int]],
    ids: Collection[int],
    start_us: Mapping[int, Any],
) -> tuple[dict[int, int], int]:
    """The parent edges (child -> parent) that point forward in the order of the module
    doc, and how many were dropped. ``deps`` must be acyclic over ``ids``.

    Converted ids are dense (0..n plus a few), so counts, successor rows and positions
    live in flat arrays indexed by id (8 bytes a node or edge: dictionaries of lists took
    ~300 MiB more on a 600 MB job); other ids go through a dense numbering first."""
    order = sorted(ids)
    if order and (order[0] < 0 or order[-1] > 4 * len(order) + 1024):
        number = {node: i for i, node in enumerate(order)}
        renumbered = {number[d]: [number[s] for s in srcs] for d, srcs in deps.items()}
        dense = {number[c]: number[p] for c, p in parents.items() if c in number and p in number}
        times = {number[n]: t for n, t in start_us.items() if n in number}
        kept = forward_parents(dense, renumbered, range(len(order)), times)[0]
        return {order[c]: order[p] for c, p in kept.items()}, len(parents) - len(kept)
    top = order[-1] + 1 if order else 0
    pending = array("q", bytes(8 * top))
    row_start = array("q", bytes(8 * (top + 1)))
    for dst, srcs in deps.items():
        pending[dst] = len(srcs)
        for src in srcs:
            row_start[src + 1] += 1
    for node in range(top):
        row_start[node + 1] += row_start[node]
    successors = array("q", bytes(8 * row_start[top]))
    filled = array("q", row_start[:top])
    for dst, srcs in deps.items():
        for src in srcs:
            successors[filled[src]] = dst
            filled[src] += 1
    del filled
    get = start_us.get
    ready = [(_time(get(n)), n) for n in order if pending[n] == 0]
    heapq.heapify(ready)
    position = array("q", [-1]) * top
    pop, push, count = heapq.heappop, heapq.heappush, 0
    while ready:
        node = pop(ready)[1]
        position[node] = count
        count += 1
        for k in range(row_start[node], row_start[node + 1]):
            succ = successors[k]
            pending[succ] -= 1
            if pending[succ] == 0:
                push(ready, (_time(get(succ)), succ))
    kept = {}
    for child, parent in parents.items():
        if 0 <= child < top and 0 <= parent < top:
            at_child, at_parent = position[child], position[parent]
            if at_parent >= 0 and at_child >= 0 and at_parent < at_child:
                kept[child] = parent
    return kept, len(parents) - len(kept)


def _time(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0
