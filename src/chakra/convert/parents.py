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
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any, Optional

from chakra.convert.cycles import dense_rows
from chakra.convert.et_plus_input import EtPlusNode
from chakra.convert.graph import DelayNode, IdleNode
from chakra.convert.segments import Segmentation


def backward_parents(
    parents: Iterable[tuple[int, int]],
    deps: Mapping[int, Collection[int]],
    ids: Collection[int],
    start_us: Mapping[int, Any],
) -> set[int]:
    """The children whose parent edge (child, parent) does not point forward in the order
    of the module doc: their parent is left out. ``deps`` must be acyclic over ``ids``.

    Converted ids are dense (0..n plus a few), so counts, successor rows and positions
    live in flat arrays indexed by id (8 bytes a node or edge: dictionaries of lists took
    ~300 MiB more on a 600 MB job); other ids go through a dense numbering first."""
    low, high = (min(ids), max(ids)) if ids else (0, -1)  # no sorted copy: memory at the peak
    if ids and (low < 0 or high > 4 * len(ids) + 1024):
        order = sorted(ids)
        number = {node: i for i, node in enumerate(order)}
        renumbered = {number[d]: [number[s] for s in srcs] for d, srcs in deps.items()}
        dense = ((number.get(c, -1), number.get(p, -1)) for c, p in parents)
        times = {number[n]: t for n, t in start_us.items() if n in number}
        backward = backward_parents(dense, renumbered, range(len(order)), times)
        return {order[c] for c in backward if c >= 0}
    top = high + 1
    pending, row_start, successors = dense_rows(deps, top)
    get = start_us.get
    ready = [(_time(get(n)), n) for n in ids if pending[n] == 0]  # a heap: any order
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
    backward = set()
    for child, parent in parents:
        if not (0 <= child < top and 0 <= parent < top and 0 <= position[parent] < position[child]):
            backward.add(child)
    return backward


def _time(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


class Parents:
    """Each node's parent (its ``ctrl_deps``), less those left out (``left_out``, from
    :func:`backward_parents`): a host op's or GPU op's own ``ctrl_deps``; a later segment's
    op; an idle node's or a delay's, that of the op it precedes (the op a delayed segment is
    part of, for a delay before a segment). Only the extra nodes' parents are stored: a
    dictionary over every node took ~100 MiB on a 600 MB job."""

    def __init__(self, by_id: dict[int, EtPlusNode], segments: Segmentation,
                 idle: list[IdleNode], delays: list[DelayNode]) -> None:  # fmt: skip
        self.by_id = by_id
        self.left_out: set[int] = set()
        op_of = {s.node_id: s.op_id for s in segments.extra}
        self.extra = dict(op_of)
        for gap in idle:
            parent = self._own(gap.before)
            if parent is not None:
                self.extra[gap.node_id] = parent
        for delay in delays:
            parent = op_of.get(delay.before, self._own(delay.before))
            if parent is not None:
                self.extra[delay.node_id] = parent

    def _own(self, node_id: int) -> Optional[int]:
        node = self.by_id.get(node_id)
        if node is None or node.ctrl_deps not in self.by_id or node.ctrl_deps == node_id:
            return None
        return node.ctrl_deps

    def get(self, node_id: int) -> Optional[int]:
        """The parent written as ``ctrl_deps`` (None: none, or left out)."""
        if node_id in self.left_out:
            return None
        parent = self.extra.get(node_id)
        if parent is not None:
            return parent
        node = self.by_id.get(node_id)  # _own, inlined: called once for every node written
        if node is None or node.ctrl_deps not in self.by_id or node.ctrl_deps == node_id:
            return None
        return node.ctrl_deps

    def items(self) -> Iterator[tuple[int, int]]:
        """Every (child, parent), before any is left out."""
        by_id = self.by_id
        for node_id, node in by_id.items():  # _own, inlined: once per node
            parent = node.ctrl_deps
            if parent is not None and parent != node_id and parent in by_id:
                yield node_id, parent
        yield from self.extra.items()
