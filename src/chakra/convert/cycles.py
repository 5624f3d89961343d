"""Acyclicity: Kahn's topological sort (iterative), and a documented rule to break cycles.

Every dependency class the converter adds points forward in measured time, so a cycle means
contradictory evidence. Rule: in each cycle found, remove the edge that most contradicts the
measured order (largest ``start(src) - start(dst)``; untimed nodes count as 0), report it,
and repeat until the graph is acyclic.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Collection, Mapping
from typing import Any, Optional

from chakra.convert.et_plus_input import Number


def dense_rows(deps: Mapping[int, Collection[int]], top: int) -> tuple[array, array, array]:
    """For ids in ``range(top)``: each node's count of deps, and its successors as rows
    (``successors[row_start[n]:row_start[n + 1]]``, in no particular order within a row),
    in flat arrays indexed by id."""
    pending = array("q", bytes(8 * top))
    row_start = array("q", bytes(8 * (top + 1)))
    for dst, srcs in deps.items():
        pending[dst] = len(srcs)
        for src in srcs:
            row_start[src] += 1
    total = 0
    for node in range(top):  # each row's end, then filled from its end back to its start
        total += row_start[node]
        row_start[node] = total
    row_start[top] = total
    successors = array("q", bytes(8 * total))
    for dst, srcs in deps.items():
        for src in srcs:
            row_start[src] -= 1
            successors[row_start[src]] = dst
    return pending, row_start, successors


def leftover_after_kahn(deps: Mapping[int, Collection[int]], ids: set[int]) -> set[int]:
    """Nodes that no topological order can reach (empty iff acyclic). O(V + E).

    Ids of converted traces are dense (0..n plus a few), so counts and successor rows live in
    flat arrays indexed by id: a few bytes per node and edge, where dictionaries of lists
    took over a hundred."""
    top = max(ids, default=-1) + 1
    if top > 4 * len(ids) + 1024 or min(ids, default=0) < 0:
        return _leftover_sparse(deps, ids)
    pending, row_start, successors = dense_rows(deps, top)
    ready = [node for node in ids if pending[node] == 0]
    while ready:
        node = ready.pop()
        for k in range(row_start[node], row_start[node + 1]):
            succ = successors[k]
            pending[succ] -= 1
            if pending[succ] == 0:
                ready.append(succ)
    return {node for node in ids if pending[node] > 0}


def _leftover_sparse(deps: Mapping[int, Collection[int]], ids: set[int]) -> set[int]:
    pending = {node: len(deps.get(node, ())) for node in ids}
    successors: dict[int, list[int]] = defaultdict(list)
    for dst, srcs in deps.items():
        for src in srcs:
            successors[src].append(dst)
    ready = [node for node, count in pending.items() if count == 0]
    while ready:
        node = ready.pop()
        for succ in successors.get(node, ()):
            pending[succ] -= 1
            if pending[succ] == 0:
                ready.append(succ)
    return {node for node, count in pending.items() if count > 0}


def find_cycle(deps: Mapping[int, Collection[int]], leftover: set[int]) -> list[int]:
    """One cycle among ``leftover`` nodes, as ids in dependency order (iterative walk)."""
    start = min(leftover)
    seen: dict[int, int] = {}
    path: list[int] = []
    node: Optional[int] = start
    while node is not None and node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = min((src for src in deps.get(node, ()) if src in leftover), default=None)
    if node is None:
        return []
    return list(reversed(path[seen[node] :]))


def break_cycles(
    deps: dict[int, Any], ids: set[int], start_us: Mapping[int, Number]
) -> list[tuple[int, int, list[int]]]:
    """Remove edges until acyclic; returns each removed (src, dst, cycle)."""
    removed = []
    while True:
        leftover = leftover_after_kahn(deps, ids)
        if not leftover:
            return removed
        cycle = find_cycle(deps, leftover)
        if not cycle:
            return removed
        pairs = list(zip(cycle, cycle[1:] + cycle[:1]))  # (src, dst): dst depends on src
        src, dst = max(pairs, key=lambda p: start_us.get(p[0], 0) - start_us.get(p[1], 0))
        deps[dst].remove(src)  # a list or a set (convert/graph.py)
        removed.append((src, dst, cycle))
